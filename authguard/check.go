package authguard

import (
	"context"
	"errors"
)

// Check decides whether an attempt may go ahead. A Proceed charges the
// attempt as a failure before the caller looks at the credential and carries
// an attempt token for the report; any other verdict leaves the counters as
// they were (rules that count checks keep what they took). Invalid input is
// an error (an *InputError), and so is a call shed because MaxInFlight calls
// are running (ErrOverloaded: nothing was counted); a store failure is
// answered by the flow's fail mode. A step-up flow's check (a try of a
// second factor) reserves too; its step_up_failed or step_up_passed report
// settles the try with this token after the ticket (stepup.go).
//
// A client with a valid device token for the account, trusted by a flow
// with a device rule, is counted by the device rule and by rules for all
// clients only: what others do from its address never slows it. Any other
// client is counted by the rules for unknown clients.
func (e *Engine) Check(ctx context.Context, req CheckRequest) (Verdict, error) {
	slot, busy := e.acquire(ctx, false, false)
	defer func() { release(slot) }()
	s, err := e.subjectsOf(sentParts{kind: Attempts, tenant: req.Tenant, flow: req.Flow, account: req.Account, ip: req.IP, fingerprint: req.PasswordFingerprint})
	if err != nil {
		return Verdict{}, err
	}
	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}
	if err := checkRef(req.Ref); err != nil {
		return Verdict{}, err
	}
	if req.Destination != "" || req.Channel != "" {
		if _, err := e.verifiedSubjects(&s, req.Channel, req.Destination); err != nil {
			return Verdict{}, err
		}
	}
	device, gen := e.deviceOf(&s, req.DeviceToken)
	id := randomID()

	p, b := plan{allowance: -1}, batch{src: SourceNone}
	var flooding plan // the plan flooded made, which reserve then runs
	computed, refused := s.match.verdict(Attempts, e.now, req.CaptchaSolved)
	if !refused && busy != nil {
		computed, refused, slot = e.flooded(ctx, &s, device, id, req.CaptchaSolved, &b, &flooding)
	}
	if !refused {
		p, b, computed = e.reserve(ctx, &s, device, id, req.CaptchaSolved, &flooding)
		if device != "" && revoked(&p, &b, gen) { // token.go: the owner changed the password since
			p, b, computed = e.revokedCheck(ctx, &s, &p, b, computed, id, req.CaptchaSolved)
			device = ""
		}
		if errors.Is(b.err, ErrOverloaded) {
			computed = s.flow.shed()
		}
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	if answer.Action == Proceed { // a step-up flow's too: its report settles the try (stepup.go)
		answer.Attempt = e.attempts.sign(s.tenant, s.flow.Name, s.account, attempt{
			device: device, id: id,
			exempt: p.allowance >= 0 && b.res != nil && b.res[p.allowance].Charged,
			shadow: computed.Action != Proceed,
		}, e.now().Add(s.flow.AttemptTTL))
	}
	var rec *EventSubjects
	if e.recordSubjects {
		attempt := ""
		if answer.Action == Proceed {
			attempt = id
		}
		rec = e.record(&s, device, attempt)
	}
	e.decided(ctx, Event{Call: "check", Tenant: s.tenant, Flow: s.flow.Name, Answer: answer, Computed: computed, Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	e.heldSeen(&s, req.Account, req.IP, &p, &b) // held.go: the index of who is held
	if e.notices.to != nil {
		sc := s // a copy: the notices keep theirs, so s stays on the stack
		c := callNotices{s: &sc, subject: req.Account, ref: req.Ref}
		e.ruleNotices(&c, &p, &b)
		e.storeNotice(&c, &b)
	}
	return answer, nil
}

// flooded decides a check or send that found no call slot free: answered
// from memory when what the store last said of its keys refuses it
// whatever the records the engine does not know say (b's source then says
// so; floodVerdict), else admitted once a slot frees up (a known device or
// network first) and left to the store, or shed with the flow's shed
// verdict. It returns the verdict, whether it is final, and the slot
// taken (nil for none). The plan it made is left in *p, for reserve.
func (e *Engine) flooded(ctx context.Context, s *subjects, device, id string, solved bool, b *batch, p *plan) (Verdict, bool, chan struct{}) {
	*p = e.checkPlan(s, device, id, solved)
	v, recalled, known := e.floodVerdict(s.flow, p, solved)
	if v.Action != Proceed {
		if recalled {
			b.src = SourceRecall
		}
		return v, true, nil
	}
	slot, err := e.acquire(ctx, device != "" || known, true)
	if err != nil {
		return s.flow.shed(), true, nil
	}
	return Verdict{}, false, slot
}

// reserve runs a check's (or send's) plan through Reserve and combines the
// verdict; a refused call's reservations are undone (in the store's script,
// or here when a full store's held state refused what it let through). The
// caller returns b.err when it is ErrOverloaded. It runs *planned when
// flooded made it (a plan has no clock in it, so waiting for a slot leaves
// it as it was), else makes the plan.
func (e *Engine) reserve(ctx context.Context, s *subjects, device, id string, solved bool, planned *plan) (plan, batch, Verdict) {
	p := *planned
	if p.ops == nil {
		p = e.checkPlan(s, device, id, solved)
	}
	e.generation(&p, s) // plan.go
	gates := p.gates(s.flow)
	b := e.do(ctx, s.flow, p.ops, &reservation{gates, solved})
	if errors.Is(b.err, ErrOverloaded) {
		return p, b, Verdict{}
	}
	if b.src == SourceStore {
		e.learnRecords(ctx, &p, b.res)
		e.learnAbsent(&p, b.res, false)
	}
	v := e.combine(s.flow, &p, b, solved)
	switch {
	case b.undone || b.res == nil:
	case v.Action != Proceed:
		e.refund(ctx, &p, gates, b)
	case b.src == SourceFallback && !errors.Is(b.err, ErrStoreFull):
		// What a check the fallback let through counted, for the store; a
		// refused one is refunded and leaves nothing to write back. An
		// owner allowance the fallback spent (it holds the records the
		// store was last seen to hold: records.go) is written back as
		// spent; one it only peeked writes nothing.
		ops, res := p.ops, b.res
		if p.owned {
			ops, res = nil, nil
			for i, op := range p.ops {
				if ro := p.meta[i].role; ro != roleVerified && ro != roleAllowance {
					ops, res = append(ops, op), append(res, b.res[i])
				}
			}
		}
		e.writeBack.add(ops, res)
	}
	return p, b, v
}
