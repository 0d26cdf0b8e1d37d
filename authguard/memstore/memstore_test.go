package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/testkit/storetest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		return memstore.New(memstore.Config{Now: clock.Now})
	})
}

func TestConformance_OneShard(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		return memstore.New(memstore.Config{Now: clock.Now, Shards: 1})
	})
}

func charge(key string) authguard.Op {
	return &authguard.BackoffOp{Key: key, Action: authguard.BackoffCharge, Policy: storetest.Backoff, SeenWindow: storetest.Seen}
}

// An attacker rotating through addresses or account names creates a new key
// per attempt; the store must stay within its cap and evict the least
// recently used keys, not the hot ones.
func TestMemory_AddressRotationStaysWithinCap(t *testing.T) {
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: 100, Shards: 4})
	ctx := context.Background()
	hot := "tg:t:login:acct:hot"
	for i := range 10_000 {
		if _, err := s.Do(ctx, []authguard.Op{charge(fmt.Sprintf("tg:t:login:acct:rot%d", i))}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 { // the hot key stays recently used
			if _, err := s.Do(ctx, []authguard.Op{&authguard.LogOp{Key: hot, Action: authguard.LogPeek, Windows: storetest.Windows}}); err != nil {
				t.Fatal(err)
			}
			s.Do(ctx, []authguard.Op{&authguard.LogOp{Key: hot, Action: authguard.LogAdd, Member: "m", Windows: storetest.Windows}})
		}
	}
	st := s.Stats()
	if st.Entries > 100 {
		t.Errorf("store holds %d entries, cap is 100", st.Entries)
	}
	if st.Evicted < 9_000 {
		t.Errorf("evicted %d, want most of the 10,000 rotated keys", st.Evicted)
	}
	res, _ := s.Do(ctx, []authguard.Op{&authguard.LogOp{Key: hot, Action: authguard.LogPeek, Member: "m", Windows: storetest.Windows}})
	if res[0].Count != 1 {
		t.Errorf("hot key was evicted: count %d, want 1", res[0].Count)
	}
}

func TestMemory_IdleKeysExpire(t *testing.T) {
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now})
	ctx := context.Background()
	for i := range 50 {
		s.Do(ctx, []authguard.Op{charge(fmt.Sprintf("tg:t:login:acct:%d", i))})
	}
	if got := len(s.Keys()); got != 50 {
		t.Fatalf("%d live keys, want 50", got)
	}
	clock.Advance(storetest.Backoff.ForgetAfter)
	if got := len(s.Keys()); got != 0 {
		t.Errorf("%d live keys after forget_after, want 0", got)
	}
	s.Sweep()
	if got := s.Stats().Entries; got != 0 {
		t.Errorf("%d entries after Sweep, want 0", got)
	}
}

func TestMemory_ClearDeletesKey(t *testing.T) {
	s := memstore.New(memstore.Config{})
	ctx := context.Background()
	s.Do(ctx, []authguard.Op{charge("k")})
	s.Do(ctx, []authguard.Op{&authguard.BackoffOp{Key: "k", Action: authguard.BackoffClear, Policy: storetest.Backoff}})
	if got := s.Stats().Entries; got != 0 {
		t.Errorf("%d entries after clear, want 0", got)
	}
}

func TestMemory_Closed(t *testing.T) {
	s := memstore.New(memstore.Config{})
	s.Close()
	if _, err := s.Do(context.Background(), []authguard.Op{charge("k")}); err == nil {
		t.Error("Do on a closed store succeeded")
	}
	if err := s.Ping(context.Background()); err == nil {
		t.Error("Ping on a closed store succeeded")
	}
}

func TestMemory_EvictsLeastRecentlyUsed(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 3, Shards: 1})
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "a", "d"} { // "b" is least recently used when "d" arrives
		s.Do(ctx, []authguard.Op{charge(k)})
	}
	keys := map[string]bool{}
	for _, k := range s.Keys() {
		keys[k] = true
	}
	if len(keys) != 3 || !keys["a"] || keys["b"] || !keys["c"] || !keys["d"] {
		t.Errorf("keys %v, want a, c, d (b evicted)", keys)
	}
	// Slots freed by clears are reused: the store holds at most 3 entries
	// however many come and go.
	for i := range 100 {
		k := fmt.Sprint("x", i)
		s.Do(ctx, []authguard.Op{charge(k), &authguard.BackoffOp{Key: k, Action: authguard.BackoffClear, Policy: storetest.Backoff}})
	}
	if got := s.Stats().Entries; got > 3 {
		t.Errorf("%d entries, want at most 3", got)
	}
}

// backoffCharge is a check's charge on an account counter of the built-in
// login flow (free 5, then 1s, 2s, 4s, …).
func backoffCharge(key string) authguard.Op {
	f := loginFlow
	return &authguard.BackoffOp{Key: key, Action: authguard.BackoffCharge, Policy: f.Rule("account_backoff").Backoff, SeenWindow: f.SamePasswordWindow}
}

// TestMemory_FreshSubjectFloodCannotEvictCounterInBackoff: an attacker drives
// a victim's counter into backoff, then floods the store with checks on
// made-up accounts (one charge each) to evict it and get the victim's free
// attempts back. The counter restricts its subject, so it is protected: the
// flood evicts only the made-up accounts' counters.
func TestMemory_FreshSubjectFloodCannotEvictCounterInBackoff(t *testing.T) {
	const maxEntries, flood = 1_000, 100_000
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: maxEntries, Shards: 4})
	ctx := context.Background()
	do := func(op authguard.Op) authguard.Result {
		t.Helper()
		res, err := s.Do(ctx, []authguard.Op{op})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	const victim = "tg:default:login:acct:victim"
	for failures := 1; failures <= 10; failures++ { // waiting out every delay, as the attacker would
		r := do(backoffCharge(victim))
		if !r.Charged {
			clock.Advance(r.Wait)
			r = do(backoffCharge(victim))
		}
		if !r.Charged || r.Count != failures {
			t.Fatalf("charge %d on the victim: %+v", failures, r)
		}
	}
	// 10 failures: the next attempt waits 32s.
	for i := range flood {
		do(backoffCharge(fmt.Sprintf("tg:default:login:acct:made-up-%d", i)))
		if i%1000 == 0 {
			if n := s.Stats().Entries; n > maxEntries {
				t.Fatalf("after %d made-up accounts the store holds %d entries, cap is %d", i, n, maxEntries)
			}
		}
	}
	r := do(backoffCharge(victim))
	if r.Wait <= 0 || r.Count < 10 || r.Charged {
		t.Errorf("victim's check after the flood = %+v, want a wait and at least 10 failures: the flood reset the counter", r)
	}
	st := s.Stats()
	if st.Entries > maxEntries {
		t.Errorf("store holds %d entries, cap is %d", st.Entries, maxEntries)
	}
	if st.Protected != 1 {
		t.Errorf("%d protected entries, want 1 (the victim)", st.Protected)
	}
	if st.EvictedProtected != 0 {
		t.Errorf("%d protected entries evicted, want 0", st.EvictedProtected)
	}
	if want := int64(flood - maxEntries + 1); st.EvictedProbation != want || st.Evicted != want {
		t.Errorf("evicted %d probation entries (%d in all), want %d: every made-up account beyond the room left", st.EvictedProbation, st.Evicted, want)
	}
}

// protect charges k's counter up to storetest.Backoff's free (2): its key
// is then protected.
func protect(t *testing.T, s *memstore.Store, k string) {
	t.Helper()
	for range storetest.Backoff.Free {
		if res, err := s.Do(context.Background(), []authguard.Op{charge(k)}); err != nil || !res[0].Charged {
			t.Fatalf("charging %s: %+v %v", k, res, err)
		}
	}
}

// TestMemory_ProtectedOverflowEvictsLeastRecentlyUsedProtected: protected
// entries have no cap of their own. When they fill a shard, a new key evicts
// the least recently used protected one, and that is counted apart.
func TestMemory_ProtectedOverflowEvictsLeastRecentlyUsedProtected(t *testing.T) {
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: 3, Shards: 1})
	ctx := context.Background()
	protect(t, s, "a")
	protect(t, s, "b")
	protect(t, s, "c")
	s.Do(ctx, []authguard.Op{charge("a")}) // refused (a waits), but touched: b is now the LRU
	if st := s.Stats(); st.Protected != 3 || st.Evicted != 0 {
		t.Fatalf("stats %+v, want 3 protected entries and no eviction", st)
	}
	s.Do(ctx, []authguard.Op{charge("d")}) // one failure: probation, evicting b
	assertKeys(t, s, "a", "c", "d")
	if st := s.Stats(); st.EvictedProtected != 1 || st.EvictedProbation != 0 || st.Evicted != 1 || st.Protected != 2 {
		t.Errorf("stats %+v, want one protected eviction and 2 protected entries", st)
	}
	s.Do(ctx, []authguard.Op{charge("e")}) // d is probation: it goes first, though a and c are older
	assertKeys(t, s, "a", "c", "e")
	if st := s.Stats(); st.EvictedProtected != 1 || st.EvictedProbation != 1 || st.Evicted != 2 {
		t.Errorf("stats %+v, want one eviction of each class", st)
	}
}

// TestMemory_AFloodOfOneRulesProtectedKeysTurnsOverOnlyItsOwn: an attacker
// who can make protected keys cheaply in one rule (a code sent to a made-up
// address leaves its counter at its limit) fills a shard with them to evict
// a victim's counter in another rule. Ordinary keys go first, whichever rule
// they are in; then the shard makes room in the rule holding the most keys,
// the flood's own, and the victim's counter stays.
func TestMemory_AFloodOfOneRulesProtectedKeysTurnsOverOnlyItsOwn(t *testing.T) {
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: 10, Shards: 1})
	ctx := context.Background()
	const victim, ordinary = "tg:default:login:acct:victim", "tg:default:login:acct:ordinary"
	protect(t, s, victim)
	s.Do(ctx, []authguard.Op{charge(ordinary)})
	for i := range 100 {
		protect(t, s, fmt.Sprintf("tg:default:otp_send:dest:made-up-%d", i))
	}
	st := s.Stats()
	if st.Entries != 10 || st.Protected != 10 || st.EvictedProbation != 1 || st.EvictedProtected != 100-9 {
		t.Errorf("stats %+v, want 10 protected entries, the ordinary key and 91 of the flood's evicted", st)
	}
	want := []string{victim}
	for i := 91; i < 100; i++ {
		want = append(want, fmt.Sprintf("tg:default:otp_send:dest:made-up-%d", i))
	}
	assertKeys(t, s, want...)

	// The victim's rule is not spared for being the victim's: once it holds
	// the most keys of a shard with nothing but protected keys, it makes the room.
	for i := range 10 {
		protect(t, s, fmt.Sprintf("tg:default:login:acct:other-%d", i))
	}
	if keys := s.Keys(); slices.Contains(keys, victim) {
		t.Errorf("live keys %v: the victim's counter is the least recently used of the largest rule and should have gone", keys)
	}
}

// TestMemory_AnExpiredRuleIsDrainedBeforeLiveKeysGo: the keys of a flood
// that has stopped expire in their rule's lists; new keys of another rule
// take their room before any live key is evicted, as they would in one list.
func TestMemory_AnExpiredRuleIsDrainedBeforeLiveKeysGo(t *testing.T) {
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: 10, Shards: 1})
	ctx := context.Background()
	for i := range 10 {
		s.Do(ctx, []authguard.Op{charge(fmt.Sprintf("tg:default:otp_send:dest:flood-%d", i))})
	}
	clock.Advance(storetest.Backoff.ForgetAfter) // the flood's counters have expired
	var want []string
	for i := range 10 {
		k := fmt.Sprintf("tg:default:login:acct:user-%d", i)
		s.Do(ctx, []authguard.Op{charge(k)})
		want = append(want, k)
	}
	assertKeys(t, s, want...)
	if st := s.Stats(); st.Entries != 10 || st.Evicted != 0 {
		t.Errorf("stats %+v, want the 10 users and no eviction", st)
	}
}

// TestMemory_GroupsAreBounded: keys of more rules than maxGroups (256)
// share the last group; the store still holds at most MaxEntries keys and
// evicts the least recently used of a group.
func TestMemory_GroupsAreBounded(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 50, Shards: 1})
	ctx := context.Background()
	for i := range 5000 {
		if _, err := s.Do(ctx, []authguard.Op{charge(fmt.Sprintf("rule-%d:k", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Entries != 50 || st.Evicted != 5000-50 {
		t.Errorf("stats %+v, want 50 entries and the rest evicted", st)
	}
	if keys := s.Keys(); !slices.Contains(keys, "rule-4999:k") {
		t.Errorf("live keys %v, want the newest key among them", keys)
	}
}

// TestMemory_EveryTouchReclassifies: a counter refunded below free is
// ordinary again and goes before older protected entries; an expired
// protected entry at the end of its list is dropped, not counted as evicted.
func TestMemory_EveryTouchReclassifies(t *testing.T) {
	clock := testclock.New(time.Time{})
	s := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: 3, Shards: 1})
	ctx := context.Background()
	do := func(ops ...authguard.Op) {
		t.Helper()
		if _, err := s.Do(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	refund := func(k string) authguard.Op {
		return &authguard.BackoffOp{Key: k, Action: authguard.BackoffRefund, Policy: storetest.Backoff, SeenWindow: storetest.Seen}
	}
	do(charge("old"), charge("old"))          // protected
	do(charge("new"), charge("new"))          // protected
	do(charge("x"), charge("x"), refund("x")) // protected, then back to one failure
	if st := s.Stats(); st.Protected != 2 {
		t.Fatalf("stats %+v, want 2 protected entries", st)
	}
	do(charge("y"))
	assertKeys(t, s, "old", "new", "y")
	if st := s.Stats(); st.EvictedProbation != 1 || st.EvictedProtected != 0 {
		t.Errorf("stats %+v, want x evicted as probation", st)
	}

	clock.Advance(storetest.Backoff.ForgetAfter) // every counter has expired
	do(charge("z"))
	if st := s.Stats(); st.Evicted != 1 {
		t.Errorf("stats %+v: dropping an expired entry counted as an eviction", st)
	}
	assertKeys(t, s, "z")
}

// TestMemory_ShardCapsAddUpToMaxEntries: with a cap that the shards do not
// divide, the store still never holds more than MaxEntries keys.
func TestMemory_ShardCapsAddUpToMaxEntries(t *testing.T) {
	for _, tt := range []struct{ max, shards int }{{1000, 64}, {10_000, 64}, {7, 3}, {5, 8}} {
		s := memstore.New(memstore.Config{MaxEntries: tt.max, Shards: tt.shards})
		for i := range 10 * tt.max { // enough to fill every shard
			s.Do(context.Background(), []authguard.Op{charge(fmt.Sprint("k", i))})
		}
		if got := s.Stats().Entries; got > tt.max {
			t.Errorf("MaxEntries %d, %d shards: %d entries after %d keys, want at most %d", tt.max, tt.shards, got, 10*tt.max, tt.max)
		}
	}
}

func assertKeys(t *testing.T, s *memstore.Store, want ...string) {
	t.Helper()
	got := s.Keys()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("live keys %v, want %v", got, want)
	}
}

// spray48 is the built-in login flow's ip_spray_48 rule: distinct accounts
// failing from one IPv6 /48, at most 50 an hour and 200 a day, so a log at
// its limit keeps 201 members (spraydetect.Windows.Cap), about 10 KB.
var spray48 = loginFlow.Rule("ip_spray_48").Windows

// fatLog fills the /48 spray log of prefix n to its cap with fresh account
// hashes, as an attacker's failures from that /48 on as many made-up
// accounts do (LogAdd: reported failures count whatever the limits say;
// admissions spread over four hours make the same log), and returns its
// key. The log is then at its limit: protected.
func fatLog(t testing.TB, s *memstore.Store, n uint64) string {
	t.Helper()
	key := "tg:default:login:ipspray48:" + hash22('p', n)
	for m := range spray48.Cap() {
		res, err := s.Do(context.Background(), []authguard.Op{&authguard.LogOp{Key: key, Action: authguard.LogAdd, Member: hash22('a', n<<16|uint64(m)), Windows: spray48}})
		if err != nil {
			t.Fatal(err)
		}
		if m == spray48.Cap()-1 && res[0].Count != spray48.Cap() {
			t.Fatalf("log %s holds %d members, want %d", key, res[0].Count, spray48.Cap())
		}
	}
	return key
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestMemory_FatSprayLogsCannotGrowPastTheByteBudget: logs at their limit
// are protected, and a key cap does not bound what they hold (a /48 spray
// log at its limit takes 40 times a fresh subject's key). An attacker
// failing on made-up accounts from many /48s fills a store with them; the
// store holds at most MemoryLimit, accounted and measured, by turning over
// the flood's own logs.
func TestMemory_FatSprayLogsCannotGrowPastTheByteBudget(t *testing.T) {
	const limit = 1 << 20 // room for about 100 logs
	logs := 400
	if testing.Short() {
		logs = 200 // still twice what fits: half of them turned over
	}
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	before := liveHeap()
	s := memstore.New(memstore.Config{Now: clock.Now, MemoryLimit: limit, Shards: 4})
	for i := range logs {
		fatLog(t, s, uint64(i))
		if b := s.Bytes(); b > limit {
			t.Fatalf("after %d fat logs the store accounts %d bytes, MemoryLimit is %d", i+1, b, limit)
		}
	}
	heap := liveHeap() - before
	runtime.KeepAlive(s)
	st := s.Stats()
	t.Logf("%d fat logs: %d kept, accounted %d bytes, heap %d bytes; evicted %d protected", logs, st.Entries, st.Bytes, heap, st.EvictedProtected)
	if heap > limit*11/10 {
		t.Errorf("the store takes %d bytes of heap, want at most MemoryLimit (%d) + 10%%", heap, limit)
	}
	if st.Entries < logs/5 || st.Protected != st.Entries {
		t.Errorf("stats %+v: want about a quarter of the %d logs kept, all protected", st, logs)
	}
	if st.EvictedProtected != int64(logs-st.Entries) {
		t.Errorf("evicted %d protected, want every log not kept (%d)", st.EvictedProtected, logs-st.Entries)
	}
	for _, k := range s.Keys()[:1] { // the logs kept are whole
		res, _ := s.Do(context.Background(), []authguard.Op{&authguard.LogOp{Key: k, Action: authguard.LogPeek, Member: "x", Windows: spray48}})
		if !res[0].Over || res[0].Count != spray48.Cap() {
			t.Errorf("kept log %s: %+v, want it at its limit", k, res[0])
		}
	}
}

// TestMemory_AFloodOfFatLogsCannotEvictACounterInBackoff: an attacker
// drives a victim's counter into backoff, then fills the store with fat
// protected logs (/48 spray logs at their limit) to evict it by bytes.
// As under the key cap, ordinary keys go first, then the rule holding the
// most, counted in bytes: the flood's own. Counted in keys it would be the
// victim's: the accounts in backoff (here 60) outnumber the logs that fit
// (25), and each log makes room for some 30 counters.
func TestMemory_AFloodOfFatLogsCannotEvictACounterInBackoff(t *testing.T) {
	const limit = 256 << 10
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Now: clock.Now, MemoryLimit: limit, Shards: 1})
	ctx := context.Background()
	do := func(op authguard.Op) authguard.Result {
		t.Helper()
		res, err := s.Do(ctx, []authguard.Op{op})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	inBackoff := func(k string) { // Free (5) failures: the next attempt waits
		t.Helper()
		for range loginFlow.Rule("account_backoff").Backoff.Free {
			if r := do(backoffCharge(k)); !r.Charged {
				t.Fatalf("charging %s: %+v", k, r)
			}
		}
	}
	const victim, ordinary = "tg:default:login:acct:victim", "tg:default:login:acct:ordinary"
	inBackoff(victim)
	for i := range 59 {
		inBackoff(fmt.Sprintf("tg:default:login:acct:other-%d", i))
	}
	do(backoffCharge(ordinary))
	for i := range 100 {
		fatLog(t, s, uint64(i))
		if b := s.Bytes(); b > limit {
			t.Fatalf("after %d fat logs the store accounts %d bytes, MemoryLimit is %d", i+1, b, limit)
		}
	}
	st := s.Stats()
	kept := st.Entries - 60 // the counters in backoff
	t.Logf("stats %+v: %d logs kept", st, kept)
	if st.EvictedProbation != 1 || st.EvictedProtected != int64(100-kept) || st.Protected != st.Entries {
		t.Errorf("stats %+v, want the ordinary key and %d of the flood's logs evicted", st, 100-kept)
	}
	if keys := s.Keys(); !slices.Contains(keys, victim) || slices.Contains(keys, ordinary) {
		t.Fatalf("the victim's counter kept: %v, the ordinary one kept: %v; want only the victim's", slices.Contains(keys, victim), slices.Contains(keys, ordinary))
	}
	if r := do(backoffCharge(victim)); r.Charged || r.Wait <= 0 || r.Count != 5 {
		t.Errorf("victim's check after the flood = %+v, want a wait after 5 failures", r)
	}

	// The victim's rule is not spared for being the victim's: once it holds
	// the most bytes of a shard with nothing but protected keys, it makes
	// the room, and the victim's counter is its least recently used.
	clock.Advance(time.Minute) // within the logs' windows and the counters' forget_after
	for i := 59; slices.Contains(s.Keys(), victim); i++ {
		if i > 2000 {
			t.Fatal("the victim's counter outlived 2,000 more counters in backoff")
		}
		inBackoff(fmt.Sprintf("tg:default:login:acct:other-%d", i))
	}
}

// TestMemory_ALogGrowingPastTheBudgetEvictsOthersNotItself: a key's state
// that grows in place (a log gaining members) makes room like a new key,
// and never by evicting itself.
func TestMemory_ALogGrowingPastTheBudgetEvictsOthersNotItself(t *testing.T) {
	const limit = 16 << 10 // a fat log and a few thin keys
	s := memstore.New(memstore.Config{MemoryLimit: limit, Shards: 1})
	ctx := context.Background()
	for i := range 40 {
		s.Do(ctx, []authguard.Op{charge(fmt.Sprintf("tg:default:login:acct:%d", i))})
	}
	key := fatLog(t, s, 1)
	res, _ := s.Do(ctx, []authguard.Op{&authguard.LogOp{Key: key, Action: authguard.LogPeek, Member: "x", Windows: spray48}})
	if res[0].Count != spray48.Cap() {
		t.Errorf("the grown log holds %d members, want %d", res[0].Count, spray48.Cap())
	}
	if st := s.Stats(); st.Bytes > limit || st.EvictedProbation == 0 {
		t.Errorf("stats %+v: want the counters evicted to stay within %d bytes", st, limit)
	}
}

// TestMemory_AKeyLargerThanItsShardsBudgetIsKept: a shard whose share of
// MemoryLimit is smaller than one key keeps that key alone rather than
// forget it (forgetting errs towards letting attempts through).
func TestMemory_AKeyLargerThanItsShardsBudgetIsKept(t *testing.T) {
	s := memstore.New(memstore.Config{MemoryLimit: 4 << 10, Shards: 1})
	ctx := context.Background()
	s.Do(ctx, []authguard.Op{charge("tg:default:login:acct:a")})
	key := fatLog(t, s, 1)
	assertKeys(t, s, key)
	fatLog(t, s, 2) // and the next such key takes its place
	if st := s.Stats(); st.Entries != 1 || st.Evicted != 2 {
		t.Errorf("stats %+v, want one key kept and two evicted", st)
	}
}
