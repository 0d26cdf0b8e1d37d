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
}

// ErrStoreNotAnswering is returned by Explain when the store does not
// answer: there is nothing to explain from.
var ErrStoreNotAnswering = errors.New("authguard: the store does not answer")

// Explain reads, without counting anything, the state of every rule of a
// flow that counts the subject of req, for a support desk's "why was I
// delayed?". It answers from the store only (never the fallback). Invalid
// input is an *InputError; the answer holds no identifier.
func (e *Engine) Explain(ctx context.Context, req ExplainRequest) (Explanation, error) {
	if err := e.admit(); err != nil {
		return Explanation{}, err
	}
	defer e.release()
	f := e.policy.Flow(req.Flow)
	if f == nil {
		return Explanation{}, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	s, err := e.subjectsOf(f.Kind, req.Tenant, req.Flow, req.Account, req.IP, "", false)
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
	if refused != "" {
		x.Verdict = Verdict{Action: Deny, Reasons: []Reason{refused}}
	}
	for i, m := range p.meta {
		r := &f.Rules[m.rule]
		x.Rules = append(x.Rules, RuleState{
			Rule: r.Name, Reason: r.Reason, Subject: r.Subject.String(), Algorithm: r.Algorithm,
			Count: res[i].Count, Remaining: res[i].Remaining, Wait: res[i].Wait, Over: res[i].Over, Reset: res[i].Reset,
		})
	}
	return x, nil
}
