package client_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// endUserAnswer is everything an end user receives: status, every header line and
// the body, in a stable order.
func endUserAnswer(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(res.Status + "\n")
	keys := make([]string, 0, len(res.Header))
	for k := range res.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range res.Header[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	b.WriteString("\n" + string(body))
	return b.String()
}

func formRequest(account, password string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/login",
		strings.NewReader("account="+account+"&password="+password))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func TestRespond(t *testing.T) {
	tests := []struct {
		name    string
		v       wire.Verdict
		want    string // the whole answer; "" for nothing written
		proceed bool
		hold    time.Duration
	}{
		{
			name: "delay 2.5s: 429, Retry-After and RateLimit in whole seconds rounded up",
			v:    wire.Verdict{Action: wire.ActionDelay, DelayMS: 2500, RetryAfter: 3, Reasons: []string{"account_backoff"}},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 99\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=3\nRetry-After: 3\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 3 seconds."}` + "\n",
		},
		{
			name: "delay under a second: Retry-After is at least 1",
			v:    wire.Verdict{Action: wire.ActionDelay, DelayMS: 1, RetryAfter: 1},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 98\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=1\nRetry-After: 1\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 1 second."}` + "\n",
		},
		{
			name: "delay with retry_after 0: still 1",
			v:    wire.Verdict{Action: wire.ActionDelay},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 98\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=1\nRetry-After: 1\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 1 second."}` + "\n",
		},
		{
			name: "retry_after short of delay_ms: delay_ms rounded up wins",
			v:    wire.Verdict{Action: wire.ActionDelay, DelayMS: 60001, RetryAfter: 60},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 100\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=61\nRetry-After: 61\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 61 seconds."}` + "\n",
		},
		{
			name: "an absurd delay is capped at 2^31 seconds",
			v:    wire.Verdict{Action: wire.ActionDelay, DelayMS: 1 << 62, RetryAfter: 1 << 60},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 108\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=2147483648\nRetry-After: 2147483648\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 2147483648 seconds."}` + "\n",
		},
		{
			name: "an unknown action fails closed, as a delay",
			v:    wire.Verdict{Action: "maybe", RetryAfter: 2},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 99\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=2\nRetry-After: 2\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 2 seconds."}` + "\n",
		},
		{
			name: "a zero verdict fails closed, as a 1 s delay",
			v:    wire.Verdict{},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 98\nContent-Type: application/problem+json\n" +
				"Ratelimit: \"login\";r=0;t=1\nRetry-After: 1\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 1 second."}` + "\n",
		},
		{
			name: "captcha without a handler: a 429 problem asking for one, no Retry-After",
			v:    wire.Verdict{Action: wire.ActionCaptcha, Reasons: []string{"ip_spray"}},
			want: "429 Too Many Requests\n" +
				"Cache-Control: no-store\nContent-Length: 107\nContent-Type: application/problem+json\n\n" +
				`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Complete a CAPTCHA to continue."}` + "\n",
		},
		{
			name: "deny without a handler: 202 Accepted, as a sent code",
			v:    wire.Verdict{Action: wire.ActionDeny, Reasons: []string{"number_type"}},
			want: "202 Accepted\nCache-Control: no-store\nContent-Length: 0\n\n",
		},
		{
			name:    "proceed: nothing written",
			v:       wire.Verdict{Action: wire.ActionProceed, Attempt: "AQAAAABr"},
			proceed: true,
		},
		{
			name:    "queued proceed: hold delay_ms",
			v:       wire.Verdict{Action: wire.ActionProceed, DelayMS: 1500, RetryAfter: 2},
			proceed: true,
			hold:    1500 * time.Millisecond,
		},
		{
			name:    "proceed with a negative delay_ms: no hold",
			v:       wire.Verdict{Action: wire.ActionProceed, DelayMS: -5},
			proceed: true,
		},
	}
	var rs client.Responder // the zero Responder has every default
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			got := rs.Respond(rec, formRequest("alice", "x"), tt.v)
			if got.Proceed != tt.proceed || got.Hold != tt.hold {
				t.Errorf("Respond = %+v, want {Proceed:%v Hold:%v}", got, tt.proceed, tt.hold)
			}
			if tt.want == "" {
				if rec.Body.Len() != 0 || len(rec.Header()) != 0 || rec.Flushed {
					t.Errorf("proceed wrote %q", endUserAnswer(t, rec))
				}
				return
			}
			if got, want := endUserAnswer(t, rec), tt.want; got != want {
				t.Errorf("answer:\n%s\nwant:\n%s", got, want)
			}
			if got := rec.Header().Get("RateLimit-Policy"); got != "" {
				t.Errorf("RateLimit-Policy = %q, want none: there is no quota to tell", got)
			}
		})
	}
}

// TestRespond_UnknownAccountAndWrongPasswordGetIdenticalBytes: the answer
// to an account that does not exist is byte for byte the answer to a wrong
// password, whatever else differs, when tollgate's verdict is the same.
func TestRespond_UnknownAccountAndWrongPasswordGetIdenticalBytes(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "<p>Please complete the challenge.</p>")
	})
	sent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "If this number can receive codes, one is on its way.")
	})
	configured, err := client.NewResponder(client.ResponderConfig{
		Policy: "otp_send", ProblemType: "https://example.com/problems/slow-down", Title: "Slow down",
		Captcha: page, Accepted: sent,
	})
	if err != nil {
		t.Fatal(err)
	}
	responders := map[string]*client.Responder{"defaults": {}, "configured": configured}

	// What differs between the two attempts: the account, whether it
	// exists, the password, the address, cookies, and the verdict's reasons
	// and tokens (which tollgate may fill differently for logging).
	wrongPassword := func() *http.Request {
		r := formRequest("alice%40example.com", "hunter2")
		r.RemoteAddr = "203.0.113.7:4711"
		r.AddCookie(&http.Cookie{Name: client.DefaultDeviceCookieName, Value: "eyJ.dev.ice"})
		return r
	}
	unknownAccount := func() *http.Request {
		r := formRequest("nobody%40example.com", "letmein")
		r.RemoteAddr = "[2001:db8::9]:1234"
		return r
	}
	verdicts := []wire.Verdict{
		{Action: wire.ActionDelay, DelayMS: 2500, RetryAfter: 3},
		{Action: wire.ActionDelay, DelayMS: 1800000, RetryAfter: 1800},
		{Action: wire.ActionCaptcha},
		{Action: wire.ActionDeny},
		{Action: wire.ActionProceed},
		{Action: wire.ActionProceed, DelayMS: 700, RetryAfter: 1},
	}
	for name, rs := range responders {
		for _, v := range verdicts {
			known, unknown := v, v
			known.Reasons = []string{"account_backoff"}
			known.Attempt = "AQAAAABrknown"
			unknown.Reasons = []string{"ip_failures", "password_spray"}
			unknown.DeviceToken = "eyJ.unknown"
			a, b := httptest.NewRecorder(), httptest.NewRecorder()
			ra := rs.Respond(a, wrongPassword(), known)
			rb := rs.Respond(b, unknownAccount(), unknown)
			if ra != rb {
				t.Errorf("%s, %s: results %+v and %+v differ", name, v.Action, ra, rb)
			}
			if got, want := endUserAnswer(t, b), endUserAnswer(t, a); got != want {
				t.Errorf("%s, %s: unknown account answered\n%s\nwrong password answered\n%s", name, v.Action, got, want)
			}
		}
	}
}

// TestSend_DenyLooksLikeASentCode: a send tollgate refused gets exactly the
// answer of one that went out, so an attacker cannot tell which numbers are
// refused from the answer.
func TestSend_DenyLooksLikeASentCode(t *testing.T) {
	sent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"sent"}`)
	})
	configured, err := client.NewResponder(client.ResponderConfig{Accepted: sent})
	if err != nil {
		t.Fatal(err)
	}
	for name, rs := range map[string]*client.Responder{"defaults": nil, "configured": configured} {
		sentRec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/otp", nil)
		if res := rs.Respond(sentRec, r, wire.Verdict{Action: wire.ActionProceed}); !res.Proceed {
			t.Fatalf("%s: proceed did not proceed", name)
		}
		rs.Accept(sentRec, r) // the code went out
		deniedRec := httptest.NewRecorder()
		if res := rs.Respond(deniedRec, r, wire.Verdict{Action: wire.ActionDeny, Reasons: []string{"number_type"}}); res.Proceed {
			t.Fatalf("%s: deny proceeded", name)
		}
		if got, want := endUserAnswer(t, deniedRec), endUserAnswer(t, sentRec); got != want {
			t.Errorf("%s: deny answered\n%s\na sent code\n%s", name, got, want)
		}
	}
}

func TestRespond_CaptchaHandlerWritesTheAnswer(t *testing.T) {
	var calls int
	rs, err := client.NewResponder(client.ResponderConfig{
		Captcha: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			if r.URL.Path != "/login" {
				t.Errorf("Captcha got path %q", r.URL.Path)
			}
			w.WriteHeader(http.StatusForbidden)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	if got := rs.Respond(rec, formRequest("a", "b"), wire.Verdict{Action: wire.ActionCaptcha}); got.Proceed {
		t.Error("captcha proceeded")
	}
	if calls != 1 || rec.Code != http.StatusForbidden {
		t.Errorf("Captcha called %d times, status %d; want once, 403", calls, rec.Code)
	}
	if got := rec.Header().Get("Retry-After"); got != "" {
		t.Errorf("Respond added Retry-After %q to the handler's answer", got)
	}
}

// A Delay hook writes the page, and only the wait decides it: the fields
// that say when to come back are Respond's, set before the hook runs, the
// same for an unknown account as for a wrong password.
func TestRespond_DelayHookWritesThePageWithRespondsFields(t *testing.T) {
	var got []int
	rs, err := client.NewResponder(client.ResponderConfig{
		Policy: "signin",
		Delay: func(w http.ResponseWriter, r *http.Request, seconds int) {
			got = append(got, seconds)
			if w.Header().Get("Retry-After") != strconv.Itoa(seconds) {
				t.Errorf("Delay(%d) called before Retry-After was set: %q", seconds, w.Header().Get("Retry-After"))
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "<p>Wait %d seconds.</p>", seconds)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, account := range []string{"alice", "nobody-at-all"} {
		rec := httptest.NewRecorder()
		v := wire.Verdict{Action: wire.ActionDelay, DelayMS: 2500, RetryAfter: 3, Reasons: []string{"account_backoff"}}
		if account == "nobody-at-all" {
			v.Reasons = []string{"ip_rate"}
		}
		if res := rs.Respond(rec, formRequest(account, "pw"), v); res.Proceed {
			t.Fatal("a delay proceeded")
		}
		h := rec.Header()
		if rec.Code != http.StatusTooManyRequests || h.Get("Retry-After") != "3" || h.Get("RateLimit") != `"signin";r=0;t=3` || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: status %d, headers %v", account, rec.Code, h)
		}
		bodies = append(bodies, fmt.Sprint(h, rec.Body.String()))
	}
	if !slices.Equal(got, []int{3, 3}) {
		t.Errorf("Delay called with %v, want [3 3]", got)
	}
	if bodies[0] != bodies[1] || !strings.Contains(bodies[0], "Wait 3 seconds") {
		t.Errorf("answers differ or lack the page:\n%s\n%s", bodies[0], bodies[1])
	}
	// A captcha or a deny never reaches the hook.
	for _, a := range []string{wire.ActionCaptcha, wire.ActionDeny} {
		rs.Respond(httptest.NewRecorder(), formRequest("a", "b"), wire.Verdict{Action: a})
	}
	if len(got) != 2 {
		t.Errorf("Delay called for a captcha or a deny: %v", got)
	}
}

func TestRespond_ConfiguredProblemAndPolicy(t *testing.T) {
	rs, err := client.NewResponder(client.ResponderConfig{
		Policy: `a "quoted" \ name`, ProblemType: "https://example.com/problems/slow-down", Title: "Slow down",
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	rs.Respond(rec, formRequest("a", "b"), wire.Verdict{Action: wire.ActionDelay, DelayMS: 30000, RetryAfter: 30})
	want := "429 Too Many Requests\n" +
		"Cache-Control: no-store\nContent-Length: 119\nContent-Type: application/problem+json\n" +
		`Ratelimit: "a \"quoted\" \\ name";r=0;t=30` + "\nRetry-After: 30\n\n" +
		`{"type":"https://example.com/problems/slow-down","title":"Slow down","status":429,"detail":"Try again in 30 seconds."}` + "\n"
	if got := endUserAnswer(t, rec); got != want {
		t.Errorf("answer:\n%s\nwant:\n%s", got, want)
	}
}

func TestNewResponder_RefusesWhatCannotBeSent(t *testing.T) {
	tests := []struct {
		name string
		cfg  client.ResponderConfig
		ok   bool
	}{
		{"defaults", client.ResponderConfig{}, true},
		{"a flow name", client.ResponderConfig{Policy: "otp_send"}, true},
		{"64 characters", client.ResponderConfig{Policy: strings.Repeat("p", 64)}, true},
		{"65 characters", client.ResponderConfig{Policy: strings.Repeat("p", 65)}, false},
		{"non-ASCII policy", client.ResponderConfig{Policy: "connexión"}, false},
		{"control character in policy", client.ResponderConfig{Policy: "login\r\nX-Injected: 1"}, false},
		{"absolute problem type", client.ResponderConfig{ProblemType: "urn:example:slow-down"}, true},
		{"relative problem type", client.ResponderConfig{ProblemType: "/problems/slow-down"}, false},
		{"unparsable problem type", client.ResponderConfig{ProblemType: "http://[::1"}, false},
		{"problem type with a space", client.ResponderConfig{ProblemType: "https://example.com/a b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.NewResponder(tt.cfg)
			if got := err == nil; got != tt.ok {
				t.Errorf("NewResponder(%+v) error = %v, want ok %v", tt.cfg, err, tt.ok)
			}
		})
	}
}

func BenchmarkRespond_Delay(b *testing.B) {
	var rs client.Responder
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	v := wire.Verdict{Action: wire.ActionDelay, DelayMS: 2500, RetryAfter: 3}
	b.ReportAllocs()
	for b.Loop() {
		rs.Respond(httptest.NewRecorder(), r, v)
	}
}
