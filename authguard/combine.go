package authguard

import "time"

// combine turns results into a verdict by the verdict rule (readings), as
// Blocked decides whether there is one: any result that stops the check as
// Deny denies it; else the longest wait of one that stops it as Delay wins;
// else any that stops it as Captcha, or a Shared wait a solved CAPTCHA
// would exempt from, demands a CAPTCHA; else Proceed, held for the longest
// place in a queue.
//
// When the store was full, what it still holds (b.held) counts as well,
// where it shows something (a wait, an Over): an entry it lacks says
// nothing, so a condition on an absence (a record not there) is read where
// the batch was answered, in b.held only when nothing answered. With no
// results at all (the store failed and the flow fails closed) it is the
// flow's fail-closed delay, unless the store, full, still showed a longer
// wait.
func (e *Engine) combine(f *Flow, p *plan, b batch, captchaSolved bool) Verdict {
	answered := b.res
	if answered == nil {
		answered = b.held
	}
	var x exemption
	for i := range p.meta {
		ro := p.meta[i].role
		if reading(ro).Binds == 0 {
			continue
		}
		var r Result
		if answered != nil {
			r = answered[i]
		}
		x.read(ro, r, captchaSolved)
		if b.res != nil && b.held != nil {
			x.readHeld(ro, b.held[i], captchaSolved)
		}
	}
	var wait, queue time.Duration
	var delayed, captcha, queued, denied reasonSet
	read := func(res []Result) {
		for i, r := range res {
			m := p.meta[i]
			switch a, inQueue := reading(m.role).asks(r, captchaSolved, x); {
			case a == Deny:
				denied.add(f.reasonOf[m.rule])
			case a == Captcha:
				captcha.add(f.reasonOf[m.rule])
			case a == Delay:
				wait = max(wait, r.Wait)
				delayed.add(f.reasonOf[m.rule])
			case inQueue: // admitted: its place in the queue
				queue = max(queue, r.Wait)
				queued.add(f.reasonOf[m.rule])
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
	case captcha != 0:
		return Verdict{Action: Captcha, Reasons: captcha.list(f)}
	case queue > 0:
		return Verdict{Delay: queue, Reasons: queued.list(f)}
	}
	return Verdict{}
}
