package authguard

import (
	"slices"
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
// in order per key. Rate takes are not written back: a rate's window is
// short, and a take is not idempotent. Nor is what a fallback counted while
// the store was full: a full store refuses the writes (it keeps the delays
// it holds, and the fallback counts on from them: batch.go's continueHeld).
// Written ops leave the fallback, which then holds nothing the store does
// not.
//
// The queue is one entry per store key, bounded in bytes (maxWriteBackBytes),
// never in ops: a flood of fresh subjects during an outage (a check on a
// made-up account from a fresh address queues about three keys) must not
// push out the failures of an account under attack. Each key is in one of
// two classes, set by what the fallback answered for it:
//
//   - held: it holds its subject back (a counter at or past Free, a log at a
//     limit: as Restricting has it), or the recall remembers the store
//     holding it so;
//   - ordinary: everything else. Forgetting one gives its subject back at
//     most Free−1 attempts or a limit's worth less one of members.
//
// Ops queued on a key already queued merge into its entry when that changes
// nothing the store will hold: a log member queued again replaces its
// earlier op (the last one says whether it is in the set); a confirm of a
// failure queued with its attempt makes it a failure without one (the
// failure stays counted, nothing is left pending); a success or refund of a
// failure queued with its attempt takes both out (the fallback counted
// nothing; writing both would move the store's last failure to the
// write-back's time).
//
// Past its bound the queue sheds whole entries: the ordinary key queued
// least recently first, and a held one only when no ordinary one is left
// (then the bound is too small for the attack: Lost counts it). An
// ordinary counter shed below Free can reach it later in the same outage:
// its new entry then starts with the failures the fallback holds for it
// that no queued op carries (the fallback's count less what the new op and
// the ops in flight add), written as failures without an attempt, so the
// store holds at least what the fallback does ("at least this count").
// This is done only after something was shed since the queue was last
// empty: otherwise every failure the fallback holds is queued already, and
// concurrent calls could make the difference look like a shed one.

// maxWriteBackBytes bounds the memory of the ops waiting to be written
// back, as writeBackKeyBytes and opBytes account it (within a few percent
// of the heap it holds: TestWriteBack_TheBoundHoldsItsHeap): about 32,000
// fresh checks' worth (three keys each, about 340 bytes a key), or some
// 35,000 counters holding five confirmed failures each (about 0.9 KB).
const maxWriteBackBytes = 32 << 20

// writeBackKeyBytes is what a queued key costs beside its key's bytes and
// its ops: the entry (80 bytes as allocated) and its slot in the map with
// its share of the map's groups at their high-water mark, rounded up.
const writeBackKeyBytes = 160

// opBytes is what a queued op costs: its copy as allocated (a BackoffOp 112
// bytes, a LogOp 80), its slot in its key's slice with room to grow (24),
// and its own strings (its key's are the entry's).
func opBytes(op Op) int64 {
	switch op := op.(type) {
	case *BackoffOp:
		return 112 + 24 + int64(len(op.Attempt)+len(op.Fingerprint))
	case *LogOp:
		return 80 + 24 + int64(len(op.Member))
	}
	return 128
}

// writeBackCarry is how many queued ops one call carries ahead of its own.
const writeBackCarry = 64

type writeBack struct {
	mu    sync.Mutex
	keys  map[string]*wbKey
	lists [2]wbList // by class: ordinary, held; least recently queued first
	// bytes is what the queued ops cost, those in flight included, and
	// limit its bound (maxWriteBackBytes; tests set less).
	bytes, limit int64
	ops          int         // ops queued, those in flight included
	carried      []wbSegment // what the carry in flight took
	// shed is true once an entry was shed since the queue was last empty.
	shed bool
	// recall is the engine's: a key it remembers holds its subject back.
	recall *recall

	running atomic.Bool
	queued  atomic.Int64 // ops, read without the lock
	written atomic.Int64
	merged  atomic.Int64
	dropped atomic.Int64
	lost    atomic.Int64
}

// wbKey is one store key's queued ops, in order.
type wbKey struct {
	key        string
	ops        []Op
	held       bool
	bytes      int64 // writeBackKeyBytes, the key and its ops
	prev, next *wbKey
}

// wbList is a list of entries of one class, least recently queued first.
type wbList struct{ head, tail *wbKey }

func (l *wbList) push(k *wbKey) {
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = k
	} else {
		l.head = k
	}
	l.tail = k
}

func (l *wbList) pushFront(k *wbKey) {
	k.prev, k.next = nil, l.head
	if l.head != nil {
		l.head.prev = k
	} else {
		l.tail = k
	}
	l.head = k
}

func (l *wbList) remove(k *wbKey) {
	if k.prev != nil {
		k.prev.next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		k.next.prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next = nil, nil
}

func classOf(held bool) int {
	if held {
		return 1
	}
	return 0
}

// wbSegment is what a carry took of one key: its first ops, and the
// entry's own cost when it took them all.
type wbSegment struct {
	key   string
	ops   []Op
	held  bool
	bytes int64
}

// writeBackOf is what the store must apply to hold what op did on the
// fallback with result res, or nil for nothing. It is always a copy: an op
// of a plan lives in the plan's planOps, which a queued pointer would keep
// whole while the store is down.
func writeBackOf(op Op, res Result) Op {
	switch op := op.(type) {
	case *BackoffOp:
		if isDeviceGen(op) { // token.go: its count is no failure to carry
			return nil
		}
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

// holdsBack reports whether res, the fallback's answer to op, says op's key
// holds its subject back: a counter at or past Free, a log at a limit
// (res.Count is its longest window's: at least the smallest limit is
// taken as at a limit, which errs towards keeping it).
func holdsBack(op Op, res Result) bool {
	switch op := op.(type) {
	case *BackoffOp:
		return res.Count >= op.Policy.Free
	case *LogOp:
		if res.Over {
			return true
		}
		for _, x := range op.Windows {
			if res.Count >= x.Limit {
				return true
			}
		}
	}
	return false
}

// add queues what ops did on the fallback (res, one per op).
func (w *writeBack) add(ops []Op, res []Result) {
	type queued struct {
		op   Op
		res  Result
		held bool
	}
	var todo []queued
	for i, op := range ops {
		var r Result
		if res != nil {
			r = res[i]
		}
		if wb := writeBackOf(op, r); wb != nil {
			todo = append(todo, queued{wb, r, holdsBack(op, r)})
		}
	}
	if len(todo) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range todo {
		w.put(q.op, q.res, q.held)
	}
	w.queued.Store(int64(w.ops))
}

// put queues op, which the fallback answered with res, under its key, and
// sheds what the bound calls for.
func (w *writeBack) put(op Op, res Result, held bool) {
	key := op.StoreKey()
	k := w.keys[key]
	if k == nil {
		k = &wbKey{key: key, bytes: writeBackKeyBytes + int64(len(key))}
		if w.keys == nil {
			w.keys = map[string]*wbKey{}
		}
		w.keys[key] = k
		w.bytes += k.bytes
		if b, ok := op.(*BackoffOp); ok && w.shed {
			w.unqueued(k, b, res)
		}
	} else {
		w.lists[classOf(k.held)].remove(k)
	}
	switch op := op.(type) { // the entry's key, so that one copy of it is kept
	case *BackoffOp:
		op.Key = k.key
	case *LogOp:
		op.Key = k.key
	}
	if !w.merge(k, op) {
		k.ops = append(k.ops, op)
		n := opBytes(op)
		k.bytes, w.bytes, w.ops = k.bytes+n, w.bytes+n, w.ops+1
	}
	if len(k.ops) == 0 { // a success took out the failure it refunded
		delete(w.keys, key)
		w.bytes -= k.bytes
		return
	}
	k.held = k.held || held || w.recall.has(key)
	w.lists[classOf(k.held)].push(k)
	w.shedPast(k)
}

// unqueued starts a new entry k for a counter with the failures the
// fallback holds for it (res.Count, after op) that neither op nor a carry
// in flight adds: they were in an entry shed while the counter held
// nobody back. They are written as failures without an attempt.
func (w *writeBack) unqueued(k *wbKey, op *BackoffOp, res Result) {
	n := res.Count
	if op.Action == BackoffFail {
		n-- // writeBackOf queues a failure only when it counted
	}
	for _, s := range w.carried {
		if s.key == k.key {
			for _, o := range s.ops {
				if b, ok := o.(*BackoffOp); ok && b.Action == BackoffFail {
					n--
				}
			}
		}
	}
	if n <= 0 {
		return
	}
	pad := &BackoffOp{Key: k.key, Action: BackoffFail, Policy: op.Policy, SeenWindow: op.SeenWindow}
	for range n {
		k.ops = append(k.ops, pad)
	}
	c := int64(n) * opBytes(pad)
	k.bytes, w.bytes, w.ops = k.bytes+c, w.bytes+c, w.ops+n
}

// merge folds op into an op k queues already, when the store will then
// hold the same (see above), and reports whether it did.
func (w *writeBack) merge(k *wbKey, op Op) bool {
	switch op := op.(type) {
	case *LogOp:
		for i, q := range k.ops {
			if l, ok := q.(*LogOp); ok && l.Member == op.Member {
				k.ops[i] = op
				w.merged.Add(1)
				return true
			}
		}
	case *BackoffOp:
		if op.Attempt == "" {
			return false
		}
		i := slices.IndexFunc(k.ops, func(q Op) bool {
			b, ok := q.(*BackoffOp)
			return ok && b.Action == BackoffFail && b.Attempt == op.Attempt
		})
		if i < 0 {
			return false
		}
		switch failed := k.ops[i].(*BackoffOp); op.Action {
		case BackoffConfirm:
			if op.Fingerprint != "" && op.Fingerprint != failed.Fingerprint {
				return false // the confirm remembers a fingerprint of its own
			}
			c := copyOf(failed)
			c.Attempt = ""
			k.ops[i] = c
			n := opBytes(failed) - opBytes(c)
			k.bytes, w.bytes = k.bytes-n, w.bytes-n
			w.merged.Add(1)
			return true
		case BackoffSucceed, BackoffRefund:
			k.ops = slices.Delete(k.ops, i, i+1)
			n := opBytes(failed)
			k.bytes, w.bytes, w.ops = k.bytes-n, w.bytes-n, w.ops-1
			w.merged.Add(2)
			return true
		}
	}
	return false
}

// shedPast sheds entries while the queue is past its bound: the ordinary
// one queued least recently first, then, only when none is left, the held
// one queued least recently, never k, the entry just queued, when it is
// the last held one.
func (w *writeBack) shedPast(k *wbKey) {
	for w.bytes > w.bound() {
		v := w.lists[0].head
		if v == nil {
			v = w.lists[1].head
			if v == nil || v == k && v.next == nil {
				return
			}
		}
		w.lists[classOf(v.held)].remove(v)
		delete(w.keys, v.key)
		w.bytes, w.ops = w.bytes-v.bytes, w.ops-len(v.ops)
		w.shed = true
		if v.held {
			w.lost.Add(int64(len(v.ops)))
		} else {
			w.dropped.Add(int64(len(v.ops)))
		}
	}
}

func (w *writeBack) bound() int64 {
	if w.limit > 0 {
		return w.limit
	}
	return maxWriteBackBytes
}

// carry takes the first ops of the queue for a call to send ahead of its
// own batch, in the same round trip: the call that finds the store
// answering again writes them before its own ops are decided, so that the
// store has counted the blip's failures when it decides that call. Held
// keys go first, each key's ops in order. At most one call carries at a
// time; carry returns nil when the queue is empty or another call carries.
func (w *writeBack) carry() []Op {
	if w.queued.Load() == 0 || !w.running.CompareAndSwap(false, true) {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Op, 0, min(w.ops, writeBackCarry))
	for c := 1; c >= 0 && len(out) < writeBackCarry; c-- {
		for k := w.lists[c].head; k != nil && len(out) < writeBackCarry; {
			next := k.next
			n := min(len(k.ops), writeBackCarry-len(out))
			s := wbSegment{key: k.key, ops: k.ops[:n:n], held: k.held}
			if n == len(k.ops) {
				w.lists[c].remove(k)
				delete(w.keys, k.key)
				s.bytes = k.bytes
			} else {
				for _, op := range s.ops {
					s.bytes += opBytes(op)
				}
				k.ops, k.bytes = k.ops[n:], k.bytes-s.bytes
			}
			w.carried = append(w.carried, s)
			out = append(out, s.ops...)
			k = next
		}
	}
	if len(out) == 0 {
		w.running.Store(false)
		return nil
	}
	return out
}

// settle ends a carry of ops: written, they leave the queue; refused by a
// full store, they leave it too, counted as dropped or lost by their
// key's class (a full store cannot count them, and carrying them on would
// fail every call that carries them while it is full); else they go back
// first in it, before any op queued for their keys since.
func (w *writeBack) settle(ops []Op, written, full bool) {
	defer w.running.Store(false)
	w.mu.Lock()
	defer w.mu.Unlock()
	carried := w.carried
	defer func() { // kept for the next carry, without what it held
		clear(carried)
		w.carried = carried[:0]
	}()
	if !written && !full {
		for i := len(carried) - 1; i >= 0; i-- {
			w.putBack(carried[i])
		}
		return
	}
	for _, s := range carried {
		w.bytes, w.ops = w.bytes-s.bytes, w.ops-len(s.ops)
		switch {
		case written:
		case s.held:
			w.lost.Add(int64(len(s.ops)))
		default:
			w.dropped.Add(int64(len(s.ops)))
		}
	}
	if written {
		w.written.Add(int64(len(ops)))
	}
	if w.ops == 0 {
		w.keys, w.shed = nil, false
	}
	w.queued.Store(int64(w.ops))
}

// putBack puts a segment a carry took back first in the queue.
func (w *writeBack) putBack(s wbSegment) {
	w.bytes -= s.bytes
	k := w.keys[s.key]
	if k == nil {
		k = &wbKey{key: s.key, bytes: writeBackKeyBytes + int64(len(s.key))}
		if w.keys == nil {
			w.keys = map[string]*wbKey{}
		}
		w.keys[s.key] = k
		w.bytes += k.bytes
	} else {
		w.lists[classOf(k.held)].remove(k)
	}
	k.ops = append(slices.Clip(s.ops), k.ops...)
	for _, op := range s.ops {
		k.bytes += opBytes(op)
		w.bytes += opBytes(op)
	}
	k.held = k.held || s.held
	w.lists[classOf(k.held)].pushFront(k)
}

// WriteBackStats says what the write-back did, in ops.
type WriteBackStats struct {
	// Queued is how many ops wait for the store to answer again.
	Queued int64
	// Bytes is what they are accounted to cost (bounded by 32 MiB).
	Bytes int64
	// Written is how many were applied to the store.
	Written int64
	// Merged is how many were folded into an op queued for the same key
	// (a log member queued again, a failure's confirm, a success with the
	// failure it refunds): the store holds them all the same.
	Merged int64
	// Dropped is how many held nobody back (a counter below Free, a log
	// under its limits) and were shed when the queue reached its bound, or
	// refused by a full store when carried: each such key gives its
	// subject at most Free−1 attempts or a limit's worth of members more.
	Dropped int64
	// Lost is how many held someone back and were shed when the queue
	// held nothing else, or refused by a full store when carried. Above
	// zero, the bound is too small for the attack in progress.
	Lost int64
}

// WriteBack reports what the engine has written back to the store of what
// its fallback counted while the store failed, and what waits.
func (e *Engine) WriteBack() WriteBackStats { return e.writeBack.stats() }

func (w *writeBack) stats() WriteBackStats {
	w.mu.Lock()
	b := w.bytes
	w.mu.Unlock()
	return WriteBackStats{Queued: w.queued.Load(), Bytes: b, Written: w.written.Load(), Merged: w.merged.Load(), Dropped: w.dropped.Load(), Lost: w.lost.Load()}
}
