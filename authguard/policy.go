package authguard

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

// Policy is a validated set of flows. It is immutable once made.
type Policy struct {
	flows map[string]*Flow
	// stepUpOf are, by step-up flow, the flows whose StepUp names it: the
	// flows whose tickets its reports take.
	stepUpOf map[string][]*Flow
	// revoking are the trust groups (DeviceTrust) whose flows revoke their
	// device tokens on a password change: their send flows read the
	// generation too (revokes).
	revoking map[string]bool
}

// NewPolicy validates flows and makes a Policy of them. It fills in each
// flow's and rule's defaults (a zero field is its default, as each field
// says), so the flows must not be changed afterwards. A flow that is not
// valid is a *FieldError or a *RuleError, naming the flow, the rule and the
// Go field.
func NewPolicy(flows ...*Flow) (*Policy, error) {
	p := &Policy{flows: map[string]*Flow{}}
	for _, f := range flows {
		if err := f.compile(); err != nil {
			return nil, err
		}
		if p.flows[f.Name] != nil {
			return nil, &FieldError{Flow: f.Name, Field: "Name", Err: errors.New("names two flows"), Predicate: true}
		}
		p.flows[f.Name] = f
	}
	if len(p.flows) == 0 {
		return nil, errors.New("authguard: no flows")
	}
	if err := p.linkStepUps(len(flows) > 1); err != nil {
		return nil, err
	}
	if err := p.checkSuccessClears(len(flows) > 1); err != nil { // passwordchange.go
		return nil, err
	}
	if err := p.checkRevokeDevices(); err != nil { // token.go
		return nil, err
	}
	for _, f := range p.flows {
		if f.Verifies == "" {
			continue
		}
		// A policy of one flow is a flow checked on its own (the config
		// loader does that for line numbers); the whole policy is checked too.
		if sf := p.flows[f.Verifies]; len(flows) > 1 && (sf == nil || sf.Kind != Sends) {
			return nil, &FieldError{Flow: f.Name, Field: "Verifies", Err: fmt.Errorf("%q is not a send flow of the policy", f.Verifies)}
		}
	}
	return p, nil
}

// Flow returns the named flow, or nil.
func (p *Policy) Flow(name string) *Flow {
	if p == nil {
		return nil
	}
	return p.flows[name]
}

// FlowNames lists the flows, sorted; none for a nil Policy.
func (p *Policy) FlowNames() []string {
	if p == nil {
		return nil
	}
	names := make([]string, 0, len(p.flows))
	for n := range p.flows {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Mode says whether a flow's verdicts are enforced.
type Mode uint8

const (
	// Enforce answers the verdicts the policy computes.
	Enforce Mode = iota
	// Shadow computes and records every verdict but answers Proceed, for
	// rolling a policy out and watching what it would do.
	Shadow
)

var modeNames = [...]string{"enforce", "shadow"}

func (m Mode) String() string { return modeNames[m] }

// ParseMode parses "enforce" or "shadow".
func ParseMode(s string) (Mode, error) {
	i, err := parseEnum(append([]string{""}, modeNames[:]...), s, "mode")
	return Mode(max(0, i-1)), err
}

// FailMode says what a flow answers when the store fails.
type FailMode uint8

const (
	// FailOpen answers from the engine's local fallback store.
	FailOpen FailMode = iota
	// FailClosed answers Delay with reason "unavailable".
	FailClosed
)

var failModeNames = [...]string{"open", "closed"}

func (m FailMode) String() string { return failModeNames[m] }

// ParseFailMode parses "open" or "closed".
func ParseFailMode(s string) (FailMode, error) {
	i, err := parseEnum(append([]string{""}, failModeNames[:]...), s, "fail_mode")
	return FailMode(max(0, i-1)), err
}

// Kind says which calls a flow answers.
type Kind uint8

const (
	// Attempts: Check before a credential is checked, Report after it.
	Attempts Kind = iota
	// Sends: Send before a one-time code is sent.
	Sends
)

var kindNames = [...]string{"attempts", "send"}

func (k Kind) String() string { return kindNames[k] }

// ParseKind parses "attempts" or "send".
func ParseKind(s string) (Kind, error) {
	i, err := parseEnum(append([]string{""}, kindNames[:]...), s, "kind")
	return Kind(max(0, i-1)), err
}

// SendPolicy is what a send flow refuses before any rule counts: numbers
// of some types, and countries. Such a send is answered Deny with reason
// number_type or country, and counts nowhere.
type SendPolicy struct {
	// DenyTypes are the phone number types never sent to. The built-in
	// otp_send denies premium_rate, shared_cost and unknown.
	DenyTypes []NumberType
	// AllowCountries, when not empty, are the only countries sent to, and
	// DenyCountries those never sent to: a region ("GB") or a calling code
	// ("+44", every region that shares it). E-mail has no country and is
	// never refused by them.
	AllowCountries, DenyCountries []string
	// PrefixDigits is how many trailing digits a phone number's
	// destination prefix (PartDestPrefix) leaves out, 1 to 6: the default,
	// DefaultPrefixDigits (3), makes blocks of 1,000 numbers.
	PrefixDigits int
	// Prices are what a code costs, in the operator's cost units, by
	// channel: the cost of a send to rules with PriceCost (a spend
	// budget). A channel without prices costs 0, and a rule with PriceCost
	// does not count such a send.
	Prices map[Channel]Prices
	// OwnerCodes is the owner's own allowance of codes to a destination her
	// account has verified before (a success report of the flow that
	// verifies this one, naming the destination, within
	// VerifiedDestinationTTL): that many sends in any 24 hours, from a
	// known device of the account, skip the waits of the rules on the
	// destination, so that whoever else sent it codes cannot keep its
	// owner from one. The devices of the account share it; an account that
	// never verified the destination has none, so owning accounts buys an
	// attacker nothing. 0 turns it off. The built-in otp_send has 3.
	OwnerCodes int
}

// OwnerResend is the shortest time between two of the owner's codes
// (SendPolicy.OwnerCodes): a resend sooner meets the destination's own
// rules, as anyone's does.
const OwnerResend = 30 * time.Second

// VerifiedDestinationTTL is how long a verified destination stays its
// account's for SendPolicy.OwnerCodes after its last verification.
const VerifiedDestinationTTL = 90 * 24 * time.Hour

// MaxOwnerCodes bounds SendPolicy.OwnerCodes.
const MaxOwnerCodes = 100

// Prices are one channel's prices: by region ("GB") or calling code
// ("+44"), the region first, else Default.
type Prices struct {
	Default   int
	Countries map[string]int
}

// MaxPrice bounds one code's price.
const MaxPrice = 1_000_000

// price is what sending d costs.
func (sp *SendPolicy) price(d *Destination) int {
	p, ok := sp.Prices[d.Channel]
	if !ok {
		return 0
	}
	if n, ok := p.Countries[d.Region]; ok && d.Region != "" {
		return n
	}
	if n, ok := p.Countries["+"+strconv.Itoa(d.CallingCode)]; ok && d.CallingCode != 0 {
		return n
	}
	return p.Default
}

// Flow is the policy of one flow: its settings and its rules.
type Flow struct {
	Name string
	// Kind is Attempts (check and report) or Sends.
	Kind Kind
	// Send is a send flow's refusals by number type and country.
	Send SendPolicy
	// Mode is Enforce (the default) or Shadow.
	Mode Mode
	// FailMode is what the flow answers when the store fails: FailOpen
	// (the default) or FailClosed.
	FailMode FailMode
	// FailClosedRetry is the delay a fail-closed or shed call answers,
	// between MinFailClosedRetry and MaxFailClosedRetry. The default is
	// DefaultFailClosedRetry (2s).
	FailClosedRetry time.Duration
	// Grouping is the IPv6 prefix counted as one client; the default is
	// a /64.
	Grouping spraydetect.Grouping
	// AllowList are the addresses no rule counts; the default is none.
	AllowList spraydetect.AllowList
	// DeviceTrust names the device tokens this flow trusts: those issued by
	// a success in a flow with the same DeviceTrust. By default it is the
	// flow's own name, so a token from a login success is worthless to
	// otp_verify. Only a flow with a device rule looks at device tokens.
	DeviceTrust string
	// Verifies names the send flow whose one-time codes this flow's checks
	// and reports verify: a success report that names the code's
	// destination credits the send flow's conversion rules. Empty for none.
	Verifies string
	// SuccessClears names attempts flows (not step-up flows, not this one)
	// whose counters of the account a success of this flow clears, as a
	// password_changed report clears its flows': the rules on the account
	// alone and the devices' shared counter, never an address's. Only a
	// settled success (its attempt token valid, its answer not step_up)
	// clears: a passkey's success may unlock the password this way. The
	// default is none: one factor's success clears nothing of another.
	SuccessClears []string
	// SamePasswordWindow is how long a Backoff rule remembers a counted
	// password fingerprint, so that repeating one wrong password counts once;
	// at most MaxSamePasswordWindow. The default, 0, remembers none.
	SamePasswordWindow time.Duration
	// AttemptTTL is how long a check's attempt token waits for its report,
	// between MinAttemptTTL and MaxAttemptTTL. The default is
	// DefaultAttemptTTL (10m).
	AttemptTTL time.Duration
	// KnownNetworksOff turns off known networks: in a flow with a device
	// rule, a client without a device token at an address its account
	// succeeded from is then held by the account's delay like any other
	// (Engine.network), and no success writes the record; in a send flow,
	// the CAPTCHA codes of OwnerCodes then go to a send naming the account
	// from any network. Known networks cost a Redis key per account and
	// network for DeviceTokenTTL (docs/policy.md, "How it decides").
	KnownNetworksOff bool
	// RevokeDevicesOnPasswordChange makes a password_changed report of this
	// flow revoke every device token of the account its flows trust
	// (DeviceTrust): the account's device generation goes up, and a token
	// issued before that is no token at all, its client an unknown one
	// held by the rules for unknown clients. It is for a flow with a
	// device rule, and the flows sharing its DeviceTrust must agree; a
	// send flow of that DeviceTrust may not set it and follows them: its
	// sends read the generation too, so a revoked token no longer skips
	// their address rules. The cost is one read in the batch of each check
	// (and each send of the group), one write per change and two per
	// device token issued (token.go). It is off because a routine
	// rotation should not sign every device of the user out of its trusted
	// state, while a user who changes the password because it leaked
	// wants exactly that: the operator whose changes follow leaks turns it
	// on. The default is false: device tokens stay valid.
	RevokeDevicesOnPasswordChange bool
	// DeviceTokenTTL is how long a device token the flow issues is valid,
	// between MinDeviceTokenTTL and MaxDeviceTokenTTL. The default is
	// DefaultDeviceTokenTTL (90 days).
	DeviceTokenTTL time.Duration
	// Rules are the flow's limits, walked in order; a verdict lists its
	// reasons in this order.
	Rules []Rule
	// Notices says which notices the flow emits to Config.Notifier, and
	// when (the policy file's events). The default emits none.
	Notices NoticePolicy
	// StepUp, when its Flow is set, makes a success report answer StepUp
	// instead of a device token when the password is breached or the
	// account is under attack (StepUpPolicy). The default is off; the
	// built-in login has it on.
	StepUp StepUpPolicy
	// SecondFactor makes the flow a step-up flow: it bounds the second
	// factor that StepUp verdicts of other flows ask for. Its checks charge
	// each try as a login's do (an attempt token), its reports take
	// StepUpPassed and StepUpFailed with a ticket and that token
	// (stepup.go), and its rules are Backoff rules. The default is false;
	// the built-in step_up is one.
	SecondFactor bool

	reasons  []Reason    // the distinct reasons of Rules, in order
	reasonOf []uint8     // per rule, its reason's index in reasons
	device   int         // the index of the device rule, or -1
	needs    SubjectPart // the request parts the rules count
	net      netWindows  // the known-network ops' windows, with a device rule
}

// DeviceWindow is the span over which a device rule's DeviceFree and
// DeviceSlots count.
const DeviceWindow = 24 * time.Hour

// Rule returns the flow's rule of that name, or nil.
func (f *Flow) Rule(name string) *Rule {
	for i := range f.Rules {
		if f.Rules[i].Name == name {
			return &f.Rules[i]
		}
	}
	return nil
}

// Reasons lists the reason codes the flow's verdicts can carry, in the
// order a verdict lists them, ReasonUnavailable and ReasonOverloaded last
// (after a send flow's ReasonNumberType and ReasonCountry).
func (f *Flow) Reasons() []Reason {
	rs := append([]Reason(nil), f.reasons...)
	if f.Kind == Sends {
		rs = append(rs, ReasonNumberType, ReasonCountry)
	}
	return append(rs, ReasonUnavailable, ReasonOverloaded)
}

// shed is the verdict of a check or send this instance had no call slot
// for in time (Config.MaxInFlight): wait the fail-closed retry and try
// again. A call shed before it started counted nothing; one whose store
// deadline passed while calls were queueing may have been counted, which
// errs on the safe side. It is a verdict, not an error, so that a
// caller that fails open on errors cannot be flooded into letting guesses
// through unchecked; and a delay, not a proceed, so that a flood cannot
// wave anyone through.
func (f *Flow) shed() Verdict {
	return Verdict{Action: Delay, Delay: f.FailClosedRetry, Reasons: []Reason{ReasonOverloaded}}
}

// Requires lists the request fields the flow's rules count: "account"
// and "ip", or fewer. A call without one of them is invalid input.
func (f *Flow) Requires() []string {
	var req []string
	if f.Kind == Sends {
		req = append(req, "destination", "channel")
	}
	if f.needs&(PartAccount|PartDevice) != 0 && f.Kind != Sends { // a send's account is optional
		req = append(req, "account")
	}
	if f.needs&PartIP != 0 {
		req = append(req, "ip")
	}
	return req
}

// MaxFailuresPerDay is the most failed attempts one account can make in
// this flow in any 24 hours, whatever an attacker does, with ok false when
// nothing bounds it. Only Backoff rules on the account or device subject
// bound it (backoff.Policy.MaxFailuresIn): clients without a device token
// are held by the tightest account rule, known devices by the device rule
// (its shared counter plus DeviceFree for each of DeviceSlots devices), and
// the bound is their sum. Other rules can only lower it.
func (f *Flow) MaxFailuresPerDay() (n int, ok bool) {
	unknown, known, both := math.MaxInt, math.MaxInt, math.MaxInt
	for i := range f.Rules {
		r := &f.Rules[i]
		m, ok := r.maxFailuresPerDay()
		if !ok {
			continue
		}
		if r.Clients.counts(false) {
			unknown = min(unknown, m)
		}
		if r.Clients.counts(true) {
			known = min(known, m)
		}
		if r.Clients == AllClients {
			both = min(both, m)
		}
	}
	if unknown == math.MaxInt {
		return 0, false
	}
	if f.device < 0 {
		return unknown, true // device tokens are ignored: every client is unknown
	}
	return min(unknown+known, both), true
}

// compile validates the flow, fills in its defaults and indexes its rules.
// Its errors are a *FieldError or a *RuleError.
func (f *Flow) compile() error {
	if err := f.compileFlow(); err != nil {
		var fe *fieldErr
		if errors.As(err, &fe) {
			return &FieldError{Flow: f.Name, Field: fe.field, Err: fe.err, Predicate: fe.predicate}
		}
		return err
	}
	return nil
}

// compileFlow is compile, with the flow's field errors a *fieldErr.
func (f *Flow) compileFlow() error {
	if !nameRE.MatchString(f.Name) {
		return bad("Name", "is 1 to 32 lower-case letters, digits and underscores, starting with a letter")
	}
	if f.DeviceTrust == "" {
		f.DeviceTrust = f.Name
	}
	if !nameRE.MatchString(f.DeviceTrust) {
		return bad("DeviceTrust", "is a flow-like name: 1 to 32 lower-case letters, digits and underscores, starting with a letter")
	}
	if err := f.Grouping.Validate(); err != nil {
		return badErr("Grouping", err)
	}
	for _, d := range []struct {
		field  string
		v      *time.Duration
		def    time.Duration
		lo, hi time.Duration
	}{
		{"FailClosedRetry", &f.FailClosedRetry, DefaultFailClosedRetry, MinFailClosedRetry, MaxFailClosedRetry},
		{"SamePasswordWindow", &f.SamePasswordWindow, 0, 0, MaxSamePasswordWindow},
		{"AttemptTTL", &f.AttemptTTL, DefaultAttemptTTL, MinAttemptTTL, MaxAttemptTTL},
		{"DeviceTokenTTL", &f.DeviceTokenTTL, DefaultDeviceTokenTTL, MinDeviceTokenTTL, MaxDeviceTokenTTL},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < d.lo || *d.v > d.hi {
			return bad(d.field, "must be between %v and %v, not %v", d.lo, d.hi, *d.v)
		}
	}
	if err := f.compileSend(); err != nil {
		return err
	}
	if err := f.compileNotices(); err != nil {
		return err
	}
	if f.Verifies != "" && (f.Kind != Attempts || !nameRE.MatchString(f.Verifies)) {
		return bad("Verifies", "names a send flow, and only a flow of checks and reports verifies one")
	}
	if len(f.Rules) > MaxRules {
		return bad("Rules", "has at most %d rules, not %d", MaxRules, len(f.Rules))
	}
	grouping := f.Grouping.IPv6Bits
	if grouping == 0 {
		grouping = 64
	}
	f.reasons, f.reasonOf, f.device, f.needs = nil, nil, -1, 0
	seen, keys := map[string]bool{}, map[string]bool{}
	for i := range f.Rules {
		r := &f.Rules[i]
		if err := r.validate(grouping, f.Kind == Sends, f.Verifies != ""); err != nil {
			var fe *fieldErr
			if errors.As(err, &fe) {
				return &FieldError{Flow: f.Name, Rule: ruleLabel(r, i), Field: fe.field, Err: fe.err, Predicate: fe.predicate}
			}
			return &RuleError{Flow: f.Name, Rule: ruleLabel(r, i), Err: err}
		}
		if r.PriceCost {
			if top := f.Send.maxPrice(); top > r.Rate.Limit {
				return &FieldError{Flow: f.Name, Rule: r.Name, Field: "PriceCost", Err: fmt.Errorf("takes each code's price, and the highest price (%d) is above the limit (%d)", top, r.Rate.Limit), Predicate: true}
			}
		}
		if seen[r.Name] {
			return &RuleError{Flow: f.Name, Rule: r.Name, Err: errors.New("two rules have this name")}
		}
		seen[r.Name] = true
		if keys[r.Key] {
			return &RuleError{Flow: f.Name, Rule: r.Name, Err: fmt.Errorf("another rule already stores under key %q", r.Key)}
		}
		keys[r.Key] = true
		if r.Subject.Parts == PartDevice {
			if f.device >= 0 {
				return &RuleError{Flow: f.Name, Rule: r.Name, Err: errors.New("a flow has at most one rule on the device subject")}
			}
			f.device = i
		}
		f.needs |= r.Subject.Parts | r.Of
		at := -1
		for j, reason := range f.reasons {
			if reason == r.Reason {
				at = j
			}
		}
		if at < 0 {
			at = len(f.reasons)
			f.reasons = append(f.reasons, r.Reason)
		}
		f.reasonOf = append(f.reasonOf, uint8(at))
	}
	switch {
	case f.RevokeDevicesOnPasswordChange && f.Kind == Sends:
		// Its sends follow the trust group's flows (checkRevokeDevices).
		return bad("RevokeDevicesOnPasswordChange", "is set on the flows of the device_trust group that have a device rule: a send flow's sends follow theirs")
	case f.RevokeDevicesOnPasswordChange && (f.device < 0 || f.Kind != Attempts || f.SecondFactor):
		return bad("RevokeDevicesOnPasswordChange", "is for a flow with a device rule: no other flow trusts device tokens in its checks")
	}
	f.net = netWindows{}
	if f.device >= 0 {
		d := &f.Rules[f.device]
		f.net = netWindows{
			devKey: d.Key + ".dev", slotsKey: d.Key + ".slots",
			record:    spraydetect.Windows{{Length: f.DeviceTokenTTL, Limit: 1}},
			allowance: spraydetect.Windows{{Length: DeviceWindow, Limit: d.DeviceFree}},
			slots:     spraydetect.Windows{{Length: DeviceWindow, Limit: d.DeviceSlots}},
		}
	}
	return f.compileStepUp()
}

// netWindows are the windows and signals of a flow's known-network ops
// (Engine.network), made once per flow rather than per call.
type netWindows struct {
	devKey, slotsKey         string // the device rule's key + ".dev", ".slots"
	record, allowance, slots spraydetect.Windows
}

var (
	regionRE      = regexp.MustCompile(`^([A-Z]{2}|001)$`)
	callingCodeRE = regexp.MustCompile(`^\+[1-9][0-9]{0,2}$`)
)

// compileSend validates a send flow's SendPolicy and fills in its default;
// other flows must not have one.
func (f *Flow) compileSend() error {
	sp := &f.Send
	if f.Kind != Sends {
		if len(sp.DenyTypes) > 0 || len(sp.AllowCountries) > 0 || len(sp.DenyCountries) > 0 || sp.PrefixDigits != 0 || len(sp.Prices) > 0 || sp.OwnerCodes != 0 {
			return bad("Send", "is for send flows (Kind Sends)")
		}
		return nil
	}
	for ch, p := range sp.Prices {
		if ch.String() == "unknown" {
			return badSentence("Send.Prices", "%d is not a channel", ch)
		}
		if p.Default < 0 || p.Default > MaxPrice {
			return bad(fmt.Sprintf("Send.Prices[%s].Default", ch), "must be between 0 and %d, not %d", MaxPrice, p.Default)
		}
		for c, n := range p.Countries {
			if !regionRE.MatchString(c) && !callingCodeRE.MatchString(c) {
				return badSentence(fmt.Sprintf("Send.Prices[%s].Countries", ch), `%q is neither a region (such as "GB") nor a calling code (such as "+44")`, c)
			}
			if n < 0 || n > MaxPrice {
				return bad(fmt.Sprintf("Send.Prices[%s].Countries[%s]", ch, c), "must be between 0 and %d, not %d", MaxPrice, n)
			}
		}
	}
	if sp.OwnerCodes < 0 || sp.OwnerCodes > MaxOwnerCodes {
		return bad("Send.OwnerCodes", "must be between 0 (off) and %d, not %d", MaxOwnerCodes, sp.OwnerCodes)
	}
	if sp.PrefixDigits == 0 {
		sp.PrefixDigits = DefaultPrefixDigits
	}
	if sp.PrefixDigits < 1 || sp.PrefixDigits > 6 {
		return bad("Send.PrefixDigits", "must be between 1 and 6, not %d", sp.PrefixDigits)
	}
	for _, t := range sp.DenyTypes {
		if t.String() == "unknown" && t != NumberUnknown {
			return badSentence("Send.DenyTypes", "%d is not a number type", t)
		}
	}
	for _, list := range []struct {
		field string
		v     []string
	}{{"Send.AllowCountries", sp.AllowCountries}, {"Send.DenyCountries", sp.DenyCountries}} {
		for _, c := range list.v {
			if !regionRE.MatchString(c) && !callingCodeRE.MatchString(c) {
				return badSentence(list.field, `%q is neither a region (two capital letters, such as "GB", or "001") nor a calling code (such as "+44")`, c)
			}
		}
	}
	return nil
}

// maxPrice is the highest price of any code.
func (sp *SendPolicy) maxPrice() int {
	top := 0
	for _, p := range sp.Prices {
		top = max(top, p.Default)
		for _, n := range p.Countries {
			top = max(top, n)
		}
	}
	return top
}

// refuses returns the reason a send flow refuses d before any rule counts
// it ("" when it does not): its number type, or its country.
func (sp *SendPolicy) refuses(d *Destination) Reason {
	if !d.Channel.Phone() {
		return ""
	}
	if slices.Contains(sp.DenyTypes, d.Type) {
		return ReasonNumberType
	}
	code := "+" + strconv.Itoa(d.CallingCode)
	in := func(list []string) bool { return slices.Contains(list, d.Region) || slices.Contains(list, code) }
	if in(sp.DenyCountries) || (len(sp.AllowCountries) > 0 && !in(sp.AllowCountries)) {
		return ReasonCountry
	}
	return ""
}

func ruleLabel(r *Rule, i int) string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprint(i)
}
