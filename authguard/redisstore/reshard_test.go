package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// The phases of a live reshard, as the calls see them.
const (
	reshardBefore = iota // the slot on its master, no migration
	reshardAsk           // IMPORTING/MIGRATING set, keys moving: ASK for those gone
	reshardMoved         // the slot given to its new master: MOVED until the map reloads
	reshardPhases
)

var reshardPhaseNames = [reshardPhases]string{"before the reshard", "during the migration (ASK)", "after it (MOVED, then the new map)"}

// reshardCall is one Store.Do during a reshard.
type reshardCall struct {
	phase   int
	start   time.Time
	took    time.Duration
	err     error
	openNow bool // a breaker was open right after the call
}

// latencies summarizes calls: how many, the median, p99 and max.
type latencies struct {
	n                int
	median, p99, max time.Duration
}

func summarize(calls []reshardCall) latencies {
	ds := make([]time.Duration, len(calls))
	for i, c := range calls {
		ds[i] = c.took
	}
	slices.Sort(ds)
	if len(ds) == 0 {
		return latencies{}
	}
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return latencies{n: len(ds), median: at(0.5), p99: at(0.99), max: ds[len(ds)-1]}
}

func (l latencies) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("%d calls, median %v, p99 %v, max %v", l.n, r(l.median), r(l.p99), r(l.max))
}

// errorstat is a node's count of the errors it answered with prefix (INFO
// errorstats: ASK, MOVED), since the last CONFIG RESETSTAT.
func errorstat(t *testing.T, c *redis.Client, prefix string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+prefix+":count="); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

// TestClusterReshard_RedirectsStayWellInsideTheStoreDeadline: the slot of an
// account under attack is moved to another master while the account's
// batches keep coming, the way redis-cli --cluster reshard moves it: the
// target IMPORTING, the source MIGRATING, its keys MIGRATEd a few at a time
// (so the migration lasts seconds, and ops on the keys already gone meet
// ASK), then the slot given to the target on every master (ops sent to the
// source meet MOVED until go-redis has reloaded its map). Issue 21 found the
// redirects cost about 30 ms a call, 60% of the 50 ms store deadline:
// go-redis waits out its retry backoff (10–30 ms by default) before it
// follows a pipeline's redirects, which NewClient turns off (with it on,
// this test measured a median of 20.7 ms and a p99 of 30.8 ms during the
// migration). No call may fail, no breaker may open (a reshard is not an
// outage), and a redirected call must stay well inside the deadline: p99
// under 20 ms in each phase.
//
// With subject hash tags ("subject") the batch's three keys of the slot are
// one call, which the source refuses with TRYAGAIN while some of them have
// moved and others not: the store sends that group again one op a call.
func TestClusterReshard_RedirectsStayWellInsideTheStoreDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster of its own and reshards it")
	}
	t.Run("names", func(t *testing.T) { reshardUnderLoad(t, false, false) })
	t.Run("subject", func(t *testing.T) { reshardUnderLoad(t, true, false) })
	// Every call in shared round trips (shared.go): a call met with ASK or
	// MOVED on a master's shared connection is followed by go-redis's
	// router, one met with TRYAGAIN split as from a pipeline.
	t.Run("subject-shared", func(t *testing.T) { reshardUnderLoad(t, true, true) })
}

// reshardUnderLoad is TestClusterReshard_RedirectsStayWellInsideTheStoreDeadline
// on a store with subject hash tags or without, its calls shared or not.
func reshardUnderLoad(t *testing.T, tags, shared bool) {
	cl := redistest.Cluster(t)
	uc, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: cl.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	c := uc.(*redis.ClusterClient)
	s, err := redisstore.New(redisstore.Config{Client: c, SubjectTags: tags, SharedRoundTrips: shared})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if shared {
		redisstore.ShareEveryCall(s)
	}
	ctx := context.Background()
	if err := s.Preload(ctx); err != nil {
		t.Fatal(err)
	}

	// The account's key, and 1,000 more in its slot (its name as their hash
	// tag), so that moving the slot takes a while.
	const victim, fill = "tg:t:login:acct:reshard-victim", 1000
	keys := []string{victim}
	for i := range fill {
		keys = append(keys, fmt.Sprintf("{%s}:%d", victim, i))
	}
	for batch := range slices.Chunk(keys, 50) {
		ops := make([]authguard.Op, len(batch))
		for i, k := range batch {
			ops[i] = charge(k)
		}
		if _, err := s.Do(ctx, ops); err != nil {
			t.Fatalf("filling the slot: %v", err)
		}
	}
	elsewhere := "tg:t:login:ip:reshard-bystander" // a key of another slot in every batch

	// The slot, its master (source), the master it moves to (target), and
	// the third master.
	admins := map[string]*redis.Client{}
	for _, a := range cl.Addrs() {
		admins[a] = redis.NewClient(&redis.Options{Addr: a})
		defer admins[a].Close()
	}
	sourceAddr := masterOf(t, c, victim)
	source := admins[sourceAddr]
	slot, err := source.ClusterKeySlot(ctx, victim).Result()
	if err != nil {
		t.Fatal(err)
	}
	var targetAddr, thirdAddr string
	for _, a := range cl.Addrs() {
		switch {
		case a == sourceAddr:
		case targetAddr == "":
			targetAddr = a
		default:
			thirdAddr = a
		}
	}
	target := admins[targetAddr]
	nodeID := func(c *redis.Client) string {
		id, err := c.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	sourceID, targetID := nodeID(source), nodeID(target)
	if n, err := source.ClusterCountKeysInSlot(ctx, int(slot)).Result(); err != nil || n != fill+1 {
		t.Fatalf("slot %d holds %d keys (%v), want %d", slot, n, err, fill+1)
	}
	for _, a := range admins {
		if err := a.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// The load: a batch every 2 ms on the account's key, two other keys of
	// its slot (some already moved, some not yet) and a key elsewhere,
	// until 1 s after the slot has its new master (at most 6,000 calls, at
	// most 20 s).
	var (
		phase    atomic.Int32
		movedAt  atomic.Int64 // unix ns when the slot was given to the target
		made     atomic.Int64 // calls the load has made
		calls    []reshardCall
		loadDone = make(chan struct{})
	)
	// The process's own stalls longer than the store's deadline (50 ms):
	// a call that fails across one failed for that, not for the
	// redirects; it is logged, not counted.
	stalls := watchStalls(50 * time.Millisecond)
	stalled := func(c reshardCall) bool { return stalls.across(c.start, c.start.Add(c.took)) }
	go func() {
		defer close(loadDone)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for i := 0; i < 6000 && time.Since(start) < 20*time.Second; i++ {
			if at := movedAt.Load(); at != 0 && time.Since(time.Unix(0, at)) > time.Second {
				return
			}
			ops := []authguard.Op{charge(victim), charge(keys[1+i%fill]), charge(keys[1+(i*7+500)%fill]), charge(elsewhere)}
			p := int(phase.Load())
			t0 := time.Now()
			_, err := s.Do(ctx, ops)
			calls = append(calls, reshardCall{phase: p, start: t0, took: time.Since(t0), err: err, openNow: s.Open()})
			made.Add(1)
			<-tick.C
		}
	}()

	// The reshard, as redis-cli --cluster reshard does it, slowly: 3 keys
	// every 5 ms after 150 calls of load without it.
	migrate := func() error {
		if !testkit.Eventually(10*time.Second, func() bool { return made.Load() >= 150 }) {
			return fmt.Errorf("the load made %d calls in 10 s, want 150 before the reshard", made.Load())
		}
		if err := target.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", sourceID).Err(); err != nil {
			return fmt.Errorf("SETSLOT IMPORTING on the target: %w", err)
		}
		if err := source.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", targetID).Err(); err != nil {
			return fmt.Errorf("SETSLOT MIGRATING on the source: %w", err)
		}
		phase.Store(reshardAsk)
		host, port, _ := net.SplitHostPort(targetAddr)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		// The account's key goes first, so that every call from now on has
		// an op redirected with ASK.
		for batch := []string{victim}; len(batch) > 0; {
			args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
			for _, k := range batch {
				args = append(args, k)
			}
			if err := source.Do(ctx, args...).Err(); err != nil {
				return fmt.Errorf("MIGRATE: %w", err)
			}
			<-tick.C
			if batch, err = source.ClusterGetKeysInSlot(ctx, int(slot), 3).Result(); err != nil {
				return fmt.Errorf("GETKEYSINSLOT: %w", err)
			}
		}
		for _, a := range []string{targetAddr, sourceAddr, thirdAddr} {
			if err := admins[a].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", targetID).Err(); err != nil {
				return fmt.Errorf("SETSLOT NODE on %s: %w", a, err)
			}
		}
		movedAt.Store(time.Now().UnixNano())
		phase.Store(reshardMoved)
		return nil
	}
	begun := time.Now()
	migrateErr := migrate()
	took := time.Since(begun)
	<-loadDone
	stalls.Stop()
	if migrateErr != nil {
		t.Fatal(migrateErr)
	}

	asks, moveds := errorstat(t, source, "ASK"), errorstat(t, source, "MOVED")
	t.Logf("slot %d (%d keys) moved from %s to %s in %v; the source answered %d ASK and %d MOVED",
		slot, fill+1, sourceAddr, targetAddr, took.Round(time.Millisecond), asks, moveds)
	var byPhase [reshardPhases][]reshardCall
	failed, opened := 0, 0
	for _, c := range calls {
		byPhase[c.phase] = append(byPhase[c.phase], c)
		if c.err != nil && stalled(c) {
			t.Logf("a call %s failed across a stall of this process longer than the deadline (not counted): %v", reshardPhaseNames[c.phase], c.err)
			continue
		}
		if c.err != nil {
			if failed == 0 {
				t.Errorf("a call %s failed: %v", reshardPhaseNames[c.phase], c.err)
			}
			failed++
		}
		if c.openNow {
			opened++
		}
	}
	for p, cs := range byPhase {
		l := summarize(cs)
		// Logged, not asserted: the machine's load moves latencies (no
		// timing assertions in tests). What is held is below: no call
		// failed, so each was answered within the store's deadline.
		t.Logf("%s: %v", reshardPhaseNames[p], l)
	}
	if after := byPhase[reshardMoved]; len(after) >= 5 {
		var first []time.Duration // those that met MOVED, before go-redis reloaded its map
		for _, c := range after[:5] {
			first = append(first, c.took.Round(10*time.Microsecond))
		}
		t.Logf("the first 5 calls after the slot changed hands: %v", first)
	}
	if failed > 0 {
		t.Errorf("%d of %d calls failed, want none", failed, len(calls))
	}
	if opened > 0 || s.Open() {
		t.Errorf("a breaker was open after %d of %d calls (and now: %v), want never: a reshard is not an outage", opened, len(calls), s.Open())
	}
	if n := len(byPhase[reshardAsk]); asks < n || moveds == 0 || n < 50 || len(byPhase[reshardMoved]) < 50 {
		t.Errorf("the reshard was not exercised: %d ASK for %d calls during the migration, %d MOVED and %d calls after it, want an ASK a call, a MOVED, and 50 calls in each phase",
			asks, n, moveds, len(byPhase[reshardMoved]))
	}
	if now := masterOf(t, c, victim); now != targetAddr {
		t.Errorf("go-redis maps the slot to %s, want its new master %s", now, targetAddr)
	}
	if n, err := target.Exists(ctx, victim).Result(); err != nil || n != 1 {
		t.Errorf("the account's key on the new master: %d (%v), want it there", n, err)
	}
}
