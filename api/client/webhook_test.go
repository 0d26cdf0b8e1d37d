package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

type webhookVector struct {
	Name    string            `json:"name"`
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Now     int64             `json:"now"`
	Want    string            `json:"want"`
	Event   *struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Tenant    string `json:"tenant"`
		Data      struct {
			Flow    string         `json:"flow"`
			Rule    string         `json:"rule"`
			Reason  string         `json:"reason"`
			Subject string         `json:"subject"`
			Ref     string         `json:"ref"`
			Details map[string]any `json:"details"`
		} `json:"data"`
	} `json:"event"`
}

// webhookKind is the vectors' name of a VerifyWebhook error.
func webhookKind(err error) string {
	for _, k := range []struct {
		err  error
		kind string
	}{
		{client.ErrWebhookHeaders, "headers"},
		{client.ErrWebhookTimestamp, "timestamp"},
		{client.ErrWebhookSignature, "signature"},
		{client.ErrWebhookSecret, "secret"},
		{client.ErrWebhookPayload, "payload"},
	} {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	if err == nil {
		return "ok"
	}
	return "other: " + err.Error()
}

func TestVectors_Webhooks(t *testing.T) {
	var doc struct {
		About     string          `json:"about"`
		Tolerance int             `json:"tolerance_seconds"`
		Cases     []webhookVector `json:"cases"`
	}
	readVectors(t, "webhooks.json", &doc)
	if len(doc.Cases) < 40 || doc.Tolerance != 300 {
		t.Fatalf("%d cases, tolerance %d: the vectors did not load", len(doc.Cases), doc.Tolerance)
	}
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.Headers {
				h[k] = []string{v} // as sent: not canonicalized, so that lookups must fold case
			}
			e, err := client.VerifyWebhook(c.Secret, h, []byte(c.Body), time.Unix(c.Now, 0))
			if got := webhookKind(err); got != c.Want {
				t.Fatalf("VerifyWebhook = %s (%v), want %s", got, err, c.Want)
			}
			if c.Want != "ok" {
				if e.ID != "" || e.Type != "" {
					t.Errorf("an error returned an event: %+v", e)
				}
				return
			}
			w := c.Event
			want := client.WebhookEvent{ID: w.ID, Type: w.Type, Timestamp: w.Timestamp, Tenant: w.Tenant, Data: client.WebhookData{
				Flow: w.Data.Flow, Rule: w.Data.Rule, Reason: w.Data.Reason, Subject: w.Data.Subject, Ref: w.Data.Ref, Details: w.Data.Details,
			}}
			if !reflect.DeepEqual(e, want) {
				t.Errorf("event\n%+v, want\n%+v", e, want)
			}
		})
	}
}

const (
	testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	testBody   = `{"type":"login.new_device","timestamp":"2026-01-01T00:00:00Z","tenant":"default","data":{"flow":"login","rule":"new_device","reason":"new_device","subject":"alice@example.com","ref":"u-1","details":{}}}`
)

// sign is the webhook-signature of body under secret, as tollgate sends it.
func sign(secret, id string, ts int64, body string) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func signedHeader(secret, id string, ts int64, body string) http.Header {
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("Webhook-Signature", sign(secret, id, ts, body))
	return h
}

// A proxy may split a long list of signatures over several header lines;
// a match on any line counts.
func TestWebhook_RotatedSecretOnASecondHeaderLineIsAccepted(t *testing.T) {
	now := time.Unix(1767225600, 0)
	h := signedHeader(testSecret, "msg_1", now.Unix(), testBody)
	good := h.Get("Webhook-Signature")
	h.Set("Webhook-Signature", sign("whsec_"+base64.StdEncoding.EncodeToString([]byte("an old secret of 32 bytes......")), "msg_1", now.Unix(), testBody))
	h.Add("Webhook-Signature", good)
	e, err := client.VerifyWebhook(testSecret, h, []byte(testBody), now)
	if err != nil || e.Data.Ref != "u-1" || e.ID != "msg_1" {
		t.Fatalf("VerifyWebhook = %+v, %v; want the event", e, err)
	}
}

// A replay an hour later fails under the default tolerance and passes
// under a verifier that allows two hours; a tolerance is never zero.
func TestWebhook_ReplayOutsideTheVerifiersToleranceIsRefused(t *testing.T) {
	sent := time.Unix(1767225600, 0)
	h := signedHeader(testSecret, "msg_1", sent.Unix(), testBody)
	later := sent.Add(time.Hour)
	if _, err := client.VerifyWebhook(testSecret, h, []byte(testBody), later); !errors.Is(err, client.ErrWebhookTimestamp) {
		t.Errorf("an hour later: %v, want ErrWebhookTimestamp", err)
	}
	if _, err := (client.WebhookVerifier{Secret: testSecret, Tolerance: 2 * time.Hour}).Verify(h, []byte(testBody), later); err != nil {
		t.Errorf("an hour later with a 2h tolerance: %v", err)
	}
	if _, err := (client.WebhookVerifier{Secret: testSecret}).Verify(h, []byte(testBody), sent.Add(301*time.Second)); !errors.Is(err, client.ErrWebhookTimestamp) {
		t.Errorf("zero tolerance is not the default: %v", err)
	}
}

// No error repeats what the sender sent: the body holds an end user's
// identifier, and a forger's header would go into the receiver's log.
func TestWebhook_ErrorsNeverHoldTheBodyOrHeaders(t *testing.T) {
	now := time.Unix(1767225600, 0)
	body := `{"type":7,"data":{"subject":"victim@example.com"}}`
	for name, h := range map[string]http.Header{
		"payload":   signedHeader(testSecret, "msg_secretid", now.Unix(), body),
		"signature": {"Webhook-Id": {"msg_secretid"}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "Webhook-Signature": {"v1,forgedforged"}},
		"headers":   {"Webhook-Id": {"msg_secretid"}, "Webhook-Timestamp": {"forgedforged"}, "Webhook-Signature": {"v1,x"}},
	} {
		_, err := client.VerifyWebhook(testSecret, h, []byte(body), now)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		for _, s := range []string{"victim", "secretid", "forged", "MfKQ"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q holds %q", name, err, s)
			}
		}
	}
}

// FuzzVerifyWebhook: no input panics, and nothing is accepted whose v1
// signature is not the HMAC of its id, timestamp and body.
func FuzzVerifyWebhook(f *testing.F) {
	now := time.Unix(1767225600, 0)
	h := signedHeader(testSecret, "msg_1", now.Unix(), testBody)
	f.Add("msg_1", h.Get("Webhook-Timestamp"), h.Get("Webhook-Signature"), testBody, testSecret)
	f.Add("msg_1", "1767225600", "v1,"+strings.Repeat("A", 43)+"= v2,x v1a,", `{"data":null}`, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	f.Add("", "", "", "", "whsec_")
	f.Add("x", "99999999999999999999", "v1", "[]", "whsec_====")
	f.Fuzz(func(t *testing.T, id, ts, sig, body, secret string) {
		h := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
		e, err := client.VerifyWebhook(secret, h, []byte(body), now)
		if err != nil {
			if webhookKind(err) == "other: "+err.Error() {
				t.Fatalf("an error of no kind: %v", err)
			}
			return
		}
		want := sign(secret, id, mustInt(t, ts), body)
		if !strings.Contains(" "+sig+" ", " "+want+" ") && !strings.Contains(sig, want) {
			t.Fatalf("accepted %q without the signature %q", sig, want)
		}
		if e.ID != id || e.Data.Details == nil {
			t.Fatalf("event %+v for id %q", e, id)
		}
	})
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("accepted timestamp %q: %v", s, err)
	}
	return n
}

// The ref comes back in webhook events: Check, Report and Send must send
// it as "ref" when given, and no "ref" key when the caller gave none.
func TestClient_RefIsSentWhenGivenAndLeftOutWhenNot(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"at.1"}`)
	}))
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	check := wire.CheckRequest{Flow: "login", Account: "a", Ref: "user-42"}
	report := wire.ReportRequest{Flow: "login", Account: "a", Outcome: wire.OutcomeSuccess, Ref: "user-42"}
	send := wire.SendRequest{Destination: "+15550100", Channel: "sms", Ref: "user-é"}
	ctx := context.Background()
	for _, call := range []func() error{
		func() error { _, err := c.Check(ctx, check, client.FailDelay); return err },
		func() error { _, err := c.Report(ctx, report, client.FailDelay); return err },
		func() error { _, err := c.SendOTP(ctx, send, client.FailDelay); return err },
		func() error { check.Ref = ""; _, err := c.Check(ctx, check, client.FailDelay); return err },
		func() error { report.Ref = ""; _, err := c.Report(ctx, report, client.FailDelay); return err },
		func() error { send.Ref = ""; _, err := c.SendOTP(ctx, send, client.FailDelay); return err },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, b := range bodies {
		var m map[string]any
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		ref, has := m["ref"]
		switch {
		case i < 2 && ref != "user-42", i == 2 && ref != "user-é":
			t.Errorf("call %d sent ref %v, want the one given: %s", i, ref, b)
		case i >= 3 && has:
			t.Errorf("call %d sent a ref the caller did not give: %s", i, b)
		}
	}
	if len(bodies) != 6 {
		t.Errorf("%d calls reached the stand-in, want 6", len(bodies))
	}
}
