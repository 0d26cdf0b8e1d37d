package limits

import "time"

// Bucket is a token bucket, computed as GCRA: Burst units may be taken at
// once, and one more unit returns every Interval, never more than Burst in
// store. The state is a single number, the theoretical arrival time (TAT):
// the Unix ms at which the bucket is full again. 0 is a full bucket.
//
// Memory per subject: one integer. Burst behaviour: Burst at once after a
// quiet period, then the steady rate of one per Interval.
type Bucket struct {
	// Interval is the time one token takes to return (1/rate).
	Interval time.Duration
	// Burst is the bucket's size.
	Burst int
}

// Validate reports whether b is usable: Interval a whole number of
// milliseconds from 1ms to MaxInterval, Burst from 1 to MaxBurst, and
// Burst×Interval at most MaxFillTime. TakeN and TTL assume it.
func (b Bucket) Validate() error {
	if err := checkDuration("token interval", b.Interval, MaxInterval); err != nil {
		return err
	}
	if err := checkCount("burst", b.Burst, MaxBurst); err != nil {
		return err
	}
	return checkFill("burst", b.Burst, b.Interval)
}

// Take is TakeN with a cost of 1.
func (b Bucket) Take(tat int64, now time.Time) (int64, Decision) {
	return b.TakeN(tat, now, 1)
}

// TakeN takes cost tokens at now. tat is the state (Unix ms; 0 for a full
// bucket). The call is allowed when the bucket holds cost tokens at now; then
// the TAT moves cost×Interval past max(tat, now). A refused call leaves the
// state as it was and waits until enough tokens have returned. A cost below 1
// or above Burst is never allowed: TakeN returns the state unchanged and a
// Wait of 0 (callers check costs against the burst up front).
func (b Bucket) TakeN(tat int64, now time.Time, cost int) (int64, Decision) {
	tat, d := gcra(tat, now.UnixMilli(), b.Interval.Milliseconds(), b.Burst, cost)
	if d.Allowed {
		d.Wait = 0 // a token bucket lets the call go ahead now
	}
	return tat, d
}

// GiveBackN puts back cost tokens that an earlier TakeN of the same cost
// took: the TAT moves cost×Interval earlier, and when that is at or before
// now the bucket is full, the zero state. A cost below 1 or above Burst,
// which TakeN never takes, gives back nothing: the state is returned
// unchanged.
//
// GiveBackN never refuses: the Decision is Allowed with a Wait of 0, and its
// Remaining and Reset are those of the returned state at now, as TakeN
// defines them. With nothing taken since the take, the bucket holds what it
// would have held had the take not happened: the tokens, up to Burst. After
// later takes it can hold more: the tokens the bucket would have lost by
// being full in between are not lost, at most cost of them.
func (b Bucket) GiveBackN(tat int64, now time.Time, cost int) (int64, Decision) {
	return giveBack(tat, now.UnixMilli(), b.Interval.Milliseconds(), b.Burst, cost)
}

// TTL is how long the state matters after now: once the TAT has passed the
// bucket is full again and the state can be dropped.
func (b Bucket) TTL(tat int64, now time.Time) time.Duration {
	return until(tat, now.UnixMilli())
}

// gcra is the step Bucket and LeakyBucket share: a queue of size slots of
// interval ms each, which drains at tat. An allowed call's Wait is its place
// in the queue; Bucket's is always 0.
func gcra(tat, now, interval int64, size, cost int) (int64, Decision) {
	remaining := func(t int64) int { return freeSlots(t, now, interval, size) }
	if cost < 1 || cost > size {
		return tat, Decision{Remaining: remaining(tat), Reset: until(tat, now)}
	}
	start := max(tat, now)
	next := start + int64(cost)*interval
	if excess := next - now - int64(size)*interval; excess > 0 {
		return tat, Decision{Remaining: remaining(tat), Wait: millis(excess), Reset: until(tat, now)}
	}
	return next, Decision{Allowed: true, Remaining: remaining(next), Wait: millis(start - now), Reset: millis(next - now)}
}

// giveBack is the give-back Bucket and LeakyBucket share: the queue drains
// cost slots earlier, and is empty (0) once that is at or before now.
func giveBack(tat, now, interval int64, size, cost int) (int64, Decision) {
	if cost >= 1 && cost <= size {
		if tat -= int64(cost) * interval; tat <= now {
			tat = 0
		}
	}
	return tat, Decision{Allowed: true, Remaining: freeSlots(tat, now, interval, size), Reset: until(tat, now)}
}

// freeSlots is how many whole slots of a queue of size slots of interval ms
// each are free at now when it drains at t.
func freeSlots(t, now, interval int64, size int) int {
	return int(max(0, int64(size)*interval-max(0, t-now)) / interval)
}
