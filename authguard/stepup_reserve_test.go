package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// stepUpTry is a step_up report's attempt for one try: the login's ticket
// and, when the try's step_up check proceeded, that check's attempt token.
func stepUpTry(ticket string, check authguard.Verdict) string {
	if check.Attempt == "" {
		return ticket
	}
	return ticket + authguard.StepUpAttemptSeparator + check.Attempt
}

// stepUpCount is the step_up flow's account_backoff count for account, as
// Explain shows it.
func stepUpCount(t testing.TB, h *harness, account string) int {
	t.Helper()
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "step_up", Account: account, IP: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range x.Rules {
		if r.Rule == "account_backoff" && r.Facet == authguard.FacetNone {
			return r.Count
		}
	}
	t.Fatal("Explain shows no account_backoff row on step_up")
	return 0
}

// An attacker with the password signs in again and again for tickets, and
// then sends each burst of code tries at the same moment, every try its own
// step_up check, before any failure is reported: the checks must reserve,
// so that a burst is bounded like tries sent one at a time, and the day's
// tries stay within the flow's bound.
func TestStepUp_TriesSentAtOnceAreBoundedPerAccount(t *testing.T) {
	h := newHarness(t, "")
	bound, ok := h.e.Policy().Flow("step_up").MaxFailuresPerDay()
	if !ok {
		t.Fatal("the built-in step_up flow has no daily bound")
	}
	const acct, burst = "frank@example.com", 200
	tickets := make([]string, burst)
	for i := range tickets {
		v := h.login(acct, "203.0.113.7", authguard.Success, "", true)
		if v.Action != authguard.StepUp {
			t.Fatalf("login %d: %v %v, want step_up", i, v.Action, v.Reasons)
		}
		tickets[i] = v.Attempt
	}
	tried, first := 0, -1
	end := h.clock.Now().Add(24 * time.Hour)
	for round := 0; round < 2000 && h.clock.Now().Before(end); round++ {
		// The burst: every check first, from an address of its own (the
		// account's counter is the one that must hold), then every report.
		checks := make([]authguard.Verdict, burst)
		for i := range checks {
			ip := fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
			checks[i] = h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip})
		}
		var next authguard.Verdict
		n := 0
		for i, c := range checks {
			if c.Action != authguard.Proceed {
				continue
			}
			n++
			if round > 0 { // a ticket lives 10 minutes: sign in again for one
				tickets[i] = h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
			}
			ip := fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
			next = h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpFailed,
				Attempt: stepUpTry(tickets[i], c)})
		}
		if first < 0 {
			first = n
		}
		tried += n
		wait := next.Delay
		for _, c := range checks {
			if c.Action == authguard.Delay && (n == 0 || wait == 0) {
				wait = max(wait, c.Delay)
			}
		}
		if wait <= 0 {
			wait = time.Second
		}
		h.clock.Advance(wait)
	}
	t.Logf("%d of %d tries sent at once went ahead; %d in 24 hours (the flow's bound %d)", first, burst, tried, bound)
	if tried > bound {
		t.Errorf("%d wrong codes tried in 24 hours in bursts sent at once (%d in the first), want at most the flow's bound %d", tried, first, bound)
	}
	if free := h.e.Policy().Flow("step_up").Rule("account_backoff").Backoff.Free; first > free {
		t.Errorf("%d of %d tries sent at once went ahead, want at most account_backoff's free %d", first, burst, free)
	}
}

// The owner mistypes 3 codes, waits out the delay, and passes: the pass
// refunds its check's charge, and each failure reported with its check's
// attempt token counts once, even when the report is sent twice.
func TestStepUp_APassIsRefundedAndAFailureWithItsAttemptCountsOnce(t *testing.T) {
	h := newHarness(t, "")
	const acct, ip = "grace@example.com", "203.0.113.9"
	ticket := h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
	for i := range 3 {
		c := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip})
		if c.Action != authguard.Proceed || c.Attempt == "" {
			t.Fatalf("try %d: %v %v with attempt %q, want proceed with an attempt token", i, c.Action, c.Reasons, c.Attempt)
		}
		if got, want := stepUpCount(t, h, acct), i+1; got != want {
			t.Fatalf("after try %d's check the counter holds %d, want %d (the try charged before its code is verified)", i, got, want)
		}
		r := authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpFailed, Attempt: stepUpTry(ticket, c)}
		h.report(r)
		h.report(r) // sent again: nothing left to settle
		if got, want := stepUpCount(t, h, acct), i+1; got != want {
			t.Fatalf("after try %d's failure, reported twice, the counter holds %d, want %d", i, got, want)
		}
	}
	if c := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip}); c.Action != authguard.Delay {
		t.Fatalf("the 4th try at once: %v %v, want delay", c.Action, c.Reasons)
	} else {
		h.clock.Advance(c.Delay)
	}
	c := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip})
	if c.Action != authguard.Proceed {
		t.Fatalf("after the delay: %v %v, want proceed", c.Action, c.Reasons)
	}
	if got := stepUpCount(t, h, acct); got != 4 {
		t.Fatalf("the 4th try's check: the counter holds %d, want 4", got)
	}
	v := h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpPassed, Attempt: stepUpTry(ticket, c)})
	if v.Action != authguard.Proceed || v.DeviceToken == "" {
		t.Fatalf("the pass: %v with device token %q, want proceed with one", v.Action, v.DeviceToken)
	}
	if got := stepUpCount(t, h, acct); got != 3 {
		t.Errorf("after the pass the counter holds %d, want the 3 wrong codes only (the pass refunded)", got)
	}
}

// A caller that does not carry the step_up check's attempt token into its
// report is counted as before the check reserved, and never less: a
// failure adds one to what its check charged, a failure with no check adds
// one, and a pass refunds nothing it did not charge.
func TestStepUp_AReportWithoutTheChecksAttemptIsCountedOnItsOwn(t *testing.T) {
	h := newHarness(t, "")
	const acct, ip = "heidi@example.com", "203.0.113.9"
	ticket := h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
	failed := authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpFailed, Attempt: ticket}

	h.report(failed) // no check at all
	if got := stepUpCount(t, h, acct); got != 1 {
		t.Fatalf("a failure with no check: the counter holds %d, want 1", got)
	}
	if c := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip}); c.Action != authguard.Proceed {
		t.Fatalf("check: %v %v, want proceed", c.Action, c.Reasons)
	}
	next := h.report(failed) // the check's attempt left out
	if got := stepUpCount(t, h, acct); got != 3 {
		t.Fatalf("a checked failure reported without its attempt: the counter holds %d, want 3 (1, the check's charge, and the failure)", got)
	}
	h.clock.Advance(next.Delay)
	if c := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip}); c.Action != authguard.Proceed {
		t.Fatalf("check: %v %v, want proceed", c.Action, c.Reasons)
	}
	v := h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpPassed, Attempt: ticket})
	if v.DeviceToken == "" {
		t.Fatalf("a pass without the check's attempt: %v with no device token, want one", v.Action)
	}
	if got := stepUpCount(t, h, acct); got != 4 {
		t.Errorf("a pass without its check's attempt: the counter holds %d, want 4 (nothing refunded)", got)
	}
	h.mu.Lock()
	last := h.events[len(h.events)-1]
	h.mu.Unlock()
	if last.Call != "report" || last.Attempt != authguard.AttemptMissing {
		t.Errorf("the last event is %s with attempt %v, want a report counted on its own (missing)", last.Call, last.Attempt)
	}
}

// A token after the ticket that is not this account's step_up check's is
// the caller's bug: refused on "attempt" before any store call, and nothing
// is counted (a guesser cannot settle, or dodge, another try's charge).
func TestStepUp_AnAttemptAfterTheTicketThatIsNotThisTrysIsRefused(t *testing.T) {
	h := newHarness(t, "")
	const acct, ip = "ivan@example.com", "203.0.113.9"
	ticket := h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
	h.login("judy@example.com", "203.0.113.7", authguard.Success, "", true)
	login := h.check(authguard.CheckRequest{Account: acct, IP: "203.0.113.7"}).Attempt
	others := h.check(authguard.CheckRequest{Flow: "step_up", Account: "judy@example.com", IP: ip}).Attempt
	mine := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip}).Attempt
	altered := []byte(mine)
	altered[len(altered)-2] ^= 1
	before := stepUpCount(t, h, acct)
	for _, tt := range []struct{ name, attempt string }{
		{"another account's step_up check's", ticket + authguard.StepUpAttemptSeparator + others},
		{"the login check's", ticket + authguard.StepUpAttemptSeparator + login},
		{"an altered one", ticket + authguard.StepUpAttemptSeparator + string(altered)},
		{"not a token", ticket + authguard.StepUpAttemptSeparator + "x"},
		{"the ticket twice", ticket + authguard.StepUpAttemptSeparator + ticket},
		{"a ticket after the token", mine + authguard.StepUpAttemptSeparator + ticket},
	} {
		for _, out := range []authguard.Outcome{authguard.StepUpFailed, authguard.StepUpPassed} {
			_, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: out, Attempt: tt.attempt})
			var ie *authguard.InputError
			if !errors.As(err, &ie) || ie.Field != "attempt" {
				t.Errorf("%s, %v: %v, want an InputError on attempt", tt.name, out, err)
			}
		}
	}
	if got := stepUpCount(t, h, acct); got != before {
		t.Errorf("refused reports changed the counter from %d to %d", before, got)
	}
}

// FuzzStepUpReportAttempt: whatever a step-up report's attempt holds, the
// report is answered or refused on "attempt" (never another error, never a
// panic), and a refused one counts nothing.
func FuzzStepUpReportAttempt(f *testing.F) {
	h := newHarness(f, "")
	const acct, ip = "mallory@example.com", "203.0.113.9"
	ticket := h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
	try := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip}).Attempt
	for _, s := range []string{ticket, ticket + "," + try, ticket + ",", "," + try, ",", try + "," + ticket, ticket + "," + try + "," + try, ""} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, attempt string, passed bool) {
		out := authguard.StepUpFailed
		if passed {
			out = authguard.StepUpPassed
		}
		before := stepUpCount(t, h, acct)
		_, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: out, Attempt: attempt})
		if err == nil {
			return
		}
		var ie *authguard.InputError
		if !errors.As(err, &ie) || ie.Field != "attempt" {
			t.Fatalf("attempt %q: %v, want an answer or an InputError on attempt", attempt, err)
		}
		if got := stepUpCount(t, h, acct); got != before {
			t.Fatalf("attempt %q: refused, yet the counter went from %d to %d", attempt, before, got)
		}
	})
}
