package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// heldStore holds the next n calls until open is closed (a slow store that
// takes an instance's call slots) and counts the calls passed that run
// more than peeks: checks and reports, not the flood path's look-ups of
// records.
type heldStore struct {
	authguard.Store
	n      atomic.Int64
	held   chan struct{}
	open   chan struct{}
	checks atomic.Int64
	peeks  atomic.Int64
}

// SubjectTags passes on the store's key layout (authguard.SubjectTagger).
func (h *heldStore) SubjectTags() bool {
	t, ok := h.Store.(authguard.SubjectTagger)
	return ok && t.SubjectTags()
}

func (h *heldStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if h.n.Add(-1) >= 0 {
		h.held <- struct{}{}
		<-h.open
	}
	if slices.ContainsFunc(ops, func(op authguard.Op) bool {
		l, ok := op.(*authguard.LogOp)
		return !ok || l.Action != authguard.LogPeek
	}) {
		h.checks.Add(1)
	} else {
		h.peeks.Add(1)
	}
	return h.Store.Do(ctx, ops)
}

// The red team's attack on Redis and on a Redis Cluster: two instances,
// the owner signed in through A, the attacker's guesses through B, every
// ordinary call slot of B taken. B's memory of the account's delay
// answered her check from her known network (account_backoff) though B
// had never seen her network. Now 300 concurrent guesses from networks B
// never saw either are each answered a delay without one of them running
// in Redis (after look-ups of their records, coalesced, in calls of 1, 4,
// 16 or 64 peeks, so Redis compiles few new scripts for them), and the
// owner's check through B proceeds.
func TestFlood_RedisTheOwnerIsNotAnsweredFromAnotherInstancesMemory(t *testing.T) {
	for _, tt := range []struct {
		name   string
		client func(t testing.TB) redis.UniversalClient
	}{
		{"single", func(t testing.TB) redis.UniversalClient { return singleClient(t) }},
		{"cluster", func(t testing.TB) redis.UniversalClient { return clusterClient(t) }},
		{"subject", func(t testing.TB) redis.UniversalClient { return clientOf(t.(*testing.T), "subject") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client(t)
			clock := testclock.New(time.Now())
			sa, sb := newStore(t, c, clock.Now), newStore(t, c, clock.Now)
			gate := &heldStore{Store: sb, held: make(chan struct{}, 4), open: make(chan struct{})}
			engine := func(st authguard.Store) *authguard.Engine {
				e, err := authguard.New(authguard.Config{
					Policy: builtinpolicy.Policy(), Store: st, Fallback: memstore.New(memstore.Config{Now: clock.Now}),
					Secret: secret, Now: clock.Now, MaxInFlight: 4, QueueWait: 20 * time.Millisecond,
				})
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			a, b := engine(sa), engine(gate)
			ctx := context.Background()
			const victim, home = "victim@example.com", "198.51.100.23"
			v, _ := a.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: home})
			if _, err := a.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: home, Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
				t.Fatal(err)
			}
			for i := range 9 {
				ip := fmt.Sprint("198.18.0.", i+1)
				v, _ := b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
				if v.Action == authguard.Proceed {
					b.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
				}
				clock.Advance(v.Delay)
			}

			gate.n.Store(3) // three slow checks take B's three ordinary slots
			var slow sync.WaitGroup
			for i := range 3 {
				slow.Go(func() {
					b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("slow", i), IP: "192.0.2.1"})
				})
			}
			for range 3 {
				<-gate.held
			}
			defer slow.Wait()
			defer close(gate.open)

			shapes, checks, peeks := redisstore.Shapes(sb), gate.checks.Load(), gate.peeks.Load()
			var wrong, shed atomic.Int64
			var flood sync.WaitGroup
			for w := range 30 {
				flood.Go(func() {
					for i := range 10 {
						ip := fmt.Sprintf("198.19.%d.%d", w, i+1)
						v, err := b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
						switch {
						case err != nil || v.Action != authguard.Delay:
							wrong.Add(1)
						case v.Reasons[0] == authguard.ReasonOverloaded:
							shed.Add(1)
						}
					}
				})
			}
			flood.Wait()
			t.Logf("300 guesses from fresh networks, 30 at a time: %d answered the account's delay from memory, %d shed; %d calls of look-ups, %d new shapes",
				300-wrong.Load()-shed.Load(), shed.Load(), gate.peeks.Load()-peeks, redisstore.Shapes(sb)-shapes)
			if n := wrong.Load(); n != 0 {
				t.Errorf("%d of 300 flooded guesses from fresh networks not delayed", n)
			}
			if n := gate.checks.Load() - checks; n != 0 {
				t.Errorf("%d flooded guesses ran in Redis, want none", n)
			}
			if n := redisstore.Shapes(sb) - shapes; n > 3 {
				t.Errorf("the look-ups made %d new shapes, want at most 3 (calls of 4, 16 and 64 peeks)", n)
			}
			v, err := b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: home})
			if err != nil || v.Action != authguard.Proceed {
				t.Errorf("the owner from her known network through B during the flood: %+v %v, want proceed", v, err)
			}
		})
	}
}
