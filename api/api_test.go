package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

func login(account, ip string) map[string]any {
	return map[string]any{"flow": "login", "account": account, "ip": ip}
}

// TestLogin_CheckReportCheck is the README walk-through: failures reported
// with their attempt tokens make a delay appear; waiting it out lets the
// next attempt through; a success clears the counter and returns a device
// token.
func TestLogin_CheckReportCheck(t *testing.T) {
	h := newHarness(t)
	alice := login("alice@example.com", "203.0.113.7")
	for i := 1; i <= 6; i++ {
		v := h.check(t, alice)
		if v.Action != "proceed" || v.Attempt == "" {
			t.Fatalf("check %d = %+v, want proceed with an attempt token", i, v)
		}
		r := h.report(t, testkit.With(alice, "outcome", "failure", "attempt", v.Attempt))
		if r.Attempt != "" || r.DeviceToken != "" {
			t.Errorf("failure report %d carries tokens: %+v", i, r)
		}
		if i < 5 && r.Action != "proceed" {
			t.Fatalf("report %d = %+v, want proceed (5 free failures)", i, r)
		}
		if i == 5 {
			// The verdict for the 6th attempt.
			if r.Action != "delay" || r.DelayMS != 1000 || r.RetryAfter != 1 || !slices.Equal(r.Reasons, []string{"account_backoff"}) {
				t.Fatalf("report 5 = %+v, want a 1s account_backoff delay", r)
			}
			v := h.check(t, alice)
			if v.Action != "delay" || v.Attempt != "" || v.DelayMS != 1000 {
				t.Fatalf("6th check = %+v, want the same delay without attempt", v)
			}
			// Hammering during the delay does not extend it.
			h.check(t, alice)
			h.clock.Advance(time.Second)
		}
	}
	// The 6th failure doubled the delay.
	v := h.check(t, alice)
	if v.Action != "delay" || v.DelayMS != 2000 || v.RetryAfter != 2 {
		t.Fatalf("check after 6 failures = %+v, want a 2s delay", v)
	}
	h.clock.Advance(2 * time.Second)
	v = h.check(t, alice)
	if v.Action != "proceed" {
		t.Fatalf("check after the delay = %+v, want proceed", v)
	}
	// Six failures and no device token from a network the account never
	// signed in from: the right password is answered step_up, and the
	// second factor's pass returns the device token.
	r := h.report(t, testkit.With(alice, "outcome", "success", "attempt", v.Attempt))
	if r.Action != "step_up" || r.DeviceToken != "" || r.Attempt == "" || !slices.Equal(r.Reasons, []string{"new_device_under_attack"}) {
		t.Fatalf("success report = %+v, want step_up [new_device_under_attack] with a ticket", r)
	}
	r = h.report(t, testkit.With(alice, "flow", "step_up", "outcome", "step_up_passed", "attempt", r.Attempt))
	if r.Action != "proceed" || r.DeviceToken == "" {
		t.Fatalf("step_up_passed report = %+v, want proceed with a device token", r)
	}
	if v := h.check(t, testkit.With(alice, "device_token", r.DeviceToken)); v.Action != "proceed" {
		t.Fatalf("check with the device token = %+v", v)
	}
}

// TestSpray_OneIPManyAccountsNeedsCaptcha: the 11th distinct account failing
// from one address needs a CAPTCHA, which a solved one lets through.
func TestSpray_OneIPManyAccountsNeedsCaptcha(t *testing.T) {
	h := newHarness(t)
	for i := range 10 {
		acct := login("user"+string(rune('a'+i))+"@example.com", "198.51.100.9")
		v := h.check(t, acct)
		if v.Action != "proceed" {
			t.Fatalf("account %d: %+v", i, v)
		}
		h.report(t, testkit.With(acct, "outcome", "failure", "attempt", v.Attempt))
	}
	next := login("victim@example.com", "198.51.100.9")
	v := h.check(t, next)
	if v.Action != "captcha" || !slices.Equal(v.Reasons, []string{"ip_spray"}) {
		t.Fatalf("11th account = %+v, want captcha for ip_spray", v)
	}
	if v := h.check(t, testkit.With(next, "captcha_solved", true)); v.Action != "proceed" {
		t.Fatalf("after a solved captcha = %+v, want proceed", v)
	}
}

func TestVerdict_FieldOrderIsFixed(t *testing.T) {
	h := newHarness(t)
	res := h.post(t, "/v1/check", login("a@example.com", "192.0.2.1"))
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var raw json.RawMessage
		dec.Decode(&raw)
	}
	if want := []string{"action", "delay_ms", "retry_after", "reasons", "attempt", "device_token"}; !slices.Equal(keys, want) {
		t.Errorf("keys = %v, want %v", keys, want)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func TestRequestID(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{"well-formed is kept", "req-42_a.b", true},
		{"64 characters is kept", strings.Repeat("a", 64), true},
		{"65 characters is replaced", strings.Repeat("a", 65), false},
		{"spaces are replaced", "req 42", false},
		{"log injection is replaced", "x\",\"level\":\"ERROR", false},
		{"absent is generated", "", false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.sent != "" {
				hdr = []string{"X-Request-Id", tt.sent}
			}
			res := h.do(t, http.MethodGet, "/healthz", "", "", hdr...)
			got := res.header.Get("X-Request-Id")
			if tt.kept && got != tt.sent {
				t.Errorf("X-Request-Id = %q, want %q", got, tt.sent)
			}
			if !tt.kept && (got == tt.sent || seen[got]) {
				t.Errorf("X-Request-Id = %q, want a fresh one", got)
			}
			seen[got] = true
		})
	}
	// A problem names the id too.
	res := h.do(t, http.MethodGet, "/nope", "", "", "X-Request-Id", "trace-1")
	if p := res.json(t); p["request_id"] != "trace-1" {
		t.Errorf("problem request_id = %v", p["request_id"])
	}
}

func TestOperations(t *testing.T) {
	h := newHarness(t)
	if res := h.do(t, http.MethodGet, "/healthz", "", ""); res.status != 200 || res.json(t)["status"] != "ok" {
		t.Errorf("/healthz = %d %s", res.status, res.body)
	}
	if res := h.do(t, http.MethodGet, "/readyz", "", ""); res.status != 200 || res.json(t)["status"] != "ready" {
		t.Errorf("/readyz = %d %s", res.status, res.body)
	}
	if res := h.do(t, http.MethodGet, "/openapi.yaml", "", ""); res.status != 200 || !bytes.Equal(res.body, tollgate.OpenAPI) {
		t.Errorf("/openapi.yaml = %d, %d bytes", res.status, len(res.body))
	}
	// A closed store is not ready, but the process is alive.
	h.store.Close()
	if res := h.do(t, http.MethodGet, "/readyz", "", ""); res.status != 503 || res.json(t)["type"] != "https://tollgate.dev/problems/store-unavailable" {
		t.Errorf("/readyz with a closed store = %d %s", res.status, res.body)
	}
	if res := h.do(t, http.MethodGet, "/healthz", "", ""); res.status != 200 {
		t.Errorf("/healthz with a closed store = %d", res.status)
	}
}

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	acct := login("m@example.com", "192.0.2.5")
	for range 6 {
		h.report(t, testkit.With(acct, "outcome", "failure"))
	}
	h.do(t, http.MethodPost, "/v1/check", "text/plain", "x")
	res := h.do(t, http.MethodGet, "/metrics", "", "")
	if res.status != 200 {
		t.Fatalf("/metrics = %d", res.status)
	}
	body := string(res.body)
	for _, want := range []string{
		`tollgate_verdicts_total{action="proceed",call="report",flow="login"} 4`,
		`tollgate_verdicts_total{action="delay",call="report",flow="login"} 2`,
		`tollgate_verdict_reasons_total{action="delay",call="report",flow="login",reason="account_backoff"} 2`,
		`tollgate_store_errors_total{call="check",flow="otp_verify",kind="timeout"} 0`,
		`tollgate_store_duration_seconds_count{call="report"} 6`,
		`tollgate_http_problems_total{type="unsupported-media-type"} 1`,
		`tollgate_http_request_duration_seconds_count{code="200",method="POST",route="/v1/report"} 6`,
		`tollgate_http_request_duration_seconds_count{code="415",method="POST",route="/v1/check"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// OpenMetrics when asked.
	res = h.do(t, http.MethodGet, "/metrics", "", "", "Accept", "application/openmetrics-text; version=1.0.0")
	if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("OpenMetrics Content-Type = %q", ct)
	}
}

// TestOTPSend_WalkThrough is README's walk-through: a code, a resend too
// soon, a resend 30 seconds later, a premium-rate number; every answer is
// the uniform verdict the spec describes, and the sends are counted by
// channel, country and action.
func TestOTPSend_WalkThrough(t *testing.T) {
	h := newHarness(t)
	send := map[string]any{"destination": "+44 7400 123456", "channel": "sms", "ip": "203.0.113.7"}
	post := func(body map[string]any) verdict {
		t.Helper()
		res := h.post(t, "/v1/otp/send", body)
		if res.status != 200 {
			t.Fatalf("send %v = %d %s", body, res.status, res.body)
		}
		return res.verdict(t)
	}
	if v := post(send); v.Action != "proceed" || v.Attempt != "" {
		t.Fatalf("first code: %+v", v)
	}
	if v := post(send); v.Action != "delay" || v.RetryAfter != 30 || v.Reasons[0] != "destination_backoff" {
		t.Fatalf("resend at once: %+v, want a 30 s delay by destination_backoff", v)
	}
	if v := post(testkit.With(send, "destination", "+44 909 8790000", "channel", "voice")); v.Action != "deny" || v.Reasons[0] != "number_type" {
		t.Fatalf("premium-rate number: %+v, want deny number_type", v)
	}
	if v := post(testkit.With(send, "destination", "Alice@Example.COM", "channel", "email")); v.Action != "proceed" {
		t.Fatalf("e-mail: %+v", v)
	}
	// The user types the code: a check and a success report on otp_verify
	// that names where the code went.
	verify := map[string]any{"flow": "otp_verify", "account": "+447400123456", "ip": "203.0.113.7"}
	v := h.check(t, verify)
	if v.Action != "proceed" {
		t.Fatalf("verify check: %+v", v)
	}
	if r := h.report(t, testkit.With(verify, "outcome", "success", "attempt", v.Attempt, "destination", "+44 7400 123456", "channel", "sms")); r.Action != "proceed" {
		t.Fatalf("verify report: %+v", r)
	}
	body := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	for _, want := range []string{
		`tollgate_otp_sends_total{action="proceed",channel="sms",country="GB",flow="otp_send"} 1`,
		`tollgate_otp_sends_total{action="delay",channel="sms",country="GB",flow="otp_send"} 1`,
		`tollgate_otp_sends_total{action="deny",channel="voice",country="GB",flow="otp_send"} 1`,
		`tollgate_otp_sends_total{action="proceed",channel="email",country="none",flow="otp_send"} 1`,
		`tollgate_verdicts_total{action="deny",call="send",flow="otp_send"} 1`,
		`tollgate_otp_spend_total{channel="sms",country="GB",flow="otp_send"} 10`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestLogs_NeverCarryIdentifiers: one JSON line per request with the
// request id, route, status, flow, action, reasons and latency, and no
// account, IP, token or fingerprint anywhere.
func TestLogs_NeverCarryIdentifiers(t *testing.T) {
	h := newHarness(t)
	const account, ip, fp = "Secret.Person@example.com", "203.0.113.77", "fp-9f86d081884c7d65"
	body := testkit.With(login(account, ip), "password_fingerprint", fp)
	v := h.check(t, body)
	r := h.report(t, testkit.With(body, "outcome", "success", "attempt", v.Attempt))
	h.do(t, http.MethodPost, "/v1/check", "application/json", `{"flow":"nope","account":"`+account+`","ip":"`+ip+`"}`)
	h.do(t, http.MethodPost, "/v1/check", "application/json", `{"flow":"login","account":"`+account+`","ip":"`+ip+`","`+account+`":1}`)

	logs := h.logs.String()
	for _, secret := range []string{account, strings.ToLower(account), ip, fp, v.Attempt, r.DeviceToken, "nope"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want 4:\n%s", len(lines), logs)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "level", "msg", "request_id", "method", "route", "status", "latency_ms", "flow", "action", "reasons"} {
		if _, ok := first[k]; !ok {
			t.Errorf("log line lacks %q: %s", k, lines[0])
		}
	}
	if first["route"] != "/v1/check" || first["flow"] != "login" || first["action"] != "proceed" {
		t.Errorf("log line = %s", lines[0])
	}
	if !strings.Contains(lines[2], `"problem":"invalid-field"`) || strings.Contains(lines[2], `"flow"`) {
		t.Errorf("rejected request's log line = %s", lines[2])
	}
}

// failingStore fails every call, like an unreachable Redis.
type failingStore struct{}

var errDown = errors.New("teststore: connection refused")

func (failingStore) Do(context.Context, []authguard.Op) ([]authguard.Result, error) {
	return nil, errDown
}
func (failingStore) Ping(context.Context) error { return errDown }
func (failingStore) Close() error               { return nil }

// panickingStore panics on Do: a bug in the layers below the handler.
type panickingStore struct{ failingStore }

func (panickingStore) Do(context.Context, []authguard.Op) ([]authguard.Result, error) {
	panic("teststore: bug with alice@example.com in it")
}

func withStore(s authguard.Store) harnessOption {
	return func(c *harnessConfig) { c.engine.Store = s }
}

// TestStoreOutage_IsAVerdictNotAnError: a failing store gives the fail
// mode's verdict (login fails open onto the fallback, otp_verify fails
// closed), counted in the metrics, never an HTTP error.
func TestStoreOutage_IsAVerdictNotAnError(t *testing.T) {
	h := newHarness(t, withStore(failingStore{}))
	if v := h.check(t, login("a@example.com", "192.0.2.1")); v.Action != "proceed" {
		t.Errorf("fail-open login = %+v, want proceed from the fallback", v)
	}
	otp := map[string]any{"flow": "otp_verify", "account": "a@example.com", "ip": "192.0.2.1"}
	if v := h.check(t, otp); v.Action != "delay" || !slices.Equal(v.Reasons, []string{"unavailable"}) {
		t.Errorf("fail-closed otp_verify = %+v, want delay for unavailable", v)
	}
	body := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	for _, want := range []string{
		`tollgate_store_errors_total{call="check",flow="login",kind="unavailable"} 1`,
		`tollgate_fallback_answers_total{call="check",flow="login"} 1`,
		`tollgate_fail_closed_answers_total{call="check",flow="otp_verify"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestPanic_IsALogged500Problem: a bug answers one request with a 500
// problem that the spec describes, and is logged without the panic's text.
func TestPanic_IsALogged500Problem(t *testing.T) {
	h := newHarness(t, withStore(panickingStore{}))
	res := h.post(t, "/v1/check", login("alice@example.com", "192.0.2.1"))
	if res.status != 500 || res.json(t)["type"] != "https://tollgate.dev/problems/internal" {
		t.Fatalf("panic answered %d %s", res.status, res.body)
	}
	if strings.Contains(string(res.body), "alice") || strings.Contains(string(res.body), "teststore") {
		t.Errorf("500 body leaks the panic: %s", res.body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"msg":"panic"`) || !strings.Contains(logs, `"status":500`) {
		t.Errorf("panic not logged:\n%s", logs)
	}
	if strings.Contains(logs, "alice") {
		t.Errorf("log repeats the panic value:\n%s", logs)
	}
}

// TestShadowMode_AnswersProceedButCounts: a shadow flow always answers
// proceed, and the metrics show what it would have answered.
func TestShadowMode_AnswersProceedButCounts(t *testing.T) {
	h := newHarness(t, withPolicy("flows:\n  login:\n    mode: shadow\n"))
	acct := login("s@example.com", "192.0.2.1")
	for range 7 {
		if v := h.report(t, testkit.With(acct, "outcome", "failure")); v.Action != "proceed" {
			t.Fatalf("shadow answered %+v", v)
		}
	}
	body := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	if want := `tollgate_shadow_verdicts_total{action="delay",call="report",flow="login"} 3`; !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestAuth_RefusalsAreTheProblemsTheSpecDescribes: with a verifier, a call
// without a token is a 401 unauthenticated problem with WWW-Authenticate,
// one whose token lacks the verdicts scope a 403 forbidden problem, both
// as openapi.yaml describes them and neither reaching the store; a token
// that allows the call gets its verdict, in its tenant.
func TestAuth_RefusalsAreTheProblemsTheSpecDescribes(t *testing.T) {
	h, sign := authHarness(t)
	body := `{"flow":"login","account":"a@example.com","ip":"192.0.2.1"}`
	for _, c := range []struct {
		name, header, problem string
		status                int
	}{
		{"no token", "", "unauthenticated", 401},
		{"not a bearer token", "Basic YTpi", "unauthenticated", 401},
		{"an admin-only token", "Bearer " + sign(auth.ScopeAdminRead), "forbidden", 403},
	} {
		keys := h.keys()
		var hdr []string
		if c.header != "" {
			hdr = []string{"Authorization", c.header}
		}
		res := h.do(t, http.MethodPost, "/v1/check", "application/json", body, hdr...)
		if res.status != c.status || res.json(t)["type"] != "https://tollgate.dev/problems/"+c.problem {
			t.Errorf("%s: %d %s", c.name, res.status, res.body)
		}
		if (c.status == 401) != strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, res.header.Get("WWW-Authenticate"))
		}
		if !slices.Equal(keys, h.keys()) {
			t.Errorf("%s: the store changed", c.name)
		}
	}
	res := h.do(t, http.MethodPost, "/v1/check", "application/json", body, "Authorization", "Bearer "+sign(auth.ScopeVerdicts))
	if res.status != 200 || res.verdict(t).Action != "proceed" {
		t.Fatalf("a good token: %d %s", res.status, res.body)
	}
	if keys := h.keys(); len(keys) == 0 || !strings.Contains(strings.Join(keys, " "), ":shop:login:") {
		t.Errorf("keys %v, want the shop tenant's", keys)
	}
}

// TestAdmin_Explain: after five failures, explain shows the account's
// counter and the delay a check would get, as openapi.yaml describes it,
// without the identifier in the log; an admin route refuses a verdicts
// token when callers authenticate.
func TestAdmin_Explain(t *testing.T) {
	h := newHarness(t)
	acct := login("x@example.com", "192.0.2.5")
	for range 6 {
		h.report(t, testkit.With(acct, "outcome", "failure"))
	}
	res := h.post(t, "/v1/admin/explain", map[string]any{"flow": "login", "account": "x@example.com"})
	if res.status != 200 {
		t.Fatalf("explain: %d %s", res.status, res.body)
	}
	var x struct {
		Verdict struct {
			Action  string
			Reasons []string
		}
		Rules []struct {
			Rule   string
			Count  int
			WaitMS int64 `json:"wait_ms"`
		}
	}
	if err := json.Unmarshal(res.body, &x); err != nil {
		t.Fatal(err)
	}
	if x.Verdict.Action != "delay" || len(x.Rules) == 0 || x.Rules[0].Rule != "account_backoff" || x.Rules[0].Count != 6 || x.Rules[0].WaitMS <= 0 {
		t.Errorf("explanation %+v", x)
	}
	if strings.Contains(h.logs.String(), "x@example.com") {
		t.Error("the log holds the account")
	}

	ha, sign := authHarness(t)
	for _, c := range []struct {
		scope auth.Scope
		want  int
	}{{auth.ScopeVerdicts, 403}, {auth.ScopeAdminRead, 200}} {
		tok := sign(c.scope)
		res := ha.do(t, http.MethodPost, "/v1/admin/explain", "application/json", `{"flow":"login","ip":"192.0.2.5"}`, "Authorization", "Bearer "+tok)
		if res.status != c.want {
			t.Errorf("a %s token: %d %s, want %d", c.scope, res.status, res.body, c.want)
		}
	}
}

// TestAdmin_Reset: a reset unlocks the account, answers how many keys it
// deleted, writes one audit line with the reason and no identifier, and
// needs a reason; an admin:read token cannot reset.
func TestAdmin_Reset(t *testing.T) {
	h := newHarness(t)
	acct := login("y@example.com", "192.0.2.6")
	for range 6 {
		h.report(t, testkit.With(acct, "outcome", "failure"))
	}
	if res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "account": "y@example.com"}); res.status != 400 {
		t.Errorf("a reset without a reason: %d", res.status)
	}
	res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "account": "y@example.com", "reason": "ticket 12"})
	if res.status != 200 || !strings.Contains(string(res.body), `"deleted":`) || strings.Contains(string(res.body), `"deleted":0`) {
		t.Fatalf("reset: %d %s", res.status, res.body)
	}
	if v := h.check(t, acct); v.Action != "proceed" {
		t.Errorf("after the reset: %+v", v)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"msg":"admin reset"`) || !strings.Contains(logs, `"reason":"ticket 12"`) || !strings.Contains(logs, `"subject":"account"`) {
		t.Errorf("no audit line in %s", logs)
	}
	if strings.Contains(logs, "y@example.com") {
		t.Error("the log holds the account")
	}
	body := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	if !strings.Contains(body, `tollgate_admin_writes_total{action="reset"} 1`) {
		t.Error("no admin write counted")
	}

	ha, sign := authHarness(t)
	tok := sign(auth.ScopeAdminRead)
	if res := ha.do(t, http.MethodPost, "/v1/admin/reset", "application/json", `{"flow":"login","account":"a","reason":"r"}`, "Authorization", "Bearer "+tok); res.status != 403 {
		t.Errorf("an admin:read token resetting: %d", res.status)
	}
}

// authHarness is a harness whose API requires bearer tokens of tenant
// "shop" (issuer "iss"), and a signer of such tokens with the given scopes.
func authHarness(t *testing.T) (*harness, func(scopes ...auth.Scope) string) {
	t.Helper()
	key := auth.SigningKey{ID: "k", Alg: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef")}
	v, err := auth.New(auth.Config{Audience: "tollgate", Keys: []auth.Key{{ID: "k", Alg: "HS256", Secret: key.Secret}},
		Tenants: []auth.Tenant{{Name: "shop", Issuer: "iss"}}})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(scopes ...auth.Scope) string {
		tok, err := auth.Sign(key, "iss", "tollgate", "shop", "desk", scopes, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	return newHarness(t, withVerifier(v), func(c *harnessConfig) { c.engine.Tenants = []string{"shop"} }), sign
}
