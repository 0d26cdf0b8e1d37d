package authguard_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// instances are engines on one shared store, each with a fallback of its
// own, on one test clock: a deployment of several tollgates on one Redis.
type instances struct {
	clock  *testclock.Clock
	store  *countingStore
	e      []*authguard.Engine
	source []authguard.Source // the last event's source, per engine
	mu     sync.Mutex
}

func newInstances(t *testing.T, n int, policyYAML string, recallBytes int64) *instances {
	t.Helper()
	in := &instances{clock: testclock.New(time.Time{}), source: make([]authguard.Source, n)}
	in.store = &countingStore{Store: memstore.New(memstore.Config{Now: in.clock.Now})}
	p, err := policyfile.LoadPolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e, err := authguard.New(authguard.Config{
			Policy: p, Store: in.store, Fallback: memstore.New(memstore.Config{Now: in.clock.Now}),
			Secret: secret, Now: in.clock.Now, RecallBytes: recallBytes,
			Observe: func(ev authguard.Event) { in.mu.Lock(); in.source[i] = ev.Source; in.mu.Unlock() },
		})
		if err != nil {
			t.Fatal(err)
		}
		in.e = append(in.e, e)
	}
	return in
}

// bruteForce runs the attack for d on one account: checks at rate
// per second from fresh addresses, alternating between the instances, each
// proceed reported as a failure to the other instance. fault(t) says
// whether the store is down at t since the start. It returns the proceeds.
func (in *instances) bruteForce(t *testing.T, d time.Duration, perSecond int, fault func(time.Duration) bool) (proceeds int) {
	t.Helper()
	ctx := context.Background()
	step := time.Second / time.Duration(perSecond)
	for i := 0; time.Duration(i)*step < d; i++ {
		in.store.fail.Store(fault(time.Duration(i) * step))
		ip := fmt.Sprintf("198.18.%d.%d", i/250%250, i%250+1)
		a, b := in.e[i%len(in.e)], in.e[(i+1)%len(in.e)]
		v, err := a.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action == authguard.Proceed {
			proceeds++
			if _, err := b.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
				t.Fatal(err)
			}
		}
		in.clock.Advance(step)
	}
	in.store.fail.Store(false)
	return proceeds
}

// counted is the store's failure count for the victim's account, read with
// Explain; it fails the test while an instance still has ops to write back.
func (in *instances) counted(t *testing.T) int {
	t.Helper()
	for i, e := range in.e {
		if wb := e.WriteBack(); wb.Queued != 0 || wb.Dropped != 0 {
			t.Errorf("instance %d: %+v, want every op written back", i, wb)
		}
	}
	x, err := in.e[0].Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: "victim@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range x.Rules {
		if r.Rule == "account_backoff" {
			return r.Count
		}
	}
	t.Fatal("explain shows no account_backoff")
	return 0
}

// failures has account fail n times through e from fresh addresses,
// waiting out each delay, and leaves the clock at the last failure.
func failures(t *testing.T, in *instances, e *authguard.Engine, account string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; n > 0; i++ {
		ip := fmt.Sprint("198.18.0.", i+1)
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Proceed {
			in.clock.Advance(v.Delay)
			continue
		}
		if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
			t.Fatal(err)
		}
		n--
	}
}

// blips is a fault of length each every period, from 5 s on: the account
// is in backoff by then. (An account not yet in backoff gets its free
// attempts on each instance's fallback during an outage; README says so.)
func blips(period, each time.Duration) func(time.Duration) bool {
	return func(t time.Duration) bool { return t >= 5*time.Second && (t-5*time.Second)%period < each }
}

// The measurement: a blip made each instance's fallback start
// empty, so an account the store held in an 8–16 s delay got its free
// guesses again on every instance. With the recall the fallback starts from
// what the store last said, and the attack gets no more proceeds through
// blips than without them.
func TestBlip_AnAccountInBackoffStaysInBackoffThroughStoreBlips(t *testing.T) {
	perSecond := 100
	if testing.Short() {
		perSecond = 25 // a 0.3 s stall is still 7 attempts, more than the 5 free ones
	}
	steady := newInstances(t, 2, "", 0).bruteForce(t, time.Minute, perSecond, func(time.Duration) bool { return false })
	faults := []struct {
		name  string
		fault func(time.Duration) bool
	}{
		{"a 0.3s stall every 2s", blips(2*time.Second, 300*time.Millisecond)},
		{"a 1s write pause every 5s", blips(5*time.Second, time.Second)},
		{"a failover of 4s at 20s", func(t time.Duration) bool { return t >= 20*time.Second && t < 24*time.Second }},
	}
	for _, tt := range faults {
		t.Run(tt.name, func(t *testing.T) {
			in := newInstances(t, 2, "", 0)
			got := in.bruteForce(t, time.Minute, perSecond, tt.fault)
			forgetful := newInstances(t, 2, "", -1).bruteForce(t, time.Minute, perSecond, tt.fault)
			t.Logf("proceeds in 60s: %d without a fault, %d through the faults, %d without the recall", steady, got, forgetful)
			if got > steady {
				t.Errorf("the faults gave the attacker %d proceeds, %d more than without them", got, got-steady)
			}
			if n := in.counted(t); n != got {
				t.Errorf("the shared counter holds %d failures after the faults, want the %d proceeds (nothing lost, nothing twice)", n, got)
			}
			if forgetful <= steady {
				t.Errorf("without the recall the faults gave %d proceeds, no more than %d: the test no longer measures a blip", forgetful, steady)
			}
		})
	}
}

// A fail-closed flow answers a store outage with its short retry, but not
// for an account the store held in a longer delay: that wait stands, one
// step longer (16 s, then the 32 s after the attempt another instance may
// let through when it ends, which this one cannot see).
func TestBlip_FailClosedKeepsTheRememberedWait(t *testing.T) {
	in := newInstances(t, 1, "flows:\n  login:\n    fail_mode: closed\n", 0)
	e, ctx := in.e[0], context.Background()
	failures(t, in, e, "victim", 9) // the next attempt waits 16s
	in.store.fail.Store(true)
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: "198.18.1.1"})
	if v.Action != authguard.Delay || v.Delay != 48*time.Second || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Errorf("store down, account in a 16s delay: %+v, want 16 s + 32 s", v)
	}
	v, _ = e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "someone-else", IP: "198.18.1.2"})
	if v.Action != authguard.Delay || v.Delay != 2*time.Second || v.Reasons[0] != authguard.ReasonUnavailable {
		t.Errorf("store down, an account not in backoff: %+v, want the 2s unavailable retry", v)
	}
}

// Three instances cannot see each other's fallbacks during an outage. One
// that spans the moment an account's wait runs out would let each of them
// take the attempt then (three where the store gives one), so each counts
// the attempt the others may take: a fault shorter than the delay gives the
// account nothing on any instance.
func TestBlip_InstancesThatCannotSeeEachOtherGiveNothingDuringAShortFault(t *testing.T) {
	in := newInstances(t, 3, "", 0)
	ctx := context.Background()
	failures(t, in, in.e[0], "victim@example.com", 8) // the next attempt waits 8 s
	for _, e := range in.e {                          // every instance has seen the delay
		if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: "198.18.9.9"}); v.Action != authguard.Delay {
			t.Fatalf("before the fault: %v, want delay", v.Action)
		}
	}
	in.clock.Advance(7500 * time.Millisecond)
	in.store.fail.Store(true) // from 0.5 s before the wait's end to 3 s after it
	proceeds := 0
	for i := range 350 {
		ip := fmt.Sprintf("198.18.10.%d", i%250+1)
		if v, _ := in.e[i%3].Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: ip}); v.Action == authguard.Proceed {
			proceeds++
		}
		in.clock.Advance(10 * time.Millisecond)
	}
	if proceeds != 0 {
		t.Errorf("a 3.5 s outage across the end of an 8 s wait gave %d proceeds on 3 instances, want 0", proceeds)
	}
}

// An administrator's reset through an instance clears what that instance
// remembers, so the next outage does not bring the account's delay back.
func TestBlip_AResetClearsTheRecall(t *testing.T) {
	in := newInstances(t, 1, "", 0)
	e, ctx := in.e[0], context.Background()
	failures(t, in, e, "victim", 9)
	if n := e.Recall().Keys; n == 0 {
		t.Fatal("an account in backoff is not remembered")
	}
	if _, err := e.Reset(ctx, authguard.ResetRequest{Flow: "login", Account: "victim", Reason: "owner called"}); err != nil {
		t.Fatal(err)
	}
	in.store.fail.Store(true)
	if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: "198.18.1.1"}); v.Action != authguard.Proceed {
		t.Errorf("after a reset, store down: %+v, want proceed from the fallback", v)
	}
}

// gatedStore holds the first n calls (a slow store that fills the call
// slots) until open is closed, and passes every later call through.
type gatedStore struct {
	authguard.Store
	n      atomic.Int64
	held   chan struct{} // receives one value per held call
	open   chan struct{}
	passes atomic.Int64
	// lookups are the calls passed that only peek: the flood path's
	// look-ups of records, which run no check.
	lookups atomic.Int64
}

func (g *gatedStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if g.n.Add(-1) >= 0 {
		g.held <- struct{}{}
		<-g.open
	}
	g.passes.Add(1)
	if !slices.ContainsFunc(ops, func(op authguard.Op) bool {
		l, ok := op.(*authguard.LogOp)
		return !ok || l.Action != authguard.LogPeek
	}) {
		g.lookups.Add(1)
	}
	return g.Store.Do(ctx, ops)
}

// The flood: 800 concurrent checks on one account already in
// backoff were half shed with 503, which a caller in FailOpen lets through
// unchecked. Now, with every call slot taken, a check the recall already
// refuses is answered delay at once without the store, one that needs the
// store and gets no slot in time is a delay with reason overloaded (never
// an error), and the owner's known device takes a slot kept for it.
func TestFlood_AnAccountInBackoffIsAnsweredWithoutTheQueue(t *testing.T) {
	e, gate, clock := newGatedEngine(t)
	ctx := context.Background()
	// The owner logs in once and keeps her device token; then an attacker
	// puts the account in backoff.
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: "203.0.113.7"})
	owner, _ := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim", IP: "203.0.113.7", Outcome: authguard.Success, Attempt: v.Attempt})
	for i := range 9 {
		ip := fmt.Sprint("198.18.0.", i+1)
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: ip})
		if v.Action == authguard.Proceed {
			e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim", IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
		}
		clock.Advance(v.Delay)
	}
	release := gate.fillSlots(e)
	// Each network is new to the engine, and could be one the owner signed
	// in from through another instance: it is looked up once (a peek of its
	// record), never checked in the store, and then answered from memory.
	for pass := range 2 {
		passes, lookups := gate.passes.Load(), gate.lookups.Load()
		for i := range 800 {
			v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: fmt.Sprintf("198.19.%d.%d", i/200, i%200+1)})
			if err != nil || v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
				t.Fatalf("pass %d, flooded check %d on the account in backoff: %+v %v, want its delay", pass, i, v, err)
			}
		}
		n, l := gate.passes.Load()-passes, gate.lookups.Load()-lookups
		if n != l || pass == 0 && l > 800 || pass == 1 && l != 0 {
			t.Errorf("pass %d of the flood on the account in backoff reached the store %d times, %d of them look-ups; want only look-ups, at most one a network, and none once looked up", pass, n, l)
		}
	}
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "fresh", IP: "192.0.2.9"})
	if err != nil || v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonOverloaded || v.Delay != 2*time.Second {
		t.Errorf("a check that needs the store and finds no slot: %+v %v, want delay 2s overloaded", v, err)
	}
	v, err = e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: "203.0.113.7", DeviceToken: owner.DeviceToken})
	if err != nil || v.Action != authguard.Proceed {
		t.Errorf("the owner's known device during the flood: %+v %v, want proceed", v, err)
	}
	release()
}

// newGatedEngine is an engine of the built-in policy on a gatedStore, with
// 4 call slots (one kept for priority calls) and a 20 ms wait for one.
func newGatedEngine(t *testing.T) (*authguard.Engine, *gatedStore, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(time.Time{})
	gate := &gatedStore{Store: memstore.New(memstore.Config{Now: clock.Now}), held: make(chan struct{}, 8), open: make(chan struct{})}
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: gate, Fallback: memstore.New(memstore.Config{Now: clock.Now}),
		Secret: secret, Now: clock.Now, MaxInFlight: 4, QueueWait: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, gate, clock
}

// fillSlots makes the store slow: the next three calls hang and take
// every ordinary slot of e. release lets them finish and waits for them.
func (g *gatedStore) fillSlots(e *authguard.Engine) (release func()) {
	g.n.Store(3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("slow", i), IP: "192.0.2.1"})
		})
	}
	for range 3 {
		<-g.held
	}
	return func() {
		close(g.open)
		wg.Wait()
	}
}

// An attacker's short-lived entries pushed an account's backoff out of the
// recall: it was one LRU over every kind of entry, so a few million
// checks making refused rates or full logs (about 207 bytes and two checks
// each here) evicted a victim's remembered counter before a blip, and the
// blip gave him his free guesses again on the fallback. Counters at or
// past Free are now a tier of their own, evicted only when the recall
// holds nothing else: 4,000 refused rates in a recall that holds some 70
// entries leave the victim's counter, and it answers during the blip.
func TestRecall_AFloodOfShortLivedEntriesDoesNotPushOutAnAccountsBackoff(t *testing.T) {
	const policy = "flows:\n  login:\n    rules:\n      - name: ip_rate\n        limit: 1\n        rate: 1/h\n"
	const budget = 16 << 10
	in := newInstances(t, 1, policy, budget)
	e, ctx := in.e[0], context.Background()
	failures(t, in, e, "victim", 9) // the next attempt waits 16 s
	for i := range 4_000 {          // each address's second check is refused by ip_rate
		ip := fmt.Sprintf("198.19.%d.%d", i/250, i%250+1)
		for range 2 {
			if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("a", i), IP: ip}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := e.Recall()
	t.Logf("after the flood: %+v", st)
	if st.Bytes > budget || st.Keys < 20 {
		t.Fatalf("the recall holds %d keys in %d bytes: want it full and within %d", st.Keys, st.Bytes, budget)
	}
	in.store.fail.Store(true)
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim", IP: "203.0.113.50"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Errorf("the victim's check during the blip after the flood: %v %v, want his account_backoff delay", v.Action, v.Reasons)
	}
}
