package authguard

import "context"

// Gate is what a check's operation stands for when the check is decided: how
// its result blocks the check, and whether a blocked check undoes what the
// operation reserved (Undo of the operation, when its result is Charged).
type Gate struct {
	Block Block
	Undo  bool
}

// Reserver is a Store that can run a check's batch and, in the same atomic
// step, undo its reservations when the check would not proceed: one round
// trip for any check, and no moment at which others see a reservation that
// is about to be undone. Its semantics are those of Reserve.
type Reserver interface {
	// DoCheck applies ops; when Blocked(gates, results, captchaSolved), it
	// then applies Undo(ops[i]) for every op i whose gate says Undo and
	// whose result is Charged. It returns the results of ops and whether it
	// undid.
	//
	// It may apply ops in order and, once a BlockDelay, BlockQueue,
	// BlockCaptcha or BlockDeny result has blocked the check, apply each later op whose
	// gate says Undo as its peek instead: its reservation would be undone
	// anyway, and a peek gives the same Wait and Over with Charged false and
	// nothing written. Likewise, when such a result does block the check,
	// the ops before it whose gate says Undo may have been applied as their
	// peeks (a store that expected the block, as the Redis store on a
	// Cluster does). (Reserve's results differ from such a store's only in
	// Charged and Count of those ops, which a refused check does not read,
	// and in a log or counter at its cap, where a reservation and its undo
	// push out the oldest entry and a peek does not.) A spare allowance
	// (BlockOwner, BlockAllowanceSolved) after a result that makes the check
	// not exempt (an allowance Over, a BlockVerified result not Over) may be
	// left out, its result zero: it can exempt nothing then, and no verdict
	// reads it.
	DoCheck(ctx context.Context, ops []Op, gates []Gate, captchaSolved bool) ([]Result, bool, error)
}

// Undo returns the operation that undoes what op reserved: a backoff
// charge's refund, a log admission's removal, a rate take's give-back; nil
// for any other operation. It is op with the action UndoAction names.
func Undo(op Op) Op { return withAction(op, BackoffRefund, LogRemove, RateRefund) }

// withAction returns a copy of op with the action of its kind; nil for an
// operation that is none of the three.
func withAction(op Op, b BackoffAction, l LogAction, r RateAction) Op {
	switch op := op.(type) {
	case *BackoffOp:
		c := *op
		c.Action = b
		return &c
	case *LogOp:
		c := *op
		c.Action = l
		return &c
	case *RateOp:
		c := *op
		c.Action = r
		return &c
	}
	return nil
}

// PeekOf returns op as its peek: the same key and parameters, read without
// changing anything (a backoff peek carries no attempt); nil for an
// operation that has none.
func PeekOf(op Op) Op {
	p := withAction(op, BackoffPeek, LogPeek, RatePeek)
	if b, ok := p.(*BackoffOp); ok {
		b.Attempt = ""
	}
	return p
}

// UndoAction names the action of Undo(op) without building it ("" when op
// has no undo): for a store that reruns op's own arguments with it.
func UndoAction(op Op) string {
	switch op.(type) {
	case *BackoffOp:
		return BackoffRefund.String()
	case *LogOp:
		return LogRemove.String()
	case *RateOp:
		return RateRefund.String()
	}
	return ""
}

// Undos returns Undo of every op whose gate says Undo and whose result is
// Charged: what a blocked check gives back.
func Undos(ops []Op, gates []Gate, res []Result) []Op {
	var back []Op
	for i, g := range gates {
		if g.Undo && res[i].Charged {
			if u := Undo(ops[i]); u != nil {
				back = append(back, u)
			}
		}
	}
	return back
}

// Reserve is the reference semantics of Reserver.DoCheck, for any Store: Do
// of ops, with every spare allowance (BlockOwner, BlockAllowanceSolved) sent
// as its peek, then Finish. On a store that is not a Reserver that is one
// round trip for a check that proceeds with no shared wait, the common case,
// and one more for a refused check's undos or for an exemption.
func Reserve(ctx context.Context, st Store, ops []Op, gates []Gate, captchaSolved bool) ([]Result, bool, error) {
	if r, ok := st.(Reserver); ok {
		return r.DoCheck(ctx, ops, gates, captchaSolved)
	}
	// The spare allowances (log admissions) are sent as their peeks by
	// switching their action for the call, with no copy of ops or of them.
	actions, peeked := make([]LogAction, 0, 4), make([]int, 0, 4)
	for i, g := range gates {
		if lo, ok := ops[i].(*LogOp); ok && g.Spare() {
			actions, lo.Action = append(actions, lo.Action), LogPeek
			peeked = append(peeked, i)
		}
	}
	res, err := st.Do(ctx, ops)
	for j, i := range peeked {
		ops[i].(*LogOp).Action = actions[j]
	}
	if err != nil || len(res) != len(ops) {
		return res, false, err
	}
	return Finish(ctx, st, ops, gates, captchaSolved, res, peeked)
}

// applyAt runs the ops at which on st, for real, and puts their results
// in res.
func applyAt(ctx context.Context, st Store, ops []Op, res []Result, which []int) error {
	if len(which) == 0 {
		return nil
	}
	real := make([]Op, len(which))
	for j, i := range which {
		real[j] = ops[i]
	}
	got, err := st.Do(ctx, real)
	if err == nil && len(got) != len(real) {
		err = ErrStoreUnavailable
	}
	if err != nil {
		return err
	}
	for j, i := range which {
		res[i] = got[j]
	}
	return nil
}

// Spare reports whether the gate's op is a spare allowance: spent only on a
// check it exempted from a shared wait.
func (g Gate) Spare() bool { return g.Undo && reading(g.Block).Spare }

// Finish decides a check whose ops were sent to st with those at peeked as
// their peeks, res their results (updated in place), as Reserver.DoCheck
// would have: when the peeks already block the check, what was charged is
// undone; when not, the peeked ops but the spare allowances are applied for
// real (a store that expected a block was wrong), and then the spare
// allowances, only when a shared wait makes the check need the exemption
// they give; whatever then blocks the check undoes every charge. A failure
// of an undo is left to expiry.
func Finish(ctx context.Context, st Store, ops []Op, gates []Gate, captchaSolved bool, res []Result, peeked []int) ([]Result, bool, error) {
	apply := func(which []int) error { return applyAt(ctx, st, ops, res, which) }
	blocked := Blocked(gates, res, captchaSolved)
	if !blocked {
		var spares, others []int
		for _, i := range peeked {
			if gates[i].Spare() {
				spares = append(spares, i)
			} else {
				others = append(others, i)
			}
		}
		if err := apply(others); err != nil {
			return nil, false, err
		}
		if !Blocked(gates, res, captchaSolved) && sharedWait(gates, res) {
			if err := apply(spares); err != nil {
				return nil, false, err
			}
		}
		blocked = Blocked(gates, res, captchaSolved)
	}
	if blocked {
		if back := Undos(ops, gates, res); len(back) > 0 {
			_, _ = st.Do(ctx, back)
		}
	}
	return res, blocked, nil
}

// sharedWait reports whether a Shared result has a wait: a check that
// proceeds spends its spare allowances only then (an exemption).
func sharedWait(gates []Gate, res []Result) bool {
	for i, g := range gates {
		if reading(g.Block).Shared && res[i].Wait > 0 {
			return true
		}
	}
	return false
}

// gates returns each op's gate: its Block, as the plan gave it, and
// whether a blocked check undoes it: backoff charges are refunded, log
// admissions removed, and the units of rules that count proceeds given
// back; rules that count checks keep theirs, and a verified record's peek
// has nothing to undo.
func (p *plan) gates(f *Flow) []Gate {
	var gates []Gate
	if b := p.buf; b != nil && len(p.ops) <= len(b.gates) {
		gates = b.gates[:len(p.ops)]
	} else {
		gates = make([]Gate, len(p.ops))
	}
	for i, op := range p.ops {
		m := p.meta[i]
		_, isRate := op.(*RateOp)
		gates[i] = Gate{Block: m.role, Undo: (!isRate || f.Rules[m.rule].Counts == OnProceed) && m.role != roleVerified}
	}
	return gates
}
