package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// sharedClusterEngine is an engine on the test Cluster through a store
// with subject hash tags and shared round trips, as tollgate serve builds
// it for cluster_key_layout: subject.
func sharedClusterEngine(t *testing.T, shared bool) (*authguard.Engine, *redis.ClusterClient, *atomic.Int64) {
	t.Helper()
	flush := clusterClient(t) // flushes every master
	flush.Close()
	c, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: cluster.Addrs(), PoolSize: 128, Timeout: time.Second, ClusterKeyLayout: "subject"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, SharedRoundTrips: shared, SubjectTags: true})
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
			if ev.Source == authguard.SourceFallback && fallback.Add(1) <= 3 {
				t.Logf("answered from the fallback after %v: %v", ev.StoreDuration, ev.StoreErr)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Checks first, unmeasured, one at a time: go-redis then holds the slot
	// map, the store a breaker per master (failover.go), and every master
	// the check's shapes (shape.go), as in a server up a while.
	for i := range warmChecks {
		if _, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("warm%d@example.com", i),
			IP: fmt.Sprintf("10.9.9.%d", i+1), PasswordFingerprint: fmt.Sprint("warm", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return e, c.(*redis.ClusterClient), &fallback
}

// warmChecks is how many checks sharedClusterEngine makes before a test's.
const warmChecks = 30

// masterWrites is the replies each master of c has written to its clients
// so far (INFO stats total_writes_processed), by address: calls that share
// a round trip on one connection are answered in one write.
func masterWrites(t *testing.T, c *redis.ClusterClient) map[string]int {
	t.Helper()
	w := map[string]int{}
	for _, addr := range cluster.Addrs() {
		w[addr] = writes(t, addr)
	}
	return w
}

// On a Cluster the calls of concurrent checks to one master share its
// round trips: 50 fresh login checks at once (account, address and
// password fingerprint each a subject of its own, so a check calls up to 3
// masters) while every master holds its clients for 200 ms all proceed
// from Redis, each account holds its charge, and every master answered
// them in far fewer writes than half the checks (alone, each check is a
// pipeline of its own on each master it calls, 35 a master on average).
func TestClusterSharedRoundTrips_FiftyConcurrentChecksShareEachMastersRoundTrips(t *testing.T) {
	e, c, fallback := sharedClusterEngine(t, true)
	const n = 50
	before := masterWrites(t, c)
	for _, addr := range cluster.Addrs() {
		pauseAll(t, addr, 200*time.Millisecond)
	}
	var proceeded atomic.Int64
	concurrently(n, func(i int) {
		v, err := e.Check(context.Background(), authguard.CheckRequest{
			Flow: "login", Account: fmt.Sprintf("user%d@example.com", i), IP: fmt.Sprintf("10.5.%d.%d", i/200, i%200+1),
			PasswordFingerprint: fmt.Sprint("fp", i),
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
	var accounts atomic.Int64 // ForEachMaster calls every master at once
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "*:acct:*").Result()
		accounts.Add(int64(len(keys)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := n + warmChecks; accounts.Load() != int64(want) {
		t.Errorf("the Cluster holds %d charged accounts, want %d", accounts.Load(), want)
	}
	// Each check alone is a pipeline of its own on each master it calls,
	// on a connection of its own: 101 to 125 writes a master were measured
	// (Config.SharedRoundTrips off); shared, 13 to 18, the INFO and PAUSE
	// calls here 3 of them.
	after := masterWrites(t, c)
	for _, addr := range cluster.Addrs() {
		if w := after[addr] - before[addr]; w >= n/2 {
			t.Errorf("master %s answered the %d concurrent checks in %d writes: they did not share its round trips", addr, n, w)
		} else {
			t.Logf("master %s answered the %d concurrent checks in %d writes", addr, n, w)
		}
	}
}
