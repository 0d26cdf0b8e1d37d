package limits

import "time"

// LeakyBucket is a leaky bucket used as a queue, for shaping: calls go ahead
// one per Interval, and up to Capacity calls may be queued for their turn.
// An admitted call is told how long to wait before going ahead (Wait), so the
// calls of a burst get delays 0, Interval, 2×Interval, …; a call that would
// overfill the queue is refused.
//
// The state is a single number, the Unix ms at which the queue has drained
// (0 is an empty queue). A call admitted at now goes ahead at max(state,
// now) and moves the state cost×Interval past that.
//
// Admission is the same as a Bucket{Interval, Burst: Capacity} (GCRA is the
// leaky bucket's virtual scheduling); what differs is that the admitted calls
// of a burst are spread out rather than let through at once. Memory per
// subject: one integer. Burst behaviour: none passes through; calls go ahead
// at most one per Interval, and a burst beyond Capacity is refused.
type LeakyBucket struct {
	// Interval is the time one unit of cost takes to leave the queue: calls
	// go ahead at most one per Interval.
	Interval time.Duration
	// Capacity is how many units the queue holds, counting the call that
	// goes ahead now: with Capacity 1 nothing is ever queued.
	Capacity int
}

// Validate reports whether l is usable: Interval a whole number of
// milliseconds from 1ms to MaxInterval, Capacity from 1 to MaxBurst, and
// Capacity×Interval at most MaxFillTime. TakeN and TTL assume it.
func (l LeakyBucket) Validate() error {
	if err := checkDuration("leak interval", l.Interval, MaxInterval); err != nil {
		return err
	}
	if err := checkCount("capacity", l.Capacity, MaxBurst); err != nil {
		return err
	}
	return checkFill("capacity", l.Capacity, l.Interval)
}

// TakeN queues a call of cost units at now. drain is the state (Unix ms; 0
// for an empty queue). The call is admitted when the queue then holds at most
// Capacity units, that is when max(drain, now) + cost×Interval − now ≤
// Capacity×Interval; its Wait is max(drain, now) − now, the time until its
// turn. A refused call leaves the state as it was, and its Wait is the time
// until enough of the queue has drained for it to fit. A cost below 1 or
// above Capacity is never allowed: TakeN returns the state unchanged and a
// Wait of 0 (callers check costs against the capacity up front).
func (l LeakyBucket) TakeN(drain int64, now time.Time, cost int) (int64, Decision) {
	return gcra(drain, now.UnixMilli(), l.Interval.Milliseconds(), l.Capacity, cost)
}

// GiveBackN takes cost units that an earlier TakeN of the same cost queued
// back out of the queue: the drain time moves cost×Interval earlier, and when
// that is at or before now the queue is empty, the zero state. A cost below
// 1 or above Capacity, which TakeN never takes, gives back nothing: the
// state is returned unchanged.
//
// GiveBackN never refuses: the Decision is Allowed with a Wait of 0, and its
// Remaining and Reset are those of the returned state at now, as TakeN
// defines them. With nothing queued since the take it is as if the take had
// not happened. Otherwise it is an approximation: the places freed are at
// the end of the queue, while the calls queued after the take keep the
// turns they were told, so the next call admitted may be told the turn of
// one of them, and two calls go ahead within one Interval.
func (l LeakyBucket) GiveBackN(drain int64, now time.Time, cost int) (int64, Decision) {
	return giveBack(drain, now.UnixMilli(), l.Interval.Milliseconds(), l.Capacity, cost)
}

// TTL is how long the state matters after now: once the queue has drained
// the state can be dropped.
func (l LeakyBucket) TTL(drain int64, now time.Time) time.Duration {
	return until(drain, now.UnixMilli())
}
