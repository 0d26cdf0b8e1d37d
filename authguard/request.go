package authguard

import (
	"errors"
	"fmt"
)

// CheckRequest asks whether an attempt may go ahead, before the caller looks
// at the credential.
type CheckRequest struct {
	// Tenant selects the key space; empty means DefaultTenant.
	Tenant string
	// Flow names a flow from the policy, such as "login".
	Flow string
	// Account is the identifier as the user typed it. It is normalised and
	// hashed; tollgate never stores or logs it.
	Account string
	// IP is the end user's address as the caller saw it.
	IP string
	// DeviceToken is the token a previous success returned, if the caller
	// has one for this end user.
	DeviceToken string
	// CaptchaSolved says the end user just solved a CAPTCHA the caller
	// verified.
	CaptchaSolved bool
	// PasswordFingerprint is an HMAC of the password the caller computes with
	// its own key (never the password), or empty.
	PasswordFingerprint string
	// Destination and Channel, on a flow that verifies a send flow's
	// one-time codes (Flow.Verifies), name where the code being checked
	// was sent, for the flow's rules on the destination. Both or neither;
	// send them with the report too.
	Destination, Channel string
	// Ref is the caller's own opaque reference for the subject (its user
	// id), at most MaxRefBytes without control characters or bidirectional
	// formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
	// U+2066–U+2069), or empty. The engine only passes it, in memory, to
	// the notices of this call (Notice.Ref); it never stores or logs it.
	Ref string
}

// ReportRequest tells tollgate how an attempt ended.
type ReportRequest struct {
	Tenant  string
	Flow    string
	Account string
	IP      string
	Outcome Outcome
	// Attempt is the token the check returned. A report without one, or
	// with an expired one, is counted on its own; one that is malformed or
	// not this call's is an InputError (see Engine.Report).
	Attempt             string
	DeviceToken         string
	PasswordFingerprint string
	// Destination and Channel, on a flow that verifies a send flow's
	// one-time codes (Flow.Verifies), name where the verified code was
	// sent: a success with a valid attempt token credits that destination's
	// conversion rules. Both or neither.
	Destination, Channel string
	// Ref is as in CheckRequest.
	Ref string
	// Breached says the password the end user typed is in a breached-password
	// corpus (the caller found out by a k-anonymous range query; tollgate never
	// sees the password). On a flow with a StepUp policy a success with it is
	// answered StepUp unless the client holds a valid device token of the
	// account, and failures with it feed the flow's Breached rules
	// (credential stuffing).
	Breached bool
}

// SendRequest asks whether a one-time code may be sent now. A Proceed
// counts the send against every rule of the flow.
type SendRequest struct {
	// Tenant selects the key space; empty means DefaultTenant.
	Tenant string
	// Flow names a send flow (kind: send); empty means "otp_send".
	Flow string
	// Destination is the phone number (international format, "+44 …") or
	// e-mail address the code would go to. It is normalised and hashed;
	// tollgate never stores or logs it.
	Destination string
	// Channel is how: "sms", "voice", "whatsapp" or "email".
	Channel string
	// IP is the end user's address as the caller saw it.
	IP string
	// Account is the account the code is for, when the caller knows one.
	Account string
	// DeviceToken is the token a success in a flow of the send flow's
	// device_trust returned (the built-in otp_send trusts login's), with
	// Account: a valid one makes the client known, and rules for unknown
	// clients (the IP rules) skip it.
	DeviceToken string
	// CaptchaSolved says the end user just solved a CAPTCHA the caller
	// verified.
	CaptchaSolved bool
	// Ref is as in CheckRequest.
	Ref string
}

// DefaultSendFlow is the flow of a SendRequest that names none.
const DefaultSendFlow = "otp_send"

// Outcome is how a credential check ended.
type Outcome uint8

// The outcomes. On the wire they are "failure", "success",
// "step_up_passed", "step_up_failed" and "password_changed".
const (
	Failure Outcome = iota + 1
	Success
	// StepUpPassed and StepUpFailed are reported on a step-up flow
	// (Flow.SecondFactor) only: the end user passed, or failed, the second
	// factor a StepUp verdict asked for.
	StepUpPassed
	StepUpFailed
	// PasswordChanged is reported on a flow that checks a password, with
	// the account, after the caller changed or reset that account's
	// password: it clears the account's counters of the password
	// (Engine.Report, passwordchange.go).
	PasswordChanged
)

var outcomeNames = [...]string{"", "failure", "success", "step_up_passed", "step_up_failed", "password_changed"}

func (o Outcome) String() string { return enumName(outcomeNames[:], int(o)) }

// ParseOutcome parses "failure", "success", "step_up_passed",
// "step_up_failed" or "password_changed". Which flows take which is the
// engine's to check.
func ParseOutcome(s string) (Outcome, error) {
	for i, n := range outcomeNames {
		if i > 0 && n == s {
			return Outcome(i), nil
		}
	}
	return 0, &InputError{Field: "outcome", Detail: `must be "failure", "success" or "password_changed" ("step_up_passed" or "step_up_failed" on a step-up flow)`}
}

// Limits on input. They bound the work and memory one call can cost.
const (
	// MaxAccountBytes caps an account identifier as typed.
	MaxAccountBytes = 256
	// MaxFingerprintBytes caps a password fingerprint.
	MaxFingerprintBytes = 256
	// MaxTokenBytes caps attempt and device tokens.
	MaxTokenBytes = 1024
)

// ErrInvalidInput is matched by every *InputError with errors.Is.
var ErrInvalidInput = errors.New("authguard: invalid input")

// InputError says which field of a request is unusable and why. No state has
// changed when it is returned. The API maps it to 400.
type InputError struct {
	// Field is the request field's wire name, such as "ip".
	Field string
	// Detail is a sentence for the caller's developer. It never repeats the
	// field's value.
	Detail string
	// Missing is true when the field is absent (or empty) and the flow's
	// rules need it.
	Missing bool
}

func (e *InputError) Error() string {
	return fmt.Sprintf("authguard: invalid %s: %s", e.Field, e.Detail)
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }
