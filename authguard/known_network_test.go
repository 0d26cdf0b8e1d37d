package authguard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

const (
	ownerAddr    = "198.51.100.23"
	attackerAddr = "203.0.113.9"
)

// timedGuess is the attacker of scenarios/attack-owner-lockout.yaml: one
// guess the instant the account's delay ends, reported as a failure. It
// returns the delay its own check met (0 when it went ahead).
func (h *harness) timedGuess(account string) time.Duration {
	h.t.Helper()
	v := h.guessFor(authguard.CheckRequest{Account: account, IP: attackerAddr})
	if v.Action == authguard.Delay {
		h.clock.Advance(v.Delay)
		h.guessFor(authguard.CheckRequest{Account: account, IP: attackerAddr})
	}
	return v.Delay
}

// The finding of `tollgate-lab attack -objective owner_delay`: an attacker whose
// guesses land the instant each delay ends keeps the account's 30-minute
// delay running, and an owner without a device token, whose retry comes a
// fraction of a second later, never got in. Now the network she signed in
// from before is known to her account: from there she goes ahead at once,
// typo and all, however the attacker times his guesses elsewhere. Her
// account is under attack and she has no device token, so her password is
// answered step_up: a second factor, never a wait.
func TestKnownNetwork_AnAttackerTimedToEachDelayEndDoesNotKeepTheOwnerOut(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	if r := h.attempt(victim, ownerAddr, authguard.Success, ""); r.DeviceToken == "" {
		t.Fatal("the owner's first login returned no device token")
	}
	// The attacker drives the account to its longest delay.
	for range 40 {
		h.timedGuess(victim)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: attackerAddr}); v.Action != authguard.Delay || v.Delay < 10*time.Minute {
		t.Fatalf("the attacker after 40 failures: %v %v, want a long delay", v.Action, v.Delay)
	}
	for login := range 3 {
		// A typo, then her password: both go ahead at once, without a
		// device token (a browser that keeps no cookie).
		if v := h.guessFor(authguard.CheckRequest{Account: "Victim@example.com", IP: ownerAddr}); v.Action != authguard.Proceed {
			t.Fatalf("login %d, her typo: %v %v %v, want proceed", login, v.Action, v.Delay, v.Reasons)
		}
		v := h.attempt(victim, ownerAddr, authguard.Success, "")
		if v.Action != authguard.StepUp || fmt.Sprint(v.Reasons) != "[account_under_attack]" {
			t.Fatalf("login %d, her password: %v %v %v, want step_up [account_under_attack]", login, v.Action, v.Delay, v.Reasons)
		}
		if v := h.passStepUp(victim, ownerAddr, v); v.Action != authguard.Proceed || v.DeviceToken == "" {
			t.Fatalf("login %d, her second factor: %v %v, want proceed with a device token", login, v.Action, v.Reasons)
		}
		// The attacker's next guess still waits out the account's delay.
		if d := h.timedGuess(victim); d <= 0 {
			t.Fatalf("login %d: the attacker's guess met no delay", login)
		}
		h.clock.Advance(8 * time.Hour)
	}
}

// Someone behind the owner's address (her household, her office's NAT)
// shares her network's allowance: while the account's delay runs they get
// the device rule's device_free failures a day from there (5), no more,
// and then wait like anyone; and a network takes one of the account's
// device slots, so that the flow's failures per day hold as
// validate-config states them.
func TestKnownNetwork_SomeoneBehindTheOwnersAddressGetsDeviceFreeFailuresAtMost(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	for range 10 {
		h.timedGuess(victim)
	}
	went := 0
	for range 20 {
		if v := h.guessFor(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action == authguard.Proceed {
			went++
		}
	}
	if went != 5 {
		t.Fatalf("failures from the owner's address while the account's delay runs: %d, want device_free (5)", went)
	}
	h.clock.Advance(25 * time.Hour)
	// A day later the allowance is back, and so is the account's delay
	// once its free failures are used up.
	for range 5 {
		h.timedGuess(victim)
	}
	if v := h.guessFor(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action != authguard.Proceed {
		t.Fatalf("a day later from the owner's address: %v %v, want proceed", v.Action, v.Reasons)
	}
}

// A network is known only from a success that settles a check that went
// ahead: a success report without the check's attempt token (or with an
// expired one) makes no network known, and neither does a failure.
func TestKnownNetwork_ASuccessWithoutAnAttemptTokenMakesNoNetworkKnown(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.report(authguard.ReportRequest{Account: victim, IP: attackerAddr, Outcome: authguard.Success})
	v := h.check(authguard.CheckRequest{Account: victim, IP: attackerAddr})
	h.clock.Advance(11 * time.Minute) // attempt_ttl is 10m
	h.report(authguard.ReportRequest{Account: victim, IP: attackerAddr, Outcome: authguard.Success, Attempt: v.Attempt})
	for range 10 {
		h.guessFor(authguard.CheckRequest{Account: victim, IP: attackerAddr})
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: attackerAddr}); v.Action != authguard.Delay {
		t.Fatalf("after untokened and late successes and 10 failures: %v %v, want the account's delay", v.Action, v.Reasons)
	}
}

// Any other network than the one she signed in from waits as before,
// including a neighbour's address in her /24 and an address that differs
// from hers only in the spelling (an IPv4-mapped IPv6 form is the same
// address, and is known).
func TestKnownNetwork_OtherAddressesWaitAsBefore(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	for range 10 {
		h.timedGuess(victim)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: "198.51.100.24"}); v.Action != authguard.Delay {
		t.Errorf("a neighbour of the owner's address: %v %v, want the account's delay", v.Action, v.Reasons)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: "::ffff:" + ownerAddr}); v.Action != authguard.Proceed {
		t.Errorf("the owner's address in its IPv4-mapped form: %v %v, want proceed", v.Action, v.Reasons)
	}
	if v := h.check(authguard.CheckRequest{Account: "other@example.com", IP: ownerAddr}); v.Action != authguard.Proceed {
		t.Fatalf("another account from the owner's address: %v", v.Action)
	}
}

// An administrator's reset of the account (after a password reset, say)
// forgets its known networks, an attacker's that signed in with a stolen
// password included, also through the next store outage.
func TestKnownNetwork_AnAccountResetForgetsItsNetworks(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.attempt(victim, attackerAddr, authguard.Success, "")
	if _, err := h.e.Reset(context.Background(), authguard.ResetRequest{Flow: "login", Account: victim, Reason: "password reset"}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		h.guessFor(authguard.CheckRequest{Account: victim, IP: "192.0.2.1"})
	}
	// Not through the next outage either: the reset forgot what the engine
	// remembered of its records (records.go) as well.
	for _, down := range []bool{true, false} {
		h.store.fail.Store(down)
		if v := h.check(authguard.CheckRequest{Account: victim, IP: attackerAddr}); v.Action != authguard.Delay {
			t.Fatalf("store down %v, the thief's network after the reset: %v %v, want the account's delay", down, v.Action, v.Reasons)
		}
	}
}

// Constant work: a check without a device token sends the store the same
// operations whether the account exists, signed in from this network
// before, or neither.
func TestKnownNetwork_ChecksSendTheSameOpsKnownOrNot(t *testing.T) {
	h := newHarness(t, "")
	h.attempt("known@example.com", ownerAddr, authguard.Success, "")
	ops := func(account string) int64 {
		before := h.store.ops.Load()
		h.check(authguard.CheckRequest{Account: account, IP: ownerAddr})
		return h.store.ops.Load() - before
	}
	known, unknown := ops("known@example.com"), ops("nobody@example.com")
	if known != unknown {
		t.Fatalf("store ops of a check on a known network: %d, on an unknown one: %d", known, unknown)
	}
}

// A known network exempts its client from the account's delay only: the
// rules on the address still hold. From an address that sprayed past
// ip_spray's limit, the owner who signed in there before is asked for a
// CAPTCHA like anyone (a success took her own account off that list, so
// her account is a new one to it).
func TestKnownNetwork_TheAddressRulesStillHold(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	for i := range 25 {
		h.guessFor(authguard.CheckRequest{Account: fmt.Sprintf("user%d@example.com", i), IP: ownerAddr, CaptchaSolved: true})
	}
	for range 10 {
		h.timedGuess(victim)
	}
	v := h.check(authguard.CheckRequest{Account: victim, IP: ownerAddr})
	if v.Action != authguard.Captcha || !slices.Contains(v.Reasons, "ip_spray") {
		t.Fatalf("the owner from her known network, which sprayed: %v %v, want a CAPTCHA for ip_spray", v.Action, v.Reasons)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: ownerAddr, CaptchaSolved: true}); v.Action != authguard.Proceed {
		t.Fatalf("with the CAPTCHA solved: %v %v, want proceed (her known network, not the account's delay)", v.Action, v.Reasons)
	}
}

// The failures a day per account hold with known networks: an attacker
// behind the owner's own address (her known network) who guesses at once
// whenever his partner elsewhere does, never waiting, and that partner,
// patient on fresh addresses (every delay waited out, every CAPTCHA
// solved) for 24 hours, get no more than the flow's MaxFailuresPerDay
// between them; the one behind her address gets the network's device_free
// (5) past the account's delays.
func TestKnownNetwork_APatientAttackerBehindTheOwnersAddressStaysWithinTheDailyBound(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	behind := 0
	patient := h.patient(func(i int) authguard.CheckRequest {
		if v := h.guessFor(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action == authguard.Proceed {
			behind++
		}
		return authguard.CheckRequest{Account: victim, IP: addr(i)}
	})
	bound, ok := h.e.Policy().Flow("login").MaxFailuresPerDay()
	if !ok || behind+patient > bound {
		t.Fatalf("%d + %d failed checks in 24 hours from the owner's known network and elsewhere, want at most %d", behind, patient, bound)
	}
	if behind < 5 {
		t.Errorf("%d failed checks from the owner's known network: the test does not reach its allowance", behind)
	}
	t.Logf("%d + %d failed checks in 24 hours (bound %d)", behind, patient, bound)
}

// An operator who would rather not keep a key per account and network for
// 90 days turns known networks off (known_networks: false): the owner
// without her token then waits out the account's delay like anyone, and no
// success writes a record.
func TestKnownNetwork_AFlowCanTurnThemOff(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    known_networks: false\n")
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	for range 10 {
		h.timedGuess(victim)
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action != authguard.Delay {
		t.Fatalf("the owner's address with known networks off: %v %v, want the account's delay", v.Action, v.Reasons)
	}
	for _, k := range h.mem.Keys() {
		if strings.Contains(k, ":knownnet:") {
			t.Errorf("known networks off, yet a record was written: %s", k)
		}
	}
}

// A store blip: the fallback that answers while the store fails starts
// empty and held no record, so an owner without her device token, whom
// the store exempts from the delay an attacker elsewhere made, was held to
// that delay (6 minutes here) for a fault of a second. Each engine now
// remembers the records the store showed it and writes them into the
// fallback while the store fails: she goes ahead there as on the store,
// whether the engine learned her network from her success or from her
// last check, and the attacker still waits.
func TestKnownNetwork_AStoreBlipDoesNotHoldTheOwnerToTheAttackersDelay(t *testing.T) {
	for _, seen := range []string{"her success", "her last check"} {
		t.Run(seen, func(t *testing.T) {
			h := newHarness(t, "")
			const victim = "victim@example.com"
			h.attempt(victim, ownerAddr, authguard.Success, "")
			for range 12 {
				h.timedGuess(victim)
			}
			if seen == "her last check" {
				if v := h.guessFor(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action != authguard.Proceed {
					t.Fatalf("store up, the owner: %v %v, want proceed", v.Action, v.Reasons)
				}
			}
			h.clock.Advance(time.Second)
			h.store.fail.Store(true)
			if v := h.check(authguard.CheckRequest{Account: victim, IP: attackerAddr}); v.Action != authguard.Delay {
				t.Errorf("store down, the attacker: %v, want the account's delay", v.Action)
			}
			v := h.check(authguard.CheckRequest{Account: victim, IP: ownerAddr})
			if v.Action != authguard.Proceed {
				t.Errorf("store down, the owner from her network: %v %v %v, want proceed", v.Action, v.Delay, v.Reasons)
			}
			if ev := h.events[len(h.events)-1]; ev.Source != authguard.SourceFallback {
				t.Errorf("answered from %v, want the fallback", ev.Source)
			}
		})
	}
}

// What the fallback lets the owner's network do it also counts: someone
// behind her address gets the device rule's device_free (5) failures from
// the fallback while the store fails and the account's delay runs, no
// more; and the write-back gives the store what the network spent, so once
// the store answers again the same day it gets none more.
func TestKnownNetwork_DuringAnOutageSomeoneBehindTheOwnersAddressGetsDeviceFreeAtMost(t *testing.T) {
	h := newHarness(t, "")
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	for range 10 {
		h.timedGuess(victim)
	}
	h.store.fail.Store(true)
	went := 0
	for range 20 {
		if v := h.guessFor(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action == authguard.Proceed {
			went++
		}
	}
	if went != 5 {
		t.Fatalf("failures from the owner's address during the outage: %d, want device_free (5)", went)
	}
	h.store.fail.Store(false)
	h.clock.Advance(time.Minute)
	went = 0
	for range 20 {
		if v := h.guessFor(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action == authguard.Proceed {
			went++
		}
	}
	if went != 0 {
		t.Errorf("failures from the owner's address after the outage, the same day: %d, want 0 (the fallback's 5 written back)", went)
	}
	if wb := h.e.WriteBack(); wb.Queued != 0 || wb.Dropped != 0 {
		t.Errorf("write-back %+v, want every op written", wb)
	}
}

// A flood: with every call slot taken, a check the recall already refuses
// is answered from it. The recall remembers the account's delay, so the
// owner without her device token, from her known network, was answered
// that delay without the store ever being asked. Her network's record is
// remembered too (records.go): her check is not refused from memory, takes
// a slot kept for priority calls as a known device's does, and the store
// lets her through; the attacker's flood is still answered from memory.
func TestKnownNetwork_AFloodDoesNotAnswerTheOwnerFromMemory(t *testing.T) {
	e, gate, clock := newGatedEngine(t)
	ctx := context.Background()
	const victim = "victim@example.com"
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ownerAddr})
	e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ownerAddr, Outcome: authguard.Success, Attempt: v.Attempt})
	for i := range 9 {
		ip := fmt.Sprint("198.18.0.", i+1)
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
		if v.Action == authguard.Proceed {
			e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
		}
		clock.Advance(v.Delay)
	}
	if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: attackerAddr}); v.Action != authguard.Delay {
		t.Fatalf("before the flood, the attacker: %v, want the account's delay", v.Action)
	}
	release := gate.fillSlots(e)
	before, lookups := gate.passes.Load(), gate.lookups.Load()
	for i := range 200 {
		if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: fmt.Sprintf("198.19.0.%d", i%100+1)}); v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
			t.Fatalf("flooded check %d: %+v, want the account's delay", i, v)
		}
	}
	// A network new to the engine is looked up once (a peek of its record:
	// it could be one she signed in from through another instance), and
	// no flooded check runs in the store.
	if n, l := gate.passes.Load()-before, gate.lookups.Load()-lookups; n != l || l > 100 {
		t.Errorf("the flood from 100 networks reached the store %d times, %d of them look-ups; want look-ups only, at most 100", n, l)
	}
	if v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ownerAddr}); err != nil || v.Action != authguard.Proceed {
		t.Errorf("the owner from her known network during the flood: %+v %v, want proceed", v, err)
	}
	release()
}

// A reset through another instance: this one's memory of the thief's
// network is corrected by Redis's next answer here, but the copy an
// earlier outage wrote into its fallback was not, and made the thief's
// network known again at the next outage (the fallback reads it with the
// record's 90-day window). The answer that corrects the memory now deletes
// the fallback's copy too.
func TestKnownNetwork_AResetThroughAnotherInstanceHoldsThroughTheNextOutage(t *testing.T) {
	in := newInstances(t, 2, "", 0)
	ctx := context.Background()
	const victim = "victim@example.com"
	check := func(e *authguard.Engine, ip string) authguard.Verdict {
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := check(in.e[0], attackerAddr) // the thief signs in through instance 0
	in.e[0].Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: attackerAddr, Outcome: authguard.Success, Attempt: v.Attempt})
	failures(t, in, in.e[1], victim, 20)
	in.store.fail.Store(true)
	if v := check(in.e[0], attackerAddr); v.Action != authguard.Proceed {
		t.Fatalf("first outage, the (still) known network: %v %v, want proceed", v.Action, v.Reasons)
	}
	in.store.fail.Store(false)
	if _, err := in.e[1].Reset(ctx, authguard.ResetRequest{Flow: "login", Account: victim, Reason: "password reset"}); err != nil {
		t.Fatal(err)
	}
	failures(t, in, in.e[1], victim, 20)
	if v := check(in.e[0], attackerAddr); v.Action != authguard.Delay {
		t.Fatalf("after the reset through instance 1, through instance 0: %v, want the account's delay", v.Action)
	}
	in.store.fail.Store(true)
	if v := check(in.e[0], attackerAddr); v.Action != authguard.Delay {
		t.Errorf("next outage, the thief's network the reset forgot: %v %v, want the account's delay", v.Action, v.Reasons)
	}
}

// opLog is a Store that records every op it is sent, by action and key.
type opLog struct {
	authguard.Store
	mu   sync.Mutex
	sent []string
}

func (o *opLog) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	o.mu.Lock()
	for _, op := range ops {
		if l, ok := op.(*authguard.LogOp); ok {
			o.sent = append(o.sent, l.Action.String()+" "+l.Key)
		}
	}
	o.mu.Unlock()
	return o.Store.Do(ctx, ops)
}

// During an outage the fallback spends a network's spare allowance and
// slot only on a check they exempt. An attacker's check from a network the
// account never signed in from is refused for the account's delay the
// recall holds; its spares used to be admitted on the fallback and then
// refunded, the account's device slots holding the attacker's network in
// between. Now they are never admitted.
func TestKnownNetwork_DuringAnOutageAnAttackersNetworkTakesNoSlotEvenForAMoment(t *testing.T) {
	clock := testclock.New(time.Time{})
	store := &countingStore{Store: memstore.New(memstore.Config{Now: clock.Now})}
	fallback := &opLog{Store: memstore.New(memstore.Config{Now: clock.Now})}
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: store, Fallback: fallback, Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clock: clock, e: e, store: store}
	const victim = "victim@example.com"
	h.attempt(victim, ownerAddr, authguard.Success, "")
	for range 10 {
		h.timedGuess(victim)
	}
	store.fail.Store(true)
	for i := range 5 {
		if v := h.check(authguard.CheckRequest{Account: victim, IP: fmt.Sprint("203.0.113.", 100+i)}); v.Action != authguard.Delay {
			t.Fatalf("store down, attacker %d: %v, want the account's delay", i, v.Action)
		}
	}
	for _, s := range fallback.sent {
		if strings.HasPrefix(s, "admit ") && strings.Contains(s, ".slots:") {
			t.Errorf("the fallback admitted an attacker's network to the account's slots: %s", s)
		}
	}
	if v := h.check(authguard.CheckRequest{Account: victim, IP: ownerAddr}); v.Action != authguard.Proceed {
		t.Errorf("store down, the owner from her network: %v %v, want proceed", v.Action, v.Reasons)
	}
}
