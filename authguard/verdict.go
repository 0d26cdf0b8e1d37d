package authguard

import (
	"encoding/json"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// Action is what the caller must do with an attempt.
type Action uint8

// The actions. On the wire they are "proceed", "delay", "captcha", "deny"
// and "step_up".
const (
	// Proceed: check the credential (or send the code) now.
	Proceed Action = iota
	// Delay: do not check it before the verdict's Delay has passed; answer
	// the end user with 429 and Retry-After.
	Delay
	// Captcha: ask for a CAPTCHA, then check again with CaptchaSolved.
	Captcha
	// Deny: do not send the code at all. Only send flows answer it; the
	// end user should see the same message as for a code sent.
	Deny
	// StepUp: the password was right, but do not sign the end user in yet:
	// ask for a second factor (or a password reset), then report it on the
	// step-up flow with the ticket the verdict carries in Attempt. Only a
	// success report of a flow with a StepUp policy answers it, after the
	// password was verified, so it tells nothing to anyone without the
	// password; it never carries a device token.
	StepUp
)

var actionNames = [...]string{"proceed", "delay", "captcha", "deny", "step_up"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// Reason is a stable code saying which rule shaped a verdict, for the
// caller's logs and the metrics: lower-case letters, digits and '_'. The
// policy defines them (a rule's reason, by default its name); the built-in
// rules keep the codes below. Reasons never depend on whether an account
// exists.
type Reason string

// The built-in policy's reason codes, and ReasonUnavailable and
// ReasonOverloaded, which no rule may take.
const (
	ReasonAccountBackoff Reason = "account_backoff" // the account's failure counter asks for a delay
	ReasonDeviceBackoff  Reason = "device_backoff"  // a known device is past its own allowance and its devices' shared counter asks for a delay
	ReasonIPRate         Reason = "ip_rate"         // too many checks from the client's IP prefix
	ReasonIPSpray        Reason = "ip_spray"        // too many distinct accounts failed from the IP prefix
	ReasonIPFailures     Reason = "ip_failures"     // too many failures from the IP prefix
	ReasonPasswordSpray  Reason = "password_spray"  // one password tried across too many accounts
	ReasonUnavailable    Reason = "unavailable"     // the store is down and the flow fails closed
	ReasonOverloaded     Reason = "overloaded"      // this instance had no call slot free in time: retry after the delay
	ReasonNumberType     Reason = "number_type"     // a send flow never sends to this type of number (premium rate, ...)
	ReasonCountry        Reason = "country"         // a send flow never sends to this country

	// A StepUp verdict's reasons (StepUpPolicy), and the built-in rule of
	// failures with breached passwords per address.
	ReasonBreachedPassword     Reason = "breached_password"       // the right password is a breached one
	ReasonAccountUnderAttack   Reason = "account_under_attack"    // the account's failures reached StepUpPolicy.UnderAttackFailures
	ReasonNewDeviceUnderAttack Reason = "new_device_under_attack" // a new device on a new network, the account past StepUpPolicy.NewDeviceFailures
	ReasonAddressEscalated     Reason = "address_escalated"       // the address is past a CAPTCHA rule on addresses (spraying, stuffing)
	ReasonCredentialStuffing   Reason = "credential_stuffing"     // too many distinct accounts failed with breached passwords from the IP prefix
)

func (r Reason) String() string { return string(r) }

// reasonSet is a set of a flow's reasons, by their index in Flow.reasons; it
// lists them in that order.
type reasonSet uint64

func (s *reasonSet) add(i uint8) { *s |= 1 << i }

func (s reasonSet) list(f *Flow) []Reason {
	rs := make([]Reason, 0, 2)
	for i, r := range f.reasons {
		if s&(1<<i) != 0 {
			rs = append(rs, r)
		}
	}
	return rs
}

// Verdict is tollgate's answer. Its JSON form has the same fields in the same
// order whatever the action: {"action","delay_ms","retry_after","reasons",
// "attempt","device_token"}, with zero values where a field does not apply.
type Verdict struct {
	// Action is what to do.
	Action Action
	// Delay is how long to wait before the attempt may go ahead: with
	// Delay, before checking again; with Proceed, the call's place in a
	// leaky_bucket rule's queue, to hold it that long and then go ahead
	// without checking again. Zero otherwise.
	Delay time.Duration
	// Reasons lists the rules' reasons behind the verdict, in the order of
	// the flow's rules; empty for a plain Proceed.
	Reasons []Reason
	// Attempt is the signed attempt token a Proceed from Check carries; the
	// caller passes it back with its report. With StepUp, the step-up ticket
	// to report the second factor with.
	Attempt string
	// DeviceToken is the fresh device token a success report returns, for
	// the caller to keep in a long-lived cookie.
	DeviceToken string
}

// RetryAfter is Delay in whole seconds, rounded up: the value of a
// Retry-After header.
func (v Verdict) RetryAfter() int64 {
	return int64((v.Delay + time.Second - 1) / time.Second)
}

// MarshalJSON writes the uniform verdict, as wire.Verdict declares it:
// always the same fields in the same order, numbers zero and strings empty
// where they do not apply. The server writes the same bytes without
// allocating (api's appendVerdict).
func (v Verdict) MarshalJSON() ([]byte, error) {
	reasons := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		reasons[i] = string(r)
	}
	return json.Marshal(wire.Verdict{
		Action: v.Action.String(), DelayMS: v.Delay.Milliseconds(), RetryAfter: v.RetryAfter(),
		Reasons: reasons, Attempt: v.Attempt, DeviceToken: v.DeviceToken,
	})
}

// Block is how one op's result in a check bears on the verdict: its row of
// the verdict rule (Reading). A plan gives each op its Block as it adds the
// op; combine, Blocked and redisstore's check script read results by it.
type Block uint8

// The blocks. What each one reads is its Reading: the rows of readings.
const (
	// BlockNone: the result never counts (a record's peek that is no
	// condition, a credit).
	BlockNone Block = iota
	// BlockDelay: a Wait delays the check.
	BlockDelay
	// BlockQueue: a leaky bucket's result: a Wait Over delays the check; a
	// Wait not Over is the admitted call's place in the queue.
	BlockQueue
	// BlockCaptcha: Over asks for a CAPTCHA unless one was solved.
	BlockCaptcha
	// BlockAllowance never stops a check; Over makes it not exempt from
	// BlockShared waits.
	BlockAllowance
	// BlockShared: a Wait delays the check unless it is exempt: no result
	// of the batch binds (Reading.Binds).
	BlockShared
	// BlockDeny: Over denies the check, CAPTCHA or not.
	BlockDeny
	// BlockVerified never stops a check; not Over makes it not exempt (a
	// send's destination that its account has not verified, a network it
	// never signed in from).
	BlockVerified
	// BlockAllowanceSolved is BlockOwner for a client without a device: it
	// also makes the check not exempt unless a CAPTCHA was solved.
	BlockAllowanceSolved
	// BlockOwner is BlockAllowance for a send's owner allowance or a known
	// network's, and spare: spent only on a check it exempted from a
	// BlockShared wait (Finish).
	BlockOwner
)

// Cond is a condition on one op's result in a check, as its truth table
// over three facts: the result has a Wait, it is Over, and the check comes
// with a solved CAPTCHA. CondWait, CondOver and CondSolved are the facts;
// Go's bit operators combine them: CondWait & CondOver, CondOver &^
// CondSolved, ^CondOver. The zero Cond never holds.
type Cond uint8

// The three facts a Cond is made of. Bit i of a Cond is its value where
// Wait is i&1, Over i&2 and solved i&4.
const (
	CondWait   Cond = 0b10101010
	CondOver   Cond = 0b11001100
	CondSolved Cond = 0b11110000
)

// Holds reports whether c holds for r in a check whose CAPTCHA was solved
// or not.
func (c Cond) Holds(r Result, solved bool) bool {
	i := 0
	if r.Wait > 0 {
		i = 1
	}
	if r.Over {
		i |= 2
	}
	if solved {
		i |= 4
	}
	return c>>i&1 == 1
}

// Reading is one row of the verdict rule: how a check reads a result
// through its Block.
type Reading struct {
	// Stops: when it holds, the result keeps the check from proceeding,
	// and the verdict is As: Delay (for the result's Wait), Captcha or
	// Deny.
	Stops Cond
	As    Action
	// Queues: a Wait that does not stop the check is its place in a
	// queue: it proceeds, held that long.
	Queues bool
	// Shared: the result stops only a check that is not exempt, and one
	// that a solved CAPTCHA would make exempt is asked for one instead. A
	// check is exempt while no result of its batch Binds.
	Shared bool
	Binds  Cond
	// Spare: the op, when it is undone on a block, is spent only on a check
	// it exempted (Reserve sends it as its peek first; Finish).
	Spare bool
}

// readings is the verdict rule, by Block: what combine answers, what
// Blocked and Reserve decide, and what redisstore's check script decides,
// written from it (Block.Reading).
var readings = [...]Reading{
	BlockNone:            {},
	BlockDelay:           {Stops: CondWait, As: Delay},
	BlockQueue:           {Stops: CondWait & CondOver, As: Delay, Queues: true},
	BlockCaptcha:         {Stops: CondOver &^ CondSolved, As: Captcha},
	BlockAllowance:       {Binds: CondOver},
	BlockShared:          {Stops: CondWait, As: Delay, Shared: true},
	BlockDeny:            {Stops: CondOver, As: Deny},
	BlockVerified:        {Binds: ^CondOver},
	BlockAllowanceSolved: {Binds: CondOver | ^CondSolved, Spare: true},
	BlockOwner:           {Binds: CondOver, Spare: true},
}

// Reading returns b's row of the verdict rule; BlockNone's for a Block
// that is none of the constants.
func (b Block) Reading() Reading { return *reading(b) }

// reading is b's row, BlockNone's for a Block that is none of the
// constants.
func reading(b Block) *Reading {
	if int(b) < len(readings) {
		return &readings[b]
	}
	return &readings[BlockNone]
}

// Blocks are the Blocks there are, in order: for a store that writes the
// verdict rule out in its own terms.
func Blocks() []Block {
	bs := make([]Block, len(readings))
	for i := range bs {
		bs[i] = Block(i)
	}
	return bs
}

// exemption reads the Binds of a check's results: the check is exempt from
// the Shared results' waits while none binds, and solvable when some binds
// only because no CAPTCHA was solved.
type exemption struct{ bound, boundSolved bool }

// read reads one result r through b.
func (x *exemption) read(b Block, r Result, solved bool) {
	c := reading(b).Binds
	x.bound = x.bound || c.Holds(r, solved)
	x.boundSolved = x.boundSolved || c.Holds(r, true)
}

// readHeld reads h, what a full store still holds for the op, where it
// shows something: a condition that holds for an empty result (a record
// not there) is not read from it, since an entry it lacks says nothing.
func (x *exemption) readHeld(b Block, h Result, solved bool) {
	c := reading(b).Binds
	x.bound = x.bound || c.shows(h, solved)
	x.boundSolved = x.boundSolved || c.shows(h, true)
}

// shows reports whether c holds for r and not for an empty result.
func (c Cond) shows(r Result, solved bool) bool {
	return c.Holds(r, solved) && !c.Holds(Result{}, solved)
}

func (x exemption) exempt() bool   { return !x.bound }
func (x exemption) solvable() bool { return x.bound && !x.boundSolved }

// asks is what r, read through rd in a check of exemption x, asks of the
// check: Proceed, queued when r's Wait is its place in a queue; Delay, for
// r's Wait; Captcha; or Deny. combine and Blocked read every result by it.
func (rd *Reading) asks(r Result, solved bool, x exemption) (a Action, queued bool) {
	if rd.Shared {
		if x.exempt() {
			return Proceed, false
		}
		if x.solvable() && r.Wait > 0 {
			return Captcha, false // a solved CAPTCHA would exempt the check
		}
	}
	if rd.Stops.Holds(r, solved) {
		return rd.As, false
	}
	return Proceed, rd.Queues && r.Wait > 0
}

// Blocked reports whether results, read through their gates by the verdict
// rule, keep a check from proceeding: exactly when combine's verdict on
// them is not Proceed (TestGates_AgreeWithCombine).
func Blocked(gates []Gate, res []Result, captchaSolved bool) bool {
	var x exemption
	for i, g := range gates {
		x.read(g.Block, res[i], captchaSolved)
	}
	for i, g := range gates {
		if a, _ := reading(g.Block).asks(res[i], captchaSolved, x); a != Proceed {
			return true
		}
	}
	return false
}
