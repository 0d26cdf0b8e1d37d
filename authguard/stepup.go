package authguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Step-up: a right password that an attacker may hold.
//
// Credential stuffing tries leaked account–password pairs, one guess per
// account, so no counter of the account ever fills: a stuffer holding the
// right password gets in at the first try. What tells it from the owner is
// what the owner has and the leak does not: her device token. So a success
// report of a flow with a StepUp policy is answered StepUp, not a device
// token, when
//
//   - the password is breached (ReportRequest.Breached), or
//   - the account's failures reached UnderAttackFailures, or
//   - a client without a device token, on a network the account never
//     signed in from, finds the account past NewDeviceFailures, or
//   - the address is past a CAPTCHA rule on addresses (spraying, or
//     stuffing: Rule.Breached).
//
// A valid device token of the account exempts from the first three: the
// owner at her known device is not stepped up for a password she reused,
// or for an attack on her account; an attacker holding the password only
// has no device token. An escalated address is not exempt: a stolen token
// used from a stuffing run's address meets the second factor too.
//
// The verdict is answered only after the password was verified, so it tells
// nothing to anyone who does not have the password. Its ticket (in
// Verdict.Attempt) is signed like attempt tokens and binds the tenant, the
// flow, the account and the device a device token will be issued for. The
// second factor is reported on the step-up flow (Flow.SecondFactor) with
// it: StepUpPassed issues the device token, StepUpFailed counts on the
// step-up flow's own counters, never the password's.
//
// Each try of a code is checked on the step-up flow first, and that check
// reserves as a login's does: a Proceed charges the try as a failure
// before the code is compared, and carries an attempt token, which the
// report carries after the ticket (StepUpAttemptSeparator) to settle the
// charge: a failure confirms it, a pass refunds it. So tries sent at the
// same moment, one per ticket of as many sign-ins, meet the counters each
// other's checks charged, and the step-up flow's bound holds for them as
// for tries sent one at a time.
//
// Of a success's effects, those that are about the password happen at once
// (its attempt's charge refunded, the account off the spray logs: the
// password was right, and a stuffer learns that anyway from the verdict);
// those that trust the client wait for the pass: the device token, and the
// known network (a network the account signed in from skips its delay, so
// a stuffer's network must not become one).

// StepUpPolicy says when a success report of the flow is answered StepUp.
// It is on when Flow is set.
type StepUpPolicy struct {
	// Flow names the step-up flow (Flow.SecondFactor) that the second
	// factor is reported on; empty turns step-up off. The default is "";
	// the built-in login names step_up.
	Flow string
	// BreachedOff stops a breached password (ReportRequest.Breached) from
	// being a reason on its own. The default is false: on.
	BreachedOff bool
	// UnderAttackFailures, when above zero, steps up a client without a
	// valid device token once the account's backoff counter (a Backoff
	// rule on the account alone) holds that many failures, this attempt's
	// own not counted; the counter forgets after its rule's ForgetAfter.
	// At most MaxUnderAttackFailures. The default is 0: off; the built-in
	// login has 10.
	UnderAttackFailures int
	// NewDeviceFailures, when above zero, steps up a client without a
	// valid device token, at a network the account never signed in from
	// (or any network with KnownNetworksOff), once the counter holds that
	// many failures: a lower bar than UnderAttackFailures, for the client
	// the owner is least likely to be. The default is 0: off; the built-in
	// login has 5.
	NewDeviceFailures int
	// EscalatedOff stops an escalated address (one past a Distinct rule of
	// accounts on the ip subject that answers captcha, such as ip_spray or
	// credential_stuffing) from being a reason. The default is false: on.
	EscalatedOff bool
	// TTL is how long a step-up ticket is valid, between MinAttemptTTL and
	// MaxAttemptTTL. The default is DefaultStepUpTTL (10m).
	TTL time.Duration
}

// DefaultStepUpTTL is StepUpPolicy.TTL's default: time to receive and type
// a code, short enough that a ticket is not a standing pass.
const DefaultStepUpTTL = 10 * time.Minute

// StepUpAttemptSeparator joins, in a step-up flow's report's attempt, the
// step-up ticket and the attempt token that the try's own check on the
// step-up flow returned: "<ticket>,<attempt token>". Neither contains it.
// The ticket alone is still a report, counted on its own (reportStepUp).
const StepUpAttemptSeparator = ","

// ticketVersion is the version byte of a step-up ticket: the attempt
// token's layout (attempt.go) under another version and another flow
// binding, so that neither passes for the other.
const ticketVersion = 2

// ticketFlow is what a ticket of a login flow binds in place of the flow's
// name: no flow is named so (':' is not in a flow name).
func ticketFlow(login string) string { return "step_up:" + login }

// compileStepUp validates the flow's StepUp policy and SecondFactor, and
// fills in their defaults. It runs after the rules are validated.
func (f *Flow) compileStepUp() error {
	su := &f.StepUp
	if su.TTL == 0 {
		su.TTL = DefaultStepUpTTL
	}
	if su.TTL < MinAttemptTTL || su.TTL > MaxAttemptTTL {
		return bad("StepUp.TTL", "must be between %v and %v, not %v", MinAttemptTTL, MaxAttemptTTL, su.TTL)
	}
	for _, n := range []struct {
		field string
		v     int
	}{{"StepUp.UnderAttackFailures", su.UnderAttackFailures}, {"StepUp.NewDeviceFailures", su.NewDeviceFailures}} {
		if n.v < 0 || n.v > MaxUnderAttackFailures {
			return bad(n.field, "must be between 0 (off) and %d, not %d", MaxUnderAttackFailures, n.v)
		}
	}
	if su.Flow != "" {
		switch {
		case !nameRE.MatchString(su.Flow):
			return bad("StepUp.Flow", "names a step-up flow: 1 to 32 lower-case letters, digits and underscores, starting with a letter")
		case f.Kind != Attempts || f.SecondFactor:
			return bad("StepUp", "is for flows of checks and reports that verify a password (not send flows or step-up flows)")
		case su.Flow == f.Name:
			return bad("StepUp.Flow", "names another flow, the step-up flow (second_factor: true)")
		}
	}
	if !f.SecondFactor {
		return nil
	}
	switch {
	case f.Kind != Attempts || f.Verifies != "":
		return bad("SecondFactor", "is for flows of checks and reports that verify no one-time codes of a send flow")
	case f.device >= 0:
		return bad("SecondFactor", "takes no device rule: a step-up flow issues no device tokens of its own")
	}
	for i := range f.Rules {
		if r := &f.Rules[i]; r.Algorithm != Backoff {
			return &RuleError{Flow: f.Name, Rule: r.Name, Err: errors.New("a step-up flow's rules are backoff counters: its checks charge each try and its step_up_failed and step_up_passed reports settle the charge")}
		}
	}
	return nil
}

// linkStepUps checks that each flow's StepUp names a step-up flow of the
// policy (when whole: a policy of one flow is a flow checked on its own)
// and indexes, per step-up flow, the flows whose tickets it takes.
func (p *Policy) linkStepUps(whole bool) error {
	p.stepUpOf = map[string][]*Flow{}
	for _, name := range p.FlowNames() {
		f := p.flows[name]
		if f.StepUp.Flow == "" {
			continue
		}
		sf := p.flows[f.StepUp.Flow]
		if sf == nil || !sf.SecondFactor {
			if whole {
				return &FieldError{Flow: f.Name, Field: "StepUp.Flow", Err: fmt.Errorf("%q is not a step-up flow (second_factor: true) of the policy", f.StepUp.Flow)}
			}
			continue
		}
		p.stepUpOf[sf.Name] = append(p.stepUpOf[sf.Name], f)
	}
	return nil
}

// stepUpReasons are the reasons a success report of a flow with a StepUp
// policy is answered StepUp, from the report's plan and results; none
// means it is not. device is the client's device ("" for none valid).
func stepUpReasons(f *Flow, p *plan, b *batch, device string, breached bool) []Reason {
	su := &f.StepUp
	known := device != ""
	var reasons []Reason
	if breached && !su.BreachedOff && !known {
		reasons = append(reasons, ReasonBreachedPassword)
	}
	failures, netKnown, escalated := 0, false, false
	for i, m := range p.meta {
		if i >= len(b.res) {
			break
		}
		r, res := &f.Rules[m.rule], b.res[i]
		switch {
		case m.facet == FacetKnownNetwork:
			netKnown = res.Over
		case m.facet != FacetNone:
		case r.accountBackoff() && m.role != roleCredit:
			failures = max(failures, res.Count)
		case r.Algorithm == Distinct && r.Of == PartAccount && r.Subject.Parts == PartIP && r.Past == PastCaptcha:
			escalated = escalated || res.Over
		}
	}
	if !known && su.UnderAttackFailures > 0 && failures >= su.UnderAttackFailures {
		reasons = append(reasons, ReasonAccountUnderAttack)
	}
	if !known && !netKnown && su.NewDeviceFailures > 0 && failures >= su.NewDeviceFailures {
		reasons = append(reasons, ReasonNewDeviceUnderAttack)
	}
	if escalated && !su.EscalatedOff {
		reasons = append(reasons, ReasonAddressEscalated)
	}
	return reasons
}

// stepUpTicket signs the ticket of a StepUp verdict: the device a device
// token will be issued for (the client's, or a new one), bound to the
// tenant, the flow and the account.
func (e *Engine) stepUpTicket(s *subjects, device string) string {
	t := attempt{device: device, id: randomID(), known: device != ""}
	if device == "" {
		t.device = randomID()
	}
	return e.attempts.seal(ticketVersion, s.tenant, ticketFlow(s.flow.Name), s.account, t, e.now().Add(s.flow.StepUp.TTL))
}

// learnNetwork makes the client's network known to the account after a
// success (knownNetwork's record), in a batch of its own: for a flow with
// a StepUp policy the record waits until the report's results say the
// success is not stepped up, or until the second factor passed.
func (e *Engine) learnNetwork(ctx context.Context, s *subjects) {
	p := plan{allowance: -1}
	e.knownNetwork(&p, s, attempt{}, true)
	if len(p.ops) == 0 {
		return
	}
	b := e.do(ctx, s.flow, p.ops, nil)
	if b.src == SourceStore {
		e.learnRecords(ctx, &p, b.res)
	}
}

// ticketStatus finds which flow of the policy issued a step-up report's
// ticket: each flow whose StepUp names the step-up flow is tried, the same
// number of HMACs whatever the account.
func (e *Engine) ticketOf(s *subjects, token string) (*Flow, attempt, attemptStatus) {
	status := attemptMalformed
	if token == "" {
		status = attemptMissing
	}
	var found *Flow
	var t attempt
	for _, f := range s.policy.stepUpOf[s.flow.Name] {
		a, st := e.attempts.open(ticketVersion, token, s.tenant, ticketFlow(f.Name), s.account, e.now())
		switch {
		case st == attemptValid && found == nil:
			found, t, status = f, a, st
		case st == attemptExpired && status != attemptValid:
			status = st
		case st == attemptForged && status == attemptMalformed:
			status = st
		}
	}
	return found, t, status
}

// reportStepUp is Report on a step-up flow: the second factor a StepUp
// verdict asked for, with its ticket and, after StepUpAttemptSeparator,
// the attempt token of the try's check on the step-up flow. StepUpFailed
// confirms that check's charge on the step-up flow's own counters (one
// failure, however often the report is sent) and answers the verdict of
// the next guess; StepUpPassed refunds the charge and answers Proceed with
// a device token for the flow that issued the ticket, whose network
// becomes known to the account. Without the check's attempt token, or with
// an expired one, a report settles nothing and is counted on its own, as
// before checks reserved: StepUpFailed counts one failure (on top of the
// one its check charged, if there was a check), StepUpPassed refunds
// nothing. A ticket missing, malformed, forged, expired, or issued for
// another tenant or account, or an attempt token after it that is
// malformed or not this account's step-up check's, is an *InputError on
// "attempt", before any store operation.
func (e *Engine) reportStepUp(ctx context.Context, s *subjects, req *ReportRequest) (Verdict, error) {
	if req.Outcome != StepUpPassed && req.Outcome != StepUpFailed {
		return Verdict{}, &InputError{Field: "outcome", Detail: `must be "step_up_passed" or "step_up_failed" on a step-up flow`}
	}
	if req.Destination != "" || req.Channel != "" {
		return Verdict{}, &InputError{Field: "destination", Detail: "is for flows that verify one-time codes of a send flow, not a step-up flow"}
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
	ticket, tried, _ := strings.Cut(req.Attempt, StepUpAttemptSeparator)
	login, t, status := e.ticketOf(s, ticket)
	switch status {
	case attemptMissing:
		return Verdict{}, &InputError{Field: "attempt", Detail: "is required on a step-up flow: send the ticket the step_up verdict carried"}
	case attemptMalformed:
		return Verdict{}, &InputError{Field: "attempt", Detail: "is not a step-up ticket: send the one the step_up verdict carried, unchanged"}
	case attemptForged:
		return Verdict{}, &InputError{Field: "attempt", Detail: "does not verify: it was altered, or issued for another tenant or account, or under another secret"}
	case attemptExpired:
		return Verdict{}, &InputError{Field: "attempt", Detail: "has expired: sign in again"}
	}
	a, tstatus := e.attempts.parse(tried, s.tenant, s.flow.Name, s.account, e.now())
	state := AttemptSettled
	switch tstatus {
	case attemptMalformed:
		return Verdict{}, &InputError{Field: "attempt", Detail: "carries after the ticket something that is not an attempt token: send the ticket, then the step-up check's attempt token unchanged, or the ticket alone"}
	case attemptForged:
		return Verdict{}, &InputError{Field: "attempt", Detail: "carries an attempt token that does not verify: send the one this try's check on the step-up flow returned, with the same account"}
	case attemptMissing:
		state = AttemptMissing
	case attemptExpired:
		state = AttemptExpired
	}
	// A check shadow mode would have refused charged nothing (its charge
	// was undone): its try is counted on its own, as one with no token.
	tokened := tstatus == attemptValid && !a.shadow
	ls, err := e.subjectsOf(sentParts{kind: Attempts, tenant: req.Tenant, flow: login.Name, account: req.Account, ip: req.IP, optional: true})
	if err != nil {
		return Verdict{}, err
	}
	ls.policy = s.policy
	if t.known && req.DeviceToken != "" {
		if d := e.deviceID(&ls, req.DeviceToken); d != "" && d != t.device {
			return Verdict{}, &InputError{Field: "attempt", Detail: "is bound to another device than the device token's: send the device token the login carried"}
		}
	}

	// The try's check charged it as a failure (checkPlan); the report
	// settles that charge as a login's report settles its check's
	// (reportPlan): a failure confirms it, a pass refunds it. A report
	// without the check's attempt token (or with an expired one) settles
	// nothing and is counted as before checks reserved: a failure counts
	// one more, on top of any its check charged; a pass refunds nothing.
	p, b := plan{allowance: -1}, batch{src: SourceNone}
	var computed Verdict
	switch {
	case req.Outcome == StepUpFailed && tokened:
		p = e.reportPlan(s, "", Failure, a, true, false)
	case req.Outcome == StepUpFailed:
		p = newPlan()
		for i := range s.flow.Rules {
			e.backoff(&p, s, i, BackoffFail, "")
		}
	case tokened:
		p = e.reportPlan(s, "", Success, a, true, false)
	}
	if len(p.ops) > 0 {
		b = e.do(ctx, s.flow, p.ops, nil)
		if b.src == SourceStore {
			e.learnRecords(ctx, &p, b.res)
		}
		if errors.Is(b.err, ErrOverloaded) {
			return Verdict{}, b.err
		}
	}
	if req.Outcome == StepUpFailed {
		computed = e.combine(s.flow, &p, b, false)
	} else {
		e.learnNetwork(ctx, &ls)
		computed.DeviceToken = e.tokens.sign(&deviceClaims{
			Tenant: ls.tenant, Trust: login.DeviceTrust, Account: ls.account, Device: t.device, Gen: e.stepUpGen(ctx, &ls, login),
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(e.now(), login.DeviceTokenTTL)},
		})
		if len(p.ops) == 0 {
			b.src = SourceStore
		}
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{DeviceToken: computed.DeviceToken}
	}
	var rec *EventSubjects
	if e.recordSubjects {
		settled := "" // the try's check's attempt, as a login's report records its own
		if tokened {
			settled = a.id
		}
		rec = e.record(s, t.device, settled)
		if req.Outcome == StepUpPassed {
			rec.Issued = t.device
		}
	}
	e.decided(ctx, Event{Call: "report", Tenant: s.tenant, Flow: s.flow.Name, Outcome: req.Outcome, Attempt: state,
		Answer: answer, Computed: computed, Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	if e.notices.to != nil {
		if req.Outcome == StepUpPassed {
			if !t.known && ls.account != "" && login.device >= 0 && login.Notices.Emits(NoticeNewDevice) {
				lc := ls
				e.newDeviceNotice(&callNotices{s: &lc, subject: req.Account, ref: req.Ref})
			}
		} else {
			sc := *s
			e.reportNotices(&callNotices{s: &sc, subject: req.Account, ref: req.Ref}, Failure, false, &p, &b, reportSignals{})
		}
	}
	return answer, nil
}
