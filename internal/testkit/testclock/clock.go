// Package testclock is a settable clock for tests and the simulator: time only
// moves when Advance or Set is called.
package testclock

import (
	"sync"
	"time"
)

// Clock is a manual clock. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Epoch is the instant New starts at when given the zero time: a fixed,
// round date so test output is stable.
var Epoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// New returns a Clock at start, or at Epoch when start is zero.
func New(start time.Time) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// At is Epoch+d: a fixed instant for pure code that takes the time as an
// argument.
func At(d time.Duration) time.Time { return Epoch.Add(d) }

// Ms is Epoch+d in Unix milliseconds, the unit pure state keeps.
func Ms(d time.Duration) int64 { return At(d).UnixMilli() }
