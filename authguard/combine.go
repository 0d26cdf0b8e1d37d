package authguard

import "time"

// combine turns results into a verdict: any deny rule past its limit
// denies; else the longest wait of a delay rule wins; else any captcha rule
// past its limit demands a CAPTCHA unless one was solved; else Proceed, held
// for the longest place in a leaky_bucket rule's queue.
//
// A known device is exempt from the wait of the account's shared device
// counter while its own allowance and its slot admit it. When the store was
// full, what it still holds (b.held) counts as well. With no results at all
// (the store failed and the flow fails closed) it is the flow's fail-closed
// delay, unless the store, full, still showed a longer wait.
func (e *Engine) combine(f *Flow, p *plan, b batch, captchaSolved bool) Verdict {
	exempt, needsSolve := true, false
	for _, res := range [][]Result{b.res, b.held} {
		for i, r := range res {
			if ro := p.meta[i].role; (ro == roleAllowance || ro == roleOwner || ro == roleAllowanceSolved) && r.Over {
				exempt = false
			}
		}
	}
	// A send's owner allowance needs the destination verified: read where
	// the batch was answered (the held state only when nothing answered).
	verified := b.res
	if verified == nil {
		verified = b.held
	}
	for i := range p.meta {
		switch p.meta[i].role {
		case roleVerified:
			if verified == nil || !verified[i].Over {
				exempt = false
			}
		case roleAllowanceSolved:
			needsSolve = true
		}
	}
	// Without a device the allowance takes a solved CAPTCHA: a send it
	// would exempt is asked for one instead of waiting.
	solvable := exempt && needsSolve && !captchaSolved
	if solvable {
		exempt = false
	}
	var wait, queue, sharedWait time.Duration
	var delayed, captcha, queued, denied, shared reasonSet
	read := func(res []Result) {
		for i, r := range res {
			m := p.meta[i]
			switch m.role {
			case roleAllowance, roleOwner, roleAllowanceSolved, roleCredit, roleVerified:
				continue
			case roleShared:
				if exempt {
					continue
				}
				if solvable && r.Wait > 0 && f.Rules[m.rule].Past == PastDelay {
					// a CAPTCHA would exempt it
					sharedWait = max(sharedWait, r.Wait)
					shared.add(f.reasonOf[m.rule])
					continue
				}
			}
			rule := &f.Rules[m.rule]
			switch {
			case rule.Past == PastDeny:
				if r.Over {
					denied.add(f.reasonOf[m.rule])
				}
			case rule.Past == PastCaptcha:
				if r.Over && !captchaSolved {
					captcha.add(f.reasonOf[m.rule])
				}
			case r.Wait <= 0:
			case rule.Algorithm.Queues() && !r.Over: // admitted: its place in the queue
				queue = max(queue, r.Wait)
				queued.add(f.reasonOf[m.rule])
			default:
				wait = max(wait, r.Wait)
				delayed.add(f.reasonOf[m.rule])
			}
		}
	}
	read(b.res)
	read(b.held)
	if b.res == nil && wait <= f.FailClosedRetry {
		return Verdict{Action: Delay, Delay: f.FailClosedRetry, Reasons: []Reason{ReasonUnavailable}}
	}
	switch {
	case denied != 0:
		return Verdict{Action: Deny, Reasons: denied.list(f)}
	case wait > 0:
		return Verdict{Action: Delay, Delay: wait, Reasons: delayed.list(f)}
	case captcha != 0 || sharedWait > 0:
		return Verdict{Action: Captcha, Reasons: (captcha | shared).list(f)}
	case queue > 0:
		return Verdict{Delay: queue, Reasons: queued.list(f)}
	}
	return Verdict{}
}
