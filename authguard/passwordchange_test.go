package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
)

// ruleCount is the Count of the named rule's own row (not a facet) in the
// flow's explanation of the account or address.
func ruleCount(t *testing.T, h *harness, req authguard.ExplainRequest, rule string) int {
	t.Helper()
	x, err := h.e.Explain(context.Background(), req)
	if err != nil {
		t.Fatalf("Explain: %v", err)
	}
	for _, r := range x.Rules {
		if r.Rule == rule && r.Facet == authguard.FacetNone {
			return r.Count
		}
	}
	t.Fatalf("no row of rule %s in %s", rule, req.Flow)
	return 0
}

// fail reports n failures of account from ip, each counted on its own (no
// check, no attempt token), as a guesser who never waits is counted.
func fail(h *harness, flow, account, ip string, n int) {
	h.t.Helper()
	for range n {
		h.report(authguard.ReportRequest{Flow: flow, Account: account, IP: ip, Outcome: authguard.Failure})
	}
}

// The owner, held back by someone's guesses, resets her password: the
// account's counters of the password go, and her next sign-in from a new
// address goes ahead at once, without an administrator's reset.
func TestPasswordChanged_ClearsTheAccountsPasswordCounters(t *testing.T) {
	h := newHarness(t, "")
	const victim, attacker, owner = "victim@example.com", "198.51.100.7", "203.0.113.9"
	fail(h, "login", victim, attacker, 12)
	if v := h.check(authguard.CheckRequest{Account: victim, IP: owner}); v.Action != authguard.Delay {
		t.Fatalf("before the change the owner got %v, want delay (the account is held)", v.Action)
	}
	v := h.report(authguard.ReportRequest{Account: victim, IP: owner, Outcome: authguard.PasswordChanged})
	if v.Action != authguard.Proceed || v.DeviceToken != "" {
		t.Errorf("password_changed answered %v with token %t, want proceed and no token", v.Action, v.DeviceToken != "")
	}
	if got := ruleCount(t, h, authguard.ExplainRequest{Flow: "login", Account: victim}, "account_backoff"); got != 0 {
		t.Errorf("account_backoff holds %d failures after the change, want 0", got)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: owner}); v.Action != authguard.Proceed {
		t.Errorf("after the change the owner got %v %v, want proceed", v.Action, v.Reasons)
	}
}

// Attack: a guesser hopes the owner's password change (or a report he
// could cause) wipes what he has spent. Only the caller can report it, as
// only the caller reports successes; and what it clears is the account's
// counters, never the address's: the guesser's address keeps every
// failure and stays past its limits, and a report that tries to ride on an
// attempt token (to settle a check as if it were a success) is refused.
func TestPasswordChanged_AnAttackerCannotUseItToResetHisGuesses(t *testing.T) {
	h := newHarness(t, "")
	const victim, attacker, owner = "victim@example.com", "198.51.100.7", "203.0.113.9"
	fail(h, "login", victim, attacker, 20)
	for i := range 12 { // and sprays: ip_spray's 10 accounts an hour
		fail(h, "login", fmt.Sprintf("user%d@example.com", i), attacker, 1)
	}
	byAddress := authguard.ExplainRequest{Flow: "login", IP: attacker}
	before := ruleCount(t, h, byAddress, "ip_failures")

	// Reported from the guesser's own address: a mailbox thief resets
	// from wherever he is, and the address must keep its counts all the
	// same.
	h.report(authguard.ReportRequest{Account: victim, IP: attacker, Outcome: authguard.PasswordChanged})

	if got := ruleCount(t, h, byAddress, "ip_failures"); got != before {
		t.Errorf("the attacker's address holds %d failures after the change, want %d (never cleared)", got, before)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: attacker}); v.Action == authguard.Proceed {
		t.Errorf("the attacker's next guess went ahead; his address is past ip_spray")
	}
	c := h.check(authguard.CheckRequest{Account: "someone@example.com", IP: owner})
	_, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: "someone@example.com", IP: owner,
		Outcome: authguard.PasswordChanged, Attempt: c.Attempt})
	var in *authguard.InputError
	if !errors.As(err, &in) || in.Field != "attempt" {
		t.Errorf("password_changed with an attempt token: %v, want an *InputError on attempt", err)
	}
}

// Attack: a thief of the owner's mailbox resets her password as often as
// he likes, then guesses at her second factor. A password change clears
// the password's flows only: the one-time code's counters (otp_verify, its
// own device trust) and the step-up flow's keep every wrong code.
func TestPasswordChanged_AMailboxThiefCannotRenewHisGuessesAtTheSecondFactor(t *testing.T) {
	h := newHarness(t, "")
	const victim, thief = "victim@example.com", "198.51.100.7"
	fail(h, "otp_verify", victim, thief, 8)
	h.report(authguard.ReportRequest{Account: victim, IP: thief, Outcome: authguard.PasswordChanged})
	if got := ruleCount(t, h, authguard.ExplainRequest{Flow: "otp_verify", Account: victim}, "account_backoff"); got != 8 {
		t.Errorf("otp_verify's account_backoff holds %d wrong codes after a password change, want 8", got)
	}
	_, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "step_up", Account: victim, IP: thief, Outcome: authguard.PasswordChanged})
	var in *authguard.InputError
	if !errors.As(err, &in) || in.Field != "outcome" {
		t.Errorf("password_changed on the step-up flow: %v, want an *InputError on outcome", err)
	}
}

// The change is told as account.reset, with the reason password_changed
// and the account as the caller sent it, for the receiver to mail the
// owner.
func TestPasswordChanged_IsToldAsAnAccountReset(t *testing.T) {
	h := newHarness(t, "")
	h.report(authguard.ReportRequest{Account: "Dave@example.com", IP: "203.0.113.9", Outcome: authguard.PasswordChanged, Ref: "u-3"})
	got := h.notes.of(authguard.NoticeReset)
	if len(got) != 1 {
		t.Fatalf("%d reset notices, want 1", len(got))
	}
	wantNotice(t, got[0], authguard.NoticeReset, "login", "", "password_changed")
	if got[0].Subject != "Dave@example.com" || got[0].Ref != "u-3" {
		t.Errorf("subject %q, ref %q; want the account as sent and the ref", got[0].Subject, got[0].Ref)
	}
}

// A known device keeps its token through the change (the default): its
// check is still answered as a known device's, which an attacker's
// failures never slow.
func TestPasswordChanged_KeepsDeviceTokens(t *testing.T) {
	h := newHarness(t, "")
	const owner, home = "owner@example.com", "203.0.113.9"
	token := h.attempt(owner, home, authguard.Success, "").DeviceToken
	if token == "" {
		t.Fatal("no device token from a success")
	}
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	fail(h, "login", owner, "198.51.100.7", 12)
	if v := h.check(authguard.CheckRequest{Account: owner, IP: "192.0.2.1", DeviceToken: token}); v.Action != authguard.Proceed {
		t.Errorf("the owner's device after the change and 12 failures got %v %v, want proceed", v.Action, v.Reasons)
	}
}
