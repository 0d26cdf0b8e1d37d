package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// counts is every rule's count in an explanation of the account at ip, as
// "rule=count" in the plan's order: what the next check would read.
func (h *harness) counts(account, ip string) string {
	h.t.Helper()
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: account, IP: ip})
	if err != nil {
		h.t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range x.Rules {
		fmt.Fprintf(&b, "%s=%d ", r.Rule, r.Count)
	}
	return b.String()
}

// accountCount is account_backoff's count of account.
func (h *harness) accountCount(account string) int {
	h.t.Helper()
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: account})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range x.Rules {
		if r.Rule == "account_backoff" {
			return r.Count
		}
	}
	h.t.Fatal("no account_backoff in the explanation")
	return 0
}

// lastReport is the Event of the latest report.
func (h *harness) lastReport() authguard.Event {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.events) - 1; i >= 0; i-- {
		if h.events[i].Call == "report" {
			return h.events[i]
		}
	}
	h.t.Fatal("no report event")
	return authguard.Event{}
}

// An app that passes the wrong token (another account's, another flow's,
// another tenant's, one it altered or made up) has a bug: before, each such
// report was counted as one without a token, so the attempt counted twice
// and nothing said so. Now it is refused before any store operation.
func TestReport_AForgedAttemptIsRefusedAndCountsNothing(t *testing.T) {
	h := newHarness(t, "")
	const account, ip = "frank@example.com", "192.0.2.5"
	own := h.check(authguard.CheckRequest{Account: account, IP: ip})
	if own.Action != authguard.Proceed {
		t.Fatalf("check: %v, want proceed", own.Action)
	}
	otherAccount := h.check(authguard.CheckRequest{Account: "mallory@example.com", IP: ip}).Attempt
	otherFlow := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: account, IP: ip}).Attempt
	otherTenant := h.check(authguard.CheckRequest{Tenant: "acme", Account: account, IP: ip}).Attempt
	tampered := []byte(own.Attempt)
	tampered[20] ^= 'A' ^ 'B' // a character of the device id: zeros, so 'A', without a device
	if tampered[20] == own.Attempt[20] {
		t.Fatal("bug in the test: nothing tampered")
	}
	before := h.counts(account, ip)
	if got := h.accountCount(account); got != 1 {
		t.Fatalf("account_backoff = %d after one check, want 1", got)
	}
	tests := []struct {
		name, token, detail string
	}{
		{"another account's token", otherAccount, "does not verify"},
		{"another flow's token", otherFlow, "does not verify"},
		{"another tenant's token", otherTenant, "does not verify"},
		{"an altered token", string(tampered), "does not verify"},
		{"a made-up token of the right shape", strings.Repeat("A", 56) + "." + strings.Repeat("A", 22), "does not verify"},
		{"garbage", "garbage", "is not an attempt token"},
		{"a JWT", "eyJhbGciOiJIUzI1NiJ9.e30.x", "is not an attempt token"},
		{"the token with a space", own.Attempt + " ", "is not an attempt token"},
	}
	calls := h.store.calls.Load()
	for _, tt := range tests {
		for _, outcome := range []authguard.Outcome{authguard.Failure, authguard.Success} {
			v, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: outcome, Attempt: tt.token})
			var ie *authguard.InputError
			if !errors.As(err, &ie) || !errors.Is(err, authguard.ErrInvalidInput) || ie.Field != "attempt" || ie.Missing {
				t.Errorf("%s, %v: %+v, %v; want an InputError on attempt", tt.name, outcome, v, err)
				continue
			}
			if !strings.Contains(ie.Detail, tt.detail) {
				t.Errorf("%s: detail %q, want it to say %q", tt.name, ie.Detail, tt.detail)
			}
			if strings.Contains(ie.Detail, tt.token) || strings.Contains(ie.Detail, account) {
				t.Errorf("%s: detail %q repeats the token or the account", tt.name, ie.Detail)
			}
			if v.DeviceToken != "" {
				t.Errorf("%s: a refused success returned a device token", tt.name)
			}
		}
	}
	if n := h.store.calls.Load() - calls; n != 0 {
		t.Errorf("refused reports reached the store %d times", n)
	}
	if after := h.counts(account, ip); after != before {
		t.Errorf("refused reports changed the counters:\nbefore %s\nafter  %s", before, after)
	}
	// The check's own token still settles the attempt, once.
	h.report(authguard.ReportRequest{Account: account, IP: ip, Outcome: authguard.Failure, Attempt: own.Attempt})
	if got := h.accountCount(account); got != 1 {
		t.Errorf("account_backoff = %d after the attempt's own report, want 1", got)
	}
}

// The two wrong passwords of issue 26: reported without their tokens they
// count as four failures (each check charged one, each report adds one).
// That stays — a report without a token may be all a caller has after a
// fallback proceed — but every such report now says so in its Event, which
// the API counts in tollgate_reports_without_attempt_total.
func TestReport_WithoutAnAttemptIsCountedAndVisible(t *testing.T) {
	h := newHarness(t, "")
	for range 2 {
		if v := h.check(authguard.CheckRequest{Account: "erin@example.com", IP: "192.0.2.4"}); v.Action != authguard.Proceed {
			t.Fatalf("check: %v", v.Action)
		}
		h.report(authguard.ReportRequest{Account: "erin@example.com", IP: "192.0.2.4", Outcome: authguard.Failure})
		if got := h.lastReport().Attempt; got != authguard.AttemptMissing {
			t.Errorf("Event.Attempt = %v, want missing", got)
		}
	}
	if got := h.accountCount("erin@example.com"); got != 4 {
		t.Errorf("two wrong passwords reported without their tokens: account_backoff = %d, want 4 (counted twice)", got)
	}
	// With their tokens, the same two count two, and say they settled.
	for range 2 {
		h.attempt("fred@example.com", "192.0.2.4", authguard.Failure, "")
		if got := h.lastReport().Attempt; got != authguard.AttemptSettled {
			t.Errorf("Event.Attempt = %v, want settled", got)
		}
	}
	if got := h.accountCount("fred@example.com"); got != 2 {
		t.Errorf("two wrong passwords reported with their tokens: account_backoff = %d, want 2", got)
	}
	// Five reports without a token and without checks still slow the account.
	for range 5 {
		h.report(authguard.ReportRequest{Account: "gus@example.com", IP: "192.0.2.4", Outcome: authguard.Failure})
	}
	if v := h.check(authguard.CheckRequest{Account: "gus@example.com", IP: "192.0.2.4"}); v.Action != authguard.Delay {
		t.Errorf("after 5 untokened failures: %v, want delay", v.Action)
	}
}

// A token of this call that has expired (its check was answered more than
// the flow's attempt_ttl ago) is not a caller's bug — a slow end user, a
// queued report — so it is not refused: the report is counted on its own,
// as one without a token, on the safe side (the charge stays and the
// failure counts again; a success refunds nothing), and its Event says so.
func TestReport_AnExpiredAttemptIsCountedOnItsOwnAndVisible(t *testing.T) {
	h := newHarness(t, "")
	v := h.check(authguard.CheckRequest{Account: "hal@example.com", IP: "192.0.2.6"})
	h.clock.Advance(authguard.DefaultAttemptTTL + time.Second)
	h.report(authguard.ReportRequest{Account: "hal@example.com", IP: "192.0.2.6", Outcome: authguard.Failure, Attempt: v.Attempt})
	if got := h.lastReport().Attempt; got != authguard.AttemptExpired {
		t.Errorf("Event.Attempt = %v, want expired", got)
	}
	if got := h.accountCount("hal@example.com"); got != 2 {
		t.Errorf("account_backoff = %d, want 2 (the check's charge and the report's own failure)", got)
	}
	v = h.check(authguard.CheckRequest{Account: "ida@example.com", IP: "192.0.2.6"})
	h.clock.Advance(authguard.DefaultAttemptTTL + time.Second)
	if r := h.report(authguard.ReportRequest{Account: "ida@example.com", IP: "192.0.2.6", Outcome: authguard.Success, Attempt: v.Attempt}); r.DeviceToken == "" {
		t.Error("a success with an expired token returned no device token")
	}
	if got := h.accountCount("ida@example.com"); got != 1 {
		t.Errorf("account_backoff = %d after a success with an expired token, want 1 (nothing refunded)", got)
	}
}
