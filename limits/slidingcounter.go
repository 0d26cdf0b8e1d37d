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
	ms, w, limit := now.UnixMilli(), c.Window.Milliseconds(), int64(c.Limit)
	cur := c.current(s, ms)
	prev, curr := int64(cur.Prev), int64(cur.Curr)
	elapsed := max(0, ms-cur.Start)
	// free is limit×window less the estimate×window: what may still be
	// taken, times window.
	free := limit*w - prev*(w-elapsed) - curr*w
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
// units have left the sliding window, a Window after that window ends.
func (c SlidingCounter) TTL(s CounterState, now time.Time) time.Duration {
	if s.Prev <= 0 && s.Curr <= 0 {
		return 0
	}
	return until(s.Start+2*c.Window.Milliseconds(), now.UnixMilli())
}
