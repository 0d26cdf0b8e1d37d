package authguard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
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

// lookupRoundKeys bounds the records one look-up round reads (one store
// call for each record window among them), and lookupRounds the rounds
// waiting to run: 1,024 records at most wait to be read.
const (
	lookupRoundKeys = 64
	lookupRounds    = 16
)

// lookupPause is how long look-ups wait after the store failed one.
const lookupPause = time.Second

// lookups are the flood path's look-ups of records. Rounds run one at a
// time, in order, each in one call slot (a kept one when no other is
// free, as a report takes), so the look-ups an attacker can force take at
// most that one slot, whatever his rate, and stay within the store's
// connections. A check joins the last round waiting, or a new one behind
// it, each record once; it waits for its round at most the queue wait,
// and a check that finds every round full does not wait for one: it is
// shed, as a call that finds no slot in time is, neither answered from
// memory nor run in the store.
type lookups struct {
	mu      sync.Mutex
	waiting []*lookupRound // in the order they run
	running bool           // a goroutine runs them
	// pausedUntil is when look-ups may call the store again after one
	// failed, in Unix ns.
	pausedUntil atomic.Int64
	// reads are the rounds that read each record, waiting or running.
	reads map[string]*lookupRound
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

// floodVerdict decides, from memory, a flooded check or send of plan p. A
// verdict v other than Proceed answers it: from memory when recalled, else
// the flow's shed verdict (a record could not be read in time). Otherwise
// it waits for a slot, kept for priority calls when priority (a record of
// p the store holds).
func (e *Engine) floodVerdict(f *Flow, p *plan, solved bool) (v Verdict, recalled, priority bool) {
	held := e.recall.held(p.ops, e.now(), false)
	open, known := e.recordsOf(p, held)
	if held == nil {
		return Verdict{}, false, known
	}
	if open {
		if v := e.atBest(f, p, held, solved); v.Action != Proceed {
			return v, true, false
		}
		if e.combine(f, p, batch{res: held}, solved).Action == Proceed {
			return Verdict{}, false, known // no record decides it: the store does
		}
		if e.lookUp(p) {
			held = e.recall.held(p.ops, e.now(), false)
			open, known = e.recordsOf(p, held)
		}
		if open {
			// Not read in time (every round full, its round late, the
			// store failing): shed, as a call that finds no slot in time
			// is, so that a flood of networks never seen neither is
			// answered from memory nor runs in the store. A round that
			// runs late still reads its record, for its retry. It is no
			// shed of a call slot's (overloaded): it leaves a store
			// deadline missed meanwhile to the fail mode, as before.
			return f.shed(), false, false
		}
		if held == nil {
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
// remembers neither way, and learns them (learnLookup). A check that finds
// no round running runs them itself, in order, up to its own, and leaves
// any behind it to a goroutine; any other waits for its round at most the
// queue wait. It reports false when every round was full, look-ups are
// paused (readRound), or its round did not run in time.
func (e *Engine) lookUp(p *plan) bool {
	ms := e.now().UnixMilli()
	l := &e.lookups
	if time.Now().UnixNano() < l.pausedUntil.Load() {
		return false
	}
	l.mu.Lock()
	var wait *lookupRound // the last round to read one of p's records
	for i, m := range p.meta {
		if m.role != roleVerified {
			continue
		}
		key := p.ops[i].StoreKey()
		if e.records.remembers(key, ms) || l.absent.remembers(key, ms) {
			continue
		}
		r := l.reads[key]
		if r == nil {
			if r = l.room(); r == nil {
				l.mu.Unlock()
				return false
			}
			op := p.ops[i]
			if l, ok := op.(*LogOp); ok {
				c := *l // the round keeps no plan's buffer
				op = &c
			}
			r.ops = append(r.ops, op)
			l.reads[key] = r
		}
		// Rounds run in order: the later one ends last (a running one is
		// no longer waiting, and ends first).
		if wait == nil || slices.Index(l.waiting, r) > slices.Index(l.waiting, wait) {
			wait = r
		}
	}
	if wait == nil { // learned meanwhile
		l.mu.Unlock()
		return true
	}
	lead := !l.running
	l.running = true
	l.mu.Unlock()
	if lead {
		for r := e.nextRound(); r != nil; r = e.nextRound() {
			e.readRound(r)
			if r == wait {
				break
			}
		}
		l.mu.Lock()
		if l.running = len(l.waiting) > 0; l.running {
			go e.runLookups()
		}
		l.mu.Unlock()
		return true
	}
	t := time.NewTimer(e.wait)
	defer t.Stop()
	select {
	case <-wait.done:
		return true
	case <-t.C:
		return false
	}
}

// room returns the round waiting with room for one more record, a new one
// when the last is full, or nil when no more may wait.
func (l *lookups) room() *lookupRound {
	if n := len(l.waiting); n > 0 && len(l.waiting[n-1].ops) < lookupRoundKeys {
		return l.waiting[n-1]
	}
	if len(l.waiting) >= lookupRounds {
		return nil
	}
	if l.reads == nil {
		l.reads = map[string]*lookupRound{}
	}
	r := &lookupRound{done: make(chan struct{})}
	l.waiting = append(l.waiting, r)
	return r
}

// runLookups runs the rounds waiting, in order, until none is left.
func (e *Engine) runLookups() {
	for r := e.nextRound(); r != nil; r = e.nextRound() {
		e.readRound(r)
	}
}

// nextRound takes the first round waiting; with none left it returns nil,
// and no round is running.
func (e *Engine) nextRound() *lookupRound {
	l := &e.lookups
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiting) == 0 {
		l.running = false
		return nil
	}
	r := l.waiting[0]
	l.waiting = slices.Delete(l.waiting, 0, 1)
	return r
}

// readRound reads round r's records in the store, in a call slot, and
// learns them. A store that does not answer pauses the look-ups for
// lookupPause: the rounds meanwhile read nothing, so that look-ups add at
// most one failure a pause to the store's circuit breaker (enough of them
// in a row would turn the whole instance to its fail mode, for a store
// that is only slow under the flood).
func (e *Engine) readRound(r *lookupRound) {
	ctx := context.Background()
	l := &e.lookups
	if time.Now().UnixNano() >= l.pausedUntil.Load() {
		if slot, err := e.acquire(ctx, true, true); err == nil {
			res := e.peekRecords(ctx, r.ops)
			release(slot)
			if res == nil {
				l.pausedUntil.Store(time.Now().Add(lookupPause).UnixNano())
			}
			e.learnLookup(ctx, r.ops, res)
		}
	}
	l.mu.Lock()
	for _, op := range r.ops {
		delete(l.reads, op.StoreKey())
	}
	l.mu.Unlock()
	close(r.done)
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
