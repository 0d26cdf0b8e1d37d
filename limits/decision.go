package limits

import (
	"fmt"
	"time"
)

// Decision is the outcome of one step of any algorithm in this package: the
// verdict, and what a client may be told about it (the figures of the
// RateLimit and Retry-After headers). Every duration is a whole number of
// milliseconds. GiveBackN, which never refuses, returns Allowed with a Wait
// of 0, and Remaining and Reset as defined here.
type Decision struct {
	// Allowed is true when the call was admitted: its cost is charged to the
	// returned state. A refused call returns the state it was given.
	Allowed bool
	// Remaining is how many units are still available at now, after this
	// step: the largest cost that a further TakeN on the returned state at
	// the same instant would allow, 0 when there is none. It is between 0 and
	// the limit (a Bucket's Burst, a LeakyBucket's Capacity).
	Remaining int
	// Wait, when the call is refused, is the time from now until a call of the
	// same cost would be allowed if nothing else is taken meanwhile, rounded
	// up to the millisecond and exact: a retry at now+Wait is allowed, one at
	// now+Wait−1ms is not. It is 0 when the cost can never be allowed (below
	// 1 or above the limit).
	//
	// When the call is allowed Wait is 0, except for a LeakyBucket, where it
	// is the delay before this call may go ahead: its place in the queue.
	Wait time.Duration
	// Reset is the time from now until the returned state holds nothing if
	// nothing else is taken meanwhile: from then on the subject is treated as
	// one never seen. It equals the algorithm's TTL of the returned state,
	// and is 0 when that state already holds nothing.
	Reset time.Duration
}

// Limits on the parameters, checked by Validate. They keep every product and
// sum the algorithms form (at most 3×MaxLimit×MaxWindow in milliseconds, about
// 1.8×10¹⁵) below 2^52, so that the Redis store's Lua, whose numbers are
// float64, computes exactly what Go computes with int64.
const (
	// MaxBurst is the largest Burst of a Bucket and the largest Capacity of a
	// LeakyBucket.
	MaxBurst = 1_000_000
	// MaxInterval is the longest Interval of a Bucket or a LeakyBucket.
	MaxInterval = 24 * time.Hour
	// MaxFillTime is the longest time a Bucket takes to refill from empty
	// (Burst×Interval) or a LeakyBucket's full queue takes to drain
	// (Capacity×Interval), so that every Wait and Reset fits a time.Duration
	// (at most about 292 years).
	MaxFillTime = 100 * 365 * 24 * time.Hour
	// MaxLimit is the largest Limit of a FixedWindow or a SlidingCounter.
	MaxLimit = 1_000_000
	// MaxLogLimit is the largest Limit of a SlidingLog, which keeps one
	// timestamp per admitted unit: at most 8 KB per subject.
	MaxLogLimit = 1_000
	// MaxWindow is the longest Window of a FixedWindow, SlidingLog or
	// SlidingCounter.
	MaxWindow = 7 * 24 * time.Hour
)

// checkDuration reports whether d is a whole number of milliseconds between
// 1ms and limit.
func checkDuration(what string, d, limit time.Duration) error {
	if d < time.Millisecond || d > limit || d%time.Millisecond != 0 {
		return fmt.Errorf("limits: %s %v must be a whole number of milliseconds between 1ms and %v", what, d, limit)
	}
	return nil
}

// checkFill reports whether n slots of interval each take at most
// MaxFillTime; it assumes both have passed their own checks.
func checkFill(what string, n int, interval time.Duration) error {
	if int64(n) > int64(MaxFillTime/interval) {
		return fmt.Errorf("limits: %s %d × interval %v must be at most %v", what, n, interval, MaxFillTime)
	}
	return nil
}

// checkCount reports whether n is between 1 and limit.
func checkCount(what string, n, limit int) error {
	if n < 1 || n > limit {
		return fmt.Errorf("limits: %s must be between 1 and %d, got %d", what, limit, n)
	}
	return nil
}

// millis is n milliseconds.
func millis(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// until is the time from now to t, both Unix ms, or 0 once t has passed.
func until(t, now int64) time.Duration { return millis(max(0, t-now)) }
