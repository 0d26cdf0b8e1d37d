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
