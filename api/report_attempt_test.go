package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// explainBody is what /v1/admin/explain says of account at ip: every
// rule's state, which a refused report must leave as it was.
func (h *harness) explainBody(t *testing.T, account, ip string) string {
	t.Helper()
	res := h.post(t, "/v1/admin/explain", map[string]any{"flow": "login", "account": account, "ip": ip})
	if res.status != http.StatusOK {
		t.Fatalf("explain = %d: %s", res.status, res.body)
	}
	return string(res.body)
}

// A report whose attempt token is not this call's is the caller's bug: a
// 400 problem on the field attempt, which the spec describes, that repeats
// neither the token nor the account, is the same whether the account has
// state or not, and changes no counter.
func TestReport_AForgedAttemptIsRefusedAndCountsNothing(t *testing.T) {
	h := newHarness(t)
	const ip = "203.0.113.9"
	alice := login("alice@example.com", ip)
	own := h.check(t, alice)
	h.report(t, testkit.With(alice, "outcome", "failure", "attempt", own.Attempt))
	own = h.check(t, alice)
	other := h.check(t, login("mallory@example.com", ip)).Attempt
	otherFlow := h.check(t, map[string]any{"flow": "otp_verify", "account": "alice@example.com", "ip": ip}).Attempt
	altered := []byte(own.Attempt)
	altered[30] ^= 'A' ^ 'B'
	before := h.explainBody(t, "alice@example.com", ip)
	keys := h.keys()

	problemOf := func(account, token string) (map[string]any, []byte) {
		t.Helper()
		res := h.post(t, "/v1/report", testkit.With(login(account, ip), "outcome", "failure", "attempt", token))
		if res.status != http.StatusBadRequest {
			t.Fatalf("status %d, want 400: %s", res.status, res.body)
		}
		if res.specErr != nil {
			t.Errorf("openapi.yaml rejects the request (it is the server that refuses this token): %v", res.specErr)
		}
		if ct := res.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("Content-Type = %q", ct)
		}
		p := res.json(t)
		if p["type"] != "https://tollgate.dev/problems/invalid-field" || p["field"] != "attempt" {
			t.Errorf("problem %v, want invalid-field on attempt", p)
		}
		if bytes.Contains(res.body, []byte(token)) || bytes.Contains(res.body, []byte(account)) {
			t.Errorf("problem %s repeats the token or the account", res.body)
		}
		delete(p, "request_id")
		b, _ := json.Marshal(p)
		return p, b
	}
	for _, tt := range []struct{ name, token, detail string }{
		{"another account's token", other, "does not verify"},
		{"another flow's token", otherFlow, "does not verify"},
		{"an altered token", string(altered), "does not verify"},
		{"garbage", "garbage", "is not an attempt token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := problemOf("alice@example.com", tt.token)
			if d, _ := p["detail"].(string); !strings.Contains(d, tt.detail) {
				t.Errorf("detail %q, want it to say %q", d, tt.detail)
			}
		})
	}
	if after := h.explainBody(t, "alice@example.com", ip); after != before {
		t.Errorf("refused reports changed the counters:\nbefore %s\nafter  %s", before, after)
	}
	if after := h.keys(); len(after) != len(keys) {
		t.Errorf("refused reports changed the store: %d keys before, %d after", len(keys), len(after))
	}
	// The same refusal, byte for byte, for an account with state and one
	// that was never seen: the 400 tells nothing of the account.
	_, known := problemOf("alice@example.com", other)
	_, unknown := problemOf("nobody-ever@example.com", other)
	if !bytes.Equal(known, unknown) {
		t.Errorf("the 400 differs by account:\n%s\n%s", known, unknown)
	}
	// The check's own token still settles its attempt.
	if v := h.report(t, testkit.With(alice, "outcome", "failure", "attempt", own.Attempt)); v.Action == "" {
		t.Error("no verdict")
	}
}

// The two wrong passwords of issue 26, reported without their tokens: still
// counted (four failures), and now visible — a metric per flow and one log
// line a minute per flow, with no identifier.
func TestReport_WithoutAnAttemptIsCountedAndVisible(t *testing.T) {
	h := newHarness(t)
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h.metrics.SetClock(func() time.Time { return now })
	metric := func() string {
		t.Helper()
		body := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
		m := regexp.MustCompile(`(?m)^tollgate_reports_without_attempt_total\{flow="login"\} (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics lacks tollgate_reports_without_attempt_total{flow=\"login\"}")
		}
		if !strings.Contains(body, `tollgate_reports_without_attempt_total{flow="otp_verify"} 0`) {
			t.Errorf("/metrics does not start otp_verify's series at 0")
		}
		return m[1]
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(l, "reports without a valid attempt token") {
				out = append(out, l)
			}
		}
		return out
	}
	if got := metric(); got != "0" {
		t.Fatalf("before any report: %s, want 0", got)
	}
	const account, ip = "erin.secret@example.com", "198.51.100.44"
	erin := login(account, ip)
	for range 2 {
		if v := h.check(t, erin); v.Action != "proceed" {
			t.Fatalf("check: %s", v.Action)
		}
		h.report(t, testkit.With(erin, "outcome", "failure"))
	}
	if x := h.explainBody(t, account, ip); !strings.Contains(x, `"rule":"account_backoff"`) || !regexp.MustCompile(`"rule":"account_backoff"[^}]*"count":4`).MatchString(x) {
		t.Errorf("two wrong passwords without their tokens: explain %s, want account_backoff at 4", x)
	}
	if got := metric(); got != "2" {
		t.Errorf("metric = %s, want 2", got)
	}
	if l := lines(); len(l) != 1 {
		t.Fatalf("%d log lines after 2 reports within a minute, want 1: %q", len(l), l)
	}
	// A report with its token is not counted there.
	v := h.check(t, login("fred@example.com", ip))
	h.report(t, testkit.With(login("fred@example.com", ip), "outcome", "failure", "attempt", v.Attempt))
	if got := metric(); got != "2" {
		t.Errorf("a tokened report moved the metric to %s", got)
	}
	now = now.Add(time.Minute)
	h.report(t, testkit.With(erin, "outcome", "success"))
	l := lines()
	if len(l) != 2 {
		t.Fatalf("%d log lines a minute later, want 2", len(l))
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(l[1]), &line); err != nil {
		t.Fatal(err)
	}
	if line["level"] != "WARN" || line["flow"] != "login" || line["missing"] != 2.0 || line["expired"] != 0.0 {
		t.Errorf("second line %v, want a warning on login with missing 2 (one since the first line, and this one)", line)
	}
	for _, secret := range []string{account, "erin.secret", ip} {
		if strings.Contains(strings.Join(l, "\n"), secret) {
			t.Errorf("a log line holds %q", secret)
		}
	}
}

// An expired token is counted on its own, as a missing one, in the same
// metric: it is not the caller's bug, so no 400.
func TestReport_AnExpiredAttemptIsCountedAndVisible(t *testing.T) {
	h := newHarness(t)
	acct := login("slow@example.com", "192.0.2.77")
	v := h.check(t, acct)
	h.clock.Advance(11 * time.Minute) // past the built-in attempt_ttl, 10m
	h.report(t, testkit.With(acct, "outcome", "failure", "attempt", v.Attempt))
	body := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	if !strings.Contains(body, `tollgate_reports_without_attempt_total{flow="login"} 1`) {
		t.Error("an expired token's report is not in tollgate_reports_without_attempt_total")
	}
	if !strings.Contains(h.logs.String(), `"expired":1`) {
		t.Error("no log line says the token expired")
	}
}
