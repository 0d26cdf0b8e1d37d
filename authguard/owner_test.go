package authguard_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// bombed has ten codes sent to victim from fresh addresses, waiting out each
// delay, as the attacker did (1 h 40 min), and returns how long that
// took.
func (h *harness) bombed(t *testing.T) time.Duration {
	t.Helper()
	start, sent := h.clock.Now(), 0
	for i := 0; sent < 10; i++ {
		v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(i)})
		switch {
		case v.Action == authguard.Proceed:
			sent++
		case v.Action == authguard.Delay:
			h.clock.Advance(v.Delay)
		default:
			t.Fatalf("bombing: %v %v", v.Action, v.Reasons)
		}
		if h.clock.Now().Sub(start) > 3*time.Hour {
			t.Fatalf("bombing: %d codes in 3 hours, want 10", sent)
		}
	}
	return h.clock.Now().Sub(start)
}

// ownerWithDevice logs the owner in (her device token) and has her verify
// her number once, on otp_verify.
func (h *harness) ownerWithDevice(t *testing.T) string {
	t.Helper()
	r := h.attempt("owner@example.com", "203.0.113.7", authguard.Success, "")
	if r.DeviceToken == "" {
		t.Fatal("the owner's login returned no device token")
	}
	h.verify("owner@example.com", "203.0.113.7", victim, "sms")
	return r.DeviceToken
}

// The lockout: ten requests to a number over 1 h 40 min, from any
// addresses, left its owner without a code for 22 h 20 min, even with her
// login device token. Now her known device, on an account that has
// verified the number, has codes of its own: at 4 h she gets one at once,
// and a resend 30 s later too, whatever the bomber sent.
func TestSend_TheOwnersKnownDeviceGetsItsCodeWhateverOthersSent(t *testing.T) {
	h := newHarness(t, "")
	token := h.ownerWithDevice(t)
	start := h.clock.Now()
	h.bombed(t)
	h.clock.Set(start.Add(4 * time.Hour))
	owner := authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "owner@example.com", DeviceToken: token}
	if v := h.send(owner); v.Action != authguard.Proceed {
		t.Fatalf("the owner's known device at 4 h: %v %v %v, want her code", v.Action, v.Delay, v.Reasons)
	}
	// Her own codes skip what others made the number wait, not her resend
	// interval: a resend at once meets the destination's rules.
	if v := h.send(owner); v.Action != authguard.Delay {
		t.Errorf("her resend at once: %v %v, want a wait", v.Action, v.Reasons)
	}
	h.clock.Advance(30 * time.Second)
	if v := h.send(owner); v.Action != authguard.Proceed {
		t.Errorf("her resend 30 s later: %v %v %v, want it", v.Action, v.Delay, v.Reasons)
	}
	// From an account that never verified the number, with a device token
	// of its own or without one, the same request waits as everyone's does.
	for _, req := range []authguard.SendRequest{
		{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "someone@example.com", DeviceToken: h.attempt("someone@example.com", "198.51.100.9", authguard.Success, "").DeviceToken},
		{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "someone@example.com"},
	} {
		if v := h.send(req); v.Action != authguard.Delay || !slices.Contains(v.Reasons, "destination_limit") {
			t.Errorf("account %s, token %v: %v %v, want the destination's delay", req.Account, req.DeviceToken != "", v.Action, v.Reasons)
		}
	}
}

// An owner without her device token (a new phone, a passwordless first
// login) is not left waiting out the destination's quota for a day either:
// a send naming her account, which verified the number, from a network it
// verified the number from, is asked for a CAPTCHA instead of the wait, and
// goes out once it is solved, 3 times a day; then it waits as everyone's
// does.
func TestSend_TheOwnerWithoutHerDeviceGetsHerCodeBehindACaptcha(t *testing.T) {
	h := newHarness(t, "")
	h.ownerWithDevice(t) // her account verified the number once
	start := h.clock.Now()
	h.bombed(t)
	h.clock.Set(start.Add(4 * time.Hour))
	// From the network she verified the number from (her home, say).
	req := authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "owner@example.com"}
	for i := range 3 {
		if v := h.send(req); v.Action != authguard.Captcha || !slices.Contains(v.Reasons, "destination_limit") {
			t.Fatalf("code %d without her device: %v %v %v, want a CAPTCHA, not a wait", i, v.Action, v.Delay, v.Reasons)
		}
		solved := req
		solved.CaptchaSolved = true
		if v := h.send(solved); v.Action != authguard.Proceed {
			t.Fatalf("code %d with the CAPTCHA solved: %v %v %v, want it", i, v.Action, v.Delay, v.Reasons)
		}
		h.clock.Advance(time.Minute)
	}
	solved := req
	solved.CaptchaSolved = true
	if v := h.send(solved); v.Action != authguard.Delay {
		t.Errorf("a fourth code that day: %v %v, want the destination's wait", v.Action, v.Reasons)
	}
}

// A bomber who knows the owner's account names it and solves every
// CAPTCHA: the number receives at most 3 more than the destination's 10 a
// day.
func TestSend_ABomberNamingTheOwnersAccountGetsAtMostThreeMoreWithCaptchas(t *testing.T) {
	h := newHarness(t, "")
	h.ownerWithDevice(t)
	sent := h.insistent(func(i int) authguard.SendRequest {
		return authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(i % 1000), Account: "owner@example.com"}
	})
	t.Logf("%d codes in 24 hours to a bomber naming the owner's account and solving CAPTCHAs", sent)
	if sent > 13 {
		t.Errorf("%d codes to the owner's number in 24 hours, want at most 10 + 3", sent)
	}
}

// The naive fix is a bombing licence: an attacker owns devices too, of
// accounts of its own. Twenty accounts, each logged in with a device token
// of its own, none of which ever verified the victim's number, send it
// codes for a day: the number still receives 10.
func TestSend_DevicesOfAccountsThatNeverVerifiedTheNumberGetNoAllowance(t *testing.T) {
	h := newHarness(t, "")
	const accounts = 20
	tokens := make([]string, accounts)
	for i := range tokens {
		if tokens[i] = h.attempt(fmt.Sprint("bomber-", i), addr(i), authguard.Success, "").DeviceToken; tokens[i] == "" {
			t.Fatal("no device token")
		}
	}
	sent := h.insistent(func(i int) authguard.SendRequest {
		n := i % accounts
		return authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(1000 + i%1000), Account: fmt.Sprint("bomber-", n), DeviceToken: tokens[n]}
	})
	if sent != 10 {
		t.Errorf("%d codes to one phone in 24 hours from %d accounts' device tokens, want 10", sent, accounts)
	}
}

// A thief with a copy of the owner's device token shares her allowance: the
// number receives at most the destination's 10 and her 3 in a day.
func TestSend_AStolenTokenOfTheOwnerGetsAtMostHerCodes(t *testing.T) {
	h := newHarness(t, "")
	token := h.ownerWithDevice(t)
	sent := h.insistent(func(i int) authguard.SendRequest {
		return authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(i % 1000), Account: "owner@example.com", DeviceToken: token}
	})
	t.Logf("%d codes in 24 hours with the owner's stolen token", sent)
	if sent > 13 {
		t.Errorf("%d codes to the owner's number in 24 hours with her stolen token, want at most 10 + 3", sent)
	}
}

// A bomber who names the owner's account without solving CAPTCHAs, sending
// only when the number holds nobody back, would spend her CAPTCHA codes on
// sends they exempted from nothing, and then fill the daily quota: she would
// be left waiting after all. An allowance is spent only on a send it
// exempted, so after such a day she still gets hers behind a CAPTCHA.
func TestSend_ABomberCannotSpendTheOwnersCodesWhileTheNumberHoldsNobodyBack(t *testing.T) {
	h := newHarness(t, "")
	h.ownerWithDevice(t)
	start, sent := h.clock.Now(), 0
	for i := 0; sent < 10; i++ {
		v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(i), Account: "owner@example.com"})
		switch v.Action {
		case authguard.Proceed:
			sent++
		case authguard.Captcha, authguard.Delay: // not solved: wait a while and ask again
			h.clock.Advance(max(v.Delay, time.Minute))
		}
		if h.clock.Now().Sub(start) > 3*time.Hour {
			t.Fatalf("the bomber sent %d codes in 3 hours, want 10", sent)
		}
	}
	h.clock.Set(start.Add(4 * time.Hour))
	req := authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "owner@example.com", CaptchaSolved: true}
	if v := h.send(req); v.Action != authguard.Proceed {
		t.Errorf("the owner without her device after the bomber's day: %v %v %v, want her code with the CAPTCHA solved", v.Action, v.Delay, v.Reasons)
	}
}

// Likewise the owner's own codes on a day nobody bombs her number need no
// exemption and spend none: three codes in the morning, then a bombing,
// and her device still gets its code.
func TestSend_TheOwnersOrdinaryCodesSpendNoneOfHerAllowance(t *testing.T) {
	h := newHarness(t, "")
	token := h.ownerWithDevice(t)
	owner := authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "owner@example.com", DeviceToken: token}
	for i := range 3 {
		if v := h.send(owner); v.Action != authguard.Proceed {
			t.Fatalf("her ordinary code %d: %v %v", i, v.Action, v.Reasons)
		}
		h.clock.Advance(time.Hour)
	}
	start := h.clock.Now()
	for i, sent := 0, 0; sent < 7; i++ { // the quota's 10, with hers
		v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(i)})
		if v.Action == authguard.Proceed {
			sent++
			continue
		}
		h.clock.Advance(v.Delay)
	}
	h.clock.Set(start.Add(2 * time.Hour))
	if v := h.send(owner); v.Action != authguard.Proceed {
		t.Errorf("her device after her ordinary codes and a bombing: %v %v %v, want her code", v.Action, v.Delay, v.Reasons)
	}
}

// The finding of `tollgate-lab attack -objective owner_code_delay`: a bomber who
// knows the owner's account as well as her number named it and solved the
// CAPTCHAs kept for her without her device token, and she waited out the
// number's quota after all (scenarios/attack-owner-code-spent.yaml). Those
// codes now need a network her account verified the number from: from
// anywhere else a send naming her account waits as everyone's does, and
// spends none of them.
func TestSend_ABomberNamingTheOwnersAccountElsewhereCannotSpendHerCaptchaCodes(t *testing.T) {
	h := newHarness(t, "")
	h.ownerWithDevice(t) // verified from 203.0.113.7
	start := h.clock.Now()
	h.bombed(t)
	for i := range 20 {
		v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(2000 + i), Account: "owner@example.com", CaptchaSolved: true})
		if v.Action == authguard.Proceed {
			t.Fatalf("the bomber's send %d naming her account from elsewhere, CAPTCHA solved: proceed, want the destination's wait", i)
		}
	}
	h.clock.Set(start.Add(4 * time.Hour))
	owner := authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "owner@example.com", CaptchaSolved: true}
	for i := range 3 {
		if v := h.send(owner); v.Action != authguard.Proceed {
			t.Fatalf("her code %d from home without her device, CAPTCHA solved: %v %v %v, want it", i, v.Action, v.Delay, v.Reasons)
		}
		h.clock.Advance(time.Minute)
	}
}

// The same codes through a store blip: the fallback held no record that
// her account verified the number from home, so during an outage she
// waited out the number's quota the bomber filled, CAPTCHA solved or not.
// The engine writes the records the store showed it into the fallback:
// from home she gets her codes there as on the store, and the bomber
// naming her account from elsewhere still waits the quota the engine
// remembers (the recall, learned from his last send).
func TestSend_AStoreBlipDoesNotWithholdTheOwnersCaptchaCodes(t *testing.T) {
	h := newHarness(t, "")
	h.ownerWithDevice(t) // verified from 203.0.113.7
	start := h.clock.Now()
	h.bombed(t)
	h.clock.Set(start.Add(4 * time.Hour))
	if v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(3000), Account: "owner@example.com", CaptchaSolved: true}); v.Action == authguard.Proceed {
		t.Fatal("the bomber naming her account from elsewhere at 4 h: proceed, want the destination's wait")
	}
	h.store.fail.Store(true)
	if v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(3001), Account: "owner@example.com", CaptchaSolved: true}); v.Action == authguard.Proceed {
		t.Fatal("store down, the bomber naming her account from elsewhere: proceed, want the destination's wait")
	}
	owner := authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: "owner@example.com", CaptchaSolved: true}
	for i := range 3 {
		v := h.send(owner)
		if v.Action != authguard.Proceed {
			t.Fatalf("store down, her code %d from home without her device, CAPTCHA solved: %v %v %v, want it", i, v.Action, v.Delay, v.Reasons)
		}
		if ev := h.events[len(h.events)-1]; ev.Source != authguard.SourceFallback {
			t.Fatalf("her code %d answered from %v, want the fallback", i, ev.Source)
		}
		h.clock.Advance(time.Minute)
	}
}

// Explain of a send flow for the owner's account and number: the rows of
// the owner's allowance were filed under the flow's first rule, with its
// name and reason. They now name no rule and say what they are: the number
// verified (from this network), her codes, her resend.
func TestExplain_OwnerAllowanceRowsNameNoRule(t *testing.T) {
	h := newHarness(t, "")
	h.ownerWithDevice(t) // verified from 203.0.113.7
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "otp_send", Account: "owner@example.com", IP: "203.0.113.7", Destination: victim, Channel: "sms"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range x.Rules {
		if r.Facet == authguard.FacetNone {
			continue
		}
		if r.Rule != "" || r.Reason != "" || r.Algorithm != authguard.SlidingLog {
			t.Errorf("owner row %+v: want no rule nor reason, a sliding log", r)
		}
		got[r.Facet.String()] = r.Over
	}
	want := map[string]bool{"verified_destination": true, "verified_network": true, "owner_codes": false, "owner_resend": false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("owner rows (facet: over) %v, want %v", got, want)
	}
}

// A leaky bucket on the destination, in a send flow with owner codes, is
// one of the rules the owner's codes skip (it is shared). A bomber naming
// an account that never verified the number skips nothing: each of his
// sends either goes ahead and is counted or is held back, so the queue's
// limit holds. (The engine once answered such a send with its place in the
// queue, a proceed, while the store undid its take as a refused check's:
// every send went out and the queue never filled.)
func TestSend_ABomberNamingAnAccountCannotOverflowTheDestinationsQueue(t *testing.T) {
	h := newHarness(t, `
flows:
  codes:
    kind: send
    owner_codes: 3
    rules:
      - {name: drip, subject: destination, algorithm: leaky_bucket, limit: 3, rate: 1/m, counts: proceed, clients: all}
`)
	sent := 0
	for i := range 20 {
		v := h.send(authguard.SendRequest{Flow: "codes", Destination: victim, Channel: "sms", IP: addr(i), Account: "someone@example.com"})
		if v.Action == authguard.Proceed {
			sent++
		}
	}
	if sent > 3 {
		t.Errorf("%d of 20 sends went out at once, want at most the queue's 3", sent)
	}
}
