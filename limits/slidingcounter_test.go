package limits_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

func TestSlidingCounter_Steps(t *testing.T) {
	// Windows of 60s from +0s; the estimate is prev×(60−elapsed)/60 + curr,
	// in seconds, and cost is admitted while estimate + cost ≤ 10.
	c := limits.SlidingCounter{Window: time.Minute, Limit: 10}
	s := runSteps(t, c, limits.CounterState{}, []step{
		// Reset: the current window's units count until a window after it ends.
		{"t=+0s: first call on the zero state", 0, 1, allow(9, 2*time.Minute)},
		{"t=+10s: cost 5", 10 * time.Second, 5, allow(4, 110*time.Second)},
		{"t=+20s: cost 4 fills the window", 20 * time.Second, 4, allow(0, 100*time.Second)},
		// Not in this window (curr alone is 10). In the next, prev = 10:
		// 10×(60−e)/60 + 1 ≤ 10 from e = 6s, at +66s.
		{"t=+30s: full: the estimate falls enough at +66s", 30 * time.Second, 1, refuse(0, 36*time.Second, 90*time.Second)},
		{"t=+30s: cost above the limit is never allowed", 30 * time.Second, 11, refuse(0, 0, 90*time.Second)},
		{"t=+30s: cost 0 is never allowed", 30 * time.Second, 0, refuse(0, 0, 90*time.Second)},
		// 10×54/60 + 0 = 9.
		{"t=+65.999s: 1ms early: 10×54.001/60 = 9.0002", 65999 * time.Millisecond, 1, refuse(0, time.Millisecond, 54001*time.Millisecond)},
		{"t=+66s: the window slid: 10×54/60 = 9, so 1 fits", 66 * time.Second, 1, allow(0, 114*time.Second)},
		// Mid-window: prev 10, curr 1, elapsed 30s: 10×30/60 + 1 = 6, so 4
		// remain; cost 2 leaves 2.
		{"t=+90s: mid-window estimate 6: cost 2", 90 * time.Second, 2, allow(2, 90*time.Second)},
		// Now 10×30/60 + 3 = 8: cost 3 needs 10×(60−e)/60 ≤ 4, e ≥ 36s.
		{"t=+90s: cost 3 is over by one: wait 6s", 90 * time.Second, 3, refuse(2, 6*time.Second, 90*time.Second)},
		// Rolled over: prev 3, curr 0, elapsed 5s: 3×55/60 = 2.75, +1 = 3.75:
		// ⌊6.25⌋ = 6 remain.
		{"t=+125s: next window: the 3 are prev", 125 * time.Second, 1, allow(6, 115*time.Second)},
		{"t=+5m: both windows over: fresh", 5 * time.Minute, 10, allow(0, 2*time.Minute)},
	})
	if want := (limits.CounterState{Start: ms(5 * time.Minute), Curr: 10}); s != want {
		t.Errorf("state = %+v, want %+v", s, want)
	}
}

// TestSlidingCounter_WaitCrossesTheRollover: when the current window alone
// cannot make room the wait runs into the next, where the current units
// become the previous ones.
func TestSlidingCounter_WaitCrossesTheRollover(t *testing.T) {
	c := limits.SlidingCounter{Window: 10 * time.Second, Limit: 4}
	runSteps(t, c, limits.CounterState{}, []step{
		{"t=+9s: 3 late in the window", 9 * time.Second, 3, allow(1, 11*time.Second)},
		// In the next window, prev = 3: 3×(10−e)/10 + 0 + 2 ≤ 4 from
		// e = 10 − ⌊2×10/3⌋ = 10 − 6.666… → 3.334s, at +13.334s.
		{"t=+9s: cost 2 waits into the next window", 9 * time.Second, 2, refuse(1, 4334*time.Millisecond, 11*time.Second)},
		// 3×6.667/10 = 2.0001: 1 remains, 2 do not fit.
		{"t=+13.333s: 1ms early", 13333 * time.Millisecond, 2, refuse(1, time.Millisecond, 6667*time.Millisecond)},
		{"t=+13.334s: 3×6.666/10 = 1.9998", 13334 * time.Millisecond, 2, allow(0, 16666*time.Millisecond)},
		// Cost 4 is the whole limit: it waits until nothing counts,
		// when the window of +10s has left too, at +30s.
		{"t=+20s: cost 4 needs an empty estimate", 20 * time.Second, 4, refuse(2, 10*time.Second, 10*time.Second)},
	})
}

// TestSlidingCounter_BoundaryBurstIsRefused: the burst that gets 2×Limit
// through a FixedWindow
// (TestFixedWindow_BurstAtTheBoundaryAdmitsTwiceTheLimit) gets Limit: at the
// boundary the previous window still counts in full.
func TestSlidingCounter_BoundaryBurstIsRefused(t *testing.T) {
	c := limits.SlidingCounter{Window: time.Minute, Limit: 5}
	runSteps(t, c, limits.CounterState{}, []step{
		{"t=+59.999s: quiet until the last ms, then 5", 59999 * time.Millisecond, 5, allow(0, 60001*time.Millisecond)},
		// 5×(60−e)/60 + 5 ≤ 5 only at e = 60s.
		{"t=+60s: the previous window counts in full", time.Minute, 5, refuse(0, time.Minute, time.Minute)},
		// 5×(60−e)/60 + 1 ≤ 5 from e = 12s.
		{"t=+60s: one waits 12s", time.Minute, 1, refuse(0, 12*time.Second, time.Minute)},
	})
}

// TestSlidingCounter_BunchingGetsTwiceTheLimitLessOne pins the estimate's
// weakness, documented on SlidingCounter: units bunched at the end of one
// window count as if spread over it, so the next window admits more while
// they are still within the last Window.
func TestSlidingCounter_BunchingGetsTwiceTheLimitLessOne(t *testing.T) {
	c := limits.SlidingCounter{Window: time.Minute, Limit: 5}
	s := runSteps(t, c, limits.CounterState{}, []step{
		{"t=+59.999s: 5 at the end of the window", 59999 * time.Millisecond, 5, allow(0, 60001*time.Millisecond)},
		// 5×(60−59.998)/60 + 4 = 4.0002: 4 more.
		{"t=+119.998s: 4 more, 59.999s after them", 119998 * time.Millisecond, 4, allow(0, 60002*time.Millisecond)},
	})
	if s.Prev+s.Curr != 2*c.Limit-1 {
		t.Errorf("state = %+v, want 2×Limit−1 within one Window", s)
	}
}

// TestSlidingCounter_ClockSteppingBack: a state from a later window stays in
// force, counted as at its window's start.
func TestSlidingCounter_ClockSteppingBack(t *testing.T) {
	c := limits.SlidingCounter{Window: time.Minute, Limit: 4}
	runSteps(t, c, limits.CounterState{}, []step{
		{"t=+50s: 4 of 4", 50 * time.Second, 4, allow(0, 70*time.Second)},
		// The window of +0s rolls over at +60s: prev 4, curr 1.
		{"t=+90s: 4×30/60 + 1", 90 * time.Second, 1, allow(1, 90*time.Second)},
		// Back before +60s: elapsed counts as 0, prev in full: 4 + 1 + 1 > 4,
		// and the wait is from the state's window: 4×(60−e)/60 ≤ 4−1−1 from
		// e = 60 − ⌊2×60/4⌋ = 30s, at +90s.
		{"t=+59s: the clock stepped back", 59 * time.Second, 1, refuse(0, 31*time.Second, 121*time.Second)},
	})
	// Elapsed counts as 0, not less: prev weighs at most its own count.
	// 4×60/60 + 1 + 1 = 6 of 10.
	c10 := limits.SlidingCounter{Window: time.Minute, Limit: 10}
	runSteps(t, c10, limits.CounterState{Start: ms(time.Minute), Prev: 4, Curr: 1}, []step{
		{"t=+30s: 30s before the state's window", 30 * time.Second, 1, allow(4, 150*time.Second)},
	})
}

// TestSlidingCounter_ChangedWindowKeepsTheStateInForce: after an operator
// changes Window, a state counted on the old windows rolls over on its own
// windows until it is over, rather than starting afresh on the new grid.
func TestSlidingCounter_ChangedWindowKeepsTheStateInForce(t *testing.T) {
	// Counted with 1-minute windows: 5 in [+60s, +120s).
	s := limits.CounterState{Start: ms(time.Minute), Curr: 5}
	c := limits.SlidingCounter{Window: 90 * time.Second, Limit: 5}
	runSteps(t, c, s, []step{
		// The state's window is [+60s, +150s) now, the next [+150s, +240s):
		// at +160s, 5×(90−10)/90 = 4.44, and 1 more fits from
		// e = 90 − ⌊4×90/5⌋ = 18s, at +168s. (The new grid's window of +90s
		// would have counted nothing.)
		{"t=+160s: rolled over on the state's windows", 160 * time.Second, 1, refuse(0, 8*time.Second, 80*time.Second)},
		{"t=+168s: 5×72/90 = 4", 168 * time.Second, 1, allow(0, 162*time.Second)},
	})
}

func TestSlidingCounter_TTL(t *testing.T) {
	c := limits.SlidingCounter{Window: time.Minute, Limit: 10}
	tests := []struct {
		name string
		s    limits.CounterState
		at   time.Duration
		want time.Duration
	}{
		{"zero state", limits.CounterState{}, 0, 0},
		{"current window counted", limits.CounterState{Start: ms(0), Curr: 1}, 20 * time.Second, 100 * time.Second},
		{"previous window counted, current not: until the current window ends", limits.CounterState{Start: ms(0), Prev: 1}, 20 * time.Second, 40 * time.Second},
		{"previous window counted, current window over", limits.CounterState{Start: ms(0), Prev: 1}, time.Minute, 0},
		{"nothing counted", limits.CounterState{Start: ms(0)}, 20 * time.Second, 0},
		{"both windows over", limits.CounterState{Start: ms(0), Prev: 3, Curr: 4}, 2 * time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.TTL(tt.s, at(tt.at)); got != tt.want {
				t.Errorf("TTL(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

func TestSlidingCounter_Validate(t *testing.T) {
	runValidate(t, []validateCase{
		{"100 a minute", limits.SlidingCounter{Window: time.Minute, Limit: 100}, ""},
		{"the extremes", limits.SlidingCounter{Window: limits.MaxWindow, Limit: limits.MaxLimit}, ""},
		{"zero window", limits.SlidingCounter{Limit: 1}, "window"},
		{"window over a week", limits.SlidingCounter{Window: 8 * 24 * time.Hour, Limit: 1}, "window"},
		{"zero limit", limits.SlidingCounter{Window: time.Minute}, "limit"},
		{"limit over the maximum", limits.SlidingCounter{Window: time.Minute, Limit: limits.MaxLimit + 1}, "limit"},
	})
}

// slidingCounter describes c to checkSteps. Each refused call's Wait is
// checked against a brute-force scan, millisecond by millisecond, when the
// window is short enough (property d). The model counts the units admitted in
// each aligned window, less those given back (off the current window first,
// then the previous), and computes the estimate in exact fractions; and,
// without give-backs, no span of one Window ever holds more than 2×Limit−1.
func slidingCounter(c limits.SlidingCounter) algorithm[limits.CounterState] {
	w := c.Window.Milliseconds()
	return algorithm[limits.CounterState]{l: c, limit: c.Limit, unit: c.Window,
		step: func(s limits.CounterState, now time.Time, cost int, _ limits.CounterState, d limits.Decision) string {
			if d.Allowed || cost < 1 || cost > c.Limit || w > 200 {
				return ""
			}
			// The estimate is 0 two windows after the state's, which may be
			// later than now's (a clock that stepped back).
			last := max(now.UnixMilli(), s.Start) + 2*w - now.UnixMilli()
			for k := int64(1); k <= last; k++ {
				if _, d2 := c.TakeN(s, now.Add(time.Duration(k)*time.Millisecond), cost); d2.Allowed {
					if want := time.Duration(k) * time.Millisecond; d.Wait != want {
						return fmt.Sprintf("Wait = %v, but a scan finds the first allowed ms at %v", d.Wait, want)
					}
					return ""
				}
			}
			return "a scan finds nothing allowed up to two windows after the state's"
		},
		model: func(results []result) string {
			counts := map[int64]int64{}
			for i, r := range results {
				start := r.ms / w * w
				if r.cost < 1 || r.cost > c.Limit {
					continue
				}
				if r.give {
					fromCurr := min(int64(r.cost), counts[start])
					counts[start] -= fromCurr
					counts[start-w] = max(0, counts[start-w]-(int64(r.cost)-fromCurr))
					// Remaining: the largest k with prev×(w−elapsed)/w + curr + k ≤ limit.
					est := big.NewRat(counts[start-w]*(w-(r.ms-start)), w)
					est.Add(est, big.NewRat(counts[start], 1))
					free := new(big.Rat).Sub(big.NewRat(int64(c.Limit), 1), est)
					want := int64(0)
					if free.Sign() > 0 {
						want = new(big.Int).Quo(free.Num(), free.Denom()).Int64()
					}
					if int64(r.d.Remaining) != want {
						return fmt.Sprintf("call %d (give back %d at %d): Remaining = %d, but the estimate is %v", i, r.cost, r.ms, r.d.Remaining, est.FloatString(4))
					}
					continue
				}
				// prev×(w−elapsed)/w + curr + cost ≤ limit
				est := big.NewRat(counts[start-w]*(w-(r.ms-start)), w)
				est.Add(est, big.NewRat(counts[start]+int64(r.cost), 1))
				if want := est.Cmp(big.NewRat(int64(c.Limit), 1)) <= 0; r.d.Allowed != want {
					return fmt.Sprintf("call %d (cost %d at %d): allowed = %v, but estimate + cost = %v", i, r.cost, r.ms, r.d.Allowed, est.FloatString(4))
				}
				if r.d.Allowed {
					counts[start] += int64(r.cost)
				}
			}
			if gaveBack(results) {
				return ""
			}
			if most, from := maxInSpan(results, w); most > 2*c.Limit-1 {
				return fmt.Sprintf("%d units within the window from %d, over 2×%d−1", most, from, c.Limit)
			}
			return ""
		},
	}
}

func TestSlidingCounter_Invariants(t *testing.T) {
	checkRandom(t, 41, 300, func(r *rand.Rand) algorithm[limits.CounterState] {
		return slidingCounter(limits.SlidingCounter{Window: randomUnit(r), Limit: randomLimit(r, limits.MaxLimit)})
	})
}

// TestSlidingCounter_WaitMatchesBruteForce: property (d) on short windows
// and small limits, where refusals are frequent and the scan is cheap.
func TestSlidingCounter_WaitMatchesBruteForce(t *testing.T) {
	checkRandom(t, 43, 200, func(r *rand.Rand) algorithm[limits.CounterState] {
		return slidingCounter(limits.SlidingCounter{Window: time.Duration(1+r.IntN(200)) * time.Millisecond, Limit: 1 + r.IntN(8)})
	})
}

func FuzzSlidingCounter(f *testing.F) {
	fuzzAlgorithm(f, func(window time.Duration, limit int) algorithm[limits.CounterState] {
		return slidingCounter(limits.SlidingCounter{Window: window, Limit: limit})
	})
}

func TestSlidingCounter_GiveBackSteps(t *testing.T) {
	// As in TestSlidingCounter_Steps: windows of 60s from +0s, limit 10.
	c := limits.SlidingCounter{Window: time.Minute, Limit: 10}
	s := runMixed(t, c, limits.CounterState{}, []mixedStep{
		{"t=+0s: take 4", 0, take(4), allow(6, 2*time.Minute)},
		{"t=+30s: take 3", 30 * time.Second, take(3), allow(3, 90*time.Second)},
		{"t=+30s: give them back", 30 * time.Second, give(3), allow(6, 90*time.Second)},
		// Rolled over: prev 4, curr 0; 1 comes off prev: 3×50/60 = 2.5, so
		// 7 remain; the state holds nothing once its window is over, at +120s.
		{"t=+70s: the next window: off the previous count", 70 * time.Second, give(1), allow(7, 50*time.Second)},
		{"t=+70s: take 2", 70 * time.Second, take(2), allow(5, 110*time.Second)},
		{"t=+70s: a cost above the limit gives back nothing", 70 * time.Second, give(11), allow(5, 110*time.Second)},
		// curr 2 → 0, then prev 3 → 1: 1×50/60, so 9 remain.
		{"t=+70s: give back 4: the current count first, then the previous", 70 * time.Second, give(4), allow(9, 50*time.Second)},
		{"t=+70s: give back 10: the zero state, never below", 70 * time.Second, give(10), allow(10, 0)},
	})
	if want := (limits.CounterState{}); s != want {
		t.Errorf("state = %+v, want %+v", s, want)
	}
}

func FuzzSlidingCounter_GiveBackN(f *testing.F) {
	fuzzGiveBack(f, func(window time.Duration, limit int) algorithm[limits.CounterState] {
		return slidingCounter(limits.SlidingCounter{Window: window, Limit: limit})
	})
}
