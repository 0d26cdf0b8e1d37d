package authguard

import "context"

// Gate says how one operation's result bears on whether a check proceeds:
// what combine reads it as. A store that runs a check in one step uses the
// gates to decide, as combine would, whether to undo the check's
// reservations at once.
type Gate uint8

const (
	// GateNone: the result never blocks.
	GateNone Gate = iota
	// GateDelay blocks when the result has a Wait.
	GateDelay
	// GateQueue blocks when the result has a Wait and is Over: a leaky
	// bucket, whose admitted calls carry their place in the queue as Wait.
	GateQueue
	// GateCaptcha blocks when the result is Over and no CAPTCHA was solved.
	GateCaptcha
	// GateAllowance never blocks on its own; Over makes the device not
	// exempt from GateShared.
	GateAllowance
	// GateShared blocks when the result has a Wait, unless every
	// GateAllowance result of the batch is within its limit.
	GateShared
)

// Reserver is a Store that can run a check's batch and, in the same atomic
// step, undo its reservations when the check would not proceed: one round
// trip for any check, and no moment at which others see a reservation that
// is about to be undone. Its semantics are those of Reserve.
type Reserver interface {
	// DoCheck applies ops; when Blocked(gates, results, captchaSolved), it
	// then applies undo[i] for every op i whose result is Charged and whose
	// undo is not nil. It returns the results of ops and whether it undid.
	DoCheck(ctx context.Context, ops []Op, gates []Gate, undo []Op, captchaSolved bool) ([]Result, bool, error)
}

// Blocked reports whether results, read through their gates, keep a check
// from proceeding. It agrees with the engine's verdict: Proceed exactly when
// not Blocked (TestGates_AgreeWithCombine).
func Blocked(gates []Gate, res []Result, captchaSolved bool) bool {
	exempt := true
	for i, g := range gates {
		if g == GateAllowance && res[i].Over {
			exempt = false
		}
	}
	for i, g := range gates {
		r := res[i]
		switch {
		case g == GateDelay && r.Wait > 0,
			g == GateQueue && r.Wait > 0 && r.Over,
			g == GateCaptcha && r.Over && !captchaSolved,
			g == GateShared && r.Wait > 0 && !exempt:
			return true
		}
	}
	return false
}

// Reserve is the reference semantics of Reserver.DoCheck, for any Store:
// Do(ops), then, when Blocked, Do of the undos of the charged ops. On a
// store that is not a Reserver that is two round trips.
func Reserve(ctx context.Context, st Store, ops []Op, gates []Gate, undo []Op, captchaSolved bool) ([]Result, bool, error) {
	if r, ok := st.(Reserver); ok {
		return r.DoCheck(ctx, ops, gates, undo, captchaSolved)
	}
	res, err := st.Do(ctx, ops)
	if err != nil || len(res) != len(ops) || !Blocked(gates, res, captchaSolved) {
		return res, false, err
	}
	var back []Op
	for i, u := range undo {
		if u != nil && res[i].Charged {
			back = append(back, u)
		}
	}
	if len(back) > 0 {
		_, _ = st.Do(ctx, back) // a failure here is left to expiry
	}
	return res, true, nil
}

// gates returns, for each op of the plan, its gate and the op that undoes
// its reservation (nil for none): backoff charges are refunded, log
// admissions removed, and the units of rules that count proceeds given
// back; rules that count checks keep theirs.
func (p *plan) gates(f *Flow) ([]Gate, []Op) {
	gates, undo := make([]Gate, len(p.ops)), make([]Op, len(p.ops))
	for i, op := range p.ops {
		m := p.meta[i]
		rule := &f.Rules[m.rule]
		switch {
		case m.role == roleAllowance:
			gates[i] = GateAllowance
		case m.role == roleShared:
			gates[i] = GateShared
		case rule.Past == PastCaptcha:
			gates[i] = GateCaptcha
		case rule.Algorithm == LeakyBucket:
			gates[i] = GateQueue
		default:
			gates[i] = GateDelay
		}
		switch op := op.(type) {
		case *BackoffOp:
			r := *op
			r.Action = BackoffRefund
			undo[i] = &r
		case *LogOp:
			r := *op
			r.Action = LogRemove
			undo[i] = &r
		case *RateOp:
			if rule.Counts == OnProceed {
				r := *op
				r.Action = RateRefund
				undo[i] = &r
			}
		}
	}
	return gates, undo
}
