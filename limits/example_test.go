package limits_test

import (
	"fmt"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

func ExampleBucket_Take() {
	// Two at once, then one every second.
	b := limits.Bucket{Interval: time.Second, Burst: 2}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var tat int64 // a full bucket
	for _, after := range []time.Duration{0, 0, 0, 400 * time.Millisecond, time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second} {
		var d limits.Decision
		tat, d = b.Take(tat, start.Add(after))
		fmt.Printf("+%v: allowed=%v wait=%v\n", after, d.Allowed, d.Wait)
	}
	// Output:
	// +0s: allowed=true wait=0s
	// +0s: allowed=true wait=0s
	// +0s: allowed=false wait=1s
	// +400ms: allowed=false wait=600ms
	// +1s: allowed=true wait=0s
	// +5s: allowed=true wait=0s
	// +5s: allowed=true wait=0s
	// +5s: allowed=false wait=1s
}

func ExampleBucket_TakeN() {
	// Up to 5 units at once, one more every 100ms; a call may cost several.
	b := limits.Bucket{Interval: 100 * time.Millisecond, Burst: 5}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var tat int64
	for _, c := range []struct {
		after time.Duration
		cost  int
	}{{0, 4}, {0, 2}, {50 * time.Millisecond, 2}, {100 * time.Millisecond, 2}, {time.Second, 6}} {
		var d limits.Decision
		tat, d = b.TakeN(tat, start.Add(c.after), c.cost)
		fmt.Printf("+%v cost %d: allowed=%v remaining=%d wait=%v reset=%v\n", c.after, c.cost, d.Allowed, d.Remaining, d.Wait, d.Reset)
	}
	// Output:
	// +0s cost 4: allowed=true remaining=1 wait=0s reset=400ms
	// +0s cost 2: allowed=false remaining=1 wait=100ms reset=400ms
	// +50ms cost 2: allowed=false remaining=1 wait=50ms reset=350ms
	// +100ms cost 2: allowed=true remaining=0 wait=0s reset=500ms
	// +1s cost 6: allowed=false remaining=5 wait=0s reset=0s
}

func ExampleLeakyBucket_TakeN() {
	// One call every 2s goes ahead; up to 3 may wait their turn.
	l := limits.LeakyBucket{Interval: 2 * time.Second, Capacity: 3}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var drain int64
	for _, after := range []time.Duration{0, 0, 0, 0, time.Second, 2 * time.Second} {
		var d limits.Decision
		drain, d = l.TakeN(drain, start.Add(after), 1)
		if d.Allowed {
			fmt.Printf("+%v: go ahead in %v\n", after, d.Wait)
		} else {
			fmt.Printf("+%v: queue full, retry in %v\n", after, d.Wait)
		}
	}
	// Output:
	// +0s: go ahead in 0s
	// +0s: go ahead in 2s
	// +0s: go ahead in 4s
	// +0s: queue full, retry in 2s
	// +1s: queue full, retry in 1s
	// +2s: go ahead in 4s
}

func ExampleFixedWindow_TakeN() {
	// 3 codes per hour, the count starting again on the hour.
	f := limits.FixedWindow{Window: time.Hour, Limit: 3}
	start := time.Date(2026, 1, 5, 9, 40, 0, 0, time.UTC)
	var s limits.FixedState
	for _, after := range []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 20 * time.Minute} {
		var d limits.Decision
		s, d = f.TakeN(s, start.Add(after), 1)
		fmt.Printf("%s: allowed=%v remaining=%d wait=%v\n", start.Add(after).Format("15:04"), d.Allowed, d.Remaining, d.Wait)
	}
	// Output:
	// 09:40: allowed=true remaining=2 wait=0s
	// 09:41: allowed=true remaining=1 wait=0s
	// 09:42: allowed=true remaining=0 wait=0s
	// 09:43: allowed=false remaining=0 wait=17m0s
	// 10:00: allowed=true remaining=2 wait=0s
}

func ExampleSlidingLog_TakeN() {
	// 3 codes in any 15 minutes, exactly.
	l := limits.SlidingLog{Window: 15 * time.Minute, Limit: 3}
	start := time.Date(2026, 1, 5, 9, 40, 0, 0, time.UTC)
	var log []int64
	for _, after := range []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 15 * time.Minute} {
		var d limits.Decision
		log, d = l.TakeN(log, start.Add(after), 1)
		fmt.Printf("%s: allowed=%v remaining=%d wait=%v entries=%d\n", start.Add(after).Format("15:04"), d.Allowed, d.Remaining, d.Wait, len(log))
	}
	// Output:
	// 09:40: allowed=true remaining=2 wait=0s entries=1
	// 09:41: allowed=true remaining=1 wait=0s entries=2
	// 09:42: allowed=true remaining=0 wait=0s entries=3
	// 09:43: allowed=false remaining=0 wait=12m0s entries=3
	// 09:55: allowed=true remaining=0 wait=0s entries=3
}

func ExampleSlidingCounter_TakeN() {
	// About 10 per minute, in constant memory.
	sc := limits.SlidingCounter{Window: time.Minute, Limit: 10}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var s limits.CounterState
	for _, c := range []struct {
		after time.Duration
		cost  int
	}{{50 * time.Second, 10}, {60 * time.Second, 1}, {66 * time.Second, 1}, {90 * time.Second, 4}} {
		var d limits.Decision
		s, d = sc.TakeN(s, start.Add(c.after), c.cost)
		fmt.Printf("+%v cost %d: allowed=%v remaining=%d wait=%v\n", c.after, c.cost, d.Allowed, d.Remaining, d.Wait)
	}
	// The 10 of the first minute count 10×(60−30)/60 = 5 at +90s.
	fmt.Printf("%+v\n", limits.CounterState{Start: s.Start - start.UnixMilli(), Prev: s.Prev, Curr: s.Curr})
	// Output:
	// +50s cost 10: allowed=true remaining=0 wait=0s
	// +1m0s cost 1: allowed=false remaining=0 wait=6s
	// +1m6s cost 1: allowed=true remaining=0 wait=0s
	// +1m30s cost 4: allowed=true remaining=0 wait=0s
	// {Start:60000 Prev:10 Curr:5}
}

func ExampleFixedWindow_GiveBackN() {
	// 3 codes per hour; a call counted at check time that did not go ahead
	// gives its unit back.
	f := limits.FixedWindow{Window: time.Hour, Limit: 3}
	now := time.Date(2026, 1, 5, 9, 40, 0, 0, time.UTC)
	var s limits.FixedState
	var d limits.Decision
	for range 3 {
		s, d = f.TakeN(s, now, 1)
	}
	fmt.Printf("taken: remaining=%d\n", d.Remaining)
	s, d = f.GiveBackN(s, now, 1)
	fmt.Printf("given back: remaining=%d reset=%v\n", d.Remaining, d.Reset)
	_, d = f.TakeN(s, now, 1)
	fmt.Printf("taken again: allowed=%v\n", d.Allowed)
	// Output:
	// taken: remaining=0
	// given back: remaining=1 reset=20m0s
	// taken again: allowed=true
}
