package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks reference vector.
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecUnix   = 1614265330
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vecHeader(sig string, unix int64) http.Header {
	h := http.Header{}
	h.Set(HeaderID, vecID)
	h.Set(HeaderTimestamp, strconv.FormatInt(unix, 10))
	h.Set(HeaderSignature, sig)
	return h
}

func TestSign_MatchesTheStandardWebhooksVector(t *testing.T) {
	got, err := Sign(vecSecret, vecID, time.Unix(vecUnix, 0), []byte(vecBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != vecSig {
		t.Errorf("Sign = %q, want %q", got, vecSig)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(vecUnix, 0)
	otherSecret := "whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"the reference vector verifies", vecSecret, vecHeader(vecSig, vecUnix), vecBody, now, nil},
		{"a rotation's several signatures: any one matches", vecSecret, vecHeader("v1,bm90IGl0 v2,xyz "+vecSig, vecUnix), vecBody, now, nil},
		{"a forged signature is refused", vecSecret, vecHeader("v1,Zm9yZ2VkIHNpZ25hdHVyZSBmb3JnZWQgc2lnbmF0dXJlIQ==", vecUnix), vecBody, now, ErrSignature},
		{"a wrong secret is refused", otherSecret, vecHeader(vecSig, vecUnix), vecBody, now, ErrSignature},
		{"a tampered body is refused", vecSecret, vecHeader(vecSig, vecUnix), `{"test": 2432232315}`, now, ErrSignature},
		{"a replay older than the tolerance is refused", vecSecret, vecHeader(vecSig, vecUnix), vecBody, now.Add(5*time.Minute + time.Second), ErrTimestamp},
		{"a timestamp from the future is refused", vecSecret, vecHeader(vecSig, vecUnix), vecBody, now.Add(-6 * time.Minute), ErrTimestamp},
		{"a timestamp moved to now is refused: it is signed", vecSecret, vecHeader(vecSig, vecUnix+600), vecBody, now.Add(600 * time.Second), ErrSignature},
		{"a v2 signature alone is not accepted", vecSecret, vecHeader("v2,"+strings.TrimPrefix(vecSig, "v1,"), vecUnix), vecBody, now, ErrSignature},
		{"no signature header", vecSecret, http.Header{HeaderID: {vecID}, HeaderTimestamp: {"1614265330"}}, vecBody, now, ErrHeaders},
		{"a non-numeric timestamp", vecSecret, http.Header{HeaderID: {vecID}, HeaderTimestamp: {"-1614265330"}, HeaderSignature: {vecSig}}, vecBody, now, ErrHeaders},
		{"a secret that is not base64", "whsec_***", vecHeader(vecSig, vecUnix), vecBody, now, ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Verify(tt.secret, tt.h, []byte(tt.body), 5*time.Minute, tt.now); !errors.Is(got, tt.want) && !(got == nil && tt.want == nil) {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzVerifyHeaders(f *testing.F) {
	f.Add(vecID, "1614265330", vecSig, vecBody)
	f.Add(vecID, "1614265330", "v1,"+strings.Repeat("A", 44)+" v1, v1,,,", "{}")
	f.Add("", "99999999999999999999", "v1", "")
	f.Add("x", "+1", "   ", "x")
	f.Fuzz(func(t *testing.T, id, ts, sig, body string) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		err := Verify(vecSecret, h, []byte(body), 5*time.Minute, time.Unix(vecUnix, 0))
		if err == nil {
			// Only a genuine signature passes: it must be Sign's.
			want, _ := Sign(vecSecret, id, time.Unix(vecUnix, 0), []byte(body))
			parsed, perr := parseTS(ts)
			if perr == nil {
				want, _ = Sign(vecSecret, id, time.Unix(parsed, 0), []byte(body))
			}
			if !strings.Contains(sig, strings.TrimPrefix(want, "v1,")) {
				t.Fatalf("Verify accepted %q for id %q ts %q body %q", sig, id, ts, body)
			}
			return
		}
		if !errors.Is(err, ErrHeaders) && !errors.Is(err, ErrTimestamp) && !errors.Is(err, ErrSignature) {
			t.Fatalf("Verify returned an unexpected error: %v", err)
		}
	})
}

func parseTS(ts string) (int64, error) {
	_, unix, _, err := parseHeaders(http.Header{HeaderID: {"x"}, HeaderTimestamp: {ts}, HeaderSignature: {"x"}})
	return unix, err
}
