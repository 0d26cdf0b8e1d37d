package limits

import (
	"fmt"
	"time"
)

// Bucket is a token bucket, computed as GCRA: Burst requests may arrive at
// once, and one more token returns every Interval. The state is a single
// number, the theoretical arrival time (TAT) of the next request.
type Bucket struct {
	// Interval is the time one token takes to return (1/rate).
	Interval time.Duration
	// Burst is the bucket's size.
	Burst int
}

// MaxBurst is the largest burst a Bucket may have.
const MaxBurst = 1_000_000

// Validate reports whether b is usable.
func (b Bucket) Validate() error {
	if b.Interval < time.Millisecond || b.Interval%time.Millisecond != 0 {
		return fmt.Errorf("limits: token interval %v must be a whole number of milliseconds, at least 1ms", b.Interval)
	}
	if b.Interval > 24*time.Hour {
		return fmt.Errorf("limits: token interval %v must be at most 24h", b.Interval)
	}
	// Burst×Interval stays far inside int64 and float64's exact integers, so
	// Go and the Redis store's Lua agree.
	if b.Burst < 1 || b.Burst > MaxBurst {
		return fmt.Errorf("limits: burst must be between 1 and %d, got %d", MaxBurst, b.Burst)
	}
	return nil
}

// Decision is the outcome of Take.
type Decision struct {
	// Allowed is true when a token was taken.
	Allowed bool
	// Wait is how long until a token will be available when not Allowed.
	Wait time.Duration
}

// Take takes one token at now. tat is the state (Unix ms; zero for a full
// bucket). A refused request leaves the state as it was.
func (b Bucket) Take(tat int64, now time.Time) (int64, Decision) {
	ms, interval := now.UnixMilli(), b.Interval.Milliseconds()
	next := max(tat, ms) + interval
	if excess := next - ms - int64(b.Burst)*interval; excess > 0 {
		return tat, Decision{Wait: time.Duration(excess) * time.Millisecond}
	}
	return next, Decision{Allowed: true}
}

// TTL is how long the state matters after now: once the TAT has passed the
// bucket is full again and the state can be dropped.
func (b Bucket) TTL(tat int64, now time.Time) time.Duration {
	return max(0, time.Duration(tat-now.UnixMilli())*time.Millisecond)
}
