package testkit

import (
	"testing"
	"time"
)

// TestEventually_LooksUntilTheConditionHolds: cond is looked at again until
// it holds, and no more after that.
func TestEventually_LooksUntilTheConditionHolds(t *testing.T) {
	calls := 0
	if !Eventually(10*time.Second, func() bool { calls++; return calls == 3 }) {
		t.Fatal("Eventually = false for a condition that held on the third look")
	}
	if calls != 3 {
		t.Errorf("%d looks, want 3", calls)
	}
}

// TestEventually_GivesUpAtTheLimit: a condition that never holds is false
// once the limit has passed, after one look even with no time at all.
func TestEventually_GivesUpAtTheLimit(t *testing.T) {
	calls := 0
	if Eventually(0, func() bool { calls++; return false }) {
		t.Error("Eventually = true for a condition that never held")
	}
	if calls != 1 {
		t.Errorf("%d looks with no time, want 1", calls)
	}
	calls = 0
	if Eventually(20*time.Millisecond, func() bool { calls++; return false }) {
		t.Error("Eventually = true for a condition that never held")
	}
	if calls < 2 {
		t.Errorf("%d looks in 20 ms, want more than one", calls)
	}
}
