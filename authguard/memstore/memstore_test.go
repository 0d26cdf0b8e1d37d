package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/storetest"
	"github.com/tollgate-auth/tollgate/internal/testclock"
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
