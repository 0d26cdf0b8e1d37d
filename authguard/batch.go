package authguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// batch is what running a plan gave.
type batch struct {
	// res are the results, one per op; nil when nothing answered.
	res []Result
	// held are the store's own results of a read-only copy of the plan
	// (peeks), when the store is full and refused to write; else nil. A
	// counter already holding its subject back is read from them.
	held []Result
	src  Source
	err  error
	took time.Duration
	// undone is true when the store that answered already undid the
	// batch's reservations because the check would not proceed.
	undone bool
}

// reservation is what a check's batch needs to undo itself in the store:
// each op's gate, and whether a CAPTCHA was solved.
type reservation struct {
	gates  []Gate
	solved bool
}

// run applies ops on st: through Reserve for a check (r not nil), else Do.
func (r *reservation) run(ctx context.Context, st Store, ops []Op) ([]Result, bool, error) {
	if r == nil {
		res, err := st.Do(ctx, ops)
		return res, false, err
	}
	return Reserve(ctx, st, ops, r.gates, r.solved)
}

// do runs a batch on the store, or on the fallback for a fail-open flow when
// the store fails. When the store is full (it answers but refuses writes),
// it also reads the state the plan touches, so that nobody the store holds
// back goes free because it cannot record more; when it does not answer at
// all, what it last answered for the plan's keys (the recall) stands in for
// that read. Either way the fallback counts on from that state and combine
// reads it, so a blip forgets no delay.
//
// The store call does not inherit ctx's cancellation: a caller that hangs
// up must neither leave a batch half applied nor count as a store failure
// (enough of those would open a circuit breaker and turn every instance to
// its fail mode). The store's own timeout bounds the call. ctx's values
// are kept: Config.Trace finds the call's span there.
func (e *Engine) do(ctx context.Context, f *Flow, ops []Op, r *reservation) batch {
	ctx = context.WithoutCancel(ctx)
	start := e.now()
	// Ops the fallback counted while the store failed ride ahead of this
	// batch, in its round trip (writeback.go): no gate, nothing undone.
	all, rr := ops, r
	pre := e.writeBack.carry()
	if pre != nil {
		all = append(slices.Clip(pre), ops...)
		if r != nil {
			rr = &reservation{append(make([]Gate, len(pre)), r.gates...), r.solved}
		}
	}
	end := e.span(ctx, SpanStore)
	res, undone, err := rr.run(ctx, e.store, all)
	end(err)
	b := batch{took: e.now().Sub(start), err: err, src: SourceNone, undone: undone}
	if err == nil && len(res) != len(all) {
		b.err = fmt.Errorf("authguard: store returned %d results for %d operations", len(res), len(all))
	}
	if pre != nil {
		e.wroteBack(ctx, pre, res, b.err == nil, errors.Is(b.err, ErrStoreFull))
		if b.err == nil {
			res = res[len(pre):]
		}
	}
	if b.err == nil {
		b.res, b.src = res, SourceStore
		e.recall.learn(ops, res, undone, e.now())
		return b
	}
	if StoreErrorKind(b.err) == "timeout" && e.overloaded() {
		b.err = fmt.Errorf("%w: the store's deadline passed while calls were queueing: %w", ErrOverloaded, b.err)
		return b // no fail mode: the store is not at fault
	}
	if errors.Is(b.err, ErrStoreFull) {
		b.held = e.peek(ctx, ops)
	} else {
		b.held = e.recall.held(ops, e.now(), true)
	}
	local := continueHeld(ops, b.held)
	if f.FailMode == FailOpen && e.fallback != nil {
		end := e.span(ctx, SpanFallback)
		e.seedRecords(ctx, ops)
		res, undone, ferr := r.run(ctx, e.fallback, local)
		if ferr == nil && !undone && len(res) == len(ops) {
			ferr = r.spendHeld(ctx, e.fallback, local, res, b.held)
		}
		end(ferr)
		if ferr == nil && len(res) == len(ops) {
			b.res, b.src, b.undone = res, SourceFallback, undone
			if r == nil && !errors.Is(b.err, ErrStoreFull) { // a check's once its verdict is known (reserve)
				e.writeBack.add(ops, res)
			}
		}
	}
	return b
}

// spendHeld spends, on the fallback st, the spare allowances of a check
// that the fallback answered (res) with no shared wait of its own while
// the store's held state has one: combine reads that wait too, so the
// spares exempt the check from it and must be spent, as Finish spends them
// for a wait the store answered. A check they then fail to exempt is
// refused by combine and its charges refunded (reserve).
func (r *reservation) spendHeld(ctx context.Context, st Store, ops []Op, res, held []Result) error {
	if r == nil || held == nil || sharedWait(r.gates, res) {
		return nil
	}
	// The fallback's results with the held shared waits: Blocked on them
	// is what combine will decide, so spares are spent only on a check
	// they exempt (a network not known holds none, not even for a moment).
	merged := slices.Clone(res)
	for i, g := range r.gates {
		if g.Block == BlockShared {
			merged[i].Wait = max(merged[i].Wait, held[i].Wait)
		}
	}
	if !sharedWait(r.gates, merged) || Blocked(r.gates, merged, r.solved) {
		return nil
	}
	var spares []int
	for i, g := range r.gates {
		if g.Spare() && !res[i].Charged {
			spares = append(spares, i)
		}
	}
	return applyAt(ctx, st, ops, res, spares)
}

// wroteBack settles carried write-back ops: when written, the store's
// answers are learned and the ops' keys leave the fallback, which then
// holds nothing the store does not (the next blip would count it twice).
func (e *Engine) wroteBack(ctx context.Context, pre []Op, res []Result, written, full bool) {
	if written {
		e.recall.learn(pre, res[:len(pre)], false, e.now())
	}
	e.writeBack.settle(pre, written, full)
	if written && e.fallback != nil {
		dels := make([]Op, len(pre))
		for i, op := range pre {
			dels[i] = &DeleteOp{Key: op.StoreKey()}
		}
		_, _ = e.fallback.Do(ctx, dels)
	}
}

// continueHeld returns ops for the fallback while the store is full or
// down: each backoff op whose counter the store holds (held, from a peek of
// a full store or from the recall) counts on from there, so that the
// fallback's m-th failure waits what the store's (n+m)-th would
// (Policy.Delay) instead of starting again at Free free attempts: Free less
// the n failures held, or past Free none, with the delay of n as the base.
// combine reads the wait held, but the fallback must count past it: without
// this, once that wait ran out each instance's fallback handed out Free
// guesses again.
func continueHeld(ops []Op, held []Result) []Op {
	if held == nil {
		return ops
	}
	var out []Op
	for i, op := range ops {
		b, ok := op.(*BackoffOp)
		if !ok || held[i].Count == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(ops)
		}
		c := *b
		if n := held[i].Count; n < b.Policy.Free {
			c.Policy.Free -= n
		} else {
			c.Policy.Free, c.Policy.Base = 0, b.Policy.Delay(n)
		}
		out[i] = &c
	}
	if out == nil {
		return ops
	}
	return out
}

// peek reads, without changing anything, the counters, logs and rates that
// ops touch; nil when the store does not answer.
func (e *Engine) peek(ctx context.Context, ops []Op) []Result {
	reads := make([]Op, 0, len(ops))
	at := make([]int, 0, len(ops))
	for i, op := range ops {
		if r := PeekOf(op); r != nil {
			reads, at = append(reads, r), append(at, i)
		}
	}
	got, err := e.store.Do(ctx, reads)
	if err != nil || len(got) != len(reads) {
		return nil
	}
	held := make([]Result, len(ops))
	for j, i := range at {
		held[i] = got[j]
	}
	return held
}

// peekRecords reads records in the store for the flood path's look-ups
// (lookups): ops are peeks of records, one result each in order, nil when
// the store did not answer. They go in calls of the ops of one record
// window, 1, 4, 16 or 64 of them, the last padded with its own op again
// (a peek changes nothing): a Redis store compiles a script for each
// arrangement of a call's ops (redisstore's shapes, of which it keeps 128
// and then sends the slower generic script), and rounds of every size and
// mix of flows would take them all.
func (e *Engine) peekRecords(ctx context.Context, ops []Op) []Result {
	res := make([]Result, len(ops))
	sent := make([]bool, len(ops))
	for i := range ops {
		if sent[i] {
			continue
		}
		var at []int
		call := make([]Op, 0, len(ops))
		for j := i; j < len(ops); j++ {
			if !sent[j] && sameWindows(ops[i], ops[j]) {
				sent[j] = true
				at, call = append(at, j), append(call, ops[j])
			}
		}
		size := 1
		for size < len(call) {
			size *= 4
		}
		for len(call) < size {
			call = append(call, call[len(call)-1])
		}
		got, err := e.store.Do(ctx, call)
		if err != nil || len(got) != len(call) {
			return nil
		}
		for k, j := range at {
			res[j] = got[k]
		}
	}
	return res
}

// sameWindows reports whether a and b are log ops of the same windows.
func sameWindows(a, b Op) bool {
	la, ok := a.(*LogOp)
	lb, ok2 := b.(*LogOp)
	return ok && ok2 && slices.Equal(la.Windows, lb.Windows)
}

// refund undoes what a check reserved when its verdict was not Proceed
// though the store that answered let it through (only when a full store's
// held state refused it): the gates' undos of the charged ops. It runs on
// the store that answered the check; a failure here is left to expiry.
func (e *Engine) refund(ctx context.Context, p *plan, gates []Gate, b batch) {
	back := Undos(p.ops, gates, b.res)
	if len(back) == 0 {
		return
	}
	st := e.store
	if b.src == SourceFallback {
		st = e.fallback
	}
	_, _ = st.Do(context.WithoutCancel(ctx), back)
}
