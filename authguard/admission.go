package authguard

import (
	"context"
	"errors"
	"time"
)

// ErrOverloaded is returned by Report (and the administrators' calls) when
// the engine sheds it because MaxInFlight calls are already running and
// none finished within QueueWait (nothing was counted), or when an
// admitted call's store deadline passed while other calls were queueing:
// the process, not the store, was too slow, so no fail mode answers (the
// store may have counted the call). The caller should answer 503 and retry.
// Check and Send never return it: they answer a shed call with a delay
// verdict of reason ReasonOverloaded, which no caller can mistake for
// tollgate being down and fail open on.
var ErrOverloaded = errors.New("authguard: overloaded: too many calls in flight")

// acquire takes a call slot, returned to release: at once when one is free,
// or (wait true) waiting at most the queue wait. A priority call (a known
// device's, a report) may also take a slot kept for such calls, so that a
// flood of unknown clients cannot keep the owner's known device or the
// settlement of attempts out. Waiting goroutines are parked, so a flood
// does not compete for the CPU that admitted calls need. It returns
// ErrOverloaded when no slot was had. A wait is traced (SpanAdmission)
// under ctx.
func (e *Engine) acquire(ctx context.Context, priority, wait bool) (slot chan struct{}, err error) {
	if e.slots == nil {
		return nil, nil
	}
	select {
	case e.slots <- struct{}{}:
		return e.slots, nil
	default:
	}
	var kept chan struct{} // nil, never ready, unless priority
	if priority {
		kept = e.priority
	}
	select {
	case kept <- struct{}{}:
		return kept, nil
	default:
	}
	if !wait {
		return nil, ErrOverloaded
	}
	end := e.span(ctx, SpanAdmission)
	defer func() { end(err) }()
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	t := time.NewTimer(e.wait)
	defer t.Stop()
	select {
	case e.slots <- struct{}{}:
		return e.slots, nil
	case kept <- struct{}{}:
		return kept, nil
	case <-t.C:
	}
	e.shedAt.Store(time.Now().UnixNano())
	return nil, ErrOverloaded
}

// admit waits for an ordinary call slot; release gives it back.
func (e *Engine) admit(ctx context.Context) (chan struct{}, error) {
	return e.acquire(ctx, false, true)
}

// overloaded reports whether this process is shedding or queueing calls:
// some call waits to be admitted now, or one was shed within the last
// second. A store deadline missed then is the process's own doing (its
// calls wait for the CPU), not the store's.
func (e *Engine) overloaded() bool {
	return e.slots != nil && (e.waiting.Load() > 0 || time.Now().UnixNano()-e.shedAt.Load() < int64(time.Second))
}

func release(slot chan struct{}) {
	if slot != nil {
		<-slot
	}
}
