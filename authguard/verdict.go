package authguard

import (
	"encoding/json"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// Action is what the caller must do with an attempt.
type Action uint8

// The actions. On the wire they are "proceed", "delay", "captcha" and
// "deny".
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
)

var actionNames = [...]string{"proceed", "delay", "captcha", "deny"}

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
	// caller passes it back with its report.
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
