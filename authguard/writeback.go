package authguard

import (
	"sync"
	"sync/atomic"
)

// While the store fails, a fail-open flow counts on the instance's fallback;
// the write-back carries those counts to the store once it answers again,
// so that after a blip the shared counters hold what was counted during it
// and no instance's guesses are lost to the others. A backoff charge is
// written as a failure that holds its attempt (BackoffFail with an Attempt,
// which counts once however often it is written, and which the attempt's
// report then settles as it would a charge); a log admission as an add of
// its member (a set: once); settlements, refunds and removals as they were,
// in order. Rate takes are not written back: a rate's window is short, and
// a take is not idempotent. Nor is what a fallback counted while the store
// was full: a full store refuses the writes (it keeps the delays it holds,
// and the fallback counts on from them: batch.go's continueHeld). Written ops leave the fallback, which then holds
// nothing the store does not.

// maxWriteBack bounds the ops waiting to be written back. Past it new ones
// are dropped and counted: the oldest are kept, since they are the ones
// the store is furthest behind on.
const maxWriteBack = 50_000

// writeBackCarry is how many queued ops one call carries ahead of its own.
const writeBackCarry = 64

type writeBack struct {
	mu      sync.Mutex
	ops     []Op
	running atomic.Bool
	queued  atomic.Int64 // len(ops), read without the lock
	written atomic.Int64
	dropped atomic.Int64
}

// writeBackOf is what the store must apply to hold what op did on the
// fallback with result res, or nil for nothing. It is always a copy: an op
// of a plan lives in the plan's planOps, which a queued pointer would keep
// whole while the store is down.
func writeBackOf(op Op, res Result) Op {
	switch op := op.(type) {
	case *BackoffOp:
		switch op.Action {
		case BackoffCharge:
			if res.Charged {
				c := copyOf(op)
				c.Action = BackoffFail
				return c
			}
		case BackoffFail:
			if res.Charged {
				return copyOf(op)
			}
		case BackoffConfirm, BackoffSucceed, BackoffRefund:
			return copyOf(op)
		}
	case *LogOp:
		switch op.Action {
		case LogAdmit, LogRenew:
			if res.Charged {
				c := copyOf(op)
				c.Action, c.Bypass = LogAdd, false
				return c
			}
		case LogAdd, LogRemove:
			return copyOf(op)
		}
	}
	return nil
}

func copyOf[T any](op *T) *T {
	c := *op
	return &c
}

// add queues what ops did on the fallback (res, one per op; nil for ops
// that are settlements or undos and carry no result that matters).
func (w *writeBack) add(ops []Op, res []Result) {
	var todo []Op
	for i, op := range ops {
		var r Result
		if res != nil {
			r = res[i]
		}
		if wb := writeBackOf(op, r); wb != nil {
			todo = append(todo, wb)
		}
	}
	if len(todo) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	room := max(maxWriteBack-len(w.ops), 0)
	if len(todo) > room {
		w.dropped.Add(int64(len(todo) - room))
		todo = todo[:room]
	}
	w.ops = append(w.ops, todo...)
	w.queued.Store(int64(len(w.ops)))
}

// carry takes the first ops of the queue for a call to send ahead of its
// own batch, in the same round trip: the call that finds the store
// answering again writes them before its own ops are decided, so that the
// store has counted the blip's failures when it decides that call. At most
// one call carries at a time (ops leave the queue in order); carry returns
// nil when the queue is empty or another call carries.
func (w *writeBack) carry() []Op {
	if w.queued.Load() == 0 || !w.running.CompareAndSwap(false, true) {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.ops), writeBackCarry)
	if n == 0 {
		w.running.Store(false)
		return nil
	}
	return w.ops[:n:n]
}

// settle ends a carry of ops: written, they leave the queue; refused by a
// full store, they leave it too, counted as dropped (a full store cannot
// count them, and carrying them on would fail every call that carries
// them while it is full); else they stay first in it.
func (w *writeBack) settle(ops []Op, written, full bool) {
	defer w.running.Store(false)
	if !written && !full {
		return
	}
	w.mu.Lock()
	w.ops = w.ops[len(ops):]
	if len(w.ops) == 0 {
		w.ops = nil
	}
	w.queued.Store(int64(len(w.ops)))
	w.mu.Unlock()
	if written {
		w.written.Add(int64(len(ops)))
	} else {
		w.dropped.Add(int64(len(ops)))
	}
}

// WriteBackStats says what the write-back did.
type WriteBackStats struct {
	// Queued is how many ops wait for the store to answer again.
	Queued int64
	// Written is how many were applied to the store.
	Written int64
	// Dropped is how many found the queue full (maxWriteBack).
	Dropped int64
}

// WriteBack reports what the engine has written back to the store of what
// its fallback counted while the store failed, and what waits.
func (e *Engine) WriteBack() WriteBackStats {
	w := &e.writeBack
	return WriteBackStats{Queued: w.queued.Load(), Written: w.written.Load(), Dropped: w.dropped.Load()}
}
