package authguard_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// twoInstances are instances A and B of one deployment on one store: A on
// it directly, B through a gatedStore (whose call slots a test can fill,
// and which counts what reached the store through B), both with 4 call
// slots (one kept for priority calls) and a 20 ms wait for one.
type twoInstances struct {
	clock *testclock.Clock
	a, b  *authguard.Engine
	gate  *gatedStore // B's store
	// failPeeks makes a call through B that only peeks (a look-up of
	// records) fail as a store's timeout does.
	failPeeks atomic.Bool
}

// peekFailer fails a call that only peeks while fail is true.
type peekFailer struct {
	authguard.Store
	fail *atomic.Bool
}

func (f peekFailer) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if f.fail.Load() && !slices.ContainsFunc(ops, func(op authguard.Op) bool {
		l, ok := op.(*authguard.LogOp)
		return !ok || l.Action != authguard.LogPeek
	}) {
		return nil, fmt.Errorf("test: %w", context.DeadlineExceeded)
	}
	return f.Store.Do(ctx, ops)
}

func newTwoInstances(t *testing.T) *twoInstances {
	t.Helper()
	clock := testclock.New(time.Time{})
	shared := memstore.New(memstore.Config{Now: clock.Now})
	in := &twoInstances{clock: clock}
	in.gate = &gatedStore{Store: peekFailer{Store: shared, fail: &in.failPeeks}, held: make(chan struct{}, 8), open: make(chan struct{})}
	for _, st := range []struct {
		e     **authguard.Engine
		store authguard.Store
	}{{&in.a, shared}, {&in.b, in.gate}} {
		e, err := authguard.New(authguard.Config{
			Policy: builtinpolicy.Policy(), Store: st.store, Fallback: memstore.New(memstore.Config{Now: clock.Now}),
			Secret: secret, Now: clock.Now, MaxInFlight: 4, QueueWait: 20 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		*st.e = e
	}
	return in
}

// The red team's attack: the owner signs in through instance A, the
// attacker's guesses go through B. With every ordinary call slot of B
// taken, her check from her known network through B was answered the
// account's delay at once from B's memory of it, though B had never seen
// her network either way (5 of 5 runs; without the flood B lets her
// through). B now looks her network's record up in the store and lets the
// store decide her check in a slot kept for priority calls; the attacker's
// checks are still answered from memory, without the store: his own
// networks B saw refused, fresh ones after one look-up each, and a device
// token of his own account changes nothing.
func TestFlood_TheOwnerIsNotAnsweredFromAnotherInstancesMemory(t *testing.T) {
	in := newTwoInstances(t)
	ctx := context.Background()
	const victim = "victim@example.com"
	v, _ := in.a.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ownerAddr})
	if _, err := in.a.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ownerAddr, Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
		t.Fatal(err)
	}
	// The attacker's own account's device token, to send with guesses.
	v, _ = in.b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "attacker@example.com", IP: attackerAddr})
	own, err := in.b.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "attacker@example.com", IP: attackerAddr, Outcome: authguard.Success, Attempt: v.Attempt})
	if err != nil || own.DeviceToken == "" {
		t.Fatalf("the attacker's own login: %+v %v", own, err)
	}
	for i := range 9 {
		ip := fmt.Sprint("198.18.0.", i+1)
		v, _ := in.b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
		if v.Action == authguard.Proceed {
			in.b.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
		}
		in.clock.Advance(v.Delay)
	}
	// The networks of his guesses from the fifth on, which met the
	// account at its free failures or past them.
	attacker := func(i int) string { return fmt.Sprint("198.18.0.", i%5+5) }
	if v, _ := in.b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: attacker(0)}); v.Action != authguard.Delay {
		t.Fatalf("before the flood, the attacker through B: %v, want the account's delay", v.Action)
	}

	release := in.gate.fillSlots(in.b)
	defer release()
	flooded := func(phase string, n int, req func(i int) authguard.CheckRequest) {
		t.Helper()
		for i := range n {
			r := req(i)
			r.Flow, r.Account = "login", victim
			if v, err := in.b.Check(ctx, r); err != nil || v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
				t.Fatalf("%s, check %d: %+v %v, want the account's delay", phase, i, v, err)
			}
		}
	}
	passes, lookups := in.gate.passes.Load(), in.gate.lookups.Load()
	flooded("the attacker's networks", 100, func(i int) authguard.CheckRequest { return authguard.CheckRequest{IP: attacker(i)} })
	flooded("with his own device token", 100, func(i int) authguard.CheckRequest {
		return authguard.CheckRequest{IP: attacker(i), DeviceToken: own.DeviceToken}
	})
	if n, l := in.gate.passes.Load()-passes, in.gate.lookups.Load()-lookups; n != 0 {
		t.Errorf("the flood from the attacker's networks reached the store %d times (%d look-ups), want 0", n, l)
	}
	// Networks B never saw: each is looked up once (a peek of its record,
	// nothing written), then answered from memory like the others.
	fresh := func(i int) authguard.CheckRequest { return authguard.CheckRequest{IP: fmt.Sprint("198.19.0.", i%50+1)} }
	flooded("fresh networks", 100, fresh)
	if n, l := in.gate.passes.Load()-passes, in.gate.lookups.Load()-lookups; n != l || l > 50 {
		t.Errorf("50 fresh networks, 100 checks: %d store calls, %d of them look-ups; want look-ups only, at most 50", n, l)
	}
	passes = in.gate.passes.Load()
	flooded("the fresh networks again", 100, fresh)
	if n := in.gate.passes.Load() - passes; n != 0 {
		t.Errorf("networks looked up already: %d more store calls, want 0", n)
	}

	v, err = in.b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ownerAddr})
	if err != nil || v.Action != authguard.Proceed {
		t.Fatalf("the owner from her known network through B during the flood: %+v %v, want proceed", v, err)
	}
	if _, err := in.b.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ownerAddr, Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
		t.Errorf("her report: %v", err)
	}
}

// The same attack on a send flow: the owner verified her number through
// instance A, from home; a bomber's sends through B made the number wait.
// With every ordinary call slot of B taken, her code from home (no device
// token, CAPTCHA solved), through B, was answered the number's wait from
// B's memory, though B had never seen the records that her account
// verified the number, from there. B now looks them up and the store
// gives her the code; the bomber naming her account from elsewhere is
// answered from memory after one look-up of his network.
func TestFlood_TheOwnersCodeIsNotWithheldFromAnotherInstancesMemory(t *testing.T) {
	in := newTwoInstances(t)
	ctx := context.Background()
	const account = "owner@example.com"
	v, _ := in.a.Check(ctx, authguard.CheckRequest{Flow: "otp_verify", Account: account, IP: "203.0.113.7"})
	if _, err := in.a.Report(ctx, authguard.ReportRequest{Flow: "otp_verify", Account: account, IP: "203.0.113.7", Outcome: authguard.Success,
		Attempt: v.Attempt, Destination: victim, Channel: "sms"}); err != nil {
		t.Fatal(err)
	}
	start := in.clock.Now()
	for i, sent := 0, 0; sent < 10; i++ {
		v, err := in.b.Send(ctx, authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(i)})
		switch {
		case err != nil:
			t.Fatal(err)
		case v.Action == authguard.Proceed:
			sent++
		default:
			in.clock.Advance(v.Delay)
		}
		if in.clock.Now().Sub(start) > 3*time.Hour {
			t.Fatalf("bombing: %d codes in 3 hours, want 10", sent)
		}
	}
	in.clock.Set(start.Add(4 * time.Hour))
	bomber := authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(3000), Account: account, CaptchaSolved: true}
	if v, _ := in.b.Send(ctx, bomber); v.Action == authguard.Proceed {
		t.Fatal("before the flood, the bomber naming her account from elsewhere: proceed, want the number's wait")
	}

	release := in.gate.fillSlots(in.b)
	defer release()
	passes, lookups := in.gate.passes.Load(), in.gate.lookups.Load()
	for i := range 50 {
		bomber.IP = addr(3000 + i%10)
		if v, err := in.b.Send(ctx, bomber); err != nil || v.Action != authguard.Delay || v.Reasons[0] == authguard.ReasonOverloaded {
			t.Fatalf("flooded send %d of the bomber: %+v %v, want the number's wait", i, v, err)
		}
	}
	if n, l := in.gate.passes.Load()-passes, in.gate.lookups.Load()-lookups; n != l || l > 10 {
		t.Errorf("the bomber's flood from 10 networks reached the store %d times, %d of them look-ups; want look-ups only, at most 10", n, l)
	}
	v, err := in.b.Send(ctx, authguard.SendRequest{Destination: victim, Channel: "sms", IP: "203.0.113.7", Account: account, CaptchaSolved: true})
	if err != nil || v.Action != authguard.Proceed {
		t.Errorf("her code from home through B during the flood, CAPTCHA solved: %+v %v, want it", v, err)
	}
}

// A network the engine never saw, whose record it cannot read in time
// (here its look-up times out in the store), is shed as a call that finds
// no slot is (delay, reason overloaded): neither answered from the memory
// of the account's delay, which would hold the owner to it, nor run in the
// store, which would let a flood of networks reach it.
func TestFlood_ARecordNotReadInTimeIsShedNotAnsweredFromMemory(t *testing.T) {
	in := newTwoInstances(t)
	ctx := context.Background()
	const victim = "victim@example.com"
	for i := range 9 {
		ip := fmt.Sprint("198.18.0.", i+1)
		v, _ := in.b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
		if v.Action == authguard.Proceed {
			in.b.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
		}
		in.clock.Advance(v.Delay)
	}
	release := in.gate.fillSlots(in.b)
	defer release()
	in.failPeeks.Store(true)
	passes, lookups := in.gate.passes.Load(), in.gate.lookups.Load()
	v, err := in.b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ownerAddr})
	if err != nil || v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonOverloaded {
		t.Errorf("a check whose record could not be read in time: %+v %v, want delay, overloaded", v, err)
	}
	if n, l := in.gate.passes.Load()-passes, in.gate.lookups.Load()-lookups; n != l {
		t.Errorf("%d calls reached the store, %d of them look-ups; want look-ups only", n, l)
	}
}
