package backoff

import (
	"errors"
	"fmt"
	"time"
)

// Policy is the shape of a progressive delay.
type Policy struct {
	// Free is how many attempts go ahead without any wait: after Free
	// failures the next attempt waits Base.
	Free int
	// Base is the delay after the first failure beyond Free.
	Base time.Duration
	// Factor multiplies the delay for every further failure. It is at least 1.
	Factor float64
	// Max caps the delay. A capped delay still lets one attempt through every
	// Max, which is what makes this a throttle rather than a lockout.
	Max time.Duration
	// ForgetAfter is the quiet period after the last failure at which the
	// failure count starts again from zero. It must be longer than Max, or a
	// patient attacker would never reach the cap.
	ForgetAfter time.Duration
}

// Validate reports whether p is usable.
func (p Policy) Validate() error {
	switch {
	case p.Free < 1:
		return errors.New("backoff: free must be at least 1 (the first attempt always goes ahead)")
	case p.Base <= 0 || p.Base%time.Millisecond != 0:
		return errors.New("backoff: base must be a positive whole number of milliseconds")
	case !(p.Factor == 1 || p.Factor >= 1.1 && p.Factor <= 16): // NaN fails too
		return errors.New("backoff: factor must be 1 (a constant delay) or between 1.1 and 16")
	case p.Max < p.Base || p.Max%time.Millisecond != 0:
		return errors.New("backoff: max must be at least base, in whole milliseconds")
	case p.ForgetAfter <= p.Max:
		return fmt.Errorf("backoff: forget_after (%v) must be longer than max (%v)", p.ForgetAfter, p.Max)
	}
	return nil
}

// Delay is the time that must pass after the last of n failures before the
// next attempt. It is zero for fewer than Free failures, then
// Base×Factor^(n−Free) rounded down to the millisecond, never more than Max.
//
// The power is computed by repeated multiplication of float64 values, which
// IEEE 754 makes identical in Go and in Lua.
func (p Policy) Delay(failures int) time.Duration {
	if failures < p.Free {
		return 0
	}
	base, limit := float64(p.Base.Milliseconds()), float64(p.Max.Milliseconds())
	d := base
	if p.Factor > 1 { // with 1.1 or more this takes at most a few hundred steps
		for i := p.Free; i < failures && d < limit; i++ {
			d *= p.Factor
		}
	}
	if d > limit {
		d = limit
	}
	return time.Duration(int64(d)) * time.Millisecond
}

// State is what is kept per counter. Times are Unix milliseconds; the zero
// State is a counter with no failures.
type State struct {
	// Failures counted since the counter was last cleared or forgotten.
	Failures int
	// Last is when the last failure was counted.
	Last int64
	// Prev is where a refund of the newest pending charge puts Last back:
	// the value Last had before that charge, or Last itself once a failure
	// newer than the pending charges stays counted for good (a Fail, or a
	// Confirm of the newest pending attempt).
	Prev int64
	// Seen lists the password fingerprints of recent failures, newest last,
	// for "same wrong password once".
	Seen []Seen
	// Pending lists the attempts charged and not yet settled, oldest first,
	// at most MaxPending: an attempt is refunded only while it is here, so
	// a report sent twice settles it once (see Hold and Release).
	Pending []string

	// taken is what the last Release took off the pending list, for the
	// Refund or Confirm that follows it. Current clears it, so no
	// transition returns it set and it is never stored.
	taken taken
}

// taken says which pending attempt a Release took off.
type taken uint8

const (
	takenNone   taken = iota
	takenNewest       // the last one pending: the newest charge held
	takenOlder        // one with newer charges pending after it
)

// Seen is one remembered password fingerprint.
type Seen struct {
	Fingerprint string
	At          int64 // Unix milliseconds
}

// MaxSeen caps how many fingerprints one counter remembers.
const MaxSeen = 8

// MaxPending caps how many unsettled attempts one counter remembers. An
// attempt pushed out by newer ones can no longer be refunded: it stays
// counted as a failure, which errs on the safe side.
const MaxPending = 8

// Current returns s as it stands at now: forgotten entirely once the quiet
// period has passed, and with fingerprints older than window dropped.
func (p Policy) Current(s State, now time.Time, window time.Duration) State {
	ms := now.UnixMilli()
	s.taken = takenNone
	if s.Failures > 0 && ms-s.Last >= p.ForgetAfter.Milliseconds() {
		s.Failures, s.Last, s.Prev, s.Pending = 0, 0, 0, nil
	}
	if len(s.Seen) > 0 {
		kept := make([]Seen, 0, len(s.Seen))
		for _, f := range s.Seen {
			if ms-f.At < window.Milliseconds() {
				kept = append(kept, f)
			}
		}
		s.Seen = kept
	}
	return s
}

// Wait is how long from now the next attempt must wait; zero when it may go
// ahead. It assumes s is Current.
func (p Policy) Wait(s State, now time.Time) time.Duration {
	if s.Failures == 0 {
		return 0
	}
	notBefore := s.Last + p.Delay(s.Failures).Milliseconds()
	if w := notBefore - now.UnixMilli(); w > 0 {
		return time.Duration(w) * time.Millisecond
	}
	return 0
}

// Decision is the outcome of a transition.
type Decision struct {
	// Charged is true when the transition counted a failure.
	Charged bool
	// Wait is how long the next attempt must wait after the transition.
	// For Charge it is the time the refused attempt must wait.
	Wait time.Duration
}

// Charge reserves one failure for an attempt about to go ahead. When the
// counter is waiting it changes nothing and reports the remaining Wait. When
// fingerprint was already counted within window the attempt repeats a wrong
// password that has been paid for ("same wrong password once"), so it goes
// ahead without a charge. Otherwise it counts a failure at now and reports
// Charged.
func (p Policy) Charge(s State, now time.Time, fingerprint string, window time.Duration) (State, Decision) {
	s = p.Current(s, now, window)
	if w := p.Wait(s, now); w > 0 {
		return s, Decision{Wait: w}
	}
	if fingerprint != "" && seen(s, fingerprint) {
		return s, Decision{}
	}
	s.Failures++
	s.Prev, s.Last = s.Last, now.UnixMilli()
	return s, Decision{Charged: true}
}

// Refund undoes one Charge: the attempt it reserved did not happen, or was not
// a failure that counts. The count goes down by one. Right after Release of
// an attempt that was not the newest pending one, Last and Prev stay as they
// are: the charges made after it still count from their own times, so an
// owner's success cannot move the wait of an attacker's later failure
// earlier. Otherwise (right after Release of the newest pending attempt, or
// with no attempt released: "the last charge") Last goes back to Prev, which
// Fail and Confirm keep from going back past a failure counted for good.
//
// So a refund can leave a wait longer than it was, never shorter, with one
// exception. When several charges are refunded only the newest one's Prev is
// known, so Last may stay later than the true last failure (a longer wait).
// But a charge that held no attempt is not on the pending list: refunding
// the newest pending attempt, charged before it, puts Last back past it and
// can shorten the wait that charge set. The engine names an attempt in every
// charge, so only callers of Charge without Hold meet this.
func (p Policy) Refund(s State, now time.Time, window time.Duration) (State, Decision) {
	older := s.taken == takenOlder
	s = p.Current(s, now, window)
	if s.Failures > 0 {
		s.Failures--
		if !older {
			s.Last = s.Prev
		}
		if s.Failures == 0 {
			s.Last, s.Prev, s.Pending = 0, 0, nil
		}
	}
	return s, Decision{Wait: p.Wait(s, now)}
}

// Confirm settles an attempt that went ahead and failed: the failure was
// counted when it was charged, so Confirm remembers the fingerprint and,
// right after Release of the newest pending attempt, sets Prev to Last: that
// failure stays counted, so a refund of an older pending attempt, now the
// newest one, puts Last back no earlier than it. It is idempotent, so a
// report sent twice does no harm.
func (p Policy) Confirm(s State, now time.Time, fingerprint string, window time.Duration) (State, Decision) {
	newest := s.taken == takenNewest
	s = p.Current(s, now, window)
	if newest {
		s.Prev = s.Last
	}
	s = remember(s, now, fingerprint)
	return s, Decision{Wait: p.Wait(s, now)}
}

// Fail counts a failure that no Charge reserved (a report without a valid
// attempt token). A fingerprint already seen within window is not counted again.
// Prev moves to now with Last: a refund of a charge made before this failure
// puts Last back no earlier than it.
func (p Policy) Fail(s State, now time.Time, fingerprint string, window time.Duration) (State, Decision) {
	s = p.Current(s, now, window)
	if fingerprint != "" && seen(s, fingerprint) {
		return s, Decision{Wait: p.Wait(s, now)}
	}
	s.Failures++
	s.Prev, s.Last = now.UnixMilli(), now.UnixMilli()
	s = remember(s, now, fingerprint)
	return s, Decision{Charged: true, Wait: p.Wait(s, now)}
}

// Hold records attempt as charged and not yet settled; the oldest pending
// attempt is dropped past MaxPending. An empty attempt changes nothing.
func (s State) Hold(attempt string) State {
	if attempt == "" {
		return s
	}
	pending := make([]string, 0, min(len(s.Pending)+1, MaxPending))
	if n := len(s.Pending) + 1 - MaxPending; n > 0 {
		pending = append(pending, s.Pending[n:]...)
	} else {
		pending = append(pending, s.Pending...)
	}
	s.Pending = append(pending, attempt)
	return s
}

// Release takes attempt off the pending list and reports whether it was
// there. Settling an attempt releases it, so a second report of the same
// attempt finds nothing to settle. The Refund or Confirm that comes next
// depends on whether attempt was the newest pending one (see them).
func (s State) Release(attempt string) (State, bool) {
	for i, a := range s.Pending {
		if a == attempt && attempt != "" {
			s.taken = takenNewest
			if i < len(s.Pending)-1 {
				s.taken = takenOlder
			}
			pending := make([]string, 0, len(s.Pending)-1)
			pending = append(pending, s.Pending[:i]...)
			s.Pending = append(pending, s.Pending[i+1:]...)
			if len(s.Pending) == 0 {
				s.Pending = nil
			}
			return s, true
		}
	}
	return s, false
}

// Settle settles attempt, which a Charge reserved, as a success: while the
// attempt is pending it is released and its charge refunded (Refund: the
// count goes down by one, and Last goes back only when attempt was the
// newest pending one); otherwise (a report sent twice, an attempt that was
// not charged) nothing changes. A success never clears failures that other attempts
// made: an attacker's view of a counter is then the same whether or not
// its owner logged in meanwhile, and the owner's success never hands an
// attacker fresh free attempts.
func (p Policy) Settle(s State, now time.Time, attempt string, window time.Duration) (State, Decision) {
	s = p.Current(s, now, window)
	s, ok := s.Release(attempt)
	if !ok {
		return s, Decision{Wait: p.Wait(s, now)}
	}
	return p.Refund(s, now, window)
}

// TTL is how long s can still change a decision after now: the store may
// forget the counter once it has passed.
func (p Policy) TTL(s State, now time.Time, window time.Duration) time.Duration {
	ms := now.UnixMilli()
	var until int64
	if s.Failures > 0 {
		until = s.Last + p.ForgetAfter.Milliseconds()
	}
	for _, f := range s.Seen {
		until = max(until, f.At+window.Milliseconds())
	}
	if until <= ms {
		return 0
	}
	return time.Duration(until-ms) * time.Millisecond
}

func seen(s State, fingerprint string) bool {
	for _, f := range s.Seen {
		if f.Fingerprint == fingerprint {
			return true
		}
	}
	return false
}

func remember(s State, now time.Time, fingerprint string) State {
	if fingerprint == "" {
		return s
	}
	seen := make([]Seen, 0, len(s.Seen)+1)
	for _, f := range s.Seen {
		if f.Fingerprint != fingerprint {
			seen = append(seen, f)
		}
	}
	seen = append(seen, Seen{Fingerprint: fingerprint, At: now.UnixMilli()})
	if len(seen) > MaxSeen {
		seen = seen[len(seen)-MaxSeen:]
	}
	s.Seen = seen
	return s
}
