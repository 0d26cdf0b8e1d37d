package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// failoverCluster is a Cluster of 3 masters with a replica each, and a
// Store on it as tollgate builds one (NewClient's 50 ms timeouts, no
// retries; the default breaker).
func failoverCluster(t *testing.T, shared bool, extra ...string) (*redistest.ReplicatedClusterInstances, *redis.ClusterClient, *redisstore.Store) {
	t.Helper()
	return failoverClusterWithTimeout(t, 0, shared, extra...)
}

// failoverClusterWithTimeout is failoverCluster with NewClient's Timeout
// (0: its default, 50 ms). When shared, the Store sends every call in
// shared round trips (shared.go), however few are in flight.
func failoverClusterWithTimeout(t *testing.T, timeout time.Duration, shared bool, extra ...string) (*redistest.ReplicatedClusterInstances, *redis.ClusterClient, *redisstore.Store) {
	t.Helper()
	rc := redistest.ReplicatedCluster(t, extra...)
	uc, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: rc.Addrs(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	c := uc.(*redis.ClusterClient)
	s, err := redisstore.New(redisstore.Config{Client: c, SharedRoundTrips: shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if shared {
		redisstore.ShareEveryCall(s)
	}
	if err := s.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rc, c, s
}

// masterOf is the address of the master that owns key's slot now.
func masterOf(t *testing.T, c *redis.ClusterClient, key string) string {
	t.Helper()
	n, err := c.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return n.Options().Addr
}

// otherNode is the address of a node other than addr.
func otherNode(rc *redistest.ReplicatedClusterInstances, addr string) string {
	for _, a := range rc.Addrs() {
		if a != addr {
			return a
		}
	}
	return ""
}

// slotOwner is the master of slot in c's node's CLUSTER SLOTS, or "".
func slotOwner(c *redis.Client, slot int64) string {
	//lint:ignore SA1019 CLUSTER SLOTS still answers on every Redis the tests run, and gives each node's address as the clients dial it
	ranges, err := c.ClusterSlots(context.Background()).Result()
	if err != nil {
		return ""
	}
	for _, r := range ranges {
		if int64(r.Start) <= slot && slot <= int64(r.End) && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr
		}
	}
	return ""
}

// keysByMaster returns one key on victim's master and one on each of the
// two other masters.
func keysByMaster(t *testing.T, c *redis.ClusterClient, victim string) (onVictim string, healthy []string) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < 1000 && (onVictim == "" || len(healthy) < 2); i++ {
		key := fmt.Sprint("tg:t:login:acct:failover-", i)
		switch m := masterOf(t, c, key); {
		case m == victim && onVictim == "":
			onVictim = key
		case m != victim && !seen[m]:
			seen[m] = true
			healthy = append(healthy, key)
		}
	}
	if onVictim == "" || len(healthy) < 2 {
		t.Fatalf("no keys on every master (victim %s: %q, others %q)", victim, onVictim, healthy)
	}
	return onVictim, healthy
}

// TestClusterFailover_WritesResumeWithinTenSecondsOfAMasterKill: the master
// of an account's slot is killed; its replica takes over in a few seconds.
// go-redis reloads its slot map on a 60 s timer, and a refused connection
// does not make it reload earlier, so the Store kept sending the account's
// writes to the dead address (and its one breaker failed every key) until
// the timer: 37 s and 51 s in issue 21's runs, none within this test's 30 s
// before the fix. The Store now asks for a reload when a batch fails the
// way a dead or moved node fails, so the writes go to the new master as
// soon as the Cluster has one: 2.8–3.1 s after the kill, about 0.3 s after
// the Cluster's own failover (1 s node timeout).
func TestClusterFailover_WritesResumeWithinTenSecondsOfAMasterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Cluster master and waits for its failover")
	}
	t.Run("alone", func(t *testing.T) { writesResumeAfterAMasterKill(t, false) })
	t.Run("shared", func(t *testing.T) { writesResumeAfterAMasterKill(t, true) })
}

// writesResumeAfterAMasterKill is
// TestClusterFailover_WritesResumeWithinTenSecondsOfAMasterKill, its calls
// each a pipeline of its own or all in shared round trips.
func writesResumeAfterAMasterKill(t *testing.T, shared bool) {
	rc, c, s := failoverCluster(t, shared)
	ctx := context.Background()
	key := "tg:t:login:acct:failover-victim"
	dead := masterOf(t, c, key)
	if _, err := s.Do(ctx, []authguard.Op{charge(key)}); err != nil {
		t.Fatalf("before the kill: %v", err)
	}
	// A survivor's view: when the Cluster gave the slot a new master.
	var promoted time.Duration
	var watching sync.WaitGroup
	survivor := redis.NewClient(&redis.Options{Addr: otherNode(rc, dead)})
	defer survivor.Close()
	slot, err := survivor.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := rc.Node(dead).Kill(); err != nil {
		t.Fatal(err)
	}
	watching.Go(func() {
		testkit.Eventually(30*time.Second-time.Since(killed), func() bool {
			if owner := slotOwner(survivor, slot); owner != "" && owner != dead {
				promoted = time.Since(killed)
				return true
			}
			return false
		})
	})
	var resumed time.Duration
	failures := 0
	testkit.Eventually(30*time.Second-time.Since(killed), func() bool {
		if _, err := s.Do(ctx, []authguard.Op{charge(key)}); err == nil {
			resumed = time.Since(killed)
			return true
		}
		failures++
		return false
	})
	watching.Wait()
	if resumed == 0 {
		t.Fatalf("no write on the killed master's slot within 30 s of the kill (%d failed; the Cluster failed over %v after it)", failures, promoted.Round(time.Millisecond))
	}
	t.Logf("first write on the killed master's slot %v after the kill (%d writes failed before it), now on %s; the Cluster failed over %v after the kill",
		resumed.Round(time.Millisecond), failures, masterOf(t, c, key), promoted.Round(time.Millisecond))
	if resumed >= 10*time.Second {
		t.Errorf("writes resumed %v after the kill, want within 10 s", resumed)
	}
	if now := masterOf(t, c, key); now == dead {
		t.Errorf("the key's slot is still mapped to the killed master %s", dead)
	}
}

// TestClusterFailover_KeysOnHealthyMastersNeverFallBack: while one master is
// dead and until its replica has taken over, batches whose keys all live on
// the other masters keep succeeding. With one breaker per Store, the
// failures on the dead master's keys (alone, or mixed in a batch with
// healthy keys) opened it for every key: 1,472 of 2,979 such batches failed
// (circuit_open) before the fix. Now each master has its own, a batch fails
// at once only if a master it needs is open, and a failed batch counts only
// against the masters whose ops failed, also when go-redis has stamped its
// deadline on the healthy masters' answered ops (a client with go-redis's
// default retry backoff; NewClient's has none).
//
// The nodes run with cluster-require-full-coverage no. With Redis's default
// (yes), every master refuses every key with CLUSTERDOWN from the moment the
// dead master is flagged failed until its replica is promoted (about a
// second with a 1 s node timeout): Redis's own refusal, which no client can
// avoid, so this test turns it off to see the client's part alone.
//
// NewClient's Store here has a 1 s deadline, not the default 50 ms: what
// is tested is which masters a failure counts against, which no deadline
// changes. With 50 ms, one batch of 368 on a healthy master once timed out
// in CI at the moment of the promotion (a read 2.97 s after the kill, on a
// 2-core machine running six Redis processes and the race detector): the
// healthy master answered late, which no client can prevent. With 250 ms it
// happened again on 2026-12-02 (a write 2.75 s after the kill, 1 of 325,
// while the machine also ran an attack search and another test suite).
func TestClusterFailover_KeysOnHealthyMastersNeverFallBack(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Cluster master and waits for its failover")
	}
	t.Run("alone", func(t *testing.T) { healthyMastersNeverFallBack(t, false) })
	t.Run("shared", func(t *testing.T) { healthyMastersNeverFallBack(t, true) })
}

// healthyMastersNeverFallBack is
// TestClusterFailover_KeysOnHealthyMastersNeverFallBack, the calls of
// NewClient's Store each a pipeline of its own or all in shared round
// trips.
func healthyMastersNeverFallBack(t *testing.T, shared bool) {
	rc, c, s := failoverClusterWithTimeout(t, time.Second, shared, "--cluster-require-full-coverage", "no")
	ctx := context.Background()
	dead := masterOf(t, c, "tg:t:login:acct:failover-0")
	victim, healthy := keysByMaster(t, c, dead)
	// own is a Store on a client of one's own, with go-redis's default
	// backoff between a pipeline's attempts: when the deadline runs out
	// during it, go-redis marks the healthy masters' answered ops failed too.
	own, err := redisstore.New(redisstore.Config{Client: redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: rc.Addrs(), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	both := []authguard.Op{charge(healthy[0]), charge(healthy[1])}
	for _, s := range []*redisstore.Store{s, own} {
		if _, err := s.Do(ctx, append(both, charge(victim))); err != nil {
			t.Fatalf("before the kill: %v", err)
		}
	}
	killed := time.Now()
	if err := rc.Node(dead).Kill(); err != nil {
		t.Fatal(err)
	}
	// Batches that need the dead master and a healthy one fail, but do not
	// count against the healthy one: after ten in a row its keys alone
	// still go through.
	for name, s := range map[string]*redisstore.Store{"NewClient's": s, "a default client's": own} {
		for range 10 {
			if _, err := s.Do(ctx, []authguard.Op{charge(victim), charge(healthy[0])}); err == nil {
				t.Fatalf("%s Store: a batch on the dead master went through %v after the kill", name, time.Since(killed))
			}
		}
		if _, err := s.Do(ctx, both[:1]); err != nil {
			t.Errorf("%s Store: after 10 failed batches on the dead master and a healthy one, the healthy one alone: %v, want it answered", name, err)
		}
	}
	// Every 10 ms, as calls arrive, each in its own goroutine: the victim's
	// key alone twice (an account under attack), mixed with each healthy
	// key (the attack's checks count addresses too, on any master), and
	// healthy keys alone (everyone else); until the victim's writes have
	// been back for a second (at most 30 s).
	var (
		mu       sync.Mutex
		resumed  time.Duration
		batches  int
		failed   = map[string]int{} // healthy batches failed, by kind
		firstErr error
		calls    sync.WaitGroup
	)
	// A healthy batch that fails across a stall of this process longer
	// than the store's deadline failed for that, not for the dead master:
	// it is logged, not counted.
	stalls := watchStalls(time.Second)
	stalledOut := 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 3000 && time.Since(killed) < 30*time.Second; i++ {
		mu.Lock()
		done := resumed > 0 && time.Since(killed) > resumed+time.Second
		mu.Unlock()
		if done {
			break
		}
		for range 2 {
			calls.Go(func() {
				if _, err := s.Do(ctx, []authguard.Op{charge(victim)}); err == nil {
					mu.Lock()
					if resumed == 0 {
						resumed = time.Since(killed)
					}
					mu.Unlock()
				}
			})
		}
		for _, h := range healthy {
			calls.Go(func() { s.Do(ctx, []authguard.Op{charge(victim), charge(h)}) })
		}
		ops := [][]authguard.Op{both, both[:1], both[1:]}[i%3]
		calls.Go(func() {
			start := time.Now()
			_, err := s.Do(ctx, ops)
			end := time.Now()
			mu.Lock()
			defer mu.Unlock()
			batches++
			if err != nil && stalls.across(start, end) {
				t.Logf("a healthy batch failed across a stall of this process longer than the deadline (not counted): %v", err)
				stalledOut++
				return
			}
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%v after the kill: %w", time.Since(killed).Round(time.Millisecond), err)
				}
				failed[authguard.StoreErrorKind(err)]++
			}
		})
		<-tick.C
	}
	calls.Wait()
	stalls.Stop()
	n := 0
	for _, k := range failed {
		n += k
	}
	t.Logf("%d of %d batches on the healthy masters failed %v (%d more across stalls of this process); the victim's writes resumed %v after the kill",
		n, batches, failed, stalledOut, resumed.Round(time.Millisecond))
	if resumed == 0 {
		t.Error("the victim's writes did not resume within 30 s")
	}
	if n > 0 {
		t.Errorf("%d batches on healthy masters failed (%v; the first %v), want none", n, failed, firstErr)
	}
}

// TestStall_APointThreeSecondStallCostsAboutPointThreeSecondsOfFailures:
// Redis stalls for 0.3 s (DEBUG SLEEP 0.3) while calls arrive every 10 ms.
// They time out, the breaker opens, and calls are answered by the fail mode
// until its cooldown has passed and a trial call has gone through. With a
// 1 s cooldown a 0.3 s stall cost over a second of failures (issue 21: "~1 s
// of fallback per 0.3 s stall"; 1.12–1.14 s here); with the 100 ms default
// it costs about the stall (0.29–0.40 s on a quiet machine, logged, not
// asserted).
func TestStall_APointThreeSecondStallCostsAboutPointThreeSecondsOfFailures(t *testing.T) {
	needRedis(t)
	in := redistest.Server(t)
	s := storeOn(t, redisstore.ClientConfig{URL: "redis://" + in.Addr})
	ctx := context.Background()
	batch := []authguard.Op{charge("tg:t:login:acct:stall"), charge("tg:t:login:acct:stall2")}
	for range 20 { // warm the pool and the script cache
		if _, err := s.Do(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	admin := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer admin.Close()
	var (
		mu          sync.Mutex
		first, last time.Time // the first failed call's start, the last one's end
		failures    int
		calls       sync.WaitGroup
	)
	start := time.Now()
	calls.Go(func() {
		if err := admin.Do(ctx, "DEBUG", "SLEEP", "0.3").Err(); err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	})
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for ; n < 300 && time.Since(start) < 3*time.Second; n++ {
		calls.Go(func() {
			t0 := time.Now()
			_, err := s.Do(ctx, batch)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(err, authguard.ErrStoreUnavailable) {
				t.Errorf("a call during the stall: %v, want unavailable", err)
			}
			if first.IsZero() || t0.Before(first) {
				first = t0
			}
			if end := time.Now(); end.After(last) {
				last = end
			}
			failures++
		})
		<-tick.C
	}
	calls.Wait()
	if failures == 0 {
		t.Fatal("no call failed during the stall")
	}
	span := last.Sub(first)
	t.Logf("a 0.3 s stall: %d of %d calls failed, over %v (from %v after the DEBUG SLEEP was sent)",
		failures, n, span.Round(time.Millisecond), first.Sub(start).Round(time.Millisecond))
	// How long the failures last is a measurement (the log line above,
	// BENCHMARKS.md), not an assertion: on a loaded 2-core machine a 0.3 s
	// stall once cost 0.97 s. What must hold is that the breaker closes
	// again: the calls after the stall, 2.7 s of them, go through.
	if failures*2 > n {
		t.Errorf("%d of %d calls failed: the breaker did not close again after a 0.3 s stall", failures, n)
	}
	if _, err := s.Do(ctx, batch); err != nil {
		t.Errorf("a call after the stall: %v, want it answered", err)
	}
}
