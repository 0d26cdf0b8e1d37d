package limits_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

func TestFixedWindow_Steps(t *testing.T) {
	f := limits.FixedWindow{Window: time.Minute, Limit: 3}
	s := runSteps(t, f, limits.FixedState{}, []step{
		{"t=+0s: first call on the zero state", 0, 1, allow(2, time.Minute)},
		{"t=+10s: cost 2 fills the window", 10 * time.Second, 2, allow(0, 50*time.Second)},
		{"t=+20s: full: wait for the next window", 20 * time.Second, 1, refuse(0, 40*time.Second, 40*time.Second)},
		{"t=+20s: cost above the limit is never allowed", 20 * time.Second, 4, refuse(0, 0, 40*time.Second)},
		{"t=+20s: cost 0 is never allowed", 20 * time.Second, 0, refuse(0, 0, 40*time.Second)},
		{"t=+59.999s: 1ms before the window ends", 59999 * time.Millisecond, 1, refuse(0, time.Millisecond, time.Millisecond)},
		{"t=+60s: a new window counts from zero", time.Minute, 3, allow(0, time.Minute)},
		{"t=+90s: full again", 90 * time.Second, 1, refuse(0, 30*time.Second, 30*time.Second)},
		{"t=+3m: after an empty window", 3 * time.Minute, 2, allow(1, time.Minute)},
		{"t=+3m30s: cost 2 is over by one: wait for the next window", 210 * time.Second, 2, refuse(1, 30*time.Second, 30*time.Second)},
		{"t=+3m30s: cost 1 still fits", 210 * time.Second, 1, allow(0, 30*time.Second)},
	})
	if want := (limits.FixedState{Start: ms(3 * time.Minute), Count: 3}); s != want {
		t.Errorf("state = %+v, want %+v", s, want)
	}
}

// TestFixedWindow_BurstAtTheBoundaryAdmitsTwiceTheLimit pins the fixed
// window's known weakness, documented on FixedWindow: the Limit spent at the
// end of one window and again at the start of the next, 2×Limit within 1ms.
// A SlidingLog or SlidingCounter refuses the second half
// (TestSlidingLog_BoundaryBurstIsRefused,
// TestSlidingCounter_BoundaryBurstIsRefused).
func TestFixedWindow_BurstAtTheBoundaryAdmitsTwiceTheLimit(t *testing.T) {
	const limit = 5
	f := limits.FixedWindow{Window: time.Minute, Limit: limit}
	s := runSteps(t, f, limits.FixedState{}, []step{
		{"t=+59.999s: quiet until the last ms, then 4", 59999 * time.Millisecond, 4, allow(1, time.Millisecond)},
		{"t=+59.999s: the 5th", 59999 * time.Millisecond, 1, allow(0, time.Millisecond)},
		{"t=+59.999s: the 6th waits 1ms", 59999 * time.Millisecond, 1, refuse(0, time.Millisecond, time.Millisecond)},
		{"t=+60s: a new window: 5 more at once", time.Minute, limit, allow(0, time.Minute)},
		{"t=+60s: then it holds", time.Minute, 1, refuse(0, time.Minute, time.Minute)},
	})
	if s.Count != limit {
		t.Errorf("state = %+v, want %d counted in the new window", s, limit)
	}
}

// TestFixedWindow_ClockSteppingBackKeepsTheWindow: a store clock that steps
// back across a window boundary does not open a fresh window.
func TestFixedWindow_ClockSteppingBackKeepsTheWindow(t *testing.T) {
	f := limits.FixedWindow{Window: time.Minute, Limit: 2}
	runSteps(t, f, limits.FixedState{}, []step{
		{"t=+60s: fills the window of +60s", time.Minute, 2, allow(0, time.Minute)},
		{"t=+59s: the clock stepped back: still that window", 59 * time.Second, 1, refuse(0, 61*time.Second, 61*time.Second)},
		{"t=+2m: the next window", 2 * time.Minute, 1, allow(1, time.Minute)},
	})
}

// TestFixedWindow_ChangedWindowKeepsTheStateInForce: after an operator
// changes Window, a count from the old windows holds until Start+Window,
// rather than starting afresh on the new grid.
func TestFixedWindow_ChangedWindowKeepsTheStateInForce(t *testing.T) {
	// Counted with 1-minute windows: 3 in [+60s, +120s).
	s := limits.FixedState{Start: ms(time.Minute), Count: 3}
	f := limits.FixedWindow{Window: 90 * time.Second, Limit: 3}
	runSteps(t, f, s, []step{
		{"t=+100s: the count holds until +150s", 100 * time.Second, 1, refuse(0, 50*time.Second, 50*time.Second)},
		{"t=+150s: then the new grid: the window of +90s", 150 * time.Second, 1, allow(2, 30*time.Second)},
	})
}

func TestFixedWindow_TTL(t *testing.T) {
	f := limits.FixedWindow{Window: time.Minute, Limit: 3}
	tests := []struct {
		name string
		s    limits.FixedState
		at   time.Duration
		want time.Duration
	}{
		{"zero state", limits.FixedState{}, 0, 0},
		{"counted, window current", limits.FixedState{Start: ms(0), Count: 1}, 20 * time.Second, 40 * time.Second},
		{"counted, window over", limits.FixedState{Start: ms(0), Count: 3}, time.Minute, 0},
		{"nothing counted", limits.FixedState{Start: ms(0)}, 20 * time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.TTL(tt.s, at(tt.at)); got != tt.want {
				t.Errorf("TTL(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

func TestFixedWindow_Validate(t *testing.T) {
	runValidate(t, []validateCase{
		{"5 an hour", limits.FixedWindow{Window: time.Hour, Limit: 5}, ""},
		{"the extremes", limits.FixedWindow{Window: limits.MaxWindow, Limit: limits.MaxLimit}, ""},
		{"1ms", limits.FixedWindow{Window: time.Millisecond, Limit: 1}, ""},
		{"zero window", limits.FixedWindow{Limit: 1}, "window"},
		{"window not whole ms", limits.FixedWindow{Window: 1500 * time.Microsecond, Limit: 1}, "window"},
		{"window over a week", limits.FixedWindow{Window: limits.MaxWindow + time.Millisecond, Limit: 1}, "window"},
		{"zero limit", limits.FixedWindow{Window: time.Second}, "limit"},
		{"limit over the maximum", limits.FixedWindow{Window: time.Second, Limit: limits.MaxLimit + 1}, "limit"},
	})
}

// fixedWindow describes f to checkSteps, with a count per aligned window as
// its model: a give-back comes off the count of its own window.
func fixedWindow(f limits.FixedWindow) algorithm[limits.FixedState] {
	return algorithm[limits.FixedState]{l: f, limit: f.Limit, unit: f.Window, model: func(results []result) string {
		w := f.Window.Milliseconds()
		counts := map[int64]int{}
		for i, r := range results {
			start := r.ms / w * w
			if r.cost < 1 || r.cost > f.Limit {
				continue
			}
			if r.give {
				counts[start] = max(0, counts[start]-r.cost)
				if want := f.Limit - counts[start]; r.d.Remaining != want {
					return fmt.Sprintf("call %d (give back %d at %d): Remaining = %d with %d counted in the window", i, r.cost, r.ms, r.d.Remaining, counts[start])
				}
				continue
			}
			if want := counts[start]+r.cost <= f.Limit; r.d.Allowed != want {
				return fmt.Sprintf("call %d (cost %d at %d): allowed = %v with %d counted in the window", i, r.cost, r.ms, r.d.Allowed, counts[start])
			}
			if r.d.Allowed {
				counts[start] += r.cost
			} else if want := time.Duration(start+w-r.ms) * time.Millisecond; r.d.Wait != want {
				return fmt.Sprintf("call %d (cost %d at %d): Wait = %v, but the window ends in %v", i, r.cost, r.ms, r.d.Wait, want)
			}
		}
		return ""
	}}
}

func TestFixedWindow_Invariants(t *testing.T) {
	checkRandom(t, 21, 300, func(r *rand.Rand) algorithm[limits.FixedState] {
		return fixedWindow(limits.FixedWindow{Window: randomUnit(r), Limit: randomLimit(r, limits.MaxLimit)})
	})
}

func FuzzFixedWindow(f *testing.F) {
	fuzzAlgorithm(f, func(window time.Duration, limit int) algorithm[limits.FixedState] {
		return fixedWindow(limits.FixedWindow{Window: window, Limit: limit})
	})
}

func TestFixedWindow_GiveBackSteps(t *testing.T) {
	f := limits.FixedWindow{Window: time.Minute, Limit: 3}
	s := runMixed(t, f, limits.FixedState{}, []mixedStep{
		{"t=+0s: take 2", 0, take(2), allow(1, time.Minute)},
		{"t=+10s: take 1 fills the window", 10 * time.Second, take(1), allow(0, 50*time.Second)},
		{"t=+20s: give back 2: 1 counted", 20 * time.Second, give(2), allow(2, 40*time.Second)},
		{"t=+20s: so 2 fit again", 20 * time.Second, take(2), allow(0, 40*time.Second)},
		{"t=+30s: a cost above the limit gives back nothing", 30 * time.Second, give(4), allow(0, 30*time.Second)},
		{"t=+30s: cost 0 gives back nothing", 30 * time.Second, give(0), allow(0, 30*time.Second)},
		{"t=+30s: give back 3: the zero state", 30 * time.Second, give(3), allow(3, 0)},
		{"t=+30s: never below it", 30 * time.Second, give(1), allow(3, 0)},
		{"t=+40s: take 3", 40 * time.Second, take(3), allow(0, 20*time.Second)},
		{"t=+60s: the window is over: its units left with it", time.Minute, give(3), allow(3, 0)},
		{"t=+60s: the new window was not touched", time.Minute, take(3), allow(0, time.Minute)},
		{"t=+59s: the clock stepped back: still the window of +60s", 59 * time.Second, give(1), allow(1, 61*time.Second)},
	})
	if want := (limits.FixedState{Start: ms(time.Minute), Count: 2}); s != want {
		t.Errorf("state = %+v, want %+v", s, want)
	}
}

func FuzzFixedWindow_GiveBackN(f *testing.F) {
	fuzzGiveBack(f, func(window time.Duration, limit int) algorithm[limits.FixedState] {
		return fixedWindow(limits.FixedWindow{Window: window, Limit: limit})
	})
}
