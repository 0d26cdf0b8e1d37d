package limits_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

func TestSlidingLog_Steps(t *testing.T) {
	l := limits.SlidingLog{Window: time.Minute, Limit: 3}
	log := runSteps(t, l, nil, []step{
		{"t=+0s: first call on the zero state", 0, 1, allow(2, time.Minute)},
		{"t=+10s: cost 2 fills the window", 10 * time.Second, 2, allow(0, time.Minute)},
		{"t=+20s: full: wait until the entry of +0s leaves at +60s", 20 * time.Second, 1, refuse(0, 40*time.Second, 50*time.Second)},
		{"t=+30s: cost 2 waits for the two entries of +10s", 30 * time.Second, 2, refuse(0, 40*time.Second, 40*time.Second)},
		{"t=+30s: cost above the limit is never allowed", 30 * time.Second, 4, refuse(0, 0, 40*time.Second)},
		{"t=+30s: cost 0 is never allowed", 30 * time.Second, 0, refuse(0, 0, 40*time.Second)},
		{"t=+60s: the window is (now−1m, now]: the entry of +0s has left", time.Minute, 1, allow(0, time.Minute)},
		{"t=+69.999s: 1ms before the entries of +10s leave", 69999 * time.Millisecond, 1, refuse(0, time.Millisecond, 50001*time.Millisecond)},
		{"t=+70s: they have left: cost 2", 70 * time.Second, 2, allow(0, time.Minute)},
		{"t=+100s: one entry of +60s is all that is left to wait for", 100 * time.Second, 1, refuse(0, 20*time.Second, 30*time.Second)},
	})
	if want := []int64{ms(time.Minute), ms(70 * time.Second), ms(70 * time.Second)}; !slices.Equal(log, want) {
		t.Errorf("log = %v, want %v", log, want)
	}
	log = runSteps(t, l, log, []step{
		{"t=+10m: every entry has left", 10 * time.Minute, 3, allow(0, time.Minute)},
	})
	if want := []int64{ms(10 * time.Minute), ms(10 * time.Minute), ms(10 * time.Minute)}; !slices.Equal(log, want) {
		t.Errorf("log = %v, want %v: the old entries dropped", log, want)
	}
}

// TestSlidingLog_BoundaryBurstIsRefused: the burst that gets 2×Limit
// through a FixedWindow
// (TestFixedWindow_BurstAtTheBoundaryAdmitsTwiceTheLimit) gets Limit.
func TestSlidingLog_BoundaryBurstIsRefused(t *testing.T) {
	l := limits.SlidingLog{Window: time.Minute, Limit: 5}
	runSteps(t, l, nil, []step{
		{"t=+59.999s: quiet until the last ms, then 5", 59999 * time.Millisecond, 5, allow(0, time.Minute)},
		{"t=+60s: no new window: wait until they leave", time.Minute, 5, refuse(0, 59999*time.Millisecond, 59999*time.Millisecond)},
		{"t=+60s: not even one", time.Minute, 1, refuse(0, 59999*time.Millisecond, 59999*time.Millisecond)},
	})
}

// TestSlidingLog_ClockSteppingBack: entries later than now still count, and
// new ones keep the log in order.
func TestSlidingLog_ClockSteppingBack(t *testing.T) {
	l := limits.SlidingLog{Window: time.Minute, Limit: 3}
	log := runSteps(t, l, nil, []step{
		{"t=+60s: 2 of 3", time.Minute, 2, allow(1, time.Minute)},
		{"t=+50s: the clock stepped back: recorded at +60s", 50 * time.Second, 1, allow(0, 70*time.Second)},
		{"t=+55s: they all count", 55 * time.Second, 1, refuse(0, 65*time.Second, 65*time.Second)},
	})
	if want := []int64{ms(time.Minute), ms(time.Minute), ms(time.Minute)}; !slices.Equal(log, want) {
		t.Errorf("log = %v, want %v", log, want)
	}
}

// TestSlidingLog_DoesNotModifyItsArgument: the log passed in may share its
// array with the store's copy; TakeN never writes to it.
func TestSlidingLog_DoesNotModifyItsArgument(t *testing.T) {
	l := limits.SlidingLog{Window: time.Minute, Limit: 5}
	log := make([]int64, 2, 10)
	log[0], log[1] = ms(0), ms(time.Second)
	a, _ := l.TakeN(log, at(2*time.Second), 1)
	b, _ := l.TakeN(log, at(3*time.Second), 2)
	if want := []int64{ms(0), ms(time.Second), ms(2 * time.Second)}; !slices.Equal(a, want) {
		t.Errorf("first = %v, want %v", a, want)
	}
	if want := []int64{ms(0), ms(time.Second), ms(3 * time.Second), ms(3 * time.Second)}; !slices.Equal(b, want) {
		t.Errorf("second = %v, want %v", b, want)
	}
}

func TestSlidingLog_Validate(t *testing.T) {
	runValidate(t, []validateCase{
		{"3 per 15 minutes", limits.SlidingLog{Window: 15 * time.Minute, Limit: 3}, ""},
		{"the extremes", limits.SlidingLog{Window: limits.MaxWindow, Limit: limits.MaxLogLimit}, ""},
		{"zero window", limits.SlidingLog{Limit: 1}, "window"},
		{"negative window", limits.SlidingLog{Window: -time.Minute, Limit: 1}, "window"},
		{"zero limit", limits.SlidingLog{Window: time.Minute}, "limit"},
		{"limit over the log's maximum", limits.SlidingLog{Window: time.Minute, Limit: limits.MaxLogLimit + 1}, "limit"},
	})
}

// slidingLog describes l to checkSteps, with the admitted units as its
// model: a call is admitted when those within (now−Window, now], plus its
// cost, number at most Limit, and a give-back removes the newest of those;
// and, without give-backs, no span of one Window ever holds more than Limit
// (property c).
func slidingLog(l limits.SlidingLog) algorithm[[]int64] {
	w := l.Window.Milliseconds()
	return algorithm[[]int64]{l: l, limit: l.Limit, unit: l.Window,
		step: func(_ []int64, _ time.Time, _ int, next []int64, _ limits.Decision) string {
			if !slices.IsSorted(next) {
				return "the log is out of order"
			}
			if len(next) > l.Limit {
				return "the log holds more than Limit entries"
			}
			return ""
		},
		model: func(results []result) string {
			var units []int64 // one per admitted unit
			for i, r := range results {
				var in []int64
				for _, u := range units {
					if u > r.ms-w {
						in = append(in, u)
					}
				}
				if r.cost < 1 || r.cost > l.Limit {
					continue
				}
				if r.give {
					// The units in the window are the newest.
					units = units[:len(units)-min(r.cost, len(in))]
					if want := l.Limit - (len(in) - min(r.cost, len(in))); r.d.Remaining != want {
						return fmt.Sprintf("call %d (give back %d at %d): Remaining = %d with %d units in the window", i, r.cost, r.ms, r.d.Remaining, len(in))
					}
					continue
				}
				if want := len(in)+r.cost <= l.Limit; r.d.Allowed != want {
					return fmt.Sprintf("call %d (cost %d at %d): allowed = %v with %d units in the window", i, r.cost, r.ms, r.d.Allowed, len(in))
				}
				if !r.d.Allowed {
					if want := time.Duration(in[len(in)+r.cost-l.Limit-1]+w-r.ms) * time.Millisecond; r.d.Wait != want {
						return fmt.Sprintf("call %d (cost %d at %d): Wait = %v, but enough units leave in %v", i, r.cost, r.ms, r.d.Wait, want)
					}
					continue
				}
				for range r.cost {
					units = append(units, r.ms)
				}
			}
			if gaveBack(results) {
				return ""
			}
			if most, from := maxInSpan(results, w); most > l.Limit {
				return fmt.Sprintf("%d units within the window from %d, over the limit %d", most, from, l.Limit)
			}
			return ""
		},
	}
}

func TestSlidingLog_Invariants(t *testing.T) {
	checkRandom(t, 31, 300, func(r *rand.Rand) algorithm[[]int64] {
		return slidingLog(limits.SlidingLog{Window: randomUnit(r), Limit: randomLimit(r, limits.MaxLogLimit)})
	})
}

// TestSlidingLog_NeverMoreThanLimitInAnyWindow: property (c) on its own, on
// floods of calls at random instants.
func TestSlidingLog_NeverMoreThanLimitInAnyWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for i := range 200 {
		l := limits.SlidingLog{Window: time.Duration(1+r.IntN(1000)) * time.Millisecond, Limit: 1 + r.IntN(10)}
		var log []int64
		var results []result
		off := time.Duration(0)
		for range 300 {
			off += time.Duration(r.Int64N(l.Window.Milliseconds()/max(1, int64(l.Limit))+2)) * time.Millisecond
			cost := 1 + r.IntN(l.Limit)
			var d limits.Decision
			log, d = l.TakeN(log, at(off), cost)
			results = append(results, result{ms: ms(off), cost: cost, d: d})
		}
		if most, from := maxInSpan(results, l.Window.Milliseconds()); most > l.Limit {
			t.Fatalf("run %d: %+v: %d units within the window from %+dms", i, l, most, from-ms(0))
		}
	}
}

func FuzzSlidingLog(f *testing.F) {
	fuzzAlgorithm(f, func(window time.Duration, limit int) algorithm[[]int64] {
		return slidingLog(limits.SlidingLog{Window: window, Limit: limit})
	})
}

func TestSlidingLog_GiveBackSteps(t *testing.T) {
	l := limits.SlidingLog{Window: time.Minute, Limit: 3}
	log := runMixed(t, l, nil, []mixedStep{
		{"t=+0s: take 1", 0, take(1), allow(2, time.Minute)},
		{"t=+10s: take 2 fills the window", 10 * time.Second, take(2), allow(0, time.Minute)},
		{"t=+10s: give them back: the entry of +0s is left", 10 * time.Second, give(2), allow(2, 50*time.Second)},
		{"t=+20s: take 1", 20 * time.Second, take(1), allow(1, time.Minute)},
		{"t=+30s: give back 1: the newest entry goes", 30 * time.Second, give(1), allow(2, 30*time.Second)},
		{"t=+30s: a cost above the limit gives back nothing", 30 * time.Second, give(4), allow(2, 30*time.Second)},
		{"t=+30s: take 2", 30 * time.Second, take(2), allow(0, time.Minute)},
		{"t=+65s: the entry of +0s has left; one of +30s goes", 65 * time.Second, give(1), allow(2, 25*time.Second)},
		{"t=+65s: give back 3: only 1 is left to go", 65 * time.Second, give(3), allow(3, 0)},
		{"t=+65s: take 3", 65 * time.Second, take(3), allow(0, time.Minute)},
	})
	if want := []int64{ms(65 * time.Second), ms(65 * time.Second), ms(65 * time.Second)}; !slices.Equal(log, want) {
		t.Errorf("log = %v, want %v", log, want)
	}
}

// TestSlidingLog_GiveBackDoesNotModifyItsArgument: like TakeN, GiveBackN
// returns a new log.
func TestSlidingLog_GiveBackDoesNotModifyItsArgument(t *testing.T) {
	l := limits.SlidingLog{Window: time.Minute, Limit: 5}
	log := []int64{ms(0), ms(time.Second), ms(2 * time.Second)}
	a, _ := l.GiveBackN(log, at(3*time.Second), 1)
	b, _ := l.TakeN(a, at(3*time.Second), 1)
	if want := []int64{ms(0), ms(time.Second), ms(2 * time.Second)}; !slices.Equal(log, want) {
		t.Errorf("log = %v, want %v", log, want)
	}
	if want := []int64{ms(0), ms(time.Second), ms(3 * time.Second)}; !slices.Equal(b, want) {
		t.Errorf("after a give-back and a take: %v, want %v", b, want)
	}
}

func FuzzSlidingLog_GiveBackN(f *testing.F) {
	fuzzGiveBack(f, func(window time.Duration, limit int) algorithm[[]int64] {
		return slidingLog(limits.SlidingLog{Window: window, Limit: limit})
	})
}
