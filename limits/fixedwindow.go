package limits

import "time"

// FixedWindow admits at most Limit units per window, in windows aligned to
// the Unix epoch of the store's clock: a window starts at every multiple of
// Window (now_ms − now_ms mod window_ms), and its count starts from zero.
//
// Memory per subject: two integers. Burst behaviour: the whole Limit at once,
// and — its known weakness — up to 2×Limit in a moment across a window
// boundary: a sender who spends the Limit at the end of one window may spend
// it again at the start of the next. Use a SlidingLog or SlidingCounter where
// that matters.
type FixedWindow struct {
	// Window is the length of a window.
	Window time.Duration
	// Limit is how many units one window admits.
	Limit int
}

// FixedState is a FixedWindow's state; the zero value holds nothing.
type FixedState struct {
	// Start is the Unix ms at which the counted window began.
	Start int64
	// Count is how many units were admitted in that window.
	Count int
}

// Validate reports whether f is usable: Window a whole number of
// milliseconds from 1ms to MaxWindow, Limit from 1 to MaxLimit. TakeN and TTL
// assume it.
func (f FixedWindow) Validate() error {
	if err := checkDuration("window", f.Window, MaxWindow); err != nil {
		return err
	}
	return checkCount("limit", f.Limit, MaxLimit)
}

// TakeN admits cost units at now when the current window's count plus cost is
// at most Limit. A refused call leaves the state as it was and waits until
// the next window starts. A cost below 1 or above Limit is never allowed:
// TakeN returns the state unchanged and a Wait of 0 (callers check costs
// against the limit up front).
//
// The state's window stays current until Start+Window even when now is
// earlier (a clock that stepped back) or the Window has changed since, so
// neither frees what was counted.
func (f FixedWindow) TakeN(s FixedState, now time.Time, cost int) (FixedState, Decision) {
	ms, w := now.UnixMilli(), f.Window.Milliseconds()
	cur := s
	if ms >= s.Start+w { // the state's window is over: a new one from zero
		cur = FixedState{Start: ms - ms%w}
	}
	end := cur.Start + w
	switch {
	case cost < 1 || cost > f.Limit:
		return s, Decision{Remaining: max(0, f.Limit-cur.Count), Reset: f.TTL(s, now)}
	case cur.Count+cost > f.Limit:
		return s, Decision{Remaining: max(0, f.Limit-cur.Count), Wait: millis(end - ms), Reset: f.TTL(s, now)}
	}
	cur.Count += cost
	return cur, Decision{Allowed: true, Remaining: f.Limit - cur.Count, Reset: millis(end - ms)}
}

// GiveBackN gives back cost units that an earlier TakeN of the same cost
// took, as far as the state still counts them. While the state's window is
// current at now (as TakeN judges it, so also for a clock that stepped back)
// its count falls by cost, never below zero; a window left with nothing
// counted is the zero state. Once the window is over its units have left
// with it, and the state is returned unchanged. A cost below 1 or above
// Limit, which TakeN never takes, gives back nothing.
//
// GiveBackN never refuses: the Decision is Allowed with a Wait of 0, and its
// Remaining and Reset are those of the returned state at now, as TakeN
// defines them. Counts carry no times, so a give-back in the take's window
// leaves the state exactly as if the take had not happened.
func (f FixedWindow) GiveBackN(s FixedState, now time.Time, cost int) (FixedState, Decision) {
	ms, w := now.UnixMilli(), f.Window.Milliseconds()
	if ms >= s.Start+w { // the window is over: its units left with it
		return s, Decision{Allowed: true, Remaining: f.Limit, Reset: f.TTL(s, now)}
	}
	if cost >= 1 && cost <= f.Limit {
		if s.Count = max(0, s.Count-cost); s.Count == 0 {
			s = FixedState{}
		}
	}
	return s, Decision{Allowed: true, Remaining: max(0, f.Limit-s.Count), Reset: f.TTL(s, now)}
}

// TTL is how long the state matters after now: until its window ends.
func (f FixedWindow) TTL(s FixedState, now time.Time) time.Duration {
	if s.Count <= 0 {
		return 0
	}
	return until(s.Start+f.Window.Milliseconds(), now.UnixMilli())
}
