package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// passStepUp passes the second factor of v when it is a step_up verdict
// (a step_up_passed report with its ticket) and returns that report's
// verdict; any other verdict is returned as it is.
func (h *harness) passStepUp(account, ip string, v authguard.Verdict) authguard.Verdict {
	h.t.Helper()
	if v.Action != authguard.StepUp {
		return v
	}
	return h.report(authguard.ReportRequest{Flow: "step_up", Account: account, IP: ip, Outcome: authguard.StepUpPassed, Attempt: v.Attempt})
}

// login is a check and, when it proceeds, a report of outcome with the
// breached flag and the device token.
func (h *harness) login(account, ip string, outcome authguard.Outcome, device string, breached bool) authguard.Verdict {
	h.t.Helper()
	v := h.check(authguard.CheckRequest{Account: account, IP: ip, DeviceToken: device})
	if v.Action != authguard.Proceed {
		return v
	}
	return h.report(authguard.ReportRequest{Account: account, IP: ip, Outcome: outcome, Attempt: v.Attempt, DeviceToken: device, Breached: breached})
}

// knownNetwork says whether Explain shows the network of ip known to the
// account.
func (h *harness) knownNetwork(account, ip string) bool {
	h.t.Helper()
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: account, IP: ip})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range x.Rules {
		if r.Facet == authguard.FacetKnownNetwork {
			return r.Over
		}
	}
	h.t.Fatal("Explain shows no known-network row")
	return false
}

func TestStepUp_AStufferWithTheRightBreachedPasswordGetsNoDeviceToken(t *testing.T) {
	h := newHarness(t, "")
	v := h.login("ann@example.com", "203.0.113.7", authguard.Success, "", true)
	if v.Action != authguard.StepUp || fmt.Sprint(v.Reasons) != "[breached_password]" {
		t.Fatalf("a right breached password: %v %v, want step_up [breached_password]", v.Action, v.Reasons)
	}
	if v.DeviceToken != "" || v.Attempt == "" {
		t.Fatalf("step_up with device token %q and ticket %q: want no device token and a ticket", v.DeviceToken, v.Attempt)
	}
	if h.knownNetwork("ann@example.com", "203.0.113.7") {
		t.Error("the stuffer's network became known to the account before any second factor")
	}
	// Without a second factor the stuffer is no closer: the next success
	// with the same password is stepped up again.
	if v := h.login("ann@example.com", "203.0.113.7", authguard.Success, "", true); v.Action != authguard.StepUp {
		t.Errorf("a second right breached password: %v, want step_up", v.Action)
	}
}

func TestStepUp_TheOwnerAtHerKnownDeviceIsNotSteppedUp(t *testing.T) {
	h := newHarness(t, "")
	const owner = "owner@example.com"
	first := h.login(owner, ownerAddr, authguard.Success, "", false)
	if first.Action != authguard.Proceed || first.DeviceToken == "" {
		t.Fatalf("the owner's first login: %v, want proceed with a device token", first.Action)
	}
	// Her account is under attack (past both thresholds), and her password
	// is in a breach corpus: at her known device none of it applies.
	for range 40 {
		h.timedGuess(owner)
	}
	for _, ip := range []string{ownerAddr, "198.51.100.77"} {
		v := h.login(owner, ip, authguard.Success, first.DeviceToken, true)
		if v.Action != authguard.Proceed || v.DeviceToken == "" {
			t.Errorf("the owner at her known device from %s: %v %v, want proceed with a device token", ip, v.Action, v.Reasons)
		}
	}
	// Without it, the same right password is stepped up, for every reason
	// (once the account's delay, which the attacker keeps running, is over).
	h.clock.Advance(h.check(authguard.CheckRequest{Account: owner, IP: "198.51.100.78"}).Delay)
	v := h.login(owner, "198.51.100.78", authguard.Success, "", true)
	if want := "[breached_password account_under_attack new_device_under_attack]"; v.Action != authguard.StepUp || fmt.Sprint(v.Reasons) != want {
		t.Errorf("the same password without her device: %v %v, want step_up %s", v.Action, v.Reasons, want)
	}
}

func TestStepUp_APassIssuesTheDeviceTokenAndMakesTheNetworkKnown(t *testing.T) {
	h := newHarness(t, "")
	const acct, ip = "bo@example.com", "198.51.100.5"
	v := h.login(acct, ip, authguard.Success, "", true)
	if v.Action != authguard.StepUp {
		t.Fatalf("got %v, want step_up", v.Action)
	}
	// Wrong codes first: the ticket stays usable until it expires.
	for range 2 {
		if r := h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpFailed, Attempt: v.Attempt}); r.Action != authguard.Proceed || r.DeviceToken != "" {
			t.Fatalf("a wrong code: %v with device token %q, want proceed without one", r.Action, r.DeviceToken)
		}
	}
	passed := h.passStepUp(acct, ip, v)
	if passed.Action != authguard.Proceed || passed.DeviceToken == "" || passed.Attempt != "" {
		t.Fatalf("a passed second factor: %+v, want proceed with a device token", passed)
	}
	if !h.knownNetwork(acct, ip) {
		t.Error("the network the second factor passed from is not known to the account")
	}
	// The token is login's: with it the same breached password goes in.
	if r := h.login(acct, "203.0.113.200", authguard.Success, passed.DeviceToken, true); r.Action != authguard.Proceed || r.DeviceToken == "" {
		t.Errorf("with the device token the pass issued: %v %v, want proceed", r.Action, r.Reasons)
	}
}

func TestStepUp_ATicketForAnotherAccountIsRefused(t *testing.T) {
	h := newHarness(t, "")
	ticket := h.login("alice", "203.0.113.7", authguard.Success, "", true).Attempt
	attemptToken := h.check(authguard.CheckRequest{Account: "alice", IP: "203.0.113.7"}).Attempt
	tampered := []byte(ticket)
	tampered[12] ^= 1
	tests := []struct {
		name    string
		req     authguard.ReportRequest
		field   string
		advance time.Duration
	}{
		{"another account's ticket", authguard.ReportRequest{Account: "bob", Outcome: authguard.StepUpPassed, Attempt: ticket}, "attempt", 0},
		{"another tenant's ticket", authguard.ReportRequest{Tenant: "other", Account: "alice", Outcome: authguard.StepUpPassed, Attempt: ticket}, "attempt", 0},
		{"an altered ticket", authguard.ReportRequest{Account: "alice", Outcome: authguard.StepUpPassed, Attempt: string(tampered)}, "attempt", 0},
		{"no ticket", authguard.ReportRequest{Account: "alice", Outcome: authguard.StepUpPassed}, "attempt", 0},
		{"an attempt token for a ticket", authguard.ReportRequest{Account: "alice", Outcome: authguard.StepUpPassed, Attempt: attemptToken}, "attempt", 0},
		{"a failure on the step-up flow", authguard.ReportRequest{Account: "alice", Outcome: authguard.Failure, Attempt: ticket}, "outcome", 0},
		{"a success on the step-up flow", authguard.ReportRequest{Account: "alice", Outcome: authguard.Success, Attempt: ticket}, "outcome", 0},
		{"a pass on the login flow", authguard.ReportRequest{Flow: "login", Account: "alice", Outcome: authguard.StepUpPassed, Attempt: ticket}, "outcome", 0},
		{"an expired ticket", authguard.ReportRequest{Account: "alice", Outcome: authguard.StepUpFailed, Attempt: ticket}, "attempt", 11 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.clock.Advance(tt.advance)
			if tt.req.Flow == "" {
				tt.req.Flow = "step_up"
			}
			tt.req.IP = "203.0.113.7"
			before := h.store.calls.Load()
			v, err := h.e.Report(context.Background(), tt.req)
			var ie *authguard.InputError
			if !errors.As(err, &ie) || ie.Field != tt.field {
				t.Fatalf("Report: %v %v, want an *InputError on %s", v, err, tt.field)
			}
			if h.store.calls.Load() != before {
				t.Error("a refused report reached the store")
			}
		})
	}
}

// A known device's ticket names it: a device token of another device of
// the account cannot take the pass for itself.
func TestStepUp_AKnownDevicesTicketIsNotAnotherDevicesPass(t *testing.T) {
	h := newHarness(t, "")
	const acct = "cy@example.com"
	mine := h.login(acct, ownerAddr, authguard.Success, "", false).DeviceToken
	other := h.login(acct, "198.51.100.9", authguard.Success, "", false).DeviceToken
	escalate(h, "203.0.113.50", 10)
	v := h.check(authguard.CheckRequest{Account: acct, IP: "203.0.113.50", DeviceToken: mine, CaptchaSolved: true})
	v = h.report(authguard.ReportRequest{Account: acct, IP: "203.0.113.50", Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: mine})
	if v.Action != authguard.StepUp || fmt.Sprint(v.Reasons) != "[address_escalated]" {
		t.Fatalf("a known device at an escalated address: %v %v, want step_up [address_escalated]", v.Action, v.Reasons)
	}
	_, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "step_up", Account: acct, IP: "203.0.113.50", Outcome: authguard.StepUpPassed, Attempt: v.Attempt, DeviceToken: other})
	if !errors.Is(err, authguard.ErrInvalidInput) {
		t.Errorf("another device's token with the ticket: %v, want an *InputError", err)
	}
}

// escalate makes n accounts fail with breached passwords from ip.
func escalate(h *harness, ip string, n int) {
	h.t.Helper()
	for i := range n {
		h.login(fmt.Sprintf("stuffed%d@example.com", i), ip, authguard.Failure, "", true)
	}
}

func TestStepUp_SecondFactorGuessesAreBoundedPerAccount(t *testing.T) {
	h := newHarness(t, "")
	const acct = "dee@example.com"
	ticket := h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
	// Guessing as fast as the step-up check allows, from a new address for
	// each guess: the account's counter holds them all.
	guessed := 0
	for i := range 200 {
		ip := fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
		v := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip})
		if v.Action != authguard.Proceed {
			if v.Action != authguard.Delay || !slices.Contains(v.Reasons, "account_backoff") {
				t.Fatalf("guess %d: %v %v, want delay [account_backoff]", i, v.Action, v.Reasons)
			}
			break
		} else if v.Attempt == "" {
			t.Fatal("a step-up check's proceed carries no attempt token: the try's report has no charge to settle")
		}
		h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpFailed, Attempt: stepUpTry(ticket, v)})
		guessed++
	}
	if free := builtinpolicy.Policy().Flow("step_up").Rule("account_backoff").Backoff.Free; guessed != free {
		t.Errorf("%d wrong codes before the account's delay, want its free %d", guessed, free)
	}
	// Waiting out every delay for a day: the backoff's daily bound.
	h2 := newHarness(t, "")
	n := 0
	for end := h2.clock.Now().Add(24 * time.Hour); h2.clock.Now().Before(end); {
		v := h2.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: fmt.Sprintf("198.18.%d.%d", n/250, n%250+1)})
		if v.Action == authguard.Delay {
			h2.clock.Advance(v.Delay)
			continue
		}
		if h2.clock.Now().After(end) {
			break
		}
		// A fresh ticket for each guess (a ticket lives 10 minutes): the
		// stuffer holds the password and signs in again at will.
		ticket := h2.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
		h2.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: "203.0.113.7", Outcome: authguard.StepUpFailed, Attempt: stepUpTry(ticket, v)})
		n++
	}
	bound := builtinpolicy.Policy().Flow("step_up").Rule("account_backoff").Backoff.MaxFailuresIn(24 * time.Hour)
	if n > bound || n < bound/2 {
		t.Errorf("%d wrong codes in 24 hours, want at most the account's bound %d (and near it)", n, bound)
	}
}

func TestStepUp_SecondFactorGuessesAreBoundedPerAddress(t *testing.T) {
	h := newHarness(t, "")
	const ip = "203.0.113.66"
	guessed := 0
	for i := range 100 {
		acct := fmt.Sprintf("victim%d@example.com", i)
		ticket := h.login(acct, "198.51.100.1", authguard.Success, "", true).Attempt
		v := h.check(authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip})
		if v.Action != authguard.Proceed {
			if !slices.Contains(v.Reasons, "ip_backoff") {
				t.Fatalf("guess %d: %v %v, want delay [ip_backoff]", i, v.Action, v.Reasons)
			}
			break
		}
		h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: authguard.StepUpFailed, Attempt: stepUpTry(ticket, v)})
		guessed++
	}
	if free := builtinpolicy.Policy().Flow("step_up").Rule("ip_backoff").Backoff.Free; guessed != free {
		t.Errorf("%d wrong codes for as many accounts from one address before its delay, want its free %d", guessed, free)
	}
}

func TestStepUp_SecondFactorFailuresNeverLockThePassword(t *testing.T) {
	h := newHarness(t, "")
	const acct = "eve@example.com"
	ticket := h.login(acct, "203.0.113.7", authguard.Success, "", true).Attempt
	for range 60 {
		h.report(authguard.ReportRequest{Flow: "step_up", Account: acct, IP: "203.0.113.7", Outcome: authguard.StepUpFailed, Attempt: ticket})
	}
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: acct})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range x.Rules {
		if r.Rule == "account_backoff" && r.Count != 0 {
			t.Errorf("login's account_backoff counts %d failures after wrong codes only", r.Count)
		}
	}
	for i := range 5 { // login's free attempts, untouched
		if v := h.check(authguard.CheckRequest{Account: acct, IP: "198.51.100.3"}); v.Action != authguard.Proceed {
			t.Fatalf("login check %d after 60 wrong codes: %v %v, want proceed", i, v.Action, v.Reasons)
		}
	}
}

func TestStuffing_ManyAccountsWithBreachedPasswordsFromOneAddressEscalate(t *testing.T) {
	h := newHarness(t, "")
	const ip = "203.0.113.80"
	// Failures with passwords that are not breached are spraying's to
	// count, not stuffing's.
	for i := range 8 {
		h.login(fmt.Sprintf("typo%d@example.com", i), ip, authguard.Failure, "", false)
	}
	if v := h.check(authguard.CheckRequest{Account: "next@example.com", IP: ip}); v.Action != authguard.Proceed {
		t.Fatalf("after 8 plain failures: %v %v, want proceed", v.Action, v.Reasons)
	}
	limit := builtinpolicy.Policy().Flow("login").Rule("credential_stuffing").Windows[0].Limit
	const other = "203.0.113.81"
	for i := range limit {
		if v := h.login(fmt.Sprintf("leak%d@example.com", i), other, authguard.Failure, "", true); v.Action != authguard.Proceed {
			t.Fatalf("breached failure %d: %v %v, want proceed", i, v.Action, v.Reasons)
		}
	}
	v := h.check(authguard.CheckRequest{Account: "next@example.com", IP: other})
	if v.Action != authguard.Captcha || fmt.Sprint(v.Reasons) != "[credential_stuffing]" {
		t.Fatalf("after %d accounts failed with breached passwords: %v %v, want captcha [credential_stuffing]", limit, v.Action, v.Reasons)
	}
	// A solved CAPTCHA goes ahead, and a right password (not breached) from
	// the escalated address is stepped up.
	v = h.check(authguard.CheckRequest{Account: "next@example.com", IP: other, CaptchaSolved: true})
	if v.Action != authguard.Proceed {
		t.Fatalf("with a solved CAPTCHA: %v %v", v.Action, v.Reasons)
	}
	r := h.report(authguard.ReportRequest{Account: "next@example.com", IP: other, Outcome: authguard.Success, Attempt: v.Attempt})
	if r.Action != authguard.StepUp || fmt.Sprint(r.Reasons) != "[address_escalated]" || r.DeviceToken != "" {
		t.Errorf("a right password from the escalated address: %v %v, want step_up [address_escalated] without a device token", r.Action, r.Reasons)
	}
}

// The issue's scenario at the engine: a stuffing run of leaked pairs from a
// pool of addresses, a tenth of them right (and breached, as every leaked
// password is), the stuffer solving every CAPTCHA; the owner of one of the
// accounts signs in at her known device throughout, with the same leaked
// password.
func TestStepUp_AStuffingRunOfLeakedPairsGetsNoDeviceTokenAndTheOwnerIsNotStopped(t *testing.T) {
	h := newHarness(t, "")
	const owner = "owner@example.com"
	token := h.login(owner, ownerAddr, authguard.Success, "", false).DeviceToken
	if token == "" {
		t.Fatal("the owner's first login returned no device token")
	}
	const pairs = 400
	right, steppedUp, tokens, ownerIn := 0, 0, 0, 0
	for i := range pairs {
		acct := fmt.Sprintf("leaked%d@example.com", i)
		if i%50 == 0 {
			acct = owner // the owner's own pair is in the leak
		}
		ip := fmt.Sprintf("198.51.100.%d", i%20+1)
		correct := i%10 == 0
		v := h.check(authguard.CheckRequest{Account: acct, IP: ip})
		if v.Action == authguard.Captcha {
			v = h.check(authguard.CheckRequest{Account: acct, IP: ip, CaptchaSolved: true})
		}
		if v.Action == authguard.Delay {
			h.clock.Advance(v.Delay)
			v = h.check(authguard.CheckRequest{Account: acct, IP: ip, CaptchaSolved: true})
		}
		if v.Action != authguard.Proceed {
			continue
		}
		outcome := authguard.Failure
		if correct {
			outcome, right = authguard.Success, right+1
		}
		r := h.report(authguard.ReportRequest{Account: acct, IP: ip, Outcome: outcome, Attempt: v.Attempt, Breached: true})
		if r.DeviceToken != "" {
			tokens++
		}
		if correct && r.Action == authguard.StepUp {
			steppedUp++
		}
		if i%10 == 5 {
			o := h.login(owner, ownerAddr, authguard.Success, token, true)
			if o.Action != authguard.Proceed || o.DeviceToken == "" {
				t.Fatalf("pair %d: the owner at her known device: %v %v, want proceed with a device token", i, o.Action, o.Reasons)
			}
			ownerIn++
		}
		h.clock.Advance(5 * time.Second)
	}
	t.Logf("%d pairs, %d right: %d stepped up, %d device tokens; the owner in %d of %d", pairs, right, steppedUp, tokens, ownerIn, pairs/10)
	if right < pairs/20 {
		t.Fatalf("only %d right pairs reached a report: the run must exercise them", right)
	}
	if steppedUp != right || tokens != 0 {
		t.Errorf("%d right pairs: %d answered step_up, %d device tokens issued, want every one stepped up and none issued", right, steppedUp, tokens)
	}
}

func TestStepUp_NoticesTellOfTheStepUpAndTheBreachedPassword(t *testing.T) {
	h := newHarness(t, "")
	const acct = "fay@example.com"
	h.login(acct, "203.0.113.7", authguard.Failure, "", true)
	v := h.login(acct, "203.0.113.7", authguard.Success, "", true)
	ups := h.notes.of(authguard.NoticeStepUp)
	if len(ups) != 1 || fmt.Sprint(ups[0].Details["reasons"]) != "[breached_password]" || ups[0].Subject != acct {
		t.Fatalf("login.step_up notices %+v, want one with reasons [breached_password]", ups)
	}
	if n := len(h.notes.of(authguard.NoticeNewDevice)); n != 0 {
		t.Errorf("%d login.new_device notices before the second factor passed, want 0", n)
	}
	if got := h.notes.of(authguard.NoticeBreachedPassword); len(got) != 2 || got[0].Details["outcome"] != "failure" || got[1].Details["outcome"] != "success" {
		t.Errorf("login.breached_password notices %+v, want one per report (failure, success)", got)
	}
	h.passStepUp(acct, "203.0.113.7", v)
	if n := len(h.notes.of(authguard.NoticeNewDevice)); n != 1 {
		t.Errorf("%d login.new_device notices once the second factor passed, want 1", n)
	}
	// A stuffer's thousands of reports on one account are a few notices.
	for range 50 {
		h.login(acct, "203.0.113.7", authguard.Failure, "", true)
		h.clock.Advance(time.Second)
	}
	if n := len(h.notes.of(authguard.NoticeBreachedPassword)); n > authguard.MaxNewDeviceNotices {
		t.Errorf("%d login.breached_password notices in one window, want at most %d", n, authguard.MaxNewDeviceNotices)
	}
}

func TestStepUp_PolicyErrorsNameTheSetting(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"flows:\n  login:\n    step_up: {flow: otp_verify}\n", `"otp_verify" is not a step-up flow`},
		{"flows:\n  login:\n    step_up: {new_device_failures: -1}\n", "must be between 0 (off)"},
		{"flows:\n  login:\n    step_up: {ttl: 0s}\n", "StepUp.TTL must be between"},
		{"flows:\n  step_up:\n    rules:\n      - {name: r, subject: ip, algorithm: sliding_log, counts: failure, windows: [{window: 1h, limit: 5}]}\n", "backoff counters"},
		{"flows:\n  login:\n    rules:\n      - {name: credential_stuffing, of: ip, subject: account}\n", "breached counts the accounts"},
		{"flows:\n  otp_send:\n    step_up: {flow: step_up}\n", "StepUp is for flows of checks and reports"},
	} {
		if _, err := policyfile.LoadPolicy([]byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error mentioning %q", tt.yaml, err, tt.want)
		}
	}
}
