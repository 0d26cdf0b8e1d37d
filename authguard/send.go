package authguard

import (
	"context"
	"errors"
)

// Send decides whether a one-time code may be sent now, to a destination
// by a channel. A Proceed counts the send against every rule of the flow;
// any other verdict leaves the counters as they were (rules that count
// requests keep what they took). A phone number of a type or country the
// flow refuses is answered Deny before any rule counts it. Invalid input is
// an error (an *InputError: a number that does not parse, a destination of
// the wrong kind for the channel); a store failure is answered by the
// flow's fail mode. The verdict never depends on whether the destination
// belongs to an account.
//
// A valid device token of the account, of the flow's DeviceTrust, makes
// the client known: rules for unknown clients (the address rules) skip
// it. One issued before a password change that revoked it (its trust
// group's RevokeDevicesOnPasswordChange) is no token: the send meets them
// as an unknown client's.
func (e *Engine) Send(ctx context.Context, req SendRequest) (Verdict, error) {
	slot, busy := e.acquire(ctx, false, false)
	defer func() { release(slot) }()
	flow := req.Flow
	if flow == "" {
		flow = DefaultSendFlow
	}
	s, err := e.subjectsOf(sentParts{kind: Sends, tenant: req.Tenant, flow: flow, account: req.Account, ip: req.IP})
	if err != nil {
		return Verdict{}, err
	}
	d, err := e.sendSubjects(&s, req.Channel, req.Destination)
	if err != nil {
		return Verdict{}, err
	}
	ch := d.Channel

	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}
	if err := checkRef(req.Ref); err != nil {
		return Verdict{}, err
	}
	device, gen := e.deviceOf(&s, req.DeviceToken)

	computed, b, p := Verdict{}, batch{src: SourceNone}, plan{allowance: -1}
	var flooding plan // the plan flooded made, which reserve then runs
	refused := false
	if reason := s.flow.Send.refuses(&d); reason != "" {
		computed, refused = Verdict{Action: Deny, Reasons: []Reason{reason}}, true
	} else if computed, refused = s.match.verdict(Sends, e.now, req.CaptchaSolved); !refused && busy != nil {
		computed, refused, slot = e.flooded(ctx, &s, device, "", req.CaptchaSolved, &b, &flooding)
	}
	if !refused {
		p, b, computed = e.reserve(ctx, &s, device, "", req.CaptchaSolved, &flooding)
		if device != "" && revoked(&p, &b, gen) { // token.go: the owner changed the password since
			p, b, computed = e.revokedCheck(ctx, &s, &p, b, computed, "", req.CaptchaSolved)
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
	var rec *EventSubjects
	if e.recordSubjects {
		rec = e.record(&s, device, "")
	}
	e.decided(ctx, Event{Call: "send", Tenant: s.tenant, Flow: s.flow.Name, Channel: ch, Region: d.Region, Price: s.price, Answer: answer, Computed: computed,
		Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	if e.notices.to != nil {
		c := callNotices{s: &s, subject: req.Destination, ref: req.Ref, region: d.Region}
		e.ruleNotices(&c, &p, &b)
		e.storeNotice(&c, &b)
	}
	return answer, nil
}
