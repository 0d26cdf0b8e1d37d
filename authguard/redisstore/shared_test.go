package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// writes counts the replies Redis wrote to its clients (INFO stats
// total_writes_processed, one per client and event loop turn): calls that
// share round trips on one connection are answered in far fewer writes
// than calls each on a connection of its own, one write each.
func writes(t *testing.T, addr string) int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	return infoInt(t, c, "stats", "total_writes_processed")
}

// infoInt is the number INFO section reports as name.
func infoInt(t *testing.T, c *redis.Client, section, name string) int {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(infoField(info, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// sharedEngine is an engine on a real redis-server through a store with
// shared round trips, as tollgate serve builds it.
func sharedEngine(t *testing.T, addr string, timeout time.Duration) (*authguard.Engine, *atomic.Int64) {
	t.Helper()
	c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + addr, PoolSize: 64, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: timeout, SharedRoundTrips: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	var fallback atomic.Int64
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
		MaxInFlight: s.PoolSize(),
		Observe: func(ev authguard.Event) {
			if ev.Source == authguard.SourceFallback {
				if fallback.Add(1) <= 3 {
					t.Logf("answered from the fallback after %v: %v", ev.StoreDuration, ev.StoreErr)
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, &fallback
}

// concurrently runs n calls of f at once.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() { <-start; f(i) })
	}
	close(start)
	wg.Wait()
}

// pauseAll holds every client's commands on a Redis server for d (CLIENT
// PAUSE ... ALL), so that calls sent meanwhile pile up.
func pauseAll(t *testing.T, addr string, d time.Duration) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
}

// Concurrent checks share round trips, and each is answered and charged
// as if it had gone alone: 48 fresh accounts checked at once (the checks'
// three quarters of a pool of 64) while Redis holds its clients for 200 ms
// all proceed from Redis, each account holds its charge, and the calls went
// in batches of more than one.
func TestSharedRoundTrips_ConcurrentChecksAreEachAnsweredAndCharged(t *testing.T) {
	in := redistest.Server(t)
	e, fallback := sharedEngine(t, in.Addr, time.Second)
	const n = 48
	before := writes(t, in.Addr)
	pauseAll(t, in.Addr, 200*time.Millisecond)
	var proceeded atomic.Int64
	concurrently(n, func(i int) {
		v, err := e.Check(context.Background(), authguard.CheckRequest{
			Flow: "login", Account: fmt.Sprintf("user%d@example.com", i), IP: fmt.Sprintf("10.1.%d.%d", i/200, i%200+1),
		})
		if err != nil {
			t.Error(err)
			return
		}
		if v.Action == authguard.Proceed {
			proceeded.Add(1)
		}
	})
	if proceeded.Load() != n || fallback.Load() != 0 {
		t.Errorf("%d of %d proceeded, %d from the fallback; want all from Redis", proceeded.Load(), n, fallback.Load())
	}
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	if got := len(c.Keys(context.Background(), "*:acct:*").Val()); got != n {
		t.Errorf("Redis holds %d charged accounts, want %d", got, n)
	}
	// n calls each alone take at least n writes (three each on a new
	// connection: 154 measured), and the INFO, KEYS and PAUSE calls here a
	// few more; shared, 22 were measured.
	if w := writes(t, in.Addr) - before; w >= n {
		t.Errorf("Redis answered the %d concurrent checks in %d writes: they did not share round trips", n, w)
	} else {
		t.Logf("%d concurrent checks answered in %d writes", n, w)
	}
}

// Attack: a flood of concurrent guesses on one account in backoff. Sharing
// round trips must not let a guess through that a call of its own would
// refuse: after the login flow's five free failures every one of 48
// concurrent checks is delayed, and the counter is where the failures left
// it.
func TestSharedRoundTrips_AFloodOnAnAccountInBackoffIsRefusedWhole(t *testing.T) {
	in := redistest.Server(t)
	e, _ := sharedEngine(t, in.Addr, time.Second)
	ctx := context.Background()
	for i := range 5 {
		ip := fmt.Sprintf("10.2.0.%d", i+1)
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: ip})
		if err != nil || v.Action != authguard.Proceed {
			t.Fatalf("free guess %d: %v, %v", i, v.Action, err)
		}
		if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
			t.Fatal(err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	counter := func() string {
		keys := c.Keys(ctx, "*:acct:*").Val()
		if len(keys) != 1 {
			t.Fatalf("account keys %v, want one", keys)
		}
		return c.Get(ctx, keys[0]).Val()
	}
	before, w := counter(), writes(t, in.Addr)
	pauseAll(t, in.Addr, 200*time.Millisecond)
	var refused atomic.Int64
	concurrently(48, func(i int) {
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: fmt.Sprintf("10.3.%d.%d", i/200, i%200+1)})
		if err == nil && v.Action == authguard.Delay {
			refused.Add(1)
		}
	})
	if refused.Load() != 48 {
		t.Errorf("%d of 48 concurrent guesses refused, want all", refused.Load())
	}
	if after := counter(); after != before {
		t.Errorf("the account's counter went from %q to %q under refused guesses", before, after)
	}
	if w := writes(t, in.Addr) - w; w >= 48 {
		t.Errorf("Redis answered the 48 concurrent guesses in %d writes: they did not share round trips", w)
	}
}

// A script missing on the node (SCRIPT FLUSH, as after a restart or a
// failover) is sent again with EVAL from inside a shared batch: every
// check still proceeds from Redis.
func TestSharedRoundTrips_AFlushedScriptIsLoadedAgain(t *testing.T) {
	in := redistest.Server(t)
	e, fallback := sharedEngine(t, in.Addr, time.Second)
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	w := writes(t, in.Addr)
	pauseAll(t, in.Addr, 100*time.Millisecond)
	var proceeded atomic.Int64
	concurrently(32, func(i int) {
		v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("u%d@example.com", i), IP: fmt.Sprintf("10.4.0.%d", i+1)})
		if err == nil && v.Action == authguard.Proceed {
			proceeded.Add(1)
		}
	})
	if proceeded.Load() != 32 || fallback.Load() != 0 {
		t.Errorf("%d of 32 proceeded, %d from the fallback", proceeded.Load(), fallback.Load())
	}
	if w := writes(t, in.Addr) - w; w >= 32 {
		t.Errorf("Redis answered the 32 concurrent checks in %d writes: they did not share round trips", w)
	}
}

// A shared call keeps its own deadline: while Redis sleeps past it, every
// concurrent call fails as the store being unavailable (the flow's fail
// mode answers), none hangs on the batch, and once Redis is back the
// store answers again.
func TestSharedRoundTrips_ACallFailsAtItsDeadlineAndTheStoreRecovers(t *testing.T) {
	in := redistest.Server(t)
	c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + in.Addr, PoolSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(redisstore.Config{Client: c, SharedRoundTrips: true, BreakAfter: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ops := func(i int) []authguard.Op {
		return []authguard.Op{
			&authguard.RateOp{Key: fmt.Sprintf("tg:t:rate:%d", i), Rate: authguard.RateLimit{Algorithm: authguard.TokenBucket, Limit: 5, Interval: time.Second}, Cost: 1, Action: authguard.RateTake},
			&authguard.RateOp{Key: fmt.Sprintf("tg:t:rate2:%d", i), Rate: authguard.RateLimit{Algorithm: authguard.TokenBucket, Limit: 5, Interval: time.Second}, Cost: 1, Action: authguard.RateTake},
		}
	}
	slept := make(chan struct{})
	go func() { defer close(slept); debugSleep(t, in.Addr, 500*time.Millisecond) }()
	testkit.WaitFor(t, 5*time.Second, "Redis in DEBUG SLEEP", in.Sleeping)
	var unavailable atomic.Int64
	concurrently(16, func(i int) {
		_, err := s.Do(context.Background(), ops(i))
		if errors.Is(err, authguard.ErrStoreUnavailable) {
			unavailable.Add(1)
		} else {
			t.Errorf("call %d during the sleep: %v, want the store unavailable", i, err)
		}
	})
	<-slept
	if unavailable.Load() != 16 {
		t.Errorf("%d of 16 calls failed as unavailable", unavailable.Load())
	}
	var ok atomic.Int64
	testkit.Eventually(5*time.Second, func() bool {
		ok.Store(0)
		concurrently(16, func(i int) {
			if _, err := s.Do(context.Background(), ops(100+i)); err == nil {
				ok.Add(1)
			}
		})
		return ok.Load() == 16
	})
	if ok.Load() != 16 {
		t.Errorf("after the sleep %d of 16 concurrent calls answered, want all", ok.Load())
	}
}
