package authguard

import (
	"slices"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

// plan is a batch of operations with what each one stands for.
type plan struct {
	ops  []Op
	meta []meta // one per op
	// allowance is the index of the known device's allowance op, or -1.
	allowance int
	// owned says the plan holds a send's owner allowance (Engine.owner) or
	// a known network's (Engine.network): ops a store's fallback cannot
	// decide, since it holds no record of what the account verified.
	owned bool
	// buf holds the ops and slices of a plan newPlan made; nil for none.
	buf *planOps
}

// meta is the rule an op stands for and how the verdict reads its result.
type meta struct {
	rule  uint8 // index in Flow.Rules
	role  Block // its row of the verdict rule (Reading)
	facet Facet // what the op keeps when it is not its rule's own state
}

// limits reports whether the op's result is a rule's limit, its own or
// shared: one that can stop a check.
func (m meta) limits() bool { return reading(m.role).Stops != 0 }

// Facet says what an op's state is when it is not its rule's own counter,
// log or rate: a part of a device rule or of a send flow's owner
// allowance. Explain shows it, so that such a row does not read as the
// rule's own state.
type Facet uint8

const (
	// FacetNone: the rule's own state.
	FacetNone Facet = iota
	// FacetKnownNetwork: the record that the account succeeded from the
	// client's network; Over when it did.
	FacetKnownNetwork
	// FacetNetworkAllowance: the failures a day from that network that
	// skip the account's delay (the device rule's device_free).
	FacetNetworkAllowance
	// FacetNetworkSlot: the network's place among the account's device
	// slots.
	FacetNetworkSlot
	// FacetDeviceAllowance and FacetDeviceSlot: a known device's own
	// allowance and its slot.
	FacetDeviceAllowance
	FacetDeviceSlot
	// FacetVerifiedDestination: the record that the account verified the
	// send's destination; Over when it did.
	FacetVerifiedDestination
	// FacetVerifiedNetwork: the record that it did so from the client's
	// network; Over when it did.
	FacetVerifiedNetwork
	// FacetOwnerCodes: the codes a send flow keeps for the destination's
	// owner (owner_codes).
	FacetOwnerCodes
	// FacetOwnerResend: the owner's one code per owner_resend.
	FacetOwnerResend
	// FacetDeviceGeneration: the account's device generation (token.go),
	// its Count; never part of a verdict, and not in an explanation.
	FacetDeviceGeneration
)

var facetNames = [...]string{"", "known_network", "network_allowance", "network_slot", "device_allowance", "device_slot",
	"verified_destination", "verified_network", "owner_codes", "owner_resend", "device_generation"}

// String returns the facet's name as the API shows it: "" for FacetNone.
func (f Facet) String() string {
	if int(f) < len(facetNames) {
		return facetNames[f]
	}
	return ""
}

// subject is what a facet's key counts, as Explain shows it.
func (f Facet) subject() string {
	switch f {
	case FacetKnownNetwork, FacetNetworkAllowance:
		return "account+network"
	case FacetNetworkSlot, FacetDeviceSlot, FacetDeviceGeneration:
		return "account"
	case FacetDeviceAllowance:
		return "account+device"
	case FacetVerifiedNetwork:
		return "account+destination+network"
	}
	return "account+destination"
}

// ownRule reports whether a facet's op belongs to the rule it is filed
// under (the device rule's parts), rather than to a send flow's owner
// allowance, which no rule of the policy names.
func (f Facet) ownRule() bool { return f <= FacetDeviceSlot || f == FacetDeviceGeneration }

// planOps is where a plan's slices and ops live: one allocation for what a
// login check's plan made eight of, on every call. A plan that outgrows it
// appends and allocates as before.
type planOps struct {
	ops   [12]Op
	meta  [12]meta
	gates [12]Gate
	// A login check's plan holds 5 or 6 log ops (a report's up to 7), a
	// backoff op and a rate op.
	logs               [6]LogOp
	back               [1]BackoffOp
	rate               [1]RateOp
	nlog, nback, nrate uint8
}

func newPlan() plan {
	b := new(planOps)
	return plan{ops: b.ops[:0], meta: b.meta[:0], allowance: -1, buf: b}
}

// logOp, backoffOp and rateOp return a zero op for the plan to add, from
// its buffer while that has one free.
func (p *plan) logOp() *LogOp {
	if b := p.buf; b != nil && int(b.nlog) < len(b.logs) {
		b.nlog++
		return &b.logs[b.nlog-1]
	}
	return new(LogOp)
}

func (p *plan) backoffOp() *BackoffOp {
	if b := p.buf; b != nil && int(b.nback) < len(b.back) {
		b.nback++
		return &b.back[b.nback-1]
	}
	return new(BackoffOp)
}

func (p *plan) rateOp() *RateOp {
	if b := p.buf; b != nil && int(b.nrate) < len(b.rate) {
		b.nrate++
		return &b.rate[b.nrate-1]
	}
	return new(RateOp)
}

func (p *plan) add(op Op, rule int, ro Block) {
	p.ops = append(p.ops, op)
	p.meta = append(p.meta, meta{rule: uint8(rule), role: ro})
}

// addFacet is add for an op that keeps a facet of its rule (Facet).
func (p *plan) addFacet(op Op, rule int, ro Block, f Facet) {
	p.ops = append(p.ops, op)
	p.meta = append(p.meta, meta{rule: uint8(rule), role: ro, facet: f})
}

// The roles of the ops that are not their rule's own result, each the
// Block the verdict reads it by; an op of a rule's own counter, log or rate
// is read by the rule's (Rule.block). A role is given as the op is added,
// and network and owner make an account's or a destination's delay rules
// shared.
const (
	// roleShared: the devices' shared counter, or a delay rule that a
	// known network's or the owner's allowance exempts from; its Wait
	// delays only a client that is not exempt.
	roleShared = BlockShared
	// roleAllowance: the device's own allowance or its slot; an Over makes
	// the device not exempt, never a verdict on its own.
	roleAllowance = BlockAllowance
	// roleCredit: a verification credited to a send flow's conversion rule,
	// or the record that an account verified a destination; never part of
	// the verdict.
	roleCredit = BlockNone
	// roleVerified: whether the account verified the send's destination
	// before (a peek of its record: Over when it did); not Over makes the
	// device not exempt, never a verdict on its own.
	roleVerified = BlockVerified
	// roleOwner: a send's owner allowance (SendPolicy.OwnerCodes), read as
	// roleAllowance and spent only on sends it exempted (Finish).
	roleOwner = BlockOwner
	// roleAllowanceSolved: roleOwner for a send without a known device:
	// exempt only with a solved CAPTCHA, so that the shared rules' wait
	// becomes a CAPTCHA to solve.
	roleAllowanceSolved = BlockAllowanceSolved
)

// checkPlan is the batch of a check: every rule that counts the client
// reserves the attempt (a charge, a log admission) or takes its units.
func (e *Engine) checkPlan(s *subjects, device, id string, captchaSolved bool) plan {
	p := newPlan()
	known := device != ""
	for i := range s.flow.Rules {
		r := &s.flow.Rules[i]
		switch {
		case !r.Clients.counts(known):
		case i == s.flow.device:
			e.devices(&p, s, i, device, deviceSteps{allowance: LogAdmit, member: id, slot: LogAdmit, shared: BackoffCharge, attempt: id})
		case r.Algorithm == Backoff:
			e.backoff(&p, s, i, BackoffCharge, id)
		case r.Breached: // the check cannot know: only its report can count
			e.log(&p, s, i, LogPeek, id, false)
		case r.logRule():
			e.log(&p, s, i, LogAdmit, id, captchaSolved)
		default:
			cost := r.Cost
			if r.PriceCost {
				cost = s.price
			}
			if key := e.key(s, r); key != "" && cost > 0 {
				o := p.rateOp()
				*o = RateOp{Key: key, Action: RateTake, Rate: r.Rate, Cost: cost}
				p.add(o, i, r.block())
			}
		}
	}
	if s.flow.Kind == Sends {
		if id == "" {
			id = randomID()
		}
		e.owner(&p, s, id, known)
	} else if !known {
		e.network(&p, s, id, LogAdmit)
	}
	return p
}

// generation adds to a check's plan, in a flow that revokes device tokens
// on a password change, the read of the account's device generation
// (token.go), last in the batch: a peek, which changes nothing, blocks
// nothing and is undone by nothing, so that a store that runs the batch in
// order decides the rest as it did without it. Every check of the flow
// carries it, with a device token or without, for an account that exists
// or not: reading it only for a token would make a check with one a call
// of more ops, and the ops a check sends are the same for every client so
// that nothing about them tells an account's state (the store's time for
// one more read of a key that is seldom there is the cost, a peek on one
// node's script and one more command on a Cluster). A check of a token
// whose generation is below it is then made again as a check without one
// (Check).
//
// A send flow whose trust group revokes (Policy.revokes) reads it the same
// way, in every send that names an account: a send trusts the group's
// tokens to skip its address rules, and a token the owner revoked must
// skip them no more than it skips the check's. Its key is the group's, so
// a send reads the generation the group's password changes count. A send
// flow has no device rule: the op is filed under its first rule, as the
// owner allowance's are, and read by nothing but revoked.
func (e *Engine) generation(p *plan, s *subjects) {
	f := s.flow
	if !s.policy.revokes(f) || s.account == "" || p.generation() >= 0 {
		return
	}
	p.addFacet(deviceGenOp(s, f, BackoffPeek), max(f.device, 0), roleCredit, FacetDeviceGeneration)
}

// generation returns the index of the op that reads the account's device
// generation in a check's plan, or -1.
func (p *plan) generation() int {
	for i := range p.meta {
		if p.meta[i].facet == FacetDeviceGeneration {
			return i
		}
	}
	return -1
}

// reportPlan is the batch of a report; a is the attempt its token names
// (zero when tokened is false).
//
// A success refunds the attempt's own charges and takes the account off
// every log rule, whoever the client. A tokened failure confirms the
// charges; its attempt is already in the failure logs, and its account's
// time in the Distinct logs moves to now (it failed now), the one thing a
// report sent twice can touch, and only ever stricter. A failure without a
// valid attempt token is counted on its own. Rate rules counted the check
// and are not touched. A Breached rule counts a failure reported breached,
// and a success reads it (whether the address is escalated: stepup.go).
func (e *Engine) reportPlan(s *subjects, device string, outcome Outcome, a attempt, tokened, breached bool) plan {
	p := newPlan()
	known := device != ""
	id := randomID()
	for i := range s.flow.Rules {
		r := &s.flow.Rules[i]
		counts := r.Clients.counts(known)
		switch {
		case r.rateRule(), !counts && !(outcome == Success && r.logRule()):
		case i == s.flow.device:
			switch {
			case outcome == Success:
				allowance := LogPeek
				if tokened && a.exempt {
					allowance = LogRemove
				}
				e.devices(&p, s, i, device, deviceSteps{allowance: allowance, member: a.id, slot: LogPeek, shared: BackoffSucceed, attempt: a.id})
			case tokened:
				// A failure the device's own allowance paid for renews the
				// device's slot at now, so that a slot lasts a day from the
				// device's last such failure, not its first: no more than
				// DeviceSlots devices spend allowances within any day. A
				// slot that ran out meanwhile is taken again only if one is
				// free, in the same step, so no other device can take it in
				// between.
				slot := LogPeek
				if a.exempt {
					slot = LogRenew
				}
				e.devices(&p, s, i, device, deviceSteps{allowance: LogPeek, member: id, slot: slot, shared: BackoffConfirm, attempt: a.id})
			default:
				e.devices(&p, s, i, device, deviceSteps{allowance: LogAdd, member: id, slot: LogAdmit, shared: BackoffFail})
			}
		case r.Algorithm == Backoff:
			switch {
			case outcome == Success:
				e.backoff(&p, s, i, BackoffSucceed, a.id)
			case tokened:
				e.backoff(&p, s, i, BackoffConfirm, a.id)
			default:
				e.backoff(&p, s, i, BackoffFail, "")
			}
		case r.Breached:
			switch {
			case outcome == Success:
				e.log(&p, s, i, LogPeek, "", false)
			case breached:
				e.log(&p, s, i, LogAdd, "", false)
			}
		case outcome == Success:
			e.log(&p, s, i, LogRemove, a.id, false)
		case r.failureLog() && tokened:
			e.log(&p, s, i, LogAdmit, a.id, true)
		case r.failureLog():
			e.log(&p, s, i, LogAdd, id, false)
		default: // Distinct
			e.log(&p, s, i, LogAdd, "", false)
		}
	}
	return p
}

// deviceSteps are what one call does to the counters of a device rule (see
// devices). A zero LogAction leaves that log out of the plan.
type deviceSteps struct {
	// allowance is the step of the device's own allowance; member is what
	// it records (an attempt's id).
	allowance LogAction
	member    string
	// slot is the step of the device's slot among the account's devices
	// (its member is the device).
	slot LogAction
	// shared is the step of the counter all devices of the account share;
	// attempt is the attempt it charges, confirms or refunds ("" for a
	// failure counted on its own).
	shared  BackoffAction
	attempt string
}

// devices adds the ops of the device rule (the rule at index i) for a known
// device: its own allowance (a log of its failed attempts within
// DeviceWindow), its slot among the account's devices, and the counter all
// devices of the account share. The allowance's key carries the account's
// hash and the device's id (a random id tollgate made, not an identifier),
// so that every device key of an account can be found from the account.
func (e *Engine) devices(p *plan, s *subjects, i int, device string, st deviceSteps) {
	f := s.flow
	r := &f.Rules[i]
	if st.allowance != 0 {
		p.allowance = len(p.ops)
		p.addFacet(&LogOp{
			Key:    storeKey(s.keys, s.tenant, f.Name, r.Key+".dev", s.account+"."+device),
			Action: st.allowance, Member: st.member,
			Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: r.DeviceFree}},
		}, i, roleAllowance, FacetDeviceAllowance)
	}
	if st.slot != 0 {
		p.addFacet(&LogOp{
			Key:    storeKey(s.keys, s.tenant, f.Name, r.Key+".slots", s.account),
			Action: st.slot, Member: device,
			Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: r.DeviceSlots}},
		}, i, roleAllowance, FacetDeviceSlot)
	}
	o := p.backoffOp()
	*o = BackoffOp{
		Key: storeKey(s.keys, s.tenant, f.Name, r.Key, s.account), Action: st.shared, Policy: r.Backoff,
		Fingerprint: s.fp, SeenWindow: f.SamePasswordWindow, Attempt: st.attempt,
	}
	p.add(o, i, roleShared)
}

// knownNetKey is the record, per account and IP prefix (the flow's ip
// subject), that the account succeeded from that network; see network.
const knownNetKey = "knownnet"

// networkID is the device id a known network's allowance and slot carry:
// not a device tokens's id (those are randomID's, of another length).
func networkID(s *subjects) string { return "net" + s.ip }

// network adds to the check of a client without a device token, in a flow
// with a device rule, the ops of a known network: the record that the
// account succeeded from the client's network (a peek), and, spare, an
// allowance and a slot of the device rule as if the network were a device.
// The account's delay rules become shared: their waits hold the client back
// only when its network is not known to the account or its allowance or
// slot is spent. So an owner without her device token who signs in from
// where she signed in before is not kept out by an attacker elsewhere whose
// guesses keep the account's delay running; someone behind her address
// shares her network's DeviceFree failures a day, and networks take the
// device slots that known devices take, so the flow's MaxFailuresPerDay
// holds as it is. A check the account's delay does not hold back spends
// none of the allowance (Finish): only an exemption does.
//
// step is LogAdmit for a check; a report's verdict for the next attempt
// reads the same with LogPeek (id "", nothing written). The ops are the same
// for every such call, known network or not, account or not: constant work.
func (e *Engine) network(p *plan, s *subjects, id string, step LogAction) {
	f := s.flow
	if f.device < 0 || f.KnownNetworksOff || s.account == "" || s.ip == "" {
		return
	}
	shared := false
	for i := range p.ops {
		r := &f.Rules[p.meta[i].rule]
		if p.meta[i].role == BlockDelay && r.Algorithm == Backoff && r.Subject.Parts == PartAccount {
			p.meta[i].role = roleShared
			shared = true
		}
	}
	if !shared {
		return
	}
	p.owned = true
	net := networkID(s)
	// The record goes first: when it is not there (an attacker's network),
	// a store that runs the batch in order knows at the account's wait that
	// the check is refused, and peeks the rest instead of writing and
	// undoing it (check.lua).
	rec := p.logOp()
	*rec = LogOp{Key: storeKeyOf(s.keys, s.tenant, f.Name, knownNetKey, s.account, s.ip), Action: LogPeek, Member: "?", Windows: f.net.record}
	p.ops = slices.Insert(p.ops, 0, Op(rec))
	p.meta = slices.Insert(p.meta, 0, meta{rule: uint8(f.device), role: roleVerified, facet: FacetKnownNetwork})
	if step == LogAdmit {
		p.allowance = len(p.ops)
	} else {
		id = "?"
	}
	allowance := p.logOp()
	*allowance = LogOp{Key: storeKeyOf(s.keys, s.tenant, f.Name, f.net.devKey, s.account, net), Action: step, Member: id, Windows: f.net.allowance}
	p.addFacet(allowance, f.device, roleOwner, FacetNetworkAllowance)
	slot := p.logOp()
	*slot = LogOp{Key: storeKey(s.keys, s.tenant, f.Name, f.net.slotsKey, s.account), Action: step, Member: net, Windows: f.net.slots}
	p.addFacet(slot, f.device, roleOwner, FacetNetworkSlot)
}

// knownNetwork adds to the plan of a success report that settles attempt a
// the record that the account succeeded from the client's network (see
// network), unless record is false, and gives back the attempt's charge of
// the network's allowance when its check spent one. A success without a
// valid attempt token makes no network known: it settles no check that
// went ahead. A flow with a StepUp policy writes the record later, once
// the success is not stepped up (Engine.learnNetwork).
func (e *Engine) knownNetwork(p *plan, s *subjects, a attempt, record bool) {
	f := s.flow
	if f.Kind == Sends || f.device < 0 || f.KnownNetworksOff || s.account == "" || s.ip == "" {
		return
	}
	if record {
		p.add(&LogOp{
			Key: storeKeyOf(s.keys, s.tenant, f.Name, knownNetKey, s.account, s.ip), Action: LogAdd, Member: recordMember, Windows: f.net.record,
		}, f.device, roleCredit)
	}
	if a.exempt && a.device == "" {
		p.add(&LogOp{
			Key: storeKeyOf(s.keys, s.tenant, f.Name, f.net.devKey, s.account, networkID(s)), Action: LogRemove, Member: a.id, Windows: f.net.allowance,
		}, f.device, roleCredit)
	}
}

// backoff adds a step of a Backoff rule on any subject but the device.
func (e *Engine) backoff(p *plan, s *subjects, i int, action BackoffAction, attempt string) {
	r := &s.flow.Rules[i]
	if key := e.key(s, r); key != "" {
		o := p.backoffOp()
		*o = BackoffOp{
			Key: key, Action: action, Policy: r.Backoff,
			Fingerprint: s.fp, SeenWindow: s.flow.SamePasswordWindow, Attempt: attempt,
		}
		p.add(o, i, r.block())
	}
}

// log adds a step of a log rule (Distinct, or a failure log whose members
// are attempts).
func (e *Engine) log(p *plan, s *subjects, i int, action LogAction, attempt string, bypass bool) {
	r := &s.flow.Rules[i]
	key, member := e.key(s, r), e.member(s, r, attempt)
	if key != "" && member != "" {
		o := p.logOp()
		*o = LogOp{Key: key, Action: action, Member: member, Windows: r.Windows, Bypass: bypass}
		p.add(o, i, r.block())
	}
}

// The keys of SendPolicy.OwnerCodes, per account and destination of a send
// flow: the record that the account verified the destination, and the
// owner's allowance of codes to it.
const (
	verifiedKey    = "vdst"
	verifiedNetKey = "vdst.net" // per account, destination and network
	ownerKey       = "vdst.own"
	captchaKey     = "vdst.cap"
)

// owner adds to a send's plan, for an account with a destination, the ops
// of the owner's allowance (SendPolicy.OwnerCodes): the record that the
// account verified the destination (a peek), and the allowance itself (a
// log of the sends it let through). The delay rules on the destination
// become shared: their waits, a queue's place in it too, hold the send back
// only when the account has not verified the destination or its allowance
// is spent. A known device
// has OwnerCodes of its own; a send without one as many more, each behind
// a solved CAPTCHA (the shared wait is then answered with a CAPTCHA), so
// that an owner without her device is never left waiting out the
// destination's quota for a day.
func (e *Engine) owner(p *plan, s *subjects, id string, known bool) {
	f := s.flow
	if f.Kind != Sends || f.Send.OwnerCodes <= 0 || s.account == "" || s.dest == "" {
		return
	}
	for i := range p.ops {
		r := &f.Rules[p.meta[i].rule]
		if m := p.meta[i].role; (m == BlockDelay || m == BlockQueue) && r.Subject.Parts == PartDestination && r.Subject.IPBits == 0 {
			p.meta[i].role = roleShared
		}
	}
	p.owned = true
	pair := s.account + "." + s.dest
	// The record holds one member, "v"; a peek of another is Over exactly
	// when the record is there.
	p.addFacet(&LogOp{
		Key: storeKey(s.keys, s.tenant, f.Name, verifiedKey, pair), Action: LogPeek, Member: "?",
		Windows: spraydetect.Windows{{Length: VerifiedDestinationTTL, Limit: 1}},
	}, 0, roleVerified, FacetVerifiedDestination)
	key, ro := ownerKey, roleOwner
	if !known {
		key, ro = captchaKey, roleAllowanceSolved
		// Without her device token, only from a network the account
		// verified the destination from: a bomber elsewhere who names her
		// account cannot spend the codes kept for her.
		if s.ip != "" && !f.KnownNetworksOff {
			p.addFacet(&LogOp{
				Key: storeKeyOf(s.keys, s.tenant, f.Name, verifiedNetKey, pair, s.ip), Action: LogPeek, Member: "?",
				Windows: spraydetect.Windows{{Length: VerifiedDestinationTTL, Limit: 1}},
			}, 0, roleVerified, FacetVerifiedNetwork)
		}
	}
	// The allowance is spare: spent only on a send it exempted (Finish).
	p.allowance = len(p.ops)
	p.addFacet(&LogOp{
		Key: storeKey(s.keys, s.tenant, f.Name, key, pair), Action: LogAdmit, Member: id,
		Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: f.Send.OwnerCodes}},
	}, 0, ro, FacetOwnerCodes)
	// And one of her codes, exempted or not, per OwnerResend at most: they
	// skip what others made the destination wait, not her own resend
	// interval.
	p.addFacet(&LogOp{
		Key: storeKey(s.keys, s.tenant, f.Name, key+".last", pair), Action: LogAdmit, Member: id,
		Windows: spraydetect.Windows{{Length: OwnerResend, Limit: 1}},
	}, 0, roleAllowance, FacetOwnerResend)
}

// verifiedOp records, on a success report that names a destination of a
// send flow with OwnerCodes, that the account verified that destination.
func (e *Engine) verifiedOp(p *plan, v *subjects) {
	if v.flow.Send.OwnerCodes <= 0 || v.account == "" || v.dest == "" {
		return
	}
	pair := v.account + "." + v.dest
	p.add(&LogOp{
		Key: storeKey(v.keys, v.tenant, v.flow.Name, verifiedKey, pair), Action: LogAdd, Member: recordMember,
		Windows: spraydetect.Windows{{Length: VerifiedDestinationTTL, Limit: 1}},
	}, 0, roleCredit)
	if v.ip != "" && !v.flow.KnownNetworksOff {
		p.add(&LogOp{
			Key: storeKeyOf(v.keys, v.tenant, v.flow.Name, verifiedNetKey, pair, v.ip), Action: LogAdd, Member: recordMember,
			Windows: spraydetect.Windows{{Length: VerifiedDestinationTTL, Limit: 1}},
		}, 0, roleCredit)
	}
}

// credit adds to p, a success report's plan, one verification for each
// conversion rule of the send flow whose subjects v are.
func (e *Engine) credit(p *plan, v *subjects) {
	for i := range v.flow.Rules {
		r := &v.flow.Rules[i]
		if f := r.Algorithm.row().rate; f == nil || f.credit == nil {
			continue
		}
		if key := e.key(v, r); key != "" {
			p.add(&RateOp{Key: key, Action: RateCredit, Rate: r.Rate, Cost: 1}, i, roleCredit)
		}
	}
}
