package authguard_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// want checks a verdict's action, delay and reasons.
func want(t *testing.T, what string, v authguard.Verdict, action authguard.Action, delay time.Duration, reasons ...authguard.Reason) {
	t.Helper()
	if v.Action != action || v.Delay != delay || !slices.Equal(v.Reasons, reasons) {
		t.Errorf("%s: %v %v %v, want %v %v %v", what, v.Action, v.Delay, v.Reasons, action, delay, reasons)
	}
}

// A flow of one sliding log on the client's address: it needs no account,
// counts every check it admits, and delays exactly until the oldest entry
// leaves the window.
func TestRules_APIFlowWithASlidingLogPerIP(t *testing.T) {
	h := newHarness(t, `
flows:
  api:
    rules:
      - {name: per_ip, subject: ip, algorithm: sliding_log, window: 1m, limit: 3, past: delay}
`)
	req := authguard.CheckRequest{Flow: "api", IP: "203.0.113.7"}
	for i := range 3 {
		want(t, "check", h.check(req), authguard.Proceed, 0)
		if i < 2 {
			h.clock.Advance(10 * time.Second)
		}
	}
	want(t, "4th check 20s after the 1st", h.check(req), authguard.Delay, 40*time.Second, "per_ip")
	want(t, "another address", h.check(authguard.CheckRequest{Flow: "api", IP: "203.0.113.8"}), authguard.Proceed, 0)
	h.clock.Advance(40 * time.Second)
	want(t, "once the 1st left the window", h.check(req), authguard.Proceed, 0)

	if _, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: "api"}); !errors.Is(err, authguard.ErrInvalidInput) {
		t.Errorf("api check without an ip: %v, want invalid input (the flow counts ip)", err)
	}
	if _, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: "login", IP: "203.0.113.7"}); !errors.Is(err, authguard.ErrInvalidInput) {
		t.Errorf("login check without an account: %v, want invalid input", err)
	}
}

// counts: proceed takes units only from calls answered Proceed: a call that
// another rule refuses gets its units back. counts: check keeps them.
func TestRules_CountsProceedGivesBackWhatARefusedCallTook(t *testing.T) {
	for _, tt := range []struct {
		counts   string
		bProceed bool
	}{{"proceed", true}, {"check", false}} {
		t.Run(tt.counts, func(t *testing.T) {
			h := newHarness(t, `
flows:
  api:
    rules:
      - {name: per_account, subject: account, algorithm: token_bucket, limit: 1, rate: 1/h}
      - {name: per_ip, subject: ip, algorithm: fixed_window, window: 1h, limit: 2, counts: `+tt.counts+`}
`)
			check := func(acct string) authguard.Verdict {
				return h.check(authguard.CheckRequest{Flow: "api", Account: acct, IP: "198.51.100.4"})
			}
			want(t, "a", check("a"), authguard.Proceed, 0)
			want(t, "a again", check("a"), authguard.Delay, time.Hour, "per_account")
			if got := check("b").Action == authguard.Proceed; got != tt.bProceed {
				t.Errorf("b proceeded: %v, want %v (the refused call's unit %s)", got, tt.bProceed, map[bool]string{true: "given back", false: "kept"}[tt.bProceed])
			}
		})
	}
}

// A leaky bucket queues: an admitted call proceeds after its place in the
// queue; past the capacity it is refused until a place frees.
func TestRules_LeakyBucketAnswersItsPlaceInTheQueue(t *testing.T) {
	h := newHarness(t, `
flows:
  api:
    rules:
      - {name: shaped, subject: ip, algorithm: leaky_bucket, limit: 3, rate: 2/s}
`)
	req := authguard.CheckRequest{Flow: "api", IP: "192.0.2.1"}
	want(t, "1st", h.check(req), authguard.Proceed, 0)
	want(t, "2nd", h.check(req), authguard.Proceed, 500*time.Millisecond, "shaped")
	want(t, "3rd", h.check(req), authguard.Proceed, time.Second, "shaped")
	v := h.check(req)
	want(t, "4th, the queue full", v, authguard.Delay, 500*time.Millisecond, "shaped")
	if v.Attempt != "" {
		t.Error("a refused call carries an attempt token")
	}
}

// past: captcha asks for a CAPTCHA past the limit, and a solved one lets
// the call through.
func TestRules_RateRuleAsksForACaptcha(t *testing.T) {
	h := newHarness(t, `
flows:
  signup:
    rules:
      - {name: signups, subject: ip, algorithm: sliding_counter, window: 1h, limit: 2, past: captcha}
`)
	req := authguard.CheckRequest{Flow: "signup", IP: "192.0.2.9"}
	h.check(req)
	h.check(req)
	want(t, "3rd", h.check(req), authguard.Captcha, 0, "signups")
	req.CaptchaSolved = true
	want(t, "3rd with a solved CAPTCHA", h.check(req), authguard.Proceed, 0)
}

// A cost takes several units: 2 of 5 per call, so the third call is refused
// and a cheaper one still fits.
func TestRules_CostTakesSeveralUnits(t *testing.T) {
	h := newHarness(t, `
flows:
  export:
    rules:
      - {name: exports, subject: account, algorithm: fixed_window, window: 1h, limit: 5, cost: 2}
`)
	req := authguard.CheckRequest{Flow: "export", Account: "ann"}
	want(t, "1st", h.check(req), authguard.Proceed, 0)
	want(t, "2nd", h.check(req), authguard.Proceed, 0)
	if v := h.check(req); v.Action != authguard.Delay || v.Delay != time.Hour {
		t.Errorf("3rd (4 of 5 taken, costs 2): %v %v, want a delay to the next window", v.Action, v.Delay)
	}
}

// A compound subject counts each pair on its own.
func TestRules_CompoundSubjectCountsEachPair(t *testing.T) {
	h := newHarness(t, `
flows:
  api:
    rules:
      - {name: pair, subject: account+ip, algorithm: fixed_window, window: 1h, limit: 1}
`)
	check := func(acct, ip string) authguard.Action {
		return h.check(authguard.CheckRequest{Flow: "api", Account: acct, IP: ip}).Action
	}
	if check("a", "192.0.2.1") != authguard.Proceed || check("a", "192.0.2.1") != authguard.Delay {
		t.Error("the pair (a, 192.0.2.1) was not limited to 1")
	}
	if check("a", "192.0.2.2") != authguard.Proceed || check("b", "192.0.2.1") != authguard.Proceed {
		t.Error("another pair sharing a part was limited")
	}
	if check("A", "192.0.2.1") != authguard.Delay {
		t.Error("a spelling of the same account is a new pair")
	}
}

// A tenant subject is one key per tenant: one tenant's traffic never uses
// another's budget.
func TestRules_TenantSubjectIsPerTenant(t *testing.T) {
	h := newHarness(t, `
flows:
  api:
    rules:
      - {name: tenant_total, subject: tenant, algorithm: token_bucket, limit: 2, rate: 1/h}
`)
	for i := range 3 {
		v := h.check(authguard.CheckRequest{Flow: "api", Tenant: "acme", IP: "192.0.2.1"})
		if (v.Action == authguard.Proceed) != (i < 2) {
			t.Errorf("acme check %d: %v", i, v.Action)
		}
	}
	want(t, "another tenant", h.check(authguard.CheckRequest{Flow: "api", Tenant: "globex", IP: "192.0.2.1"}), authguard.Proceed, 0)
}

// distinct of ip on the account: the account's failures from too many
// addresses need a CAPTCHA for a new address; a known one still proceeds.
func TestRules_DistinctAddressesFailingOnOneAccount(t *testing.T) {
	h := newHarness(t, `
flows:
  login:
    rules:
      - {name: account_ips, subject: account, algorithm: distinct, of: ip, windows: [{window: 1h, limit: 3}]}
`)
	for i := range 3 {
		h.attempt("carol", addr(i), authguard.Failure, "")
	}
	want(t, "a 4th address", h.check(authguard.CheckRequest{Account: "carol", IP: addr(3)}), authguard.Captcha, 0, "account_ips")
	if v := h.check(authguard.CheckRequest{Account: "carol", IP: addr(0)}); v.Action != authguard.Proceed {
		t.Errorf("an address already counted: %v %v, want proceed", v.Action, v.Reasons)
	}
}

// Attack: a device token (stolen, or minted by a login) presented to a flow
// that has no device rule. That flow does not look at device tokens, so the
// token skips nothing: its client is counted as any other.
func TestRules_DeviceTokenSkipsNothingInAFlowWithoutADeviceRule(t *testing.T) {
	h := newHarness(t, `
flows:
  reauth:
    template: login
    device_trust: login
    rules:
      - {name: device_backoff, off: true}
`)
	token := h.attempt("dan", "192.0.2.1", authguard.Success, "").DeviceToken
	for i := range 5 {
		v := h.check(authguard.CheckRequest{Flow: "reauth", Account: "dan", IP: addr(i), DeviceToken: token})
		h.report(authguard.ReportRequest{Flow: "reauth", Account: "dan", IP: addr(i), Outcome: authguard.Failure, Attempt: v.Attempt, DeviceToken: token})
	}
	want(t, "6th guess with the login's token", h.check(authguard.CheckRequest{Flow: "reauth", Account: "dan", IP: addr(9), DeviceToken: token}),
		authguard.Delay, time.Second, "account_backoff")
}

// FuzzParseSubject: a subject either is refused or prints back to a string
// that parses to itself.
func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{"account", "device", "ip", "ip/48", "password_fingerprint", "tenant", "account+ip", "ip/56+password_fingerprint", "account+account", "device+ip", "ip/999", "ip/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sub, err := authguard.ParseSubject(s)
		if err != nil {
			return
		}
		again, err := authguard.ParseSubject(sub.String())
		if err != nil || again != sub {
			t.Fatalf("%q parsed to %+v, printed %q, parsed again to %+v, %v", s, sub, sub.String(), again, err)
		}
	})
}

// A rule's key names its store keys; the default is its name, and two rules
// of a flow cannot share one.
func TestRules_KeyNamesTheStoreKeys(t *testing.T) {
	h := newHarness(t, `
flows:
  api:
    rules:
      - {name: per_ip, key: pi, subject: ip, algorithm: fixed_window, window: 1m, limit: 1}
      - {name: per_account, subject: account, algorithm: fixed_window, window: 1m, limit: 1}
`)
	h.check(authguard.CheckRequest{Flow: "api", Account: "ann", IP: "192.0.2.1"})
	var got []string
	for _, k := range h.mem.Keys() {
		got = append(got, strings.Split(k, ":")[3])
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "per_account pi" {
		t.Errorf("store keys by rule: %v, want per_account and pi", got)
	}
}
