package authguard

import (
	"strconv"
	"testing"
	"time"
)

// An attacker who keeps the notice record full of live keys, with one
// window ending now and then, must not make each further notice walk the
// whole record under its lock: a walk that frees less than a quarter
// clears it, so the next walk is at least a quarter of the cap away.
func TestNotices_AFullRecordOfLiveKeysIsNotWalkedOnEveryNotice(t *testing.T) {
	var n notices
	now := time.Unix(1_000_000, 0)
	for i := range maxRecentNotices {
		window := time.Hour
		if i == 0 {
			window = time.Second // the only window that ends
		}
		if !n.fresh("k"+strconv.Itoa(i), window, now) {
			t.Fatalf("key %d was not fresh", i)
		}
	}
	later := now.Add(time.Minute)
	if !n.fresh("new", time.Hour, later) {
		t.Fatal("a new key at the cap was not fresh")
	}
	if got := len(n.recent); got > maxRecentNotices*3/4 {
		t.Fatalf("after the walk at the cap the record holds %d keys, want at most %d: the next notice would walk it again", got, maxRecentNotices*3/4)
	}
}
