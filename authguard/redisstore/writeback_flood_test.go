package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// outageFlood is the red team's attack on the write-back at scale: while
// Redis is down, fresh checks (a fresh account from a fresh address each,
// about three ops each to write back) fill what one instance queues for
// Redis, and then the victim fails his free attempts on that instance. Two
// instances on one Redis, on one test clock (the breakers' too), so that
// nothing waits in real time.
type outageFlood struct {
	clock *testclock.Clock
	e     [2]*authguard.Engine
}

// floodChecks is more than three times the 50,000 ops the queue held
// before it was bounded in bytes: 52,000 fresh checks queue 156,000 ops
// on the fallback.
const floodChecks = 52_000

func newOutageFlood(t *testing.T, client func() redis.UniversalClient) *outageFlood {
	t.Helper()
	f := &outageFlood{clock: testclock.New(time.Unix(1_700_000_000, 0))}
	for i := range f.e {
		s, err := redisstore.New(redisstore.Config{Client: client(), Now: f.clock.Now, Clock: f.clock.Now, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e, err := authguard.New(authguard.Config{
			Policy: builtinpolicy.Policy(), Store: s, Secret: secret, Now: f.clock.Now,
			Fallback: memstore.New(memstore.Config{Now: f.clock.Now}),
		})
		if err != nil {
			t.Fatal(err)
		}
		f.e[i] = e
	}
	return f
}

// check is one check through e, reported as a failure through e when it
// proceeds; it says whether it proceeded.
func (f *outageFlood) check(t *testing.T, e *authguard.Engine, account, ip string, fail bool) bool {
	t.Helper()
	ctx := context.Background()
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	if v.Action != authguard.Proceed {
		return false
	}
	if fail {
		if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// fail has account fail n times through the first instance.
func (f *outageFlood) fail(t *testing.T, account string, n int) {
	t.Helper()
	for i := range n {
		if !f.check(t, f.e[0], account, "203.0.113.9", true) {
			t.Fatalf("%s's guess %d on the fallback did not proceed", account, i+1)
		}
	}
}

// flood makes floodChecks fresh checks through the first instance.
func (f *outageFlood) flood(t *testing.T) {
	t.Helper()
	for i := range floodChecks {
		ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		f.check(t, f.e[0], fmt.Sprint("fresh", i), ip, false)
	}
}

// recover lets the breakers try Redis again and has the first instance
// make calls until it has written back all it queued (or dropped it).
func (f *outageFlood) recover(t *testing.T) authguard.WriteBackStats {
	t.Helper()
	f.clock.Advance(time.Second) // past the breakers' cooldown
	for i := 0; f.e[0].WriteBack().Queued > 0; i++ {
		if i == 10_000 {
			t.Fatalf("the write-back did not drain in %d calls: %+v", i, f.e[0].WriteBack())
		}
		f.check(t, f.e[0], "drain", "192.0.2.1", false)
	}
	return f.e[0].WriteBack()
}

// shared is account's failure count in Redis, read through the second
// instance, and the guesses that instance then gives it.
func (f *outageFlood) shared(t *testing.T, account string) (count, guesses int) {
	t.Helper()
	x, err := f.e[1].Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: account})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range x.Rules {
		if r.Rule == "account_backoff" {
			count = r.Count
		}
	}
	for i := range 20 {
		if !f.check(t, f.e[1], account, fmt.Sprint("198.51.100.", i+1), true) {
			break
		}
		guesses++
	}
	return count, guesses
}

// attack is the outage: outage stops Redis, restart starts it again.
// One victim fails his 5 free attempts before the flood, so that the
// flood would push them out were they not held first; one fails them
// after it; another fails 4 before it and his 5th after it, so that the
// flood sheds his entry while it holds nobody back.
func (f *outageFlood) attack(t *testing.T, outage func(), restart func() error) {
	t.Helper()
	outage()
	f.fail(t, "first@example.com", 5)
	f.fail(t, "early@example.com", 4)
	f.flood(t)
	f.fail(t, "early@example.com", 1)
	f.fail(t, "late@example.com", 5)
	if err := restart(); err != nil {
		t.Fatal(err)
	}
	wb := f.recover(t)
	t.Logf("after the outage: %+v", wb)
	if wb.Dropped == 0 {
		t.Errorf("the flood dropped nothing from the write-back: the test no longer reaches its bound")
	}
	if wb.Lost != 0 {
		t.Errorf("%d ops that held someone back were lost", wb.Lost)
	}
	for _, victim := range []string{"first@example.com", "early@example.com", "late@example.com"} {
		count, guesses := f.shared(t, victim)
		t.Logf("%s: Redis holds %d failures, the second instance gives %d guesses", victim, count, guesses)
		if count < 5 {
			t.Errorf("%s: Redis holds %d failures after the outage, want at least the 5 of the outage", victim, count)
		}
		if guesses != 0 {
			t.Errorf("%s: the second instance gave %d more guesses, want 0", victim, guesses)
		}
	}
}

// The red team's attack: during a Redis outage 17,600 fresh checks filled
// the 50,000-op queue, the victim's 5 failures after them were dropped,
// and once Redis answered again his shared count was 0 and a second
// instance gave him 5 more immediate guesses (a victim with 4 failures
// before the flood and his 5th after it: 4, and 1 more guess). Now the
// queue sheds what holds nobody back (the flood's fresh subjects) before
// what does, and a counter shed while below its free attempts is written
// back at least at the count the fallback holds once it reaches them:
// Redis holds each victim's 5 and the second instance gives them nothing.
func TestWriteBack_AFloodOfFreshSubjectsDoesNotDropTheVictimsFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of 52,000 checks: runs in the full make test, not under -short")
	}
	m := miniredis.RunT(t)
	f := newOutageFlood(t, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1}) })
	f.attack(t, m.Close, m.Restart)
}

// The same against a real redis-server that the test stops for the
// outage and starts again (empty, as after a crash without persistence).
func TestWriteBack_RealRedisStoppedDuringAFloodKeepsTheVictimsFailures(t *testing.T) {
	in := redistest.Server(t)
	f := newOutageFlood(t, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1}) })
	f.attack(t, in.Stop, in.Restart)
}
