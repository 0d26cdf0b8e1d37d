package limits_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

func TestLeakyBucket_Steps(t *testing.T) {
	l := limits.LeakyBucket{Interval: 100 * time.Millisecond, Capacity: 3}
	const I = 100 * time.Millisecond
	drain := runSteps(t, l, 0, []step{
		{"t=+0s: first call on the zero state goes at once", 0, 1, queued(2, 0, I)},
		{"t=+0s: the 2nd of a burst waits one interval", 0, 1, queued(1, I, 2*I)},
		{"t=+0s: the 3rd waits two", 0, 1, queued(0, 2*I, 3*I)},
		{"t=+0s: the queue is full: refused until a place frees", 0, 1, refuse(0, I, 3*I)},
		{"t=+0s: cost above the capacity is never allowed", 0, 4, refuse(0, 0, 3*I)},
		{"t=+0s: cost 0 is never allowed", 0, 0, refuse(0, 0, 3*I)},
		{"t=+50ms: still full, 50ms until a place frees", 50 * time.Millisecond, 1, refuse(0, 50*time.Millisecond, 250*time.Millisecond)},
		{"t=+100ms: the 1st has left: queued after the 3rd", I, 1, queued(0, 2*I, 3*I)},
		// Drains at +400ms: at +250ms 1.5 places are taken by the rest.
		{"t=+250ms: cost 2 needs two places: wait 50ms", 250 * time.Millisecond, 2, refuse(1, 50*time.Millisecond, 150*time.Millisecond)},
		{"t=+300ms: cost 2 fits, goes in 100ms", 300 * time.Millisecond, 2, queued(0, I, 3*I)},
		{"t=+300ms: cost 4 is above the capacity", 300 * time.Millisecond, 4, refuse(0, 0, 3*I)},
		{"t=+1s: drained: goes at once", time.Second, 1, queued(2, 0, I)},
	})
	if want := ms(time.Second + I); drain != want {
		t.Errorf("drains at %+dms, want +%v", drain-ms(0), time.Second+I)
	}
}

// TestLeakyBucket_BurstIsSpreadOut: the calls of a burst go ahead one per
// Interval, whatever their arrival, and the queue never holds more than
// Capacity.
func TestLeakyBucket_BurstIsSpreadOut(t *testing.T) {
	l := limits.LeakyBucket{Interval: time.Second, Capacity: 5}
	var drain int64
	var goAt []time.Duration
	for i := range 20 {
		now := at(time.Duration(i) * 100 * time.Millisecond)
		var d limits.Decision
		if drain, d = l.TakeN(drain, now, 1); d.Allowed {
			goAt = append(goAt, now.Add(d.Wait).Sub(base))
		}
	}
	// Arrivals every 100ms for 2s: 0.0s goes at once and the queue is full
	// from 0.4s; a place frees at 1.0s, taken then, the next at 2.0s.
	want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second}
	if fmt.Sprint(goAt) != fmt.Sprint(want) {
		t.Errorf("calls go ahead at %v, want %v", goAt, want)
	}
}

func TestLeakyBucket_Validate(t *testing.T) {
	runValidate(t, []validateCase{
		{"10 per second, 20 queued", limits.LeakyBucket{Interval: 100 * time.Millisecond, Capacity: 20}, ""},
		{"no queue", limits.LeakyBucket{Interval: time.Second, Capacity: 1}, ""},
		{"zero interval", limits.LeakyBucket{Capacity: 1}, "interval"},
		{"interval over a day", limits.LeakyBucket{Interval: 25 * time.Hour, Capacity: 1}, "interval"},
		{"zero capacity", limits.LeakyBucket{Interval: time.Second}, "capacity"},
		{"capacity over the maximum", limits.LeakyBucket{Interval: time.Millisecond, Capacity: limits.MaxBurst + 1}, "capacity"},
		{"drains in over 100 years", limits.LeakyBucket{Interval: 24 * time.Hour, Capacity: 36501}, "capacity"},
	})
}

// leakyBucket describes l to checkSteps, with a queue of units as its model:
// a unit is in the queue until its turn has passed, a call is admitted
// when the units in the queue, plus its cost, number at most Capacity, and a
// give-back takes units off the end of the queue.
func leakyBucket(l limits.LeakyBucket) algorithm[int64] {
	interval := l.Interval.Milliseconds()
	return algorithm[int64]{l: l, limit: l.Capacity, unit: l.Interval, queue: true,
		step: func(drain int64, now time.Time, cost int, next int64, d limits.Decision) string {
			if d.Allowed && d.Wait != time.Duration(max(drain, now.UnixMilli())-now.UnixMilli())*time.Millisecond {
				return "allowed, but Wait is not the time until the queue drains"
			}
			return ""
		},
		model: func(results []result) string {
			// The queue, in order: each admitted call's units take their
			// turns one Interval each from goAt on; a unit is in the queue
			// until its turn has ended.
			type queuedCall struct {
				goAt int64
				cost int
			}
			var q []queuedCall
			for i, r := range results {
				// left is how many of c's units are still queued at r.ms.
				left := func(c queuedCall) int {
					return c.cost - int(min(int64(c.cost), max(0, (r.ms-c.goAt)/interval)))
				}
				for len(q) > 0 && left(q[0]) == 0 {
					q = q[1:]
				}
				n := 0
				for _, c := range q {
					n += left(c)
				}
				if r.cost < 1 || r.cost > l.Capacity {
					continue
				}
				if r.give {
					// Units left in the queue are at its end, contiguous.
					for k := r.cost; k > 0 && len(q) > 0; {
						last := &q[len(q)-1]
						off := min(k, left(*last))
						last.cost -= off
						k -= off
						if left(*last) == 0 {
							q = q[:len(q)-1]
						}
					}
					if want := l.Capacity - max(0, n-r.cost); r.d.Remaining != want {
						return fmt.Sprintf("call %d (give back %d at %d): Remaining = %d with %d units queued", i, r.cost, r.ms, r.d.Remaining, n)
					}
					continue
				}
				if want := n+r.cost <= l.Capacity; r.d.Allowed != want {
					return fmt.Sprintf("call %d (cost %d at %d): allowed = %v with %d units queued", i, r.cost, r.ms, r.d.Allowed, n)
				}
				if !r.d.Allowed {
					// The call fits once the first n+cost−Capacity of the
					// queued units have had their turn.
					k := n + r.cost - l.Capacity
					for _, c := range q {
						if k <= left(c) {
							end := c.goAt + int64(c.cost-left(c)+k)*interval
							if want := time.Duration(end-r.ms) * time.Millisecond; r.d.Wait != want {
								return fmt.Sprintf("call %d (cost %d at %d): Wait = %v, but it fits in %v", i, r.cost, r.ms, r.d.Wait, want)
							}
							break
						}
						k -= left(c)
					}
					continue
				}
				goAt := r.ms
				if len(q) > 0 {
					last := q[len(q)-1]
					goAt = max(goAt, last.goAt+int64(last.cost)*interval)
				}
				if want := time.Duration(goAt-r.ms) * time.Millisecond; r.d.Wait != want {
					return fmt.Sprintf("call %d (cost %d at %d): Wait = %v, but its turn comes in %v", i, r.cost, r.ms, r.d.Wait, want)
				}
				q = append(q, queuedCall{goAt, r.cost})
			}
			return ""
		},
	}
}

func TestLeakyBucket_Invariants(t *testing.T) {
	checkRandom(t, 51, 300, func(r *rand.Rand) algorithm[int64] {
		return leakyBucket(limits.LeakyBucket{Interval: randomUnit(r), Capacity: randomLimit(r, limits.MaxBurst)})
	})
}

func FuzzLeakyBucket(f *testing.F) {
	fuzzAlgorithm(f, func(interval time.Duration, capacity int) algorithm[int64] {
		return leakyBucket(limits.LeakyBucket{Interval: interval, Capacity: capacity})
	})
}

func TestLeakyBucket_GiveBackSteps(t *testing.T) {
	l := limits.LeakyBucket{Interval: 100 * time.Millisecond, Capacity: 3}
	const I = 100 * time.Millisecond
	drain := runMixed(t, l, 0, []mixedStep{
		{"t=+0s: take 1, goes at once", 0, take(1), queued(2, 0, I)},
		{"t=+0s: take 1, waits one interval", 0, take(1), queued(1, I, 2*I)},
		{"t=+0s: give it back: it leaves the queue", 0, give(1), allow(2, I)},
		{"t=+0s: the next call takes its turn", 0, take(1), queued(1, I, 2*I)},
		{"t=+50ms: give back 1: drains at +100ms", 50 * time.Millisecond, give(1), allow(2, 50*time.Millisecond)},
		{"t=+50ms: a cost above the capacity gives back nothing", 50 * time.Millisecond, give(4), allow(2, 50*time.Millisecond)},
		{"t=+50ms: give back 1: empty, never below", 50 * time.Millisecond, give(1), allow(3, 0)},
		{"t=+50ms: an empty queue: goes at once", 50 * time.Millisecond, take(2), queued(1, 0, 2*I)},
	})
	if want := ms(250 * time.Millisecond); drain != want {
		t.Errorf("drains at %+dms, want +250ms", drain-ms(0))
	}
}

// TestLeakyBucket_GiveBackOfAnEarlierCallIsApproximate pins the approximation
// documented on GiveBackN: giving back a call that others queued behind
// frees the place at the end of the queue, and the next call is told the
// turn of one already queued.
func TestLeakyBucket_GiveBackOfAnEarlierCallIsApproximate(t *testing.T) {
	l := limits.LeakyBucket{Interval: time.Second, Capacity: 3}
	runMixed(t, l, 0, []mixedStep{
		{"t=+0s: A goes at once", 0, take(1), queued(2, 0, time.Second)},
		{"t=+0s: B goes at +1s", 0, take(1), queued(1, time.Second, 2*time.Second)},
		{"t=+0s: A did not go ahead: give it back", 0, give(1), allow(2, time.Second)},
		{"t=+0s: C is told +1s too", 0, take(1), queued(1, time.Second, 2*time.Second)},
	})
}

func FuzzLeakyBucket_GiveBackN(f *testing.F) {
	fuzzGiveBack(f, func(interval time.Duration, capacity int) algorithm[int64] {
		return leakyBucket(limits.LeakyBucket{Interval: interval, Capacity: capacity})
	})
}
