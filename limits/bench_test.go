package limits_test

import (
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

// BenchmarkTake is the pure cost of one decision: calls arrive twice as fast
// as the algorithm lets through, so about half are refused, and each call
// carries on from the state the previous one left.
func BenchmarkTake(b *testing.B) {
	b.Run("Bucket", func(b *testing.B) {
		benchTake(b, limits.Bucket{Interval: 100 * time.Millisecond, Burst: 100}, 50*time.Millisecond)
	})
	b.Run("LeakyBucket", func(b *testing.B) {
		benchTake(b, limits.LeakyBucket{Interval: 100 * time.Millisecond, Capacity: 100}, 50*time.Millisecond)
	})
	b.Run("FixedWindow", func(b *testing.B) {
		benchTake(b, limits.FixedWindow{Window: time.Minute, Limit: 100}, 300*time.Millisecond)
	})
	b.Run("SlidingCounter", func(b *testing.B) {
		benchTake(b, limits.SlidingCounter{Window: time.Minute, Limit: 100}, 300*time.Millisecond)
	})
	b.Run("SlidingLog", func(b *testing.B) {
		benchTake(b, limits.SlidingLog{Window: time.Minute, Limit: 100}, 300*time.Millisecond)
	})
	b.Run("SlidingLog/limit=1000", func(b *testing.B) {
		benchTake(b, limits.SlidingLog{Window: time.Minute, Limit: limits.MaxLogLimit}, 30*time.Millisecond)
	})
}

func benchTake[S any](b *testing.B, l limiter[S], every time.Duration) {
	b.Helper()
	b.ReportAllocs()
	var s S
	now := base
	allowed := 0
	for b.Loop() {
		var d limits.Decision
		s, d = l.TakeN(s, now, 1)
		if d.Allowed {
			allowed++
		}
		now = now.Add(every)
	}
	if allowed == 0 {
		b.Fatal("nothing allowed")
	}
}
