package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// On a Cluster a check's keys live on different nodes, so no one script can
// decide it; authguard.Reserve's pipeline reserves everything, and a refused
// check needs a second pipeline to undo it: two round trips, and writes it
// undoes, on exactly the path an attack takes. So the store remembers, per
// key, until when an op of that key last blocked a check (a delay gate's
// Wait; an unsolved CAPTCHA or deny gate's Over, for a second). A check
// whose op is expected to block sends every other op it would undo as its
// peek: one pipeline, the same Wait and Over (the Reserver contract), and
// nothing written but what counts every check. When the hint was wrong (the
// account was cleared on another instance, say), the peeked ops are applied
// for real in a second pipeline and the check goes on as Reserve would,
// later by one round trip: a hint costs time when wrong, never a verdict.

// maxHints bounds the hints one Store keeps; past it they are dropped all at
// once (a flood of accounts in backoff then costs Reserve's two round trips,
// no more).
const maxHints = 10_000

// captchaHint is how long an unsolved CAPTCHA or deny gate is expected to
// keep blocking: its window's end is not in the result.
const captchaHint = time.Second

// hints are the keys expected to block a check, with until when. The keys
// are store keys: identifier hashes, never an identifier.
type hints struct {
	mu    sync.Mutex
	until map[string]time.Time
	// right and wrong count the checks sent on a hint, by whether it held.
	right, wrong atomic.Int64
	off          bool // tests only: always Reserve
}

// blocker returns the index of the first op expected to block the check at
// now, or -1.
func (h *hints) blocker(ops []authguard.Op, gates []authguard.Gate, solved bool, now time.Time) int {
	if h.off {
		return -1
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, op := range ops {
		if !predicts(gates[i].Block, solved) {
			continue
		}
		if t, ok := h.until[op.StoreKey()]; ok && now.Before(t) {
			return i
		}
	}
	return -1
}

// predicts reports whether a gate's block can be foretold by a hint: a
// delay, a CAPTCHA nobody solved, a deny, and a shared wait that blocked
// (an account's delay, which only a known network's client is exempt from:
// a hint that is wrong for her costs her a round trip). (Queue and
// allowance gates depend on more than their own key.)
func predicts(b authguard.Block, solved bool) bool {
	return b == authguard.BlockDelay || b == authguard.BlockShared || b == authguard.BlockDeny || (b == authguard.BlockCaptcha && !solved)
}

// learn records what res says about each predicting op's key: blocking
// until when, or not blocking (the hint goes).
func (h *hints) learn(ops []authguard.Op, gates []authguard.Gate, res []authguard.Result, solved bool, now time.Time) {
	blocked := len(res) == len(ops) && authguard.Blocked(gates, res, solved)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, op := range ops {
		g := gates[i].Block
		if !predicts(g, solved) || i >= len(res) {
			continue
		}
		var until time.Time
		switch r := res[i]; {
		case g == authguard.BlockDelay && r.Wait > 0, g == authguard.BlockShared && r.Wait > 0 && blocked:
			until = now.Add(r.Wait)
		case g != authguard.BlockDelay && r.Over:
			until = now.Add(captchaHint)
		}
		key := op.StoreKey()
		if until.IsZero() {
			delete(h.until, key)
			continue
		}
		if h.until == nil || len(h.until) >= maxHints {
			h.until = make(map[string]time.Time)
		}
		h.until[key] = until
	}
}

// learnFailures records, from a batch that is not a check (a report), the
// backoff counters its failures left waiting: the next check on such a key
// is refused by its delay gate until the wait ends. So the check after the
// failure that put an account in backoff is already one pipeline when the
// same instance saw that failure.
func (h *hints) learnFailures(ops []authguard.Op, res []authguard.Result, now time.Time) {
	if h.off {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, op := range ops {
		b, ok := op.(*authguard.BackoffOp)
		if !ok || i >= len(res) || res[i].Wait <= 0 || (b.Action != authguard.BackoffFail && b.Action != authguard.BackoffConfirm) {
			continue
		}
		if h.until == nil || len(h.until) >= maxHints {
			h.until = make(map[string]time.Time)
		}
		h.until[b.Key] = now.Add(res[i].Wait)
	}
}

// clock is the time hints are read against: the store's explicit time in
// tests, else the local clock (a hint only has to be about right).
func (s *Store) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// doClusterCheck is DoCheck where the batch cannot be one script: Reserve
// with the spare allowances deferred (reserveDeferred), or, when an op is
// expected to block, the speculative pipeline above.
func (s *Store) doClusterCheck(ctx context.Context, ops []authguard.Op, gates []authguard.Gate, solved bool) ([]authguard.Result, bool, error) {
	now := s.clock()
	b := s.hints.blocker(ops, gates, solved, now)
	if b < 0 {
		res, blocked, err := s.reserveDeferred(ctx, ops, gates, solved)
		if err == nil {
			s.hints.learn(ops, gates, res, solved, now)
		}
		return res, blocked, err
	}
	sent := make([]authguard.Op, len(ops))
	var peeked []int
	for i, op := range ops {
		sent[i] = op
		if i != b && gates[i].Undo {
			if p := authguard.PeekOf(op); p != nil {
				sent[i] = p
				peeked = append(peeked, i)
			}
		}
	}
	res, err := s.Do(ctx, sent)
	if err != nil {
		return nil, false, err
	}
	s.hints.learn(ops, gates, res, solved, now)
	if authguard.Blocked(gates, res, solved) {
		s.hints.right.Add(1)
	} else {
		// The hint was wrong: what was peeked is applied for real, and the
		// check goes on as Reserve goes on from its first pipeline.
		s.hints.wrong.Add(1)
	}
	return authguard.Finish(ctx, s, ops, gates, solved, res, peeked)
}

// reserveDeferred is authguard.Reserve on a Cluster with the spare
// allowances left out of the first pipeline, as one node's check.lua
// defers them: most checks never read them (a fresh login's network is
// not known to the account, and its account has no wait), and sent as
// peeks they were two of the account call's four ops. Their results are zero
// (within their limits) unless they could change the verdict
// (sparesMatter): then their peeks go in a second pipeline, before Finish
// spends them, so a check that an owner's known network exempts costs one
// round trip more, and is answered as Reserve answers it.
func (s *Store) reserveDeferred(ctx context.Context, ops []authguard.Op, gates []authguard.Gate, solved bool) ([]authguard.Result, bool, error) {
	spares := 0
	for _, g := range gates {
		if g.Spare() {
			spares++
		}
	}
	if spares == 0 || len(gates) != len(ops) {
		return authguard.Reserve(ctx, pipelined{s}, ops, gates, solved)
	}
	sent, idx := make([]authguard.Op, 0, len(ops)-spares), make([]int, 0, len(ops)-spares)
	for i, op := range ops {
		if !gates[i].Spare() {
			sent, idx = append(sent, op), append(idx, i)
		}
	}
	got, err := s.Do(ctx, sent)
	if err != nil {
		return nil, false, err
	}
	res := make([]authguard.Result, len(ops))
	for j, i := range idx {
		res[i] = got[j]
	}
	var peeked []int
	if sparesMatter(gates, res, solved) {
		peeks := make([]authguard.Op, 0, spares)
		for i, op := range ops {
			if gates[i].Spare() {
				peeks, peeked = append(peeks, authguard.PeekOf(op)), append(peeked, i)
			}
		}
		got, err := s.Do(ctx, peeks)
		if err != nil {
			// what the first pipeline charged is left to expiry, as
			// Finish leaves a failed undo
			return nil, false, err
		}
		for j, i := range peeked {
			res[i] = got[j]
		}
	}
	return authguard.Finish(ctx, s, ops, gates, solved, res, peeked)
}

// sparesMatter reports whether a check's spare allowances, left out of
// res (zero there), could change its verdict. They act only through the
// exemption from a shared result's wait: so only when a shared result
// waits, and the other results leave the check exempt, or not exempt but
// exempt were a CAPTCHA solved (a spare that is over would then turn the
// CAPTCHA asked for into the delay).
func sparesMatter(gates []authguard.Gate, res []authguard.Result, solved bool) bool {
	wait, bound, boundSolved := false, false, false
	for i, g := range gates {
		rd := g.Block.Reading()
		if rd.Shared && res[i].Wait > 0 {
			wait = true
		}
		if !g.Spare() {
			bound = bound || rd.Binds.Holds(res[i], solved)
			boundSolved = boundSolved || rd.Binds.Holds(res[i], true)
		}
	}
	return wait && !(bound && boundSolved)
}
