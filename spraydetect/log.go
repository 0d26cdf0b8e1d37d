package spraydetect

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Window is one limit of a log: at most Limit distinct members within Length.
type Window struct {
	Length time.Duration
	Limit  int
}

// Windows is the set of limits one log enforces at once, for example a short
// window for bursts and a long one for low-and-slow attacks.
type Windows []Window

// Validate reports whether w is usable.
func (w Windows) Validate() error {
	if len(w) == 0 {
		return errors.New("spraydetect: at least one window is needed")
	}
	for _, x := range w {
		if x.Length < time.Millisecond || x.Length%time.Millisecond != 0 {
			return fmt.Errorf("spraydetect: window %v must be a positive whole number of milliseconds", x.Length)
		}
		if x.Limit < 1 || x.Limit > MaxLimit {
			return fmt.Errorf("spraydetect: limit %d must be between 1 and %d", x.Limit, MaxLimit)
		}
	}
	return nil
}

// MaxLimit bounds a window's limit, and so the size of every log.
const MaxLimit = 1000

// Longest is the longest window: entries older than it no longer matter.
func (w Windows) Longest() time.Duration {
	var d time.Duration
	for _, x := range w {
		d = max(d, x.Length)
	}
	return d
}

// Shortest is the shortest window; zero for no window.
func (w Windows) Shortest() time.Duration {
	var d time.Duration
	for i, x := range w {
		if i == 0 || x.Length < d {
			d = x.Length
		}
	}
	return d
}

// Cap is the most entries a log keeps: one more than the largest limit, which
// is enough to tell whether any limit is exceeded. The oldest entries go first.
func (w Windows) Cap() int {
	c := 0
	for _, x := range w {
		c = max(c, x.Limit)
	}
	return c + 1
}

// Log is the state of a sliding-window log of distinct members: each member
// with the time it was last recorded, oldest first. The zero Log is empty.
type Log struct {
	Entries []Entry
}

// Entry is one member of a Log.
type Entry struct {
	Member string
	At     int64 // Unix milliseconds
}

// LogResult is what a log operation reports.
type LogResult struct {
	// Added is true when the member was not in the log and now is, so that a
	// refund knows to remove it.
	Added bool
	// Over is true when recording the member at now would make some window
	// hold more than its limit. For Admit that means the member was refused
	// (unless bypassed).
	Over bool
	// Count is the number of distinct members within the longest window after
	// the operation.
	Count int
}

// Current returns l with the entries older than the longest window dropped.
func (w Windows) Current(l Log, now time.Time) Log {
	cutoff := now.UnixMilli() - w.Longest().Milliseconds()
	i := 0
	for i < len(l.Entries) && l.Entries[i].At <= cutoff {
		i++
	}
	if i == 0 {
		return l
	}
	return Log{Entries: append([]Entry(nil), l.Entries[i:]...)}
}

// over reports whether recording member at now would push a window past its limit.
func (w Windows) over(l Log, member string, now int64) bool {
	for _, x := range w {
		cutoff := now - x.Length.Milliseconds()
		n := 1 // the member itself, recorded at now
		for _, e := range l.Entries {
			if e.At > cutoff && e.Member != member {
				n++
			}
		}
		if n > x.Limit {
			return true
		}
	}
	return false
}

// Admit records a new member at now unless that would exceed a limit;
// bypass (a solved CAPTCHA) records it anyway. A member already in the log is
// left as it is, time included: Admit reserves a place for an attempt about
// to go ahead, and only a reported failure (Add) refreshes a member, so
// checks refused for another reason never extend a window.
func (w Windows) Admit(l Log, member string, now time.Time, bypass bool) (Log, LogResult) {
	l = w.Current(l, now)
	over := w.over(l, member, now.UnixMilli())
	switch {
	case over && !bypass:
		return l, LogResult{Over: true, Count: len(l.Entries)}
	case index(l, member) >= 0:
		return l, LogResult{Over: over, Count: len(l.Entries)}
	}
	return w.record(l, member, now, over)
}

// Add records member at now whatever the limits say (a failure that was
// reported without being admitted first).
func (w Windows) Add(l Log, member string, now time.Time) (Log, LogResult) {
	l = w.Current(l, now)
	return w.record(l, member, now, w.over(l, member, now.UnixMilli()))
}

// Renew records member at now as Admit does, except that a member already
// in the log moves to now: it keeps its place (it never counts against
// itself), and a new member is refused past a limit. One step, so nothing
// can take the place between a removal and a new admission.
func (w Windows) Renew(l Log, member string, now time.Time) (Log, LogResult) {
	l = w.Current(l, now)
	over := w.over(l, member, now.UnixMilli())
	if over {
		return l, LogResult{Over: true, Count: len(l.Entries)}
	}
	return w.record(l, member, now, false)
}

// Peek reports what Admit would say for member at now without changing l.
func (w Windows) Peek(l Log, member string, now time.Time) (Log, LogResult) {
	l = w.Current(l, now)
	return l, LogResult{Over: w.over(l, member, now.UnixMilli()), Count: len(l.Entries)}
}

// Remove takes member out of the log (a refund, or a success that shows the
// member was legitimate).
func (w Windows) Remove(l Log, member string, now time.Time) (Log, LogResult) {
	l = w.Current(l, now)
	if i := index(l, member); i >= 0 {
		l.Entries = append(l.Entries[:i:i], l.Entries[i+1:]...)
	}
	return l, LogResult{Over: w.over(l, member, now.UnixMilli()), Count: len(l.Entries)}
}

// TTL is how long l can still change a decision after now.
func (w Windows) TTL(l Log, now time.Time) time.Duration {
	if len(l.Entries) == 0 {
		return 0
	}
	until := l.Entries[len(l.Entries)-1].At + w.Longest().Milliseconds()
	return max(0, time.Duration(until-now.UnixMilli())*time.Millisecond)
}

func (w Windows) record(l Log, member string, now time.Time, over bool) (Log, LogResult) {
	ms := now.UnixMilli()
	entries := make([]Entry, 0, len(l.Entries)+1)
	added := true
	for _, e := range l.Entries {
		if e.Member == member {
			added = false
			continue
		}
		entries = append(entries, e)
	}
	entries = append(entries, Entry{Member: member, At: ms})
	// Entries stay sorted by time, ties broken by member, the order a Redis
	// sorted set keeps them in.
	// (slices, not sort.SliceStable: no reflection, no allocation.)
	slices.SortStableFunc(entries, func(a, b Entry) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Member, b.Member)
	})
	if c := w.Cap(); len(entries) > c {
		entries = entries[len(entries)-c:]
	}
	return Log{Entries: entries}, LogResult{Added: added, Over: over, Count: len(entries)}
}

func index(l Log, member string) int {
	for i, e := range l.Entries {
		if e.Member == member {
			return i
		}
	}
	return -1
}
