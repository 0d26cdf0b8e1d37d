package authguard

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// A Rule is one limit of a flow: which subject it counts, with which
// algorithm, when a call counts, at what cost, and what the verdict is past
// it. Check and Report build their one batch of store operations by walking
// the flow's rules in order.
type Rule struct {
	// Name identifies the rule within its flow: lower-case letters, digits
	// and '_'.
	Name string
	// Key names the rule's store keys, in the same alphabet; the default is
	// Name. A short one saves memory per subject on Redis (the built-in
	// rules use the short keys they always had: acct, dev, iprate, ...).
	// Changing it forgets the rule's state.
	Key string
	// Reason is the code the verdict lists, and the metrics count, when the
	// rule shapes a verdict. The default is Name. Several rules may share
	// one (say, spraying counted at three IPv6 prefix lengths).
	Reason Reason
	// Subject is what the rule counts per key.
	Subject Subject
	// Algorithm counts. Backoff takes Backoff (and DeviceFree and
	// DeviceSlots on the device subject), Distinct takes Of and Windows,
	// the rate algorithms take Rate; a SlidingLog that counts failures
	// takes Windows.
	Algorithm Algorithm
	// Counts says when a call counts against the rule. The default is
	// OnFailure for Backoff and Distinct (OnProceed in a send flow),
	// OnProceed for Conversion, and OnCheck for the rate algorithms (a
	// SlidingLog counts failures only when Counts says OnFailure).
	Counts Trigger
	// Cost is how many units a call takes from a rate algorithm. The
	// default is 1.
	Cost int
	// PriceCost, in a send flow, makes a send take its price (the flow's
	// SendPolicy.Prices) instead of Cost: a spend budget. A send that costs
	// nothing is not counted.
	PriceCost bool
	// Past is the verdict once the rule's limit is reached. The default is
	// PastDelay for Backoff and the rate algorithms, PastCaptcha for
	// Distinct, Conversion and a SlidingLog of failures.
	Past Past
	// Clients says which clients the rule counts. The default is
	// UnknownClients, or KnownClients for the device subject.
	Clients Clients

	// Backoff is a Backoff rule's progressive delay.
	Backoff backoff.Policy
	// DeviceFree and DeviceSlots are a device Backoff's allowance: each
	// known device may fail DeviceFree times in any DeviceWindow without
	// waiting, for at most DeviceSlots devices of one account per
	// DeviceWindow; past it, every device of the account shares Backoff.
	DeviceFree, DeviceSlots int
	// Of is what a Distinct rule counts distinct values of: PartAccount or
	// PartIP.
	Of SubjectPart
	// Windows are the windows of a Distinct rule, or of a SlidingLog that
	// counts failures: at most Limit members within each Length.
	Windows spraydetect.Windows
	// Rate is a rate algorithm's parameters; its Algorithm is the rule's.
	Rate RateLimit
	// Breached makes a Distinct rule of accounts count only failures
	// reported with ReportRequest.Breached: credential stuffing, leaked
	// pairs tried one account each. A check cannot know whether the
	// password it is about to be tried is breached, so the rule's checks
	// only read it (past its limit, a CAPTCHA for an account not counted
	// yet), and its reports count. The default is false.
	Breached bool
}

// Trigger says when a call counts against a rule.
type Trigger uint8

const (
	// OnFailure counts attempts that fail: a check reserves one (charges
	// it, or admits it to a log) and its report settles it, refunded on a
	// success. Backoff and Distinct rules and failure logs count this way.
	OnFailure Trigger = iota + 1
	// OnCheck counts every check the rule admits, whatever the verdict.
	OnCheck
	// OnProceed counts checks answered Proceed: a check takes its units and
	// gives them back when the verdict is anything else.
	OnProceed
)

var triggerNames = [...]string{"", "failure", "check", "proceed"}

func (t Trigger) String() string { return enumName(triggerNames[:], int(t)) }

// Past is what a rule asks for once its limit is reached.
type Past uint8

const (
	// PastDelay: wait for the time the algorithm computes.
	PastDelay Past = iota + 1
	// PastCaptcha: solve a CAPTCHA; a solved one lets the call through.
	PastCaptcha
	// PastDeny: do not go ahead at all, CAPTCHA or not. Only send flows
	// (one-time-code sends) take it.
	PastDeny
)

var pastNames = [...]string{"", "delay", "captcha", "deny"}

func (p Past) String() string { return enumName(pastNames[:], int(p)) }

// Clients says which clients a rule counts.
type Clients uint8

const (
	// UnknownClients: clients without a valid device token for the account
	// trusted by the flow.
	UnknownClients Clients = iota + 1
	// KnownClients: clients with one. Only the device subject counts them
	// alone.
	KnownClients
	// AllClients: both.
	AllClients
)

var clientsNames = [...]string{"", "unknown", "known", "all"}

func (c Clients) String() string { return enumName(clientsNames[:], int(c)) }

func (c Clients) counts(known bool) bool {
	return c == AllClients || (c == KnownClients) == known
}

func enumName(names []string, i int) string {
	if i > 0 && i < len(names) {
		return names[i]
	}
	return "unknown"
}

func parseEnum(names []string, s, what string) (int, error) {
	for i, n := range names {
		if i > 0 && n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s must be one of %s, not %q", what, strings.Join(names[1:], ", "), s)
}

// ParseTrigger parses "failure", "check" or "proceed".
func ParseTrigger(s string) (Trigger, error) {
	i, err := parseEnum(triggerNames[:], s, "counts")
	return Trigger(i), err
}

// ParsePast parses "delay", "captcha" or "deny".
func ParsePast(s string) (Past, error) {
	i, err := parseEnum(pastNames[:], s, "past")
	return Past(i), err
}

// ParseClients parses "unknown", "known" or "all".
func ParseClients(s string) (Clients, error) {
	i, err := parseEnum(clientsNames[:], s, "clients")
	return Clients(i), err
}

// SubjectPart is one part of a subject.
type SubjectPart uint8

// The parts a subject is made of.
const (
	// PartAccount: the normalised account.
	PartAccount SubjectPart = 1 << iota
	// PartDevice: the account and the client's device token.
	PartDevice
	// PartIP: the client's address at the flow's grouping, or at a wider
	// IPv6 prefix (Subject.IPBits).
	PartIP
	// PartFingerprint: the password fingerprint the caller sent.
	PartFingerprint
	// PartTenant: the tenant, the same key for every call of the flow.
	PartTenant
	// PartDestination: a send's destination, normalised (E.164, or the
	// e-mail address).
	PartDestination
	// PartDestPrefix: the block of numbers a phone destination belongs to
	// (its E.164 without the flow's prefix digits); e-mail has none, since a
	// domain such as gmail.com is everybody's.
	PartDestPrefix
	// PartCountry: a phone destination's region ("GB"); e-mail has none.
	PartCountry
)

// sendParts are the parts only a send has.
const sendParts = PartDestination | PartDestPrefix | PartCountry

var partNames = []struct {
	part SubjectPart
	name string
}{{PartAccount, "account"}, {PartDevice, "device"}, {PartIP, "ip"}, {PartFingerprint, "password_fingerprint"}, {PartTenant, "tenant"},
	{PartDestination, "destination"}, {PartDestPrefix, "destination_prefix"}, {PartCountry, "country"}}

// Subject says which key a rule counts: one part, or a compound of parts
// other than device and tenant ("account+ip").
type Subject struct {
	Parts SubjectPart
	// IPBits, with PartIP, is a wider IPv6 prefix length to count instead
	// of the flow's grouping ("ip/48"); such a rule skips IPv4 clients. Zero
	// means the flow's grouping.
	IPBits int
}

var ipBitsRE = regexp.MustCompile(`^ip/([0-9]{1,3})$`)

// ParseSubject parses a subject: "account", "device", "ip", "ip/N",
// "password_fingerprint", "tenant", "destination", "destination_prefix",
// "country", or parts other than device and tenant joined by "+".
func ParseSubject(s string) (Subject, error) {
	var sub Subject
	const valid = `subject must be account, device, ip, ip/N (a wider IPv6 prefix), password_fingerprint, tenant, destination, destination_prefix, country, or parts other than device and tenant joined by "+" (account+ip)`
	if s == "" || len(s) > 64 {
		return sub, errors.New(valid)
	}
	for _, p := range strings.Split(s, "+") {
		var part SubjectPart
		if m := ipBitsRE.FindStringSubmatch(p); m != nil {
			bits, _ := strconv.Atoi(m[1])
			if bits < 16 || bits > 127 {
				return sub, fmt.Errorf("%s: the prefix of %q must be between 16 and 127", valid, p)
			}
			part, sub.IPBits = PartIP, bits
		}
		for _, n := range partNames {
			if n.name == p {
				part = n.part
			}
		}
		if part == 0 || sub.Parts&part != 0 {
			return sub, fmt.Errorf("%s; %q is not one", valid, p)
		}
		sub.Parts |= part
	}
	if sub.Parts&(PartDevice|PartTenant) != 0 && sub.Parts&(sub.Parts-1) != 0 {
		return sub, fmt.Errorf("%s; device and tenant stand alone", valid)
	}
	return sub, nil
}

func (s Subject) String() string {
	var b strings.Builder
	for _, n := range partNames {
		if s.Parts&n.part == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('+')
		}
		b.WriteString(n.name)
		if n.part == PartIP && s.IPBits != 0 {
			b.WriteString("/" + strconv.Itoa(s.IPBits))
		}
	}
	return b.String()
}

// Has reports whether s includes part.
func (s Subject) Has(part SubjectPart) bool { return s.Parts&part != 0 }

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// MaxRules is the most rules one flow may have.
const MaxRules = 32

// validate checks the rule on its own and fills in its defaults; grouping
// is the flow's IPv6 grouping, send whether the flow is a send flow, and
// verifies whether it verifies a send flow's codes.
func (r *Rule) validate(grouping int, send, verifies bool) error {
	if !nameRE.MatchString(r.Name) {
		return bad("Name", "is 1 to 32 lower-case letters, digits and '_', starting with a letter")
	}
	if r.Reason == "" {
		r.Reason = Reason(r.Name)
	}
	if r.Key == "" {
		r.Key = r.Name
	}
	if !nameRE.MatchString(r.Key) {
		return bad("Key", "is 1 to 32 lower-case letters, digits and '_', starting with a letter")
	}
	if !nameRE.MatchString(string(r.Reason)) || r.Reason == ReasonUnavailable || r.Reason == ReasonOverloaded || r.Reason == ReasonBlocked {
		return bad("Reason", `is 1 to 32 lower-case letters, digits and '_', starting with a letter, and not %q, %q or %q`, ReasonUnavailable, ReasonOverloaded, ReasonBlocked)
	}
	if r.Subject.Parts == 0 {
		return bad("Subject", "is required")
	}
	if r.Subject.IPBits != 0 && (r.Subject.IPBits >= grouping) {
		return fmt.Errorf("subject %s: a wider prefix must be shorter than the flow's ipv6_prefix (%d)", r.Subject, grouping)
	}
	if r.Cost == 0 {
		r.Cost = 1
	}
	if r.PriceCost && (!send || !r.rateRule()) {
		return bad("PriceCost", "is for rate rules of send flows (a spend budget)")
	}
	device := r.Subject.Parts == PartDevice
	if r.Clients == 0 {
		r.Clients = UnknownClients
		if device {
			r.Clients = KnownClients
		}
	}
	if device && r.Clients != KnownClients {
		return errors.New("the device subject counts known devices only: clients must be known")
	}
	if err := r.validateKind(send, verifies); err != nil {
		return err
	}
	if r.Breached && r.Algorithm != Distinct {
		return bad("Breached", "is for distinct rules of accounts (credential stuffing)")
	}
	switch r.Algorithm.Param() {
	case ParamBackoff:
		return r.validateBackoff(device, send)
	case ParamWindows:
		return r.validateDistinct(send)
	case ParamConversion:
		return r.validateConversion(send)
	case ParamWindow, ParamRate:
		if device {
			return fmt.Errorf("%s cannot count the device subject; only backoff does", r.Algorithm)
		}
		if r.failureLog() {
			return r.validateFailureLog()
		}
		return r.validateRate()
	}
	return bad("Algorithm", "is required: one of %s", strings.Join(algorithmNames[1:], ", "))
}

// validateKind checks what a rule of a send flow, or of a check-and-report
// flow, may count. A send has no report: its rules count what it sends, and
// only they may deny. A check has a destination only in a flow that
// verifies a send flow's codes.
func (r *Rule) validateKind(send, verifies bool) error {
	switch {
	case !send && r.Past == PastDeny:
		return errors.New("past: deny is for send flows (kind: send); use delay or captcha")
	case !send && !verifies && (r.Subject.Parts|r.Of)&sendParts != 0:
		return errors.New("destination, destination_prefix and country are what a send has: only send flows (kind: send) and flows that verify their codes (verifies: otp_send) count them")
	case send && (r.Subject.Parts|r.Of)&(PartDevice|PartFingerprint) != 0:
		return errors.New("a send has no device or password fingerprint to count")
	case send && r.Counts == OnFailure:
		return errors.New("a send has no report, so nothing fails: counts must be proceed (sends) or check (requests)")
	case send && r.Past == PastDeny && r.Algorithm == Backoff:
		return errors.New("backoff answers delay: past must be delay")
	}
	return nil
}

func (r *Rule) validateBackoff(device, send bool) error {
	if r.Counts == 0 {
		r.Counts = OnFailure
		if send {
			r.Counts = OnProceed
		}
	}
	if r.Past == 0 {
		r.Past = PastDelay
	}
	switch {
	case send && r.Counts != OnProceed:
		return errors.New("in a send flow backoff counts sends: counts must be proceed")
	case !send && r.Counts != OnFailure:
		return errors.New("backoff counts failures: counts must be failure")
	case r.Past != PastDelay:
		return errors.New("backoff answers delay past its free attempts: past must be delay")
	case r.Cost != 1:
		return errors.New("backoff counts one failure per attempt: cost must be 1")
	}
	if err := r.Backoff.Validate(); err != nil {
		return badErr("Backoff", err)
	}
	if !device {
		if r.DeviceFree != 0 || r.DeviceSlots != 0 {
			return errors.New("device_free and device_slots apply to the device subject only")
		}
		return nil
	}
	if r.DeviceFree < 1 || r.DeviceFree > 100 {
		return bad("DeviceFree", "must be between 1 and 100, not %d", r.DeviceFree)
	}
	if r.DeviceSlots < 1 || r.DeviceSlots > 20 {
		return bad("DeviceSlots", "must be between 1 and 20, not %d", r.DeviceSlots)
	}
	return nil
}

// validateLog checks what Distinct rules and failure logs share; send says
// the rule is in a send flow, where a log counts sends.
func (r *Rule) validateLog(what string, send bool) error {
	if r.Counts == 0 {
		r.Counts = OnFailure
		if send {
			r.Counts = OnProceed
		}
	}
	if r.Past == 0 {
		r.Past = PastCaptcha
	}
	switch {
	case send && r.Counts != OnProceed:
		return fmt.Errorf("in a send flow %s counts sends: counts must be proceed", what)
	case !send && r.Counts != OnFailure:
		return fmt.Errorf("%s counts failures: counts must be failure", what)
	case r.Past != PastCaptcha && !(send && r.Past == PastDeny):
		return fmt.Errorf("%s answers captcha past its limit (or deny, in a send flow): past must be captcha (for a delay, count checks or proceeds with a rate algorithm)", what)
	case r.Cost != 1:
		return fmt.Errorf("%s counts one member per attempt: cost must be 1", what)
	case r.Rate != RateLimit{}:
		return fmt.Errorf("%s takes windows, not window, limit or rate", what)
	case r.Backoff != backoff.Policy{}:
		return fmt.Errorf("%s takes windows, not backoff parameters", what)
	case len(r.Windows) == 0:
		return fmt.Errorf("%s needs windows: [{window: 1h, limit: 10}, ...]", what)
	}
	if err := r.Windows.Validate(); err != nil {
		return badErr("Windows", err)
	}
	return nil
}

func (r *Rule) validateDistinct(send bool) error {
	if r.Breached && (send || r.Of != PartAccount) {
		return errors.New("breached counts the accounts that failed with breached passwords: of must be account, in a flow of checks and reports")
	}
	if r.Of != PartAccount && r.Of != PartIP && r.Of != PartDestination {
		return errors.New("distinct needs of: account, ip or destination (what it counts distinct values of)")
	}
	if r.Subject.Has(r.Of) {
		return fmt.Errorf("distinct counts distinct %s per subject; the subject %s already has one", partName(r.Of), r.Subject)
	}
	return r.validateLog("distinct", send)
}

func (r *Rule) validateFailureLog() error {
	if r.Of != 0 {
		return bad("Of", "applies to distinct only")
	}
	return r.validateLog(fmt.Sprintf("a %s that counts failures", r.Algorithm), false)
}

func (r *Rule) validateRate() error {
	if r.Counts == 0 {
		r.Counts = OnCheck
	}
	if r.Past == 0 {
		r.Past = PastDelay
	}
	a := r.Algorithm
	switch {
	case r.Counts == OnFailure:
		return fmt.Errorf("%s counts checks or proceeds; to count failures use sliding_log (exact: each attempt is reserved by its check and settled once by its report) or backoff", a)
	case len(r.Windows) != 0 || r.Of != 0:
		return fmt.Errorf("%s takes limit and %s, not windows or of", a, r.rateParam())
	case r.Backoff != backoff.Policy{} || r.DeviceFree != 0 || r.DeviceSlots != 0:
		return fmt.Errorf("%s takes limit and %s, not backoff parameters", a, r.rateParam())
	}
	r.Rate.Algorithm = a
	if err := r.Rate.Validate(); err != nil {
		return badSentence("Rate", "%s takes limit and %s: %w", a, r.rateParam(), err)
	}
	if r.Cost < 1 || r.Cost > r.Rate.Limit {
		return bad("Cost", "must be between 1 and limit (%d), not %d", r.Rate.Limit, r.Cost)
	}
	return nil
}

// validateConversion checks a Conversion rule: sends counted, verifications
// credited by the reports of the flows that verify this one's codes.
func (r *Rule) validateConversion(send bool) error {
	if r.Counts == 0 {
		r.Counts = OnProceed
	}
	if r.Past == 0 {
		r.Past = PastCaptcha
	}
	switch {
	case !send:
		return errors.New("conversion judges one-time-code sends: only send flows (kind: send) take it")
	case r.Counts != OnProceed:
		return errors.New("conversion counts sends: counts must be proceed")
	case r.Past != PastCaptcha && r.Past != PastDeny:
		return errors.New("conversion answers captcha or deny while the share verified is low: a delay would never end by itself")
	case r.Cost != 1 || r.PriceCost:
		return errors.New("conversion counts one send per code: cost must be 1")
	case len(r.Windows) != 0 || r.Of != 0 || r.Rate.Interval != 0:
		return errors.New("conversion takes window, min_volume and min_conversion")
	case r.Backoff != backoff.Policy{}:
		return errors.New("conversion takes window, min_volume and min_conversion, not backoff parameters")
	}
	r.Rate.Algorithm = r.Algorithm
	if err := r.Rate.Validate(); err != nil {
		return badSentence("Rate", "conversion takes window, min_volume and min_conversion (a percentage): %w", err)
	}
	return nil
}

// rateParam names the parameter a rate algorithm takes besides its limit.
func (r *Rule) rateParam() string {
	if r.Algorithm.Param() == ParamRate {
		return "rate"
	}
	return "window"
}

func partName(p SubjectPart) string { return Subject{Parts: p}.String() }

// failureLog reports whether the rule is a log of failed attempts (a
// SlidingLog that counts failures), kept as a LogOp whose members are
// attempts.
func (r *Rule) failureLog() bool { return r.Algorithm.row().failureLog && r.Counts == OnFailure }

// logRule reports whether the rule is kept as a LogOp.
func (r *Rule) logRule() bool { return r.Algorithm.Param() == ParamWindows || r.failureLog() }

// block is the Block the verdict reads the rule's own result by: its Past,
// where a delay of a queue's admitted call is its place in the queue.
func (r *Rule) block() Block {
	switch {
	case r.Past == PastCaptcha:
		return BlockCaptcha
	case r.Past == PastDeny:
		return BlockDeny
	case r.Algorithm.Queues():
		return BlockQueue
	}
	return BlockDelay
}

// rateRule reports whether the rule is kept as a RateOp.
func (r *Rule) rateRule() bool { return r.Algorithm.Param() != ParamBackoff && !r.logRule() }

// maxFailuresPerDay is the most failed attempts per day a Backoff rule on
// the account or device subject lets one account make; ok is false for any
// other rule.
func (r *Rule) maxFailuresPerDay() (n int, ok bool) {
	if r.Algorithm != Backoff || (r.Subject.Parts != PartAccount && r.Subject.Parts != PartDevice) {
		return 0, false
	}
	n = r.Backoff.MaxFailuresIn(24 * time.Hour)
	if r.Subject.Parts == PartDevice {
		n += r.DeviceSlots * r.DeviceFree
	}
	return n, true
}
