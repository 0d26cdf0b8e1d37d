package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// noticeRecorder is a Notifier that keeps what it is told.
type noticeRecorder struct {
	mu    sync.Mutex
	notes []authguard.Notice
}

func (r *noticeRecorder) Notify(n authguard.Notice) {
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
}

// of returns the notices of one type, in order.
func (r *noticeRecorder) of(typ string) []authguard.Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []authguard.Notice
	for _, n := range r.notes {
		if n.Type == typ {
			out = append(out, n)
		}
	}
	return out
}

func (r *noticeRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.notes)
}

// signIn is a check and a success report of account with a device token
// and a ref; it returns the device token the success issued.
func (h *harness) signIn(account, ip, device, ref string) string {
	h.t.Helper()
	v := h.check(authguard.CheckRequest{Account: account, IP: ip, DeviceToken: device, Ref: ref})
	if v.Action != authguard.Proceed {
		h.t.Fatalf("sign-in check: %v %v", v.Action, v.Reasons)
	}
	return h.report(authguard.ReportRequest{Account: account, IP: ip, Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: device, Ref: ref}).DeviceToken
}

// wantNotice fails unless n names the flow, rule and reason, in the
// default tenant.
func wantNotice(t *testing.T, n authguard.Notice, typ, flow, rule, reason string) {
	t.Helper()
	if n.Type != typ || n.Tenant != authguard.DefaultTenant || n.Flow != flow || n.Rule != rule || n.Reason != reason || n.Time.IsZero() {
		t.Errorf("notice = %+v, want %s of tenant default, flow %s, rule %q, reason %q, dated", n, typ, flow, rule, reason)
	}
}

// Was this you: a sign-in without a device token of the account tells its
// owner, with the account as the caller sent it and the caller's ref; the
// owner's own known device is no news, and a token of another account is
// no device of this one.
func TestNotice_SignInFromANewDeviceTellsTheOwner(t *testing.T) {
	h := newHarness(t, "")
	token := h.signIn("Alice@Example.com", "192.0.2.1", "", "user-42")
	got := h.notes.of(authguard.NoticeNewDevice)
	if len(got) != 1 {
		t.Fatalf("%d new-device notices after a sign-in without a token, want 1", len(got))
	}
	wantNotice(t, got[0], authguard.NoticeNewDevice, "login", "device_backoff", "no_device_token")
	if got[0].Subject != "Alice@Example.com" || got[0].Ref != "user-42" || got[0].Coalesce != "" {
		t.Errorf("notice subject %q, ref %q, coalesce %q; want the account as sent, the ref, and no coalescing", got[0].Subject, got[0].Ref, got[0].Coalesce)
	}

	h.signIn("alice@example.com", "192.0.2.1", token, "user-42")
	if n := len(h.notes.of(authguard.NoticeNewDevice)); n != 1 {
		t.Errorf("a sign-in from the owner's known device: %d new-device notices in all, want still 1", n)
	}

	bobs := h.signIn("bob@example.com", "192.0.2.2", "", "user-7")
	h.signIn("alice@example.com", "192.0.2.2", bobs, "user-42")
	got = h.notes.of(authguard.NoticeNewDevice)
	if len(got) != 3 || got[2].Subject != "alice@example.com" || got[2].Ref != "user-42" {
		t.Errorf("a sign-in to alice with bob's device token: notices %+v, want a third one for alice", got)
	}
}

// Attack: an attacker signs in 10,000 times, from fresh addresses and
// without a device token, to an account of their own, so that each sign-in
// is a login.new_device queued ahead of a victim's alert. The account gets
// MaxNewDeviceNotices notices a window, each of one sign-in; its first
// notice of the next window tells of every sign-in held back. Another
// account's new device in the same window is told as before.
func TestNotice_TenThousandSignInsToOneAccountAreAFewNewDeviceNotices(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	signIn := func(account string, i int) {
		t.Helper()
		v, err := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: addr(i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: addr(i), Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
			t.Fatal(err)
		}
	}
	n := 10_000
	if testing.Short() {
		n = 2_000 // still hundreds of times the notices a window allows
	}
	for i := range n {
		signIn("mallory@example.com", i)
	}
	got := h.notes.of(authguard.NoticeNewDevice)
	if len(got) != authguard.MaxNewDeviceNotices {
		t.Fatalf("%d login.new_device notices for %d sign-ins to one account in a window, want %d", len(got), n, authguard.MaxNewDeviceNotices)
	}
	for _, no := range got {
		if c, _ := no.Details["sign_ins"].(int); c != 1 || no.Subject != "mallory@example.com" {
			t.Errorf("notice %+v, want mallory's with sign_ins 1", no)
		}
	}
	signIn("alice@example.com", 1)
	if got := h.notes.of(authguard.NoticeNewDevice); len(got) != authguard.MaxNewDeviceNotices+1 || got[len(got)-1].Subject != "alice@example.com" {
		t.Fatalf("another account's sign-in in the window: notices %+v, want one for alice", got[authguard.MaxNewDeviceNotices:])
	}

	h.clock.Advance(time.Hour + time.Second)
	signIn("MALLORY@example.com", 2)
	got = h.notes.of(authguard.NoticeNewDevice)
	last := got[len(got)-1]
	want := 1 + n - authguard.MaxNewDeviceNotices
	if c, _ := last.Details["sign_ins"].(int); len(got) != authguard.MaxNewDeviceNotices+2 || last.Subject != "MALLORY@example.com" || c != want {
		t.Errorf("the next window's first notice: %+v (%d in all), want mallory's as sent with sign_ins %d (this one and those held back)", last, len(got), want)
	}
}

// Attack: 10,000 failed guesses at one account, in three spellings of it.
// The owner hears of it once per window, not 10,000 times, every notice
// carries the spelling of the call that emitted it, and every spelling
// shares one coalescing key (a keyed hash, not the account).
func TestNotice_TenThousandFailuresOnOneAccountAreOneUnderAttack(t *testing.T) {
	h := newHarness(t, "")
	spellings := []string{"alice@example.com", "ALICE@Example.COM", "ａｌｉｃｅ@example.com"}
	ctx := context.Background()
	n := 10_000
	if testing.Short() {
		n = 2_000 // the notice comes at the 5th; the rest must add none
	}
	for i := range n {
		before := len(h.notes.of(authguard.NoticeUnderAttack))
		account := spellings[i%len(spellings)]
		if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: addr(i), Outcome: authguard.Failure, Ref: "u1"}); err != nil {
			t.Fatal(err)
		}
		if got := h.notes.of(authguard.NoticeUnderAttack); len(got) > before && got[len(got)-1].Subject != account {
			t.Fatalf("failure %d, sent as %q, emitted a notice of %q", i, account, got[len(got)-1].Subject)
		}
	}
	got := h.notes.of(authguard.NoticeUnderAttack)
	if len(got) < 1 || len(got) > 3 {
		t.Fatalf("%d account.under_attack notices for %d failures, want one (a handful at most)", len(got), n)
	}
	first := got[0]
	wantNotice(t, first, authguard.NoticeUnderAttack, "login", "account_backoff", "backoff")
	if first.Coalesce == "" || first.Window != time.Hour || first.Ref != "u1" {
		t.Errorf("notice coalesce %q, window %v, ref %q; want a key, the 1h window and the ref", first.Coalesce, first.Window, first.Ref)
	}
	if f, _ := first.Details["failures"].(int); f != 5 {
		t.Errorf("notice details %v, want the 5 failures that put the account into backoff", first.Details)
	}
	for _, s := range spellings {
		if strings.Contains(first.Coalesce, s) || strings.Contains(strings.ToLower(first.Coalesce), "alice") {
			t.Errorf("coalesce key %q holds the account", first.Coalesce)
		}
	}

	// A window later, each spelling's notice has the same key.
	for _, s := range spellings {
		h.clock.Advance(time.Hour + time.Second)
		if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: s, IP: "192.0.2.9", Outcome: authguard.Failure}); err != nil {
			t.Fatal(err)
		}
	}
	got = h.notes.of(authguard.NoticeUnderAttack)
	if len(got) != 4 {
		t.Fatalf("%d notices after one failure per spelling in three new windows, want 4", len(got))
	}
	for i, n := range got[1:] {
		if n.Coalesce != first.Coalesce || n.Subject != spellings[i] {
			t.Errorf("spelling %q: notice subject %q, coalesce %q; want its own spelling and the key %q", spellings[i], n.Subject, n.Coalesce, first.Coalesce)
		}
	}
}

// A flow's under_attack_failures: the account is held back after 5
// failures, but the security team hears of it only at 20.
func TestNotice_UnderAttackWaitsForTheFlowsFailureCount(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    events: {under_attack_failures: 20}\n")
	ctx := context.Background()
	for i := range 19 {
		if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "carol", IP: addr(i), Outcome: authguard.Failure}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.notes.of(authguard.NoticeUnderAttack)); n != 0 {
		t.Fatalf("%d notices after 19 failures with a threshold of 20, want none", n)
	}
	if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "carol", IP: addr(19), Outcome: authguard.Failure}); err != nil {
		t.Fatal(err)
	}
	got := h.notes.of(authguard.NoticeUnderAttack)
	if len(got) != 1 {
		t.Fatalf("%d notices at the 20th failure, want 1", len(got))
	}
	wantNotice(t, got[0], authguard.NoticeUnderAttack, "login", "account_backoff", "failures_over_threshold")
	if f, _ := got[0].Details["failures"].(int); f != 20 {
		t.Errorf("details %v, want 20 failures", got[0].Details)
	}
}

// An administrator's reset of an account is told, with the account as the
// administrator sent it.
func TestNotice_AdminResetIsTold(t *testing.T) {
	h := newHarness(t, "")
	h.attempt("dave@example.com", "192.0.2.1", authguard.Failure, "")
	if _, err := h.e.Reset(context.Background(), authguard.ResetRequest{Flow: "login", Account: "Dave@example.com", Reason: "ticket 12", Ref: "u-3"}); err != nil {
		t.Fatal(err)
	}
	got := h.notes.of(authguard.NoticeReset)
	if len(got) != 1 {
		t.Fatalf("%d reset notices, want 1", len(got))
	}
	wantNotice(t, got[0], authguard.NoticeReset, "login", "", "admin_reset")
	if got[0].Subject != "Dave@example.com" || got[0].Ref != "u-3" {
		t.Errorf("subject %q, ref %q; want the account as sent and the ref", got[0].Subject, got[0].Ref)
	}
}

// Attack: one address sprays many accounts. Once it meets ip_spray's
// CAPTCHA the security team hears of it once, without the address.
func TestNotice_SprayingAddressEscalatedOnceWithoutItsAddress(t *testing.T) {
	h := newHarness(t, "")
	const ip = "198.51.100.7"
	captchas := 0
	for i := range 30 {
		if v := h.attempt(fmt.Sprintf("user%d@example.com", i), ip, authguard.Failure, ""); v.Action == authguard.Captcha {
			captchas++
		}
	}
	if captchas == 0 {
		t.Fatal("the spraying address never met a CAPTCHA")
	}
	got := h.notes.of(authguard.NoticeIPEscalated)
	if len(got) != 1 {
		t.Fatalf("%d ip.escalated notices for %d CAPTCHAs, want 1", len(got), captchas)
	}
	wantNotice(t, got[0], authguard.NoticeIPEscalated, "login", "ip_spray", "captcha")
	if bits, _ := got[0].Details["prefix_bits"].(int); bits != 32 || got[0].Coalesce == "" || got[0].Subject != "" {
		t.Errorf("notice %+v, want prefix_bits 32, a coalescing key and no subject", got[0])
	}
	if s := fmt.Sprintf("%+v", got[0]); strings.Contains(s, ip) {
		t.Errorf("the notice holds the address: %s", s)
	}
}

// sendPolicy is two send flows: one held by a conversion rule, one with a
// spend budget.
const sendPolicy = `
flows:
  codes:
    kind: send
    events: {emit: [otp.pumping_hold, otp.budget]}
    rules:
      - {name: country_conversion, reason: low_conversion, clients: all, subject: country, algorithm: conversion, window: 1h, min_volume: 5, min_conversion: 50}
  spend:
    kind: send
    prices: {sms: {default: 10}}
    events: {emit: [otp.pumping_hold, otp.budget]}
    rules:
      - {name: spend_captcha, clients: all, subject: tenant, algorithm: fixed_window, counts: proceed, cost: price, window: 24h, limit: 30, past: captcha}
      - {name: spend_budget, clients: all, subject: tenant, algorithm: fixed_window, counts: proceed, cost: price, window: 24h, limit: 50, past: deny}
`

// Attack: SMS pumping to one country that never verifies its codes. When
// the conversion rule holds the country, the operator hears of it once.
func TestNotice_PumpedCountryHeldOnce(t *testing.T) {
	h := newHarness(t, sendPolicy)
	held := 0
	for i := range 20 {
		dest := fmt.Sprintf("+33 6 12 %02d %02d %02d", i, i*3%100, i*7%100)
		v := h.send(authguard.SendRequest{Flow: "codes", Destination: dest, Channel: "sms", IP: addr(i), Ref: "r"})
		if v.Action == authguard.Captcha {
			held++
			if len(h.notes.of(authguard.NoticePumpingHold)) == 1 && held == 1 {
				if n := h.notes.of(authguard.NoticePumpingHold)[0]; n.Subject != dest {
					t.Errorf("notice subject %q, want the destination as sent, %q", n.Subject, dest)
				}
			}
		}
	}
	got := h.notes.of(authguard.NoticePumpingHold)
	if held == 0 || len(got) != 1 {
		t.Fatalf("%d sends held, %d pumping notices; want some held and one notice", held, len(got))
	}
	wantNotice(t, got[0], authguard.NoticePumpingHold, "codes", "country_conversion", "low_conversion")
	if got[0].Details["region"] != "FR" || got[0].Ref != "r" || got[0].Coalesce == "" {
		t.Errorf("notice %+v, want region FR, the ref and a coalescing key", got[0])
	}
}

// The day's spend passes its CAPTCHA level, then its deny level: one
// notice at each.
func TestNotice_SpendBudgetToldAtEachLevel(t *testing.T) {
	h := newHarness(t, sendPolicy)
	var actions []authguard.Action
	for i := range 10 {
		dest := fmt.Sprintf("+44 7400 %06d", 100+i)
		actions = append(actions, h.send(authguard.SendRequest{Flow: "spend", Destination: dest, Channel: "sms", IP: addr(i), CaptchaSolved: i >= 4}).Action)
	}
	if !slices.Contains(actions, authguard.Captcha) || !slices.Contains(actions, authguard.Deny) {
		t.Fatalf("actions %v, want a CAPTCHA and then a deny", actions)
	}
	got := h.notes.of(authguard.NoticeBudget)
	if len(got) != 2 {
		t.Fatalf("%d budget notices, want 2: %+v", len(got), got)
	}
	wantNotice(t, got[0], authguard.NoticeBudget, "spend", "spend_captcha", "budget_captcha")
	wantNotice(t, got[1], authguard.NoticeBudget, "spend", "spend_budget", "budget_deny")
}

// The store fails and answers again: one store.degraded at the first
// failure, one store.recovered at the first answer, whatever the calls in
// between.
func TestNotice_StoreOutageToldOnceEachWay(t *testing.T) {
	h := newHarness(t, "")
	h.attempt("erin", "192.0.2.1", authguard.Failure, "")
	h.store.fail.Store(true)
	for i := range 5 {
		h.check(authguard.CheckRequest{Account: "erin", IP: addr(i)})
	}
	h.store.fail.Store(false)
	for i := range 5 {
		h.check(authguard.CheckRequest{Account: "erin", IP: addr(i)})
	}
	down, up := h.notes.of(authguard.NoticeStoreDegraded), h.notes.of(authguard.NoticeStoreRecovered)
	if len(down) != 1 || len(up) != 1 {
		t.Fatalf("%d degraded and %d recovered notices, want one each", len(down), len(up))
	}
	wantNotice(t, down[0], authguard.NoticeStoreDegraded, "login", "", "unavailable")
	wantNotice(t, up[0], authguard.NoticeStoreRecovered, "login", "", "answering")
	if down[0].Details["fallback"] != true || down[0].Subject != "" {
		t.Errorf("degraded notice %+v, want fallback true and no subject", down[0])
	}
	if !down[0].Time.Before(up[0].Time) && !down[0].Time.Equal(up[0].Time) {
		t.Errorf("recovered before degraded")
	}
}

// A flow whose policy switches events off emits none of them: not for a
// new device, an attack or a reset; one that keeps only
// account.under_attack tells of the attack alone.
func TestNotice_AFlowThatSwitchesAnEventOffEmitsNone(t *testing.T) {
	run := func(h *harness) {
		h.signIn("frank", "192.0.2.1", "", "")
		for i := range 50 {
			h.report(authguard.ReportRequest{Account: "grace", IP: addr(i), Outcome: authguard.Failure})
		}
		for i := range 30 {
			h.attempt(fmt.Sprintf("u%d", i), "198.51.100.9", authguard.Failure, "")
		}
		if _, err := h.e.Reset(context.Background(), authguard.ResetRequest{Flow: "login", Account: "grace", Reason: "r"}); err != nil {
			h.t.Fatal(err)
		}
	}
	off := newHarness(t, "flows:\n  login:\n    events: {emit: []}\n")
	run(off)
	if n := off.notes.len(); n != 0 {
		t.Errorf("emit: [] gave %d notices: %+v", n, off.notes.notes)
	}
	one := newHarness(t, "flows:\n  login:\n    events: {emit: [account.under_attack]}\n")
	run(one)
	if n, all := len(one.notes.of(authguard.NoticeUnderAttack)), one.notes.len(); n != 1 || all != 1 {
		t.Errorf("emit: [account.under_attack] gave %d notices, %d of them under_attack; want that one alone", all, n)
	}
}

// Mistake: a ref too long or holding a control character (a caller
// passing a whole profile, or a header). It is refused as invalid input on
// every call that takes one, before the store is asked.
func TestNotice_BadRefIsRefusedBeforeAnyStoreCall(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	for _, ref := range []string{strings.Repeat("x", authguard.MaxRefBytes+1), "a\x00b", "line\nbreak", "\x7f", "\xff"} {
		calls := h.store.calls.Load()
		_, errC := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "a", IP: "192.0.2.1", Ref: ref})
		_, errR := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "a", IP: "192.0.2.1", Outcome: authguard.Failure, Ref: ref})
		_, errS := h.e.Send(ctx, authguard.SendRequest{Destination: victim, Channel: "sms", IP: "192.0.2.1", Ref: ref})
		for _, err := range []error{errC, errR, errS} {
			var ie *authguard.InputError
			if !errors.As(err, &ie) || ie.Field != "ref" {
				t.Errorf("ref %q: %v, want an input error on ref", ref, err)
			}
		}
		if got := h.store.calls.Load(); got != calls {
			t.Errorf("ref %q: %d store calls, want none", ref, got-calls)
		}
	}
	if _, err := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "a", IP: "192.0.2.1", Ref: strings.Repeat("é", authguard.MaxRefBytes/2)}); err != nil {
		t.Errorf("a ref of %d bytes of text: %v", authguard.MaxRefBytes, err)
	}
}

// Attack: a ref holding a bidirectional override. The receivers of the
// notices show the ref to people, in an alert or a ticket: "user-‮42" is
// shown as "user-24", and U+202E, or an isolate, turns the rest of the line
// the ref sits in around, the subject and event type after it too. Each
// bidirectional formatting character is refused on every call that takes
// a ref, before the store is asked and without a notice; text in a
// right-to-left script, which needs none of them, still passes.
func TestRef_ABidiOverrideCannotMakeAnAlertReadBackwards(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	h.attempt("victim@example.com", "192.0.2.9", authguard.Failure, "")
	bidi := []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}
	for _, r := range bidi {
		ref := "user-" + string(r) + "24" // "user-" then an override, as an alert would show it
		calls, told := h.store.calls.Load(), h.notes.len()
		_, errC := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.1", Ref: ref})
		_, errR := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.1", Outcome: authguard.Success, Ref: ref})
		_, errS := h.e.Send(ctx, authguard.SendRequest{Destination: victim, Channel: "sms", IP: "192.0.2.1", Ref: ref})
		_, errX := h.e.Reset(ctx, authguard.ResetRequest{Flow: "login", Account: "victim@example.com", Reason: "ticket 12", Ref: ref})
		for i, err := range []error{errC, errR, errS, errX} {
			var ie *authguard.InputError
			if !errors.As(err, &ie) || ie.Field != "ref" || !strings.Contains(ie.Detail, "bidirectional") {
				t.Errorf("%U, call %d of check, report, send, reset: %v, want an input error on ref naming bidirectional characters", r, i, err)
			}
		}
		if got := h.store.calls.Load() - calls; got != 0 {
			t.Errorf("%U: %d store calls, want none", r, got)
		}
		if got := h.notes.len() - told; got != 0 {
			t.Errorf("%U: %d notices, want none", r, got)
		}
	}
	// Every reset was refused: the account's failure is still there to
	// delete now, by a reset whose ref is in a right-to-left script.
	if n, err := h.e.Reset(ctx, authguard.ResetRequest{Flow: "login", Account: "victim@example.com", Reason: "ticket 12", Ref: "مستخدم-42"}); err != nil || n == 0 {
		t.Fatalf("a reset with a ref in Arabic script: %d keys deleted, %v; want the failure's keys", n, err)
	}
	got := h.notes.of(authguard.NoticeReset)
	if len(got) != 1 || got[0].Ref != "مستخدم-42" || got[0].Subject != "victim@example.com" {
		t.Errorf("reset notices %+v, want one, with the Arabic ref as sent", got)
	}
}

// Mistake: a notifier that changes what the engine answers. The same
// calls on an engine with a Notifier and on one without get the same
// verdicts.
func TestNotice_VerdictsAreTheSameWithOrWithoutANotifier(t *testing.T) {
	with := newHarness(t, "")
	without := newHarness(t, "")
	p, err := policyfile.LoadPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	without.clock = testclock.New(time.Time{})
	without.mem = memstore.New(memstore.Config{Now: without.clock.Now})
	without.store = &countingStore{Store: without.mem}
	if without.e, err = authguard.New(authguard.Config{Policy: p, Store: without.store, Secret: secret, Now: without.clock.Now,
		Fallback: memstore.New(memstore.Config{Now: without.clock.Now})}); err != nil {
		t.Fatal(err)
	}
	type call func(h *harness) authguard.Verdict
	var calls []call
	for i := range 40 {
		calls = append(calls,
			func(h *harness) authguard.Verdict {
				return h.attempt("victim@example.com", addr(i%7), authguard.Failure, "")
			},
			func(h *harness) authguard.Verdict {
				return h.attempt(fmt.Sprintf("sprayed%d", i), "198.51.100.1", authguard.Failure, "")
			},
			func(h *harness) authguard.Verdict {
				return h.send(authguard.SendRequest{Destination: fmt.Sprintf("+33 6 12 %02d %02d 00", i, i), Channel: "sms", IP: addr(100 + i)})
			})
		if i == 20 {
			calls = append(calls, func(h *harness) authguard.Verdict { h.store.fail.Store(true); return authguard.Verdict{} })
		}
		if i == 25 {
			calls = append(calls, func(h *harness) authguard.Verdict { h.store.fail.Store(false); return authguard.Verdict{} })
		}
	}
	for i, c := range calls {
		with.clock.Advance(7 * time.Second)
		without.clock.Advance(7 * time.Second)
		a, b := c(with), c(without)
		if a.Action != b.Action || a.Delay != b.Delay || !slices.Equal(a.Reasons, b.Reasons) {
			t.Fatalf("call %d: with a notifier %v %v %v, without %v %v %v", i, a.Action, a.Delay, a.Reasons, b.Action, b.Delay, b.Reasons)
		}
	}
	if with.notes.len() == 0 {
		t.Error("the engine with a notifier told nothing: the comparison proves little")
	}
}

// A shadow flow answers proceed, but its notices say what the policy saw,
// marked shadow so that a receiver rolling a policy out can hold them back.
func TestNotice_AShadowFlowTellsWhatItSawMarkedShadow(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    mode: shadow\n")
	ctx := context.Background()
	for i := range 10 {
		if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "heidi", IP: addr(i), Outcome: authguard.Failure}); err != nil {
			t.Fatal(err)
		}
	}
	got := h.notes.of(authguard.NoticeUnderAttack)
	if len(got) != 1 || got[0].Details["shadow"] != true {
		t.Fatalf("shadow flow's notices %+v, want one account.under_attack marked shadow", got)
	}
}

// Attack: spraying from rotating IPv6 addresses of one /64. The notice says
// the /64 was escalated, without any address of it.
func TestNotice_IPv6SprayEscalatesItsSlash64(t *testing.T) {
	h := newHarness(t, "")
	for i := range 30 {
		h.attempt(fmt.Sprintf("v%d@example.com", i), fmt.Sprintf("2001:db8:1:2::%x", i+1), authguard.Failure, "")
	}
	got := h.notes.of(authguard.NoticeIPEscalated)
	if len(got) == 0 {
		t.Fatal("no ip.escalated for a spraying /64")
	}
	if bits, _ := got[0].Details["prefix_bits"].(int); bits != 64 || strings.Contains(fmt.Sprintf("%+v", got[0]), "2001:db8") {
		t.Errorf("notice %+v, want prefix_bits 64 and no address", got[0])
	}
}

// Attack: guesses at one account in parallel, as a botnet sends them. The
// instance still tells of it once.
func TestNotice_ParallelFailuresOnOneAccountAreOneUnderAttack(t *testing.T) {
	h := newHarness(t, "")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: "ivan", IP: addr(g*100 + i), Outcome: authguard.Failure}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(h.notes.of(authguard.NoticeUnderAttack)); n != 1 {
		t.Errorf("%d account.under_attack notices for 800 parallel failures, want 1", n)
	}
}

// Mistake: one coalescing key for two tenants' accounts of one name. A
// receiver would then drop one tenant's notice as the other's repeat; each
// tenant's key is its own, and each notice names its tenant.
func TestNotice_TenantsOfOneAccountNameAreToldApart(t *testing.T) {
	clock := testclock.New(time.Time{})
	var rec noticeRecorder
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{Now: clock.Now}), Secret: secret, Now: clock.Now,
		TenantSecrets: map[string][]byte{"acme": []byte("acme-secret-0123456789abcdef-0123456789")},
		Notifier:      &rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", "globex"} {
		for i := range 10 {
			if _, err := e.Report(context.Background(), authguard.ReportRequest{Tenant: tenant, Flow: "login", Account: "kim", IP: addr(i), Outcome: authguard.Failure}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := rec.of(authguard.NoticeUnderAttack)
	if len(got) != 2 || got[0].Tenant != "acme" || got[1].Tenant != "globex" || got[0].Coalesce == got[1].Coalesce {
		t.Errorf("notices %+v, want one per tenant, each with its tenant and its own key", got)
	}
}
