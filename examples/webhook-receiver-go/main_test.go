package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

const event = `{"type":"account.under_attack","timestamp":"2026-01-01T00:00:00Z","tenant":"default",` +
	`"data":{"flow":"login","rule":"account_backoff","reason":"account_backoff","subject":"alice@example.com","ref":"user-42","details":{"failures":120}}}`

// tollgate signs as tollgate does: the signature is computed here, not with
// the client's code, so that a bug there cannot hide itself.
type tollgate struct {
	url    string
	secret string
	http   *http.Client
}

func (tg tollgate) post(t *testing.T, id string, ts time.Time, body, sentBody string) int {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(tg.secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	sec := strconv.FormatInt(ts.Unix(), 10)
	mac.Write([]byte(id + "." + sec + "." + body))
	req, err := http.NewRequest(http.MethodPost, tg.url+"/tollgate-events", bytes.NewReader([]byte(sentBody)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Id", id)
	req.Header.Set("Webhook-Timestamp", sec)
	req.Header.Set("Webhook-Signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	res, err := tg.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// start runs the receiver's mux on a loopback port, with handle counting
// the events it is given.
func start(t *testing.T, handle func(context.Context, client.WebhookEvent) error) tollgate {
	t.Helper()
	rcv, err := NewReceiver(secret, handle)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /tollgate-events", rcv)
	srv := httptest.NewServer(mux) // 127.0.0.1, a free port
	t.Cleanup(srv.Close)
	return tollgate{url: srv.URL, secret: secret, http: &http.Client{Timeout: 10 * time.Second}}
}

type recorder struct {
	mu     sync.Mutex
	events []client.WebhookEvent
}

func (r *recorder) handle(_ context.Context, e client.WebhookEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func TestReceiver_SignedEventIsHandledOnceAndAnswered204(t *testing.T) {
	var rec recorder
	tg := start(t, rec.handle)
	if got := tg.post(t, "msg_1", time.Now(), event, event); got != http.StatusNoContent {
		t.Fatalf("a signed event: %d, want 204", got)
	}
	if rec.count() != 1 {
		t.Fatalf("handled %d times, want 1", rec.count())
	}
	e := rec.events[0]
	if e.ID != "msg_1" || e.Type != client.WebhookAccountUnderAttack || e.Data.Ref != "user-42" || e.Data.Subject != "alice@example.com" {
		t.Errorf("handled %+v", e)
	}
}

// Delivery is at least once: a redelivery (same webhook-id) is answered
// 204 and not handled again.
func TestReceiver_RedeliveryIsNotHandledTwice(t *testing.T) {
	var rec recorder
	tg := start(t, rec.handle)
	for i := range 3 {
		if got := tg.post(t, "msg_1", time.Now(), event, event); got != http.StatusNoContent {
			t.Fatalf("delivery %d: %d, want 204", i+1, got)
		}
	}
	if got := tg.post(t, "msg_2", time.Now(), event, event); got != http.StatusNoContent {
		t.Fatalf("another event: %d, want 204", got)
	}
	if rec.count() != 2 {
		t.Fatalf("handled %d times, want 2 (msg_1 once, msg_2 once)", rec.count())
	}
}

func TestReceiver_ForgedOrReplayedEventIsRefusedAndNotHandled(t *testing.T) {
	var rec recorder
	tg := start(t, rec.handle)
	forger := tg
	forger.secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the attacker's guess of a secret"))
	tampered := strings.Replace(event, "user-42", "user-1", 1)
	for name, status := range map[string]int{
		"signed with another secret":      forger.post(t, "msg_f1", time.Now(), event, event),
		"body changed after signing":      tg.post(t, "msg_f2", time.Now(), event, tampered),
		"a replay of an hour-old message": tg.post(t, "msg_f3", time.Now().Add(-time.Hour), event, event),
	} {
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, status)
		}
	}
	if rec.count() != 0 {
		t.Fatalf("handled %d forged events", rec.count())
	}
	// A forged request with a real event's id must not mark it as seen.
	if got := tg.post(t, "msg_f1", time.Now(), event, event); got != http.StatusNoContent || rec.count() != 1 {
		t.Errorf("the real msg_f1 after a forgery under its id: %d, handled %d; want 204, 1", got, rec.count())
	}
}

// A handler failure answers 500 and forgets the id, so that tollgate's
// retry is handled.
func TestReceiver_FailedHandlingIsRetried(t *testing.T) {
	var rec recorder
	fail := true
	tg := start(t, func(ctx context.Context, e client.WebhookEvent) error {
		if fail {
			fail = false
			return errors.New("database down")
		}
		return rec.handle(ctx, e)
	})
	if got := tg.post(t, "msg_1", time.Now(), event, event); got != http.StatusInternalServerError {
		t.Fatalf("failed handling: %d, want 500", got)
	}
	if got := tg.post(t, "msg_1", time.Now(), event, event); got != http.StatusNoContent || rec.count() != 1 {
		t.Fatalf("the retry: %d, handled %d; want 204, 1", got, rec.count())
	}
}

func TestNewReceiver_RefusesASecretThatIsNotBase64(t *testing.T) {
	for _, s := range []string{"", "whsec_", "whsec_not base64!", "my-password"} {
		if _, err := NewReceiver(s, nil); err == nil {
			t.Errorf("NewReceiver(%q) accepted it", s)
		}
	}
}
