package authguard

import (
	"context"
	"errors"
	"slices"
	"sync"
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

// A flooded check or send (one that found no call slot free) is answered
// from the recall only when what this engine remembers refuses it whatever
// the records it does not remember say. The recall's results are per key
// and say nothing of whether a record is there (a known network, a
// verified destination: records.go), which exempts its owner from the
// account's (or destination's) delay. A record the engine remembers is
// taken as there, one it remembers the store answering as missing
// (lookups.absent) as missing, and any other is looked up in the store
// before the check is refused: an owner who signed in through another
// instance, or before a restart, or whose record left the memory, is
// exempt there, and the memory of the account's delay was answering her.
// An attacker gets no further by claiming what the engine cannot rule
// out: a device token counts only when it verifies for the account
// (deviceID), and a network the engine has not seen costs him one
// look-up, coalesced with every other waiting, after which it is answered
// from memory again.

// absentFor is how long the engine takes a record the store answered as
// missing to stay missing. The record may be made meanwhile (a success
// through another instance); till then a flooded check from there is
// answered from memory. Short, since a look-up again costs one peek.
const absentFor = time.Minute

// lookupRoundKeys bounds the records one look-up reads: a call's batch
// stays small, and a look-up waits for at most two of them (the one under
// way and its own).
const lookupRoundKeys = 64

// lookups are the flood path's look-ups of records. One round runs at a
// time, in one call slot (a kept one when no other is free, as a report
// does), so the look-ups an attacker can force take at most that one
// slot, whatever his rate; the checks that arrive meanwhile join the next
// round, up to lookupRoundKeys records, each record once.
type lookups struct {
	mu      sync.Mutex
	running bool
	next    *lookupRound
	// absent are the records the store last answered as missing, for
	// absentFor, in a budget of their own so that an attacker's networks
	// cannot push the owner's records out of Engine.records.
	absent *recall
}

// lookupRound is one look-up: peeks of the records its checks wait for.
type lookupRound struct {
	ops  []Op
	done chan struct{} // closed once what it read is learned
}

// floodVerdict decides, from memory, a flooded check or send of plan p:
// final says the verdict v answers it; otherwise it waits for a slot,
// kept for priority calls when priority (a record of p the store holds).
func (e *Engine) floodVerdict(ctx context.Context, f *Flow, p *plan, solved bool) (v Verdict, final, priority bool) {
	held := e.recall.held(p.ops, e.now(), false)
	open, known := e.recordsOf(p, held)
	if held == nil {
		return Verdict{}, false, known
	}
	if open {
		if v := e.atBest(f, p, held, solved); v.Action != Proceed {
			return v, true, false
		}
		if e.combine(f, p, batch{res: held}, solved).Action == Proceed || !e.lookUp(ctx, p) {
			// No record decides it, or none could be read: the store does.
			return Verdict{}, false, known
		}
		held = e.recall.held(p.ops, e.now(), false)
		if open, known = e.recordsOf(p, held); open || held == nil {
			return Verdict{}, false, known
		}
	}
	if v := e.atBest(f, p, held, solved); v.Action != Proceed {
		return v, true, false
	}
	return Verdict{}, false, known
}

// recordsOf reads, for each record p peeks, what the engine remembers of
// it; held (the recall's results for p, when not nil) then shows a record
// remembered as there as Over. open says some record is remembered neither
// way; known that some is remembered as there.
func (e *Engine) recordsOf(p *plan, held []Result) (open, known bool) {
	ms := e.now().UnixMilli()
	for i, m := range p.meta {
		if m.role != roleVerified {
			continue
		}
		switch key := p.ops[i].StoreKey(); {
		case e.records.remembers(key, ms):
			known = true
			if held != nil {
				held[i].Over = true
			}
		case !e.lookups.absent.remembers(key, ms):
			open = true
		}
	}
	return open, known
}

// remembers reports whether r (nil for none) holds key at ms.
func (r *recall) remembers(key string, ms int64) bool {
	if r == nil || r.n.Load() == 0 {
		return false
	}
	_, ok := r.get(key, ms)
	return ok
}

// atBest is the verdict of held on p with every record the engine
// remembers neither way taken as there: a refusal is one whatever those
// records are, and the least of them.
func (e *Engine) atBest(f *Flow, p *plan, held []Result, solved bool) Verdict {
	best := slices.Clone(held)
	ms := e.now().UnixMilli()
	for i, m := range p.meta {
		if m.role == roleVerified && !best[i].Over {
			best[i].Over = !e.lookups.absent.remembers(p.ops[i].StoreKey(), ms)
		}
	}
	return e.combine(f, p, batch{res: best}, solved)
}

// lookUp reads, in the store, the records p peeks that the engine
// remembers neither way, and learns them (learnLookup): it joins the round
// being gathered, leading it when none is under way, and waits for it. It
// reports false when the round was full.
func (e *Engine) lookUp(ctx context.Context, p *plan) bool {
	ms := e.now().UnixMilli()
	l := &e.lookups
	l.mu.Lock()
	r := l.next
	if r == nil {
		r = &lookupRound{done: make(chan struct{})}
		l.next = r
	}
	n := len(r.ops)
	for i, m := range p.meta {
		if m.role != roleVerified {
			continue
		}
		key := p.ops[i].StoreKey()
		if e.records.remembers(key, ms) || l.absent.remembers(key, ms) ||
			slices.ContainsFunc(r.ops, func(op Op) bool { return op.StoreKey() == key }) {
			continue
		}
		r.ops = append(r.ops, p.ops[i])
	}
	switch {
	case len(r.ops) > lookupRoundKeys:
		r.ops = r.ops[:n]
		l.mu.Unlock()
		return false
	case len(r.ops) == 0: // learned meanwhile; nobody waits for an empty round
		l.next = nil
		l.mu.Unlock()
		return true
	}
	lead := !l.running
	if lead {
		l.running, l.next = true, nil
	}
	l.mu.Unlock()
	if lead {
		e.runLookups(context.WithoutCancel(ctx), r)
	}
	<-r.done
	return true
}

// runLookups runs round r, then hands the next one, if any checks joined
// it meanwhile, to a goroutine of its own: the caller that led r waits for
// r only.
func (e *Engine) runLookups(ctx context.Context, r *lookupRound) {
	if slot, err := e.acquire(ctx, true, true); err == nil {
		e.learnLookup(ctx, r.ops, e.peekRecords(ctx, r.ops))
		release(slot)
	}
	close(r.done)
	l := &e.lookups
	l.mu.Lock()
	next := l.next
	l.next, l.running = nil, next != nil
	l.mu.Unlock()
	if next != nil {
		go e.runLookups(context.Background(), next)
	}
}

// learnLookup learns what the store answered (res, nil for nothing) to
// peeks of records: one there is remembered as learnRecords remembers it,
// one missing for absentFor.
func (e *Engine) learnLookup(ctx context.Context, ops []Op, res []Result) {
	if len(res) != len(ops) {
		return
	}
	p := plan{ops: ops, meta: make([]meta, len(ops))}
	for i := range p.meta {
		p.meta[i].role = roleVerified
	}
	e.learnRecords(ctx, &p, res)
	e.learnAbsent(&p, res, true)
}

// learnAbsent remembers, from the store's answer res to p, the records p
// peeks that the store answered as missing, when the answer shows a wait
// the record exempts from holding the call back, or about to (a counter at
// or past its free attempts, which the recall remembers: a flooded check
// from the same network is refused from memory only if this is remembered
// too), or all is true. A record answered as there is forgotten as
// missing. Calls that no such wait holds, nearly all, leave nothing here.
func (e *Engine) learnAbsent(p *plan, res []Result, all bool) {
	a := e.lookups.absent
	if a == nil || len(res) != len(p.ops) {
		return
	}
	for i, m := range p.meta {
		if m.role == roleShared && (res[i].Wait > 0 || res[i].Over || atFree(p.ops[i], res[i])) {
			all = true
		}
	}
	ms := e.now().UnixMilli()
	for i, m := range p.meta {
		if m.role != roleVerified {
			continue
		}
		switch key := p.ops[i].StoreKey(); {
		case res[i].Over:
			if a.n.Load() > 0 {
				a.forget(key)
			}
		case all:
			until := ms + absentFor.Milliseconds()
			a.put(recalled{key: key, expires: until})
		}
	}
}

// atFree reports whether op is a backoff counter that res shows at or past
// its free attempts.
func atFree(op Op, res Result) bool {
	b, ok := op.(*BackoffOp)
	return ok && res.Count >= b.Policy.Free
}
