package authguard

import (
	"context"
	"errors"
	"time"
)

// ExplainRequest names a subject to explain in a flow: the parts a call of
// the flow would carry, any of which may be left out (the rules that count
// a missing part are then not shown).
type ExplainRequest struct {
	Tenant string
	Flow   string
	// Account, IP, Destination and Channel are as in CheckRequest and
	// SendRequest; Destination and Channel go together.
	Account, IP, Destination, Channel string
}

// RuleState is one rule's state for the subject, as a check would find it
// now.
type RuleState struct {
	// Rule, Reason, Subject and Algorithm say which rule.
	Rule      string
	Reason    Reason
	Subject   string
	Algorithm Algorithm
	// Facet, when not FacetNone, says the row is not the rule's own state
	// but a part of it (a known network's record, its allowance, its
	// slot: rows of the device rule) or of a send flow's owner allowance
	// (no rule of the policy: Rule and Reason are then empty). Subject is
	// then what that part counts, and Algorithm the log that keeps it.
	Facet Facet
	// Count is a backoff's failures or a log's members in its longest
	// window; Remaining a rate rule's units left; Wait how long the next
	// call would wait; Over whether it would be past the limit; Reset how
	// long until the state is forgotten (rate rules).
	Count     int
	Remaining int
	Wait      time.Duration
	Over      bool
	Reset     time.Duration
}

// Explanation is what Explain found: each rule's state and the verdict a
// check (or send) would get now, without a CAPTCHA.
type Explanation struct {
	Flow    string
	Verdict Verdict
	Rules   []RuleState
	// Entries are the administrators' entries that decide for the subject
	// in this flow (AddEntry): an allow that skips a kind of rule, or the
	// block or captcha entry that refuses it.
	Entries []Entry
}

// ErrStoreNotAnswering is returned by Explain when the store does not
// answer: there is nothing to explain from.
var ErrStoreNotAnswering = errors.New("authguard: the store does not answer")

// Explain reads, without counting anything, the state of every rule of a
// flow that counts the subject of req, for a support desk's "why was I
// delayed?". It answers from the store only (never the fallback). Invalid
// input is an *InputError; the answer holds no identifier.
func (e *Engine) Explain(ctx context.Context, req ExplainRequest) (Explanation, error) {
	slot, err := e.admit(ctx)
	if err != nil {
		return Explanation{}, err
	}
	defer release(slot)
	f := e.policyFor(req.Tenant).Flow(req.Flow)
	if f == nil {
		return Explanation{}, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	s, err := e.subjectsOf(sentParts{kind: f.Kind, tenant: req.Tenant, flow: req.Flow, account: req.Account, ip: req.IP, optional: true})
	if err != nil {
		return Explanation{}, err
	}
	var refused Reason
	if req.Destination != "" || req.Channel != "" {
		switch f.Kind {
		case Sends:
			d, err := e.sendSubjects(&s, req.Channel, req.Destination)
			if err != nil {
				return Explanation{}, err
			}
			refused = f.Send.refuses(&d)
		default:
			if _, err := e.verifiedSubjects(&s, req.Channel, req.Destination); err != nil {
				return Explanation{}, err
			}
		}
	}
	p := e.checkPlan(&s, "", "explain", false)
	res := e.peek(context.WithoutCancel(ctx), p.ops)
	if res == nil && len(p.ops) > 0 {
		return Explanation{}, ErrStoreNotAnswering
	}
	x := Explanation{Flow: f.Name, Verdict: e.combine(f, &p, batch{res: res, src: SourceStore}, false)}
	if v, ok := s.match.verdict(f.Kind, e.now, false); ok {
		x.Verdict = v
	}
	if refused != "" {
		x.Verdict = Verdict{Action: Deny, Reasons: []Reason{refused}}
	}
	for _, m := range s.match.matched {
		x.Entries = append(x.Entries, *m)
	}
	for i, m := range p.meta {
		r := &f.Rules[m.rule]
		st := RuleState{
			Rule: r.Name, Reason: r.Reason, Subject: r.Subject.String(), Algorithm: r.Algorithm, Facet: m.facet,
			Count: res[i].Count, Remaining: res[i].Remaining, Wait: res[i].Wait, Over: res[i].Over, Reset: res[i].Reset,
		}
		if m.facet != FacetNone {
			st.Subject, st.Algorithm = m.facet.subject(), SlidingLog
			if !m.facet.ownRule() {
				st.Rule, st.Reason = "", ""
			}
		}
		x.Rules = append(x.Rules, st)
	}
	return x, nil
}

// KeyDeleter is a Store that deletes keys by pattern, for Reset.
type KeyDeleter interface {
	// DeleteMatching deletes every key matching a glob (* and ?) and
	// returns how many it deleted.
	DeleteMatching(ctx context.Context, pattern string) (int, error)
}

// ResetRequest clears a subject's state in a flow: an account's counters
// (every key of the account in the flow, its devices' included), an IP
// prefix's logs and buckets, or a destination's quotas. Exactly one of
// Account, IP and Destination (with Channel); Reason is required, for the
// audit log.
type ResetRequest struct {
	Tenant, Flow                      string
	Account, IP, Destination, Channel string
	Reason                            string
	// Ref is, for an account, the caller's opaque reference for it, as in
	// CheckRequest: passed only to the account.reset notice.
	Ref string
}

// MaxReasonBytes bounds a reset's reason.
const MaxReasonBytes = 200

// Reset deletes the state of one subject in one flow, in the store and in
// the fallback store, and returns how many keys the store deleted. Rules
// on the subject's wider groups (an IPv6 /48, a destination's block or
// country) and compound subjects of an IP or destination are left alone:
// they are other people's too. Invalid input is an *InputError.
func (e *Engine) Reset(ctx context.Context, req ResetRequest) (int, error) {
	slot, err := e.admit(ctx)
	if err != nil {
		return 0, err
	}
	defer release(slot)
	f := e.policyFor(req.Tenant).Flow(req.Flow)
	if f == nil {
		return 0, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	if req.Reason == "" || len(req.Reason) > MaxReasonBytes {
		return 0, &InputError{Field: "reason", Detail: "is required: at most 200 bytes saying why, with no identifier", Missing: req.Reason == ""}
	}
	given := 0
	for _, v := range []string{req.Account, req.IP, req.Destination} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return 0, &InputError{Field: "account", Detail: "give exactly one of account, ip and destination"}
	}
	if err := checkRef(req.Ref); err != nil {
		return 0, err
	}
	s, err := e.subjectsOf(sentParts{kind: f.Kind, tenant: req.Tenant, flow: req.Flow, account: req.Account, ip: req.IP, optional: true})
	if err != nil {
		return 0, err
	}
	ctx = context.WithoutCancel(ctx)
	if req.Account != "" {
		n, err := e.deleteMatching(ctx, keyGlob(s.keys, s.tenant, f.Name, "*", s.account))
		if err == nil {
			e.resetNotice(&s, req.Account, req.Ref, n)
			e.heldReset(ctx, &s, HeldAccount, s.account)
		}
		return n, err
	}
	part := PartIP
	if req.Destination != "" {
		part = PartDestination
		if f.Kind == Sends {
			_, err = e.sendSubjects(&s, req.Channel, req.Destination)
		} else {
			_, err = e.verifiedSubjects(&s, req.Channel, req.Destination)
		}
		if err != nil {
			return 0, err
		}
	}
	var ops []Op
	for i := range f.Rules {
		r := &f.Rules[i]
		if r.Subject.Parts != part || r.Subject.IPBits != 0 {
			continue
		}
		if key := e.key(&s, r); key != "" {
			ops = append(ops, &DeleteOp{Key: key})
		}
	}
	if len(ops) == 0 {
		return 0, nil
	}
	if e.fallback != nil {
		_, _ = e.fallback.Do(ctx, ops)
	}
	e.recall.learn(ops, make([]Result, len(ops)), false, e.now())
	if _, err := e.store.Do(ctx, ops); err != nil {
		return 0, err
	}
	if part == PartIP {
		e.heldReset(ctx, &s, HeldIP, s.ip)
	}
	return len(ops), nil
}

// deleteMatching deletes the keys matching pattern in the store and the
// fallback store.
func (e *Engine) deleteMatching(ctx context.Context, pattern string) (int, error) {
	d, ok := e.store.(KeyDeleter)
	if !ok {
		return 0, errors.New("authguard: the store cannot delete keys by pattern")
	}
	if fd, ok := e.fallback.(KeyDeleter); ok {
		_, _ = fd.DeleteMatching(ctx, pattern)
	}
	e.recall.forgetMatching(pattern)
	e.records.forgetMatching(pattern)
	return d.DeleteMatching(ctx, pattern)
}
