package authguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Attack: a guesser hammers one factor of an account hoping to lock its
// owner out of every other. The built-in factor flows each keep counters
// of their own: a recovery-code guesser and a TOTP guesser, each held
// back on the account, slow neither the owner's passkey nor her password;
// and the passkey's cancels slow neither of the others.
func TestFactors_OneFactorsFailuresNeverSlowAnother(t *testing.T) {
	h := newHarness(t, "")
	const victim, guesser, owner = "victim@example.com", "198.51.100.7", "203.0.113.9"
	fail(h, "recovery_code", victim, guesser, 20)
	fail(h, "totp", victim, guesser, 20)
	fail(h, "passkey", victim, owner, 20)
	for _, tt := range []struct {
		flow string
		want authguard.Action
	}{
		{"recovery_code", authguard.Delay}, // held: its own failures
		{"totp", authguard.Delay},
		{"passkey", authguard.Delay},
		{"login", authguard.Proceed}, // no factor's failures reach the password
	} {
		if v := h.check(authguard.CheckRequest{Flow: tt.flow, Account: victim, IP: owner}); v.Action != tt.want {
			t.Errorf("%s: the owner's check got %v %v, want %v", tt.flow, v.Action, v.Reasons, tt.want)
		}
	}
	// A fresh account: each factor's failures alone, the others untouched.
	for _, flow := range []string{"recovery_code", "totp", "passkey"} {
		acct := flow + "@example.com"
		fail(h, flow, acct, guesser, 20)
		for _, other := range []string{"recovery_code", "totp", "passkey", "login"} {
			if other == flow {
				continue
			}
			if v := h.check(authguard.CheckRequest{Flow: other, Account: acct, IP: owner}); v.Action != authguard.Proceed {
				t.Errorf("after 20 %s failures, %s got %v %v, want proceed", flow, other, v.Action, v.Reasons)
			}
		}
	}
}

// A passkey failure is mostly its owner cancelling the prompt: 15
// attempts go ahead at once (14 cancels and the one that works), and 8
// quiet hours (a night) forget a day's cancels.
func TestFactors_APasskeyCancellerIsNotSlowed(t *testing.T) {
	h := newHarness(t, "")
	const owner, home = "owner@example.com", "203.0.113.9"
	fail(h, "passkey", owner, home, 14)
	if v := h.check(authguard.CheckRequest{Flow: "passkey", Account: owner, IP: home}); v.Action != authguard.Proceed {
		t.Errorf("after 14 cancels: %v %v, want proceed", v.Action, v.Reasons)
	}
	fail(h, "passkey", owner, home, 6)
	if v := h.check(authguard.CheckRequest{Flow: "passkey", Account: owner, IP: home}); v.Action != authguard.Delay {
		t.Errorf("after 20 cancels: %v, want a delay (a script hammering the ceremony is bounded)", v.Action)
	}
	h.clock.Advance(8 * time.Hour)
	fail(h, "passkey", owner, home, 14)
	if v := h.check(authguard.CheckRequest{Flow: "passkey", Account: owner, IP: home}); v.Action != authguard.Proceed {
		t.Errorf("after a night and 14 more cancels: %v %v, want proceed (the night forgot the day's)", v.Action, v.Reasons)
	}
}

// magic_link names no account (a failed link has none to name), so its
// bound is per address, and validate-config says so rather than only that
// no account is bounded.
func TestFactors_AMagicLinkIsBoundedPerAddress(t *testing.T) {
	h := newHarness(t, "")
	f := h.e.Policy().Flow("magic_link")
	if f == nil {
		t.Fatal("no built-in magic_link")
	}
	if got, want := f.BudgetLine(), "at most 162 failed checks per address in any 24h (ip_backoff 162)"; !strings.Contains(got, want) {
		t.Errorf("BudgetLine() = %q, want it to say %q", got, want)
	}
	const scanner = "198.51.100.7"
	proceeded := 0
	for range 200 {
		if v := h.check(authguard.CheckRequest{Flow: "magic_link", IP: scanner, CaptchaSolved: true}); v.Action == authguard.Proceed {
			proceeded++
			h.report(authguard.ReportRequest{Flow: "magic_link", IP: scanner, Outcome: authguard.Failure, Attempt: v.Attempt})
		}
	}
	if proceeded > 10 {
		t.Errorf("a scanner that never waits got %d link checks, want at most ip_backoff's free 10", proceeded)
	}
}

// Whether a success of one factor clears another's counters is the
// policy's (success_clears), off by default: by default the owner's
// passkey success leaves the password held by someone's guesses; with
// passkey's success_clears: [login] it unlocks the password, as Keycloak's
// passkey success does. Only a settled success clears: a success reported
// without its attempt token clears nothing.
func TestFactors_ASuccessClearsAnotherFactorOnlyWhenThePolicySaysSo(t *testing.T) {
	const victim, guesser, owner = "victim@example.com", "198.51.100.7", "203.0.113.9"
	passkeySuccess := func(h *harness, tokened bool) {
		t.Helper()
		v := h.check(authguard.CheckRequest{Flow: "passkey", Account: victim, IP: owner})
		if !tokened {
			v.Attempt = ""
		}
		h.report(authguard.ReportRequest{Flow: "passkey", Account: victim, IP: owner, Outcome: authguard.Success, Attempt: v.Attempt})
	}
	for _, tt := range []struct {
		name    string
		policy  string
		tokened bool
		want    authguard.Action
	}{
		{"the default clears nothing", "", true, authguard.Delay},
		{"success_clears: [login] unlocks the password", "flows:\n  passkey:\n    success_clears: [login]\n", true, authguard.Proceed},
		{"a success without its attempt token clears nothing", "flows:\n  passkey:\n    success_clears: [login]\n", false, authguard.Delay},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.policy)
			fail(h, "login", victim, guesser, 12)
			passkeySuccess(h, tt.tokened)
			if v := h.check(authguard.CheckRequest{Account: victim, IP: owner}); v.Action != tt.want {
				t.Errorf("login after the passkey success: %v %v, want %v", v.Action, v.Reasons, tt.want)
			}
			if got := ruleCount(t, h, authguard.ExplainRequest{Flow: "login", IP: guesser}, "ip_failures"); got != 12 {
				t.Errorf("the guesser's address holds %d failures, want 12 (never cleared)", got)
			}
		})
	}
}
