package authguard

import (
	"context"
	"errors"

	"github.com/golang-jwt/jwt/v5"
)

// Report settles an attempt and returns the verdict for the next attempt of
// the same account from the same client. Each attempt settles once: a
// report sent again finds nothing left to settle and changes nothing.
//
// A success refunds the attempt's own charge (never failures that other
// attempts made, so an attacker cannot tell whether the owner logged in),
// takes the account off the log rules, and returns a device token. A
// failure confirms the charge.
//
// A report with an attempt token that is malformed, forged, or issued for
// another tenant, flow or account is the caller's bug: it is refused with
// an *InputError on "attempt" before any store operation, and changes
// nothing. A report with no token, or with one of this call that has
// expired (a check answered more than the flow's AttemptTTL ago), settles
// nothing and is counted on its own: a failure adds a failure to the one
// its check charged, a success refunds nothing. Its Event says so
// (Event.Attempt).
func (e *Engine) Report(ctx context.Context, req ReportRequest) (Verdict, error) {
	slot, err := e.acquire(ctx, true, true) // settlements go first: each follows a proceed
	if err != nil {
		return Verdict{}, err
	}
	defer release(slot)
	s, err := e.subjectsOf(sentParts{kind: Attempts, tenant: req.Tenant, flow: req.Flow, account: req.Account, ip: req.IP, fingerprint: req.PasswordFingerprint})
	if err != nil {
		return Verdict{}, err
	}
	if req.Outcome == PasswordChanged {
		return e.reportPasswordChanged(ctx, &s, &req) // passwordchange.go
	}
	if s.flow.SecondFactor {
		return e.reportStepUp(ctx, &s, &req)
	}
	if req.Outcome != Failure && req.Outcome != Success {
		return Verdict{}, &InputError{Field: "outcome", Detail: `must be "failure" or "success" ("step_up_passed" and "step_up_failed" are for a step-up flow)`}
	}
	var verified *subjects // the send flow's subjects of a verified destination
	if req.Destination != "" || req.Channel != "" {
		if verified, err = e.verifiedSubjects(&s, req.Channel, req.Destination); err != nil {
			return Verdict{}, err
		}
	}
	if len(req.Attempt) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "attempt", Detail: "must be at most 1024 bytes"}
	}
	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}
	if err := checkRef(req.Ref); err != nil {
		return Verdict{}, err
	}

	a, status := e.attempts.parse(req.Attempt, s.tenant, s.flow.Name, s.account, e.now())
	state := AttemptSettled
	switch status {
	case attemptMalformed:
		return Verdict{}, &InputError{Field: "attempt", Detail: "is not an attempt token: send the one the check's proceed returned, unchanged, or none"}
	case attemptForged:
		return Verdict{}, &InputError{Field: "attempt", Detail: "does not verify: it was altered, or issued for another tenant, flow or account, or under another secret; send the token this attempt's check returned, with the same flow and account"}
	case attemptMissing:
		state = AttemptMissing
	case attemptExpired:
		state = AttemptExpired
	}
	tokened := status == attemptValid
	device := e.deviceID(&s, req.DeviceToken)
	if tokened {
		device = a.device
	}

	var computed Verdict
	var stepUp []Reason
	// A flow with a StepUp policy learns the network only once the success
	// is known not to be stepped up (stepup.go).
	stepping := req.Outcome == Success && s.flow.StepUp.Flow != "" && s.account != ""
	b, p := batch{src: SourceNone}, plan{allowance: -1}
	genAt := -1
	if !(tokened && a.shadow) { // shadow mode refused that attempt: nothing to settle
		p = e.reportPlan(&s, device, req.Outcome, a, tokened, req.Breached)
		if req.Outcome == Success && tokened {
			e.knownNetwork(&p, &s, a, !stepping)
		}
		if device == "" {
			e.network(&p, &s, "", LogPeek)
		}
		if verified != nil && tokened && req.Outcome == Success {
			e.credit(&p, verified)
			e.verifiedOp(&p, verified)
		}
		if req.Outcome == Success {
			genAt = genIssueOps(&p, &s) // token.go: the generation the device token carries
		}
		b = e.do(ctx, s.flow, p.ops, nil)
		if b.src == SourceStore {
			e.learnRecords(ctx, &p, b.res)
		}
		if errors.Is(b.err, ErrOverloaded) {
			return Verdict{}, b.err
		}
		computed = e.combine(s.flow, &p, b, false)
		if stepping {
			stepUp = stepUpReasons(s.flow, &p, &b, device, req.Breached)
		}
	}
	if v, refused := s.match.verdict(Attempts, e.now, false); refused {
		computed = v // the next attempt's verdict
	}
	if stepping && tokened && (len(stepUp) == 0 || s.flow.Mode == Shadow) {
		e.learnNetwork(ctx, &s)
	}
	if len(stepUp) > 0 {
		computed = Verdict{Action: StepUp, Reasons: stepUp, Attempt: e.stepUpTicket(&s, device)}
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	used, issued, known := device, "", device != ""
	if req.Outcome == Success && s.account != "" && answer.Action != StepUp {
		if device == "" {
			device = randomID()
		}
		issued = device
		answer.DeviceToken = e.tokens.sign(&deviceClaims{
			Tenant: s.tenant, Trust: s.flow.DeviceTrust, Account: s.account, Device: device, Gen: issuedGen(&p, &b, genAt),
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(e.now(), s.flow.DeviceTokenTTL)},
		})
	}
	if req.Outcome == Success && tokened && computed.Action != StepUp && len(s.flow.SuccessClears) > 0 {
		e.clearOnSuccess(ctx, &s) // passwordchange.go: a settled success clears the flows it names
	}
	var rec *EventSubjects
	if e.recordSubjects {
		settled := ""
		if tokened {
			settled = a.id
		}
		rec = e.record(&s, used, settled)
		rec.Issued = issued
	}
	e.decided(ctx, Event{Call: "report", Tenant: s.tenant, Flow: s.flow.Name, Outcome: req.Outcome, Attempt: state,
		Answer: answer, Computed: computed, Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	e.heldSeen(&s, req.Account, req.IP, &p, &b) // held.go: the index of who is held
	if e.notices.to != nil {
		sc := s // a copy: the notices keep theirs, so s stays on the stack
		e.reportNotices(&callNotices{s: &sc, subject: req.Account, ref: req.Ref}, req.Outcome, known, &p, &b,
			reportSignals{stepUp: answer.Action == StepUp, reasons: stepUp, breached: req.Breached})
	}
	return answer, nil
}
