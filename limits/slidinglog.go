package limits

import (
	"slices"
	"time"
)

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
	in := l.within(log, now)
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

// GiveBackN gives back cost units that an earlier TakeN of the same cost
// took, as far as the log still holds them: it returns a new log without the
// entries that have left the window and without the cost newest of those
// within it (all of them when there are fewer); the log passed in is never
// modified, and an empty log is nil. A cost below 1 or above Limit, which
// TakeN never takes, gives back nothing: the log is returned unchanged.
//
// GiveBackN never refuses: the Decision is Allowed with a Wait of 0, and its
// Remaining and Reset are those of the returned log at now, as TakeN defines
// them. With nothing taken since the take, the entries removed are the
// take's own, and the log is as if the take had not happened (less the
// entries that had left the window, which TakeN drops too). After later
// takes it is an approximation: their newer entries go instead of the
// take's, so the units kept leave the window sooner than theirs would have;
// and once the take's entries have left the window, other takes' go.
func (l SlidingLog) GiveBackN(log []int64, now time.Time, cost int) ([]int64, Decision) {
	in := l.within(log, now)
	if cost < 1 || cost > l.Limit {
		return log, Decision{Allowed: true, Remaining: max(0, l.Limit-len(in)), Reset: l.TTL(log, now)}
	}
	var next []int64
	if keep := len(in) - min(cost, len(in)); keep > 0 {
		next = slices.Clone(in[:keep])
	}
	return next, Decision{Allowed: true, Remaining: max(0, l.Limit-len(next)), Reset: l.TTL(next, now)}
}

// within is the suffix of log within the window at now: the log is in
// order, and an entry at t has left the window from t+Window on.
func (l SlidingLog) within(log []int64, now time.Time) []int64 {
	ms, w := now.UnixMilli(), l.Window.Milliseconds()
	i := 0
	for i < len(log) && log[i] <= ms-w {
		i++
	}
	return log[i:]
}

// TTL is how long the log matters after now: until its newest entry has left
// the window.
func (l SlidingLog) TTL(log []int64, now time.Time) time.Duration {
	if len(log) == 0 {
		return 0
	}
	return until(log[len(log)-1]+l.Window.Milliseconds(), now.UnixMilli())
}
