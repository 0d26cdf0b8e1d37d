package authguard

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// reportPasswordChanged is Report with PasswordChanged: the caller changed
// or reset the account's password (after verifying whatever its change
// asks for: the old password, a link, a code) and tells tollgate, so that
// the account's failure state goes without an administrator's reset.
//
// It deletes the account's counters in the flows of that password: the
// reported flow and every other attempts flow that trusts the same device
// tokens (DeviceTrust), which are the flows the same credential signs in
// by. Deleted are the rules counting the account alone (account_backoff)
// and the counter the account's devices share past their allowances;
// kept are the devices' own allowances and slots, the known networks and
// the device tokens (every token stays valid), and every counter of an
// address, a password fingerprint or a compound subject.
//
// Why a caller with verdicts scope may do this: it is a claim the caller
// makes after verifying the change, trusted as its success reports are
// (a success already refunds and takes the account off the spray logs).
// An attacker who does not control the caller cannot report it; one who
// can change the password (a stolen mailbox) holds the new password and
// has no guesses to renew. What the account's guesser gets from an owner's
// change is one fresh ramp against a password he has never tried, and his
// address keeps every count (ip_failures, ip_spray): the address is never
// cleared. Second-factor flows and the flows of other factors (another
// DeviceTrust) are never touched, so that a mailbox thief who resets the
// password again and again cannot renew his guesses at a one-time code.
//
// The work is one delete per such rule of the policy, the same whether or
// not the account exists. The answer is Proceed, with no device token:
// a password change is not a sign-in. A flow that counts no account, or a
// step-up flow, refuses it with an *InputError on "outcome"; no attempt
// token is taken (there is no check to settle).
func (e *Engine) reportPasswordChanged(ctx context.Context, s *subjects, req *ReportRequest) (Verdict, error) {
	switch {
	case s.flow.SecondFactor:
		return Verdict{}, &InputError{Field: "outcome", Detail: `"password_changed" is for a flow that checks a password, not a step-up flow`}
	case s.flow.Kind != Attempts || s.account == "":
		return Verdict{}, &InputError{Field: "outcome", Detail: `"password_changed" needs a flow that counts the account, and the account`}
	case req.Attempt != "":
		return Verdict{}, &InputError{Field: "attempt", Detail: `is not taken with "password_changed": a password change settles no attempt`}
	case req.Breached || req.Destination != "" || req.Channel != "":
		return Verdict{}, &InputError{Field: "outcome", Detail: `"password_changed" takes the flow, account, ip and ref only`}
	}
	if err := checkRef(req.Ref); err != nil {
		return Verdict{}, err
	}
	flows := e.passwordFlows(s)
	var ops []Op
	revoke := false
	for _, f := range flows {
		ops = e.accountOps(ops, s, f)
		revoke = revoke || f.RevokeDevicesOnPasswordChange
	}
	if revoke { // token.go: every device token issued before now is no token
		ops = append(ops, deviceGenOp(s, s.flow, BackoffFail))
	}
	ctx = context.WithoutCancel(ctx) // half a clear would leave the owner held
	if e.fallback != nil {
		_, _ = e.fallback.Do(ctx, ops)
	}
	e.recall.learn(ops, make([]Result, len(ops)), false, e.now())
	start := time.Now()
	_, err := e.store.Do(ctx, ops)
	src := SourceStore
	if err != nil {
		src = SourceFallback // the fallback's copy is cleared; the store's forgets in a day
	} else {
		e.heldCleared(ctx, s, flows)
	}
	var rec *EventSubjects
	if e.recordSubjects { // the decision log names the account cleared, so that replay clears it too
		rec = e.record(s, "", "")
	}
	e.decided(ctx, Event{Call: "report", Tenant: s.tenant, Flow: s.flow.Name, Outcome: PasswordChanged, Attempt: AttemptSettled, // nothing to settle, and not an unsettled report
		Source: src, StoreErr: err, StoreDuration: time.Since(start), Subjects: rec})
	if e.notices.to != nil && s.flow.Notices.Emits(NoticeReset) {
		sc := *s
		e.notify(&callNotices{s: &sc, subject: req.Account, ref: req.Ref}, Notice{Type: NoticeReset, Reason: "password_changed",
			Subject: req.Account, Details: map[string]any{"keys": len(ops)}}, "")
	}
	return Verdict{Action: Proceed}, nil
}

// passwordFlows are the flows a password change (reportPasswordChanged)
// clears the account's counters in (accountOps): each attempts flow of the
// policy that is not a step-up flow and trusts s.flow's device tokens.
func (e *Engine) passwordFlows(s *subjects) []*Flow {
	var flows []*Flow
	for _, name := range s.policy.FlowNames() {
		f := s.policy.Flow(name)
		if f.Kind != Attempts || f.SecondFactor || f.DeviceTrust != s.flow.DeviceTrust {
			continue
		}
		flows = append(flows, f)
	}
	return flows
}

// accountOps appends to ops the deletes of the account's counters in flow
// f: the key of every rule on the account alone, and the counter its
// devices share.
func (e *Engine) accountOps(ops []Op, s *subjects, f *Flow) []Op {
	fs := *s
	fs.flow = f
	for i := range f.Rules {
		r := &f.Rules[i]
		switch r.Subject.Parts {
		case PartAccount:
			if key := e.key(&fs, r); key != "" {
				ops = append(ops, &DeleteOp{Key: key})
			}
		case PartDevice: // the shared counter, as devices keys it
			ops = append(ops, &DeleteOp{Key: storeKey(s.keys, s.tenant, f.Name, r.Key, s.account)})
		}
	}
	return ops
}

// clearOnSuccess deletes the account's counters in the flows that s.flow's
// SuccessClears names, after a settled success of s.flow. The deletes go
// to the fallback and the store, as a password change's; a store error
// leaves those counters to forget on their own.
func (e *Engine) clearOnSuccess(ctx context.Context, s *subjects) {
	var ops []Op
	var flows []*Flow
	for _, name := range s.flow.SuccessClears {
		if f := s.policy.Flow(name); f != nil {
			ops = e.accountOps(ops, s, f)
			flows = append(flows, f)
		}
	}
	if len(ops) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if e.fallback != nil {
		_, _ = e.fallback.Do(ctx, ops)
	}
	e.recall.learn(ops, make([]Result, len(ops)), false, e.now())
	if _, err := e.store.Do(ctx, ops); err == nil {
		e.heldCleared(ctx, s, flows)
	}
}

// checkSuccessClears checks each flow's SuccessClears: attempts flows of
// the policy that are not step-up flows, and not the flow itself. A policy
// of one flow is checked for the flow itself only (the config loader
// compiles flows one at a time for line numbers, then the whole).
func (p *Policy) checkSuccessClears(whole bool) error {
	for _, f := range p.flows {
		for _, name := range f.SuccessClears {
			g := p.flows[name]
			switch {
			case name == f.Name:
				return &FieldError{Flow: f.Name, Field: "SuccessClears", Err: errors.New("names the flow itself: its own success refunds its own attempt already")}
			case f.Kind != Attempts || f.SecondFactor:
				return &FieldError{Flow: f.Name, Field: "SuccessClears", Err: errors.New("is for an attempts flow that is not a step-up flow")}
			case !whole:
			case g == nil || g.Kind != Attempts || g.SecondFactor:
				return &FieldError{Flow: f.Name, Field: "SuccessClears", Err: fmt.Errorf("%q is not an attempts flow of the policy (a step-up flow's counters are a second factor's)", name)}
			}
		}
	}
	return nil
}
