package limits

import "time"

// SlidingCounter approximates a sliding window with two counters: the units
// admitted in the current window (aligned as a FixedWindow's) and in the one
// before. At elapsed ms into the current window it estimates the units within
// the last Window as
//
//	prev × (window − elapsed) / window + curr
//
// — the previous window's units counted as if spread evenly over it — and
// admits cost units while estimate + cost ≤ Limit. All of it is computed in
// integers, multiplied through by window:
//
//	prev×(window−elapsed) + curr×window + cost×window ≤ limit×window
//
// Memory per subject: three integers. Burst behaviour: the whole Limit at once
// after a quiet period; unlike a FixedWindow there is no second burst at the
// boundary, since the previous window's units still count in full there. It
// is an estimate, though: a sender who bunches the previous window's units
// at its end can fit up to 2×Limit−1 units into a span of one Window (spread
// across it); the average over time stays at most Limit per Window. Use a
// SlidingLog where that matters.
type SlidingCounter struct {
	// Window is the length of the sliding window and of the two counted
	// windows.
	Window time.Duration
	// Limit is how many units the sliding window admits.
	Limit int
}

// CounterState is a SlidingCounter's state; the zero value holds nothing.
type CounterState struct {
	// Start is the Unix ms at which the current window began.
	Start int64
	// Prev is how many units were admitted in the window before,
	// [Start−Window, Start).
	Prev int
	// Curr is how many units were admitted in the current window,
	// [Start, Start+Window).
	Curr int
}

// Validate reports whether c is usable: Window a whole number of
// milliseconds from 1ms to MaxWindow, Limit from 1 to MaxLimit. TakeN and TTL
// assume it.
func (c SlidingCounter) Validate() error {
	if err := checkDuration("window", c.Window, MaxWindow); err != nil {
		return err
	}
	return checkCount("limit", c.Limit, MaxLimit)
}

// TakeN admits cost units at now while the estimate plus cost is at most
// Limit. A refused call leaves the state as it was; its Wait is exact: the
// estimate only falls as time passes, and Wait is the first millisecond at
// which it has fallen far enough, in the current window or in the next (where
// the current window's units become the previous ones), at most 2×Window
// after now (after Start, for a clock that stepped back). A cost below 1 or
// above Limit is never allowed: TakeN returns the state unchanged and a Wait
// of 0 (callers check costs against the limit up front).
//
// The state's windows stay in place until they are over, even when now is
// earlier than Start (a clock that stepped back: elapsed counts as 0) or the
// Window has changed since, so neither frees what was counted.
func (c SlidingCounter) TakeN(s CounterState, now time.Time, cost int) (CounterState, Decision) {
	ms, w := now.UnixMilli(), c.Window.Milliseconds()
	cur := c.current(s, ms)
	free := c.free(cur, ms)
	if cost < 1 || cost > c.Limit {
		return s, Decision{Remaining: int(max(0, free) / w), Reset: c.TTL(s, now)}
	}
	k := int64(cost)
	if free < k*w {
		return s, Decision{Remaining: int(max(0, free) / w), Wait: millis(c.admitAt(cur, k) - ms), Reset: c.TTL(s, now)}
	}
	cur.Curr += cost
	return cur, Decision{Allowed: true, Remaining: int((free - k*w) / w), Reset: c.TTL(cur, now)}
}

// GiveBackN gives back cost units that an earlier TakeN of the same cost
// took, as far as the state still counts them: it rolls the state forward
// to now as TakeN does, takes cost off the current window's count and
// whatever is left of cost off the previous window's, neither below zero;
// a state left with nothing counted is the zero state. A cost below 1 or
// above Limit, which TakeN never takes, gives back nothing: the state is
// returned unchanged.
//
// GiveBackN never refuses: the Decision is Allowed with a Wait of 0, and its
// Remaining and Reset are those of the returned state at now, as TakeN
// defines them. In the take's window, or in the next when nothing was taken
// there since (the take's units are then the previous window's), the state
// is as if the take had not happened. Otherwise it is an approximation that
// gives back more than the take still weighed: after a rollover the units
// come off the current window's count, where they weigh in full, though the
// take's were counted in the previous window, where they weigh less as the
// window slides; and once the take's window has left the sliding window they
// come off other takes' counts.
func (c SlidingCounter) GiveBackN(s CounterState, now time.Time, cost int) (CounterState, Decision) {
	ms := now.UnixMilli()
	next := s
	if cost >= 1 && cost <= c.Limit {
		next = c.current(s, ms)
		fromCurr := min(cost, next.Curr)
		next.Curr -= fromCurr
		next.Prev = max(0, next.Prev-(cost-fromCurr))
		if next.Prev == 0 && next.Curr == 0 {
			next = CounterState{}
		}
	}
	free := c.free(c.current(next, ms), ms)
	return next, Decision{Allowed: true, Remaining: int(max(0, free) / c.Window.Milliseconds()), Reset: c.TTL(next, now)}
}

// free is limit×window less the estimate×window on cur, the state as it
// stands at ms: what may still be taken, times window.
func (c SlidingCounter) free(cur CounterState, ms int64) int64 {
	w, limit := c.Window.Milliseconds(), int64(c.Limit)
	elapsed := max(0, ms-cur.Start)
	return limit*w - int64(cur.Prev)*(w-elapsed) - int64(cur.Curr)*w
}

// current is s as it stands at ms: rolled over once when ms is in the window
// after s's, emptied when later still.
func (c SlidingCounter) current(s CounterState, ms int64) CounterState {
	w := c.Window.Milliseconds()
	switch {
	case ms < s.Start+w:
		return s
	case ms < s.Start+2*w:
		return CounterState{Start: s.Start + w, Prev: s.Curr}
	}
	return CounterState{Start: ms - ms%w}
}

// admitAt is the first Unix ms at which cost units are admitted on cur, the
// state as it stands now, when they are not admitted now.
func (c SlidingCounter) admitAt(cur CounterState, cost int64) int64 {
	w, limit := c.Window.Milliseconds(), int64(c.Limit)
	prev, curr := int64(cur.Prev), int64(cur.Curr)
	// In the current window, at elapsed e: prev×(w−e) ≤ r×w with
	// r = limit−curr−cost, so e ≥ w − ⌊r×w/prev⌋. It is refused now, so prev > 0
	// when r ≥ 0; a bound of w or more is not in this window.
	if r := limit - curr - cost; r >= 0 {
		if e := w - r*w/prev; e < w {
			return cur.Start + e
		}
	}
	// In the next window, curr becomes prev and nothing is counted yet:
	// curr×(w−e) ≤ (limit−cost)×w, so e ≥ w − ⌊(limit−cost)×w/curr⌋, at the
	// latest w, when the window after that starts empty.
	if curr == 0 {
		return cur.Start + w
	}
	return cur.Start + w + max(0, w-(limit-cost)*w/curr)
}

// TTL is how long the state matters after now: until the current window's
// units have left the sliding window, a Window after that window ends; or,
// when the current window counts nothing (as GiveBackN may leave it), until
// the previous window's units have, when the current window ends.
func (c SlidingCounter) TTL(s CounterState, now time.Time) time.Duration {
	w := c.Window.Milliseconds()
	switch {
	case s.Curr > 0:
		return until(s.Start+2*w, now.UnixMilli())
	case s.Prev > 0:
		return until(s.Start+w, now.UnixMilli())
	}
	return 0
}
