package challenge_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/challenge"
)

// standIn is a loopback siteverify: it answers each call with answer and
// records the forms it was sent.
type standIn struct {
	*httptest.Server
	mu     sync.Mutex
	forms  []url.Values
	answer func(w http.ResponseWriter, r *http.Request)
}

func newStandIn(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *standIn {
	s := &standIn{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err == nil {
			s.mu.Lock()
			s.forms = append(s.forms, r.PostForm)
			s.mu.Unlock()
		}
		s.answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) calls() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.forms...)
}

func answering(status int, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

// newProviderChallenger is a Challenger whose kind k verifies at s.
func newProviderChallenger(t *testing.T, k challenge.Kind, s *standIn) *challenge.Challenger {
	c, _ := newChallenger(t, challenge.Config{
		Providers:       []challenge.ProviderConfig{{Kind: k, SiteKey: "site-key-1", Secret: "provider-secret-1", VerifyURL: s.URL + "/siteverify"}},
		ProviderTimeout: 200 * time.Millisecond,
	})
	return c
}

func TestProvider_TheStandInsAnswers(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	redirect := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			answering(200, `{"success":true}`)(w, r)
			return
		}
		http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
	}
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		want   challenge.Reason
	}{
		{"success", answering(200, `{"success":true,"challenge_ts":"2026-01-05T09:00:00Z","hostname":"example.com","error-codes":[]}`), challenge.ReasonSolved},
		{"pretty-printed success", answering(200, "{\n  \"success\" : true ,\n  \"error-codes\": []\n}\n"), challenge.ReasonSolved},
		{"success under another case", answering(200, `{"Success":true}`), challenge.ReasonProviderUnavailable},
		{"failure", answering(200, `{"success":false,"error-codes":["invalid-input-response"]}`), challenge.ReasonProviderRejected},
		{"timeout", hang, challenge.ReasonProviderUnavailable},
		{"garbage", answering(200, `<html>502 Bad Gateway</html>`), challenge.ReasonProviderUnavailable},
		{"success as a string", answering(200, `{"success":"true"}`), challenge.ReasonProviderUnavailable},
		{"no success", answering(200, `{"error-codes":[]}`), challenge.ReasonProviderUnavailable},
		{"success in an array", answering(200, `[{"success":true}]`), challenge.ReasonProviderUnavailable},
		{"success with a 500", answering(500, `{"success":true}`), challenge.ReasonProviderUnavailable},
		{"a redirect to a success", redirect, challenge.ReasonProviderUnavailable},
		{"an empty body", answering(200, ``), challenge.ReasonProviderUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStandIn(t, tt.answer)
			c := newProviderChallenger(t, challenge.Turnstile, s)
			got := verify(t, c, "", "", challenge.Solution{Provider: challenge.Turnstile, Response: "XXXX.DUMMY.TOKEN.XXXX"})
			if got.Reason != tt.want {
				t.Fatalf("Reason = %q, want %q", got.Reason, tt.want)
			}
			if n := len(s.calls()); n != 1 {
				t.Fatalf("the stand-in was called %d times, want 1", n)
			}
		})
	}
}

func TestProvider_AProviderThatIsDownIsNeverAPass(t *testing.T) {
	s := newStandIn(t, answering(200, `{"success":true}`))
	c := newProviderChallenger(t, challenge.HCaptcha, s)
	s.Close() // connection refused from now on
	got := verify(t, c, "", "", challenge.Solution{Provider: challenge.HCaptcha, Response: "P1_eyJ0eXAiOiJKV1Q"})
	if got.Solved || got.Reason != challenge.ReasonProviderUnavailable {
		t.Fatalf("Verify = %+v, want provider_unavailable", got)
	}
}

func TestProvider_SiteverifyGetsTheSecretTheResponseAndTheRemoteIP(t *testing.T) {
	for _, k := range []challenge.Kind{challenge.Turnstile, challenge.HCaptcha, challenge.ReCAPTCHA} {
		t.Run(k.String(), func(t *testing.T) {
			s := newStandIn(t, answering(200, `{"success":true}`))
			c := newProviderChallenger(t, k, s)
			verify(t, c, "", "", challenge.Solution{Provider: k, Response: "resp-1", RemoteIP: netip.MustParseAddr("::ffff:192.0.2.7")})
			calls := s.calls()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			f := calls[0]
			if got := f.Get("secret"); got != "provider-secret-1" {
				t.Errorf("secret = %q", got)
			}
			if got := f.Get("response"); got != "resp-1" {
				t.Errorf("response = %q", got)
			}
			if got := f.Get("remoteip"); got != "192.0.2.7" {
				t.Errorf("remoteip = %q, want 192.0.2.7 (unmapped)", got)
			}
			if got, want := f.Get("sitekey"), map[bool]string{true: "site-key-1"}[k == challenge.HCaptcha]; got != want {
				t.Errorf("sitekey = %q, want %q", got, want)
			}
		})
	}
}

func TestProvider_AReplayedResponseIsRefusedEvenWhenTheProviderSaysYes(t *testing.T) {
	s := newStandIn(t, answering(200, `{"success":true}`)) // a provider that never refuses
	c := newProviderChallenger(t, challenge.ReCAPTCHA, s)
	sol := challenge.Solution{Provider: challenge.ReCAPTCHA, Response: "03AFcWeA-once"}
	if got := verify(t, c, "", "", sol); !got.Solved {
		t.Fatalf("first: %+v", got)
	}
	if got, want := verify(t, c, "", "", sol).Reason, challenge.ReasonReplayed; got != want {
		t.Fatalf("replay: Reason = %q, want %q", got, want)
	}
}

func TestProvider_NoCallForAMalformedResponse(t *testing.T) {
	s := newStandIn(t, answering(200, `{"success":true}`))
	c := newProviderChallenger(t, challenge.Turnstile, s)
	for _, resp := range []string{"", "has space", "new\nline", string(make([]byte, 9000))} {
		if got := verify(t, c, "", "", challenge.Solution{Provider: challenge.Turnstile, Response: resp}); got.Reason != challenge.ReasonMalformed {
			t.Errorf("response %.12q: Reason = %q, want malformed", resp, got.Reason)
		}
	}
	if n := len(s.calls()); n != 0 {
		t.Fatalf("the stand-in was called %d times, want 0", n)
	}
}

func TestProvider_AProviderTokenMustBeSolvedWithItsProvider(t *testing.T) {
	s := newStandIn(t, answering(200, `{"success":true}`))
	c := newProviderChallenger(t, challenge.Turnstile, s)
	ch := issue(t, c, challenge.IssueOptions{Kind: challenge.Turnstile})
	if ch.SiteKey != "site-key-1" || ch.Difficulty != 0 {
		t.Fatalf("Challenge = %+v", ch)
	}
	// A provider's token is no proof-of-work challenge: a nonce that
	// happens to hash to zeros does not solve it.
	if got := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: "0"}); got.Solved {
		t.Fatalf("a nonce on a provider's token: %+v", got)
	}
	if got := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Provider: challenge.Turnstile, Response: "r"}); !got.Solved {
		t.Fatalf("its provider's response: %+v", got)
	}
	if _, err := c.Issue(ctx, challenge.IssueOptions{Kind: challenge.HCaptcha}); err == nil {
		t.Fatal("Issue for a provider not configured succeeded")
	}
}
