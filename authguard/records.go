package authguard

import "context"

// A record is a log that holds one member, "v", while a fact about an
// account holds: a known network (the account succeeded from it with an
// attempt token) or a verified destination (and the network it was
// verified from). A success writes it (a roleCredit LogAdd); a check reads
// it with a peek of another member (roleVerified), which is Over exactly
// when the record is there. An owner it names is exempt from a shared wait
// (network, owner in plan.go).
//
// The fallback store holds no record: a record is made once and lives for
// months, so the fallback, which starts empty and counts only what an
// outage brings, would read every owner as unknown and hold her to the
// account's delay an attacker elsewhere made, for as long as that delay
// and not the outage lasts. So each engine remembers the records the store
// was last seen to hold (Engine.records, bounded as the recall is, in a
// budget of its own so that neither can push the other's entries out), and
// while the store fails it writes those a batch peeks into the fallback
// before the fallback runs the batch: the owner is exempt there as on the
// store, her allowance is spent there, and the write-back gives the store
// what she spent.

// recordMember is the one member of a record.
const recordMember = "v"

// learnRecords remembers, from the store's answer res to p's ops, the
// records the store holds: one a peek found, or one a success wrote, for
// as long as it can last (its window, from now). A peek that found none
// forgets it, and deletes the copy an outage may have written into the
// fallback (seedRecords), which would outlive the memory: the fallback
// reads a record with the peek's own window, months long.
func (e *Engine) learnRecords(ctx context.Context, p *plan, res []Result) {
	if e.records == nil || len(res) != len(p.ops) {
		return
	}
	ms := e.now().UnixMilli()
	for i, op := range p.ops {
		l, ok := op.(*LogOp)
		if !ok {
			continue
		}
		switch ro := p.meta[i].role; {
		case ro == roleVerified && res[i].Over, ro == roleCredit && l.Action == LogAdd && l.Member == recordMember:
			until := ms + l.Windows.Longest().Milliseconds()
			e.records.put(recalled{key: l.Key, over: until, expires: until})
		case ro == roleVerified && e.records.n.Load() > 0:
			if e.records.forget(l.Key) && e.fallback != nil {
				_, _ = e.fallback.Do(context.WithoutCancel(ctx), []Op{&DeleteOp{Key: l.Key}})
			}
		}
	}
}

// seedRecords writes into the fallback, before it runs ops while the store
// fails, the records ops peek that the store was last seen to hold. The
// copy stays there until the store's next answer says the record is gone
// (learnRecords), an administrator's reset through this engine deletes it,
// or the fallback evicts it.
func (e *Engine) seedRecords(ctx context.Context, ops []Op) {
	if e.records == nil || e.records.n.Load() == 0 || e.fallback == nil {
		return
	}
	ms := e.now().UnixMilli()
	var seed []Op
	for _, op := range ops {
		l, ok := op.(*LogOp)
		if !ok || l.Action != LogPeek {
			continue
		}
		if _, ok := e.records.get(l.Key, ms); ok {
			seed = append(seed, &LogOp{Key: l.Key, Action: LogAdd, Member: recordMember, Windows: l.Windows})
		}
	}
	if seed != nil {
		_, _ = e.fallback.Do(ctx, seed)
	}
}
