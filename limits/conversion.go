package limits

import (
	"errors"
	"time"
)

// Conversion judges a stream of one-time-code sends by how many of them were
// verified: the signal SMS-pumping defences rely on, since pumped codes go to
// numbers nobody reads. It counts sends and verifications in two fixed
// windows each, weighted as a SlidingCounter's, and refuses a send while the
// estimated sends within the last Window are at least MinVolume (enough to
// judge) and the verified share of them is below MinPercent. It recovers by
// itself as verifications come in or the sends age out.
//
// Memory per subject: five integers.
type Conversion struct {
	// Window is the length of the sliding window and of the counted windows.
	Window time.Duration
	// MinVolume is how many sends within the window it takes to judge.
	MinVolume int
	// MinPercent is the least verified share, in percent, below which sends
	// are refused.
	MinPercent int
}

// ConversionState is a Conversion's state; the zero value holds nothing.
type ConversionState struct {
	// Start is the Unix ms at which the current window began.
	Start int64
	// PrevSent and PrevVerified are the window before's counts,
	// CurrSent and CurrVerified the current window's.
	PrevSent, CurrSent, PrevVerified, CurrVerified int
}

// Validate reports whether c is usable: Window a whole number of
// milliseconds from 1ms to MaxWindow, MinVolume from 1 to MaxLimit,
// MinPercent from 1 to 100.
func (c Conversion) Validate() error {
	if err := checkDuration("window", c.Window, MaxWindow); err != nil {
		return err
	}
	if err := checkCount("min_volume", c.MinVolume, MaxLimit); err != nil {
		return err
	}
	if c.MinPercent < 1 || c.MinPercent > 100 {
		return errors.New("limits: min_conversion must be from 1% to 100%")
	}
	return nil
}

// TakeN counts cost sends at now unless the conversion is too low; a
// refused send leaves the state as it was. A cost below 1 or above
// MinVolume is never allowed, as with the other algorithms. The Decision's
// Remaining is the estimated sends within the window (not units left),
// Wait is always 0 (a refused send waits for verifications, not for a
// time), and Reset is the state's TTL.
func (c Conversion) TakeN(s ConversionState, now time.Time, cost int) (ConversionState, Decision) {
	ms := now.UnixMilli()
	cur := c.current(s, ms)
	if cost < 1 || cost > c.MinVolume || c.low(cur, ms) {
		return s, Decision{Remaining: c.sent(cur, ms), Reset: c.TTL(s, now)}
	}
	cur.CurrSent += cost
	return cur, Decision{Allowed: true, Remaining: c.sent(cur, ms), Reset: c.TTL(cur, now)}
}

// GiveBackN takes back cost sends that an earlier TakeN counted: off the
// current window's count, the rest off the previous window's, neither below
// zero, as SlidingCounter.GiveBackN does.
func (c Conversion) GiveBackN(s ConversionState, now time.Time, cost int) (ConversionState, Decision) {
	ms := now.UnixMilli()
	next := s
	if cost >= 1 && cost <= c.MinVolume {
		next = c.current(s, ms)
		fromCurr := min(cost, next.CurrSent)
		next.CurrSent -= fromCurr
		next.PrevSent = max(0, next.PrevSent-(cost-fromCurr))
		if next == (ConversionState{Start: next.Start}) {
			next = ConversionState{}
		}
	}
	return next, Decision{Allowed: true, Remaining: c.sent(c.current(next, ms), ms), Reset: c.TTL(next, now)}
}

// Credit counts n verifications at now (n below 1 counts nothing). It
// never refuses.
func (c Conversion) Credit(s ConversionState, now time.Time, n int) (ConversionState, Decision) {
	ms := now.UnixMilli()
	next := s
	if n >= 1 {
		next = c.current(s, ms)
		next.CurrVerified += n
	}
	return next, Decision{Allowed: true, Remaining: c.sent(c.current(next, ms), ms), Reset: c.TTL(next, now)}
}

// low reports whether cur, the state as it stands at ms, has the volume to
// judge and too low a verified share: with every count weighted as a
// SlidingCounter weighs it (times window),
// sent×w ≥ MinVolume×w and verified×100 < sent×MinPercent.
func (c Conversion) low(cur ConversionState, ms int64) bool {
	w := c.Window.Milliseconds()
	elapsed := max(0, ms-cur.Start)
	sent := int64(cur.PrevSent)*(w-elapsed) + int64(cur.CurrSent)*w
	verified := int64(cur.PrevVerified)*(w-elapsed) + int64(cur.CurrVerified)*w
	return sent >= int64(c.MinVolume)*w && verified*100 < sent*int64(c.MinPercent)
}

// sent is the estimated sends within the window on cur, rounded down.
func (c Conversion) sent(cur ConversionState, ms int64) int {
	w := c.Window.Milliseconds()
	elapsed := max(0, ms-cur.Start)
	return int((int64(cur.PrevSent)*(w-elapsed) + int64(cur.CurrSent)*w) / w)
}

// current is s as it stands at ms: rolled over once when ms is in the window
// after s's, emptied when later still.
func (c Conversion) current(s ConversionState, ms int64) ConversionState {
	w := c.Window.Milliseconds()
	switch {
	case ms < s.Start+w:
		return s
	case ms < s.Start+2*w:
		return ConversionState{Start: s.Start + w, PrevSent: s.CurrSent, PrevVerified: s.CurrVerified}
	}
	return ConversionState{Start: ms - ms%w}
}

// TTL is how long the state matters after now: until the current window's
// counts have left the sliding window, or, when it counts nothing, the
// previous window's.
func (c Conversion) TTL(s ConversionState, now time.Time) time.Duration {
	w := c.Window.Milliseconds()
	switch {
	case s.CurrSent > 0 || s.CurrVerified > 0:
		return until(s.Start+2*w, now.UnixMilli())
	case s.PrevSent > 0 || s.PrevVerified > 0:
		return until(s.Start+w, now.UnixMilli())
	}
	return 0
}
