package redisstore_test

import (
	"sync"
	"time"
)

// stallWatch notes this process's own stalls: a goroutine that wakes
// every millisecond records each gap longer than a store deadline, when
// the process was not running (a CI machine's other test binaries, a
// collection). A call that fails across one failed for that, not for the
// fault a test makes; such tests log it and do not count it.
type stallWatch struct {
	mu     sync.Mutex
	stalls [][2]time.Time
	stop   chan struct{}
	done   chan struct{}
}

// watchStalls starts watching for gaps longer than deadline until Stop.
func watchStalls(deadline time.Duration) *stallWatch {
	w := &stallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := time.Now()
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(time.Millisecond):
			}
			now := time.Now()
			if now.Sub(last) > deadline {
				w.mu.Lock()
				w.stalls = append(w.stalls, [2]time.Time{last, now})
				w.mu.Unlock()
			}
			last = now
		}
	}()
	return w
}

// Stop ends the watch and waits for its goroutine.
func (w *stallWatch) Stop() {
	close(w.stop)
	<-w.done
}

// across reports whether a stall overlapped the call that ran from start
// to end.
func (w *stallWatch) across(start, end time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.stalls {
		if st[0].Before(end) && st[1].After(start) {
			return true
		}
	}
	return false
}
