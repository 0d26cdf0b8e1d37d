package limits

import "time"

// SlidingLog is an exact sliding window: it keeps one timestamp per admitted
// unit and admits cost units at now while the units admitted within
// (now−Window, now], plus cost, number at most Limit.
//
// Memory per subject: one integer per admitted unit within the last Window,
// at most Limit (hence MaxLogLimit). Burst behaviour: the whole Limit at
// once, then no unit until the oldest leaves the window; never more than
// Limit in any span of one Window.
type SlidingLog struct {
	// Window is the length of the sliding window.
	Window time.Duration
	// Limit is how many units the sliding window admits.
	Limit int
}

// Validate reports whether l is usable: Window a whole number of
// milliseconds from 1ms to MaxWindow, Limit from 1 to MaxLogLimit. TakeN and
// TTL assume it.
func (l SlidingLog) Validate() error {
	if err := checkDuration("window", l.Window, MaxWindow); err != nil {
		return err
	}
	return checkCount("limit", l.Limit, MaxLogLimit)
}

// TakeN admits cost units at now while the log's entries after now−Window,
// plus cost, number at most Limit. The state is the log: one Unix ms per
// admitted unit, oldest first (nil holds nothing). An allowed call returns a
// new log without the entries that have left the window and with cost
// entries at now appended; the log passed in is never modified. A refused
// call returns the log passed in, and waits until enough of the oldest
// entries have left the window (an entry at t leaves it at t+Window). A cost
// below 1 or above Limit is never allowed: TakeN returns the log unchanged
// and a Wait of 0 (callers check costs against the limit up front).
//
// Entries later than now (a clock that stepped back) count as within the
// window, and new entries are then recorded at the newest entry's time to
// keep the log in order, so such a clock never frees what was counted.
func (l SlidingLog) TakeN(log []int64, now time.Time, cost int) ([]int64, Decision) {
	ms, w := now.UnixMilli(), l.Window.Milliseconds()
	// The log is in order: the entries in the window are a suffix.
	i := 0
	for i < len(log) && log[i] <= ms-w {
		i++
	}
	in := log[i:]
	remaining := max(0, l.Limit-len(in))
	if cost < 1 || cost > l.Limit {
		return log, Decision{Remaining: remaining, Reset: l.TTL(log, now)}
	}
	if excess := len(in) + cost - l.Limit; excess > 0 {
		// When the excess-th oldest entry has left, so have those before it.
		return log, Decision{Remaining: remaining, Wait: millis(in[excess-1] + w - ms), Reset: l.TTL(log, now)}
	}
	at := ms
	if len(in) > 0 {
		at = max(at, in[len(in)-1])
	}
	next := make([]int64, len(in), len(in)+cost)
	copy(next, in)
	for range cost {
		next = append(next, at)
	}
	return next, Decision{Allowed: true, Remaining: remaining - cost, Reset: millis(at + w - ms)}
}

// TTL is how long the log matters after now: until its newest entry has left
// the window.
func (l SlidingLog) TTL(log []int64, now time.Time) time.Duration {
	if len(log) == 0 {
		return 0
	}
	return until(log[len(log)-1]+l.Window.Milliseconds(), now.UnixMilli())
}
