package memstore

import (
	"slices"
	"testing"
)

// TestIndex_KeysWhoseHashesClashAreKeptApart stores keys under one hash, as
// if maphash gave them the same one: each is found, held, removed and
// counted on its own, in either order of removal.
func TestIndex_KeysWhoseHashesClashAreKeptApart(t *testing.T) {
	for _, first := range []int{0, 1, 2} {
		sh := &shard{index: map[uint64]int32{}, free: none, cap: 10, budget: 1 << 20}
		keys := []string{"t:f:r:a", "t:f:r:b", "t:f:r:c"}
		for _, k := range keys {
			sh.insert(7, k, int64(1), 1<<62, listOf(0, probation), size(k, int64(1)))
		}
		if sh.n != 3 || len(sh.index) != 1 || len(sh.clash) != 2 {
			t.Fatalf("held %d keys: %d in the index, %d clashing; want 3, 1, 2", sh.n, len(sh.index), len(sh.clash))
		}
		for _, k := range keys {
			if i, ok := sh.lookup(7, k); !ok || sh.slots[i].key != k {
				t.Fatalf("lookup(%q) = slot %d, %v", k, i, ok)
			}
		}
		if _, ok := sh.lookup(7, "t:f:r:d"); ok {
			t.Fatal("a key never stored was found under a clashing hash")
		}
		i, _ := sh.lookup(7, keys[first])
		sh.remove(i)
		var held []string
		for j := range sh.held() {
			held = append(held, sh.slots[j].key)
		}
		if sh.n != 2 || len(held) != 2 || slices.Contains(held, keys[first]) {
			t.Fatalf("after removing %q: %d keys, held %v", keys[first], sh.n, held)
		}
		for _, k := range keys {
			if _, ok := sh.lookup(7, k); ok == (k == keys[first]) {
				t.Errorf("after removing %q: lookup(%q) found = %v", keys[first], k, ok)
			}
		}
	}
}
