package wire

// Outcome values of a ReportRequest.
const (
	OutcomeFailure = "failure"
	OutcomeSuccess = "success"
	// OutcomeStepUpPassed is reported on a step-up flow (the built-in
	// step_up) when the end user passed the second factor that a step_up
	// verdict asked for; with the step-up ticket in Attempt.
	OutcomeStepUpPassed = "step_up_passed"
	// OutcomeStepUpFailed is reported on a step-up flow when a second-factor
	// code was wrong; with the step-up ticket in Attempt.
	OutcomeStepUpFailed = "step_up_failed"
	// OutcomePasswordChanged is reported on a flow that checks a password
	// (the built-in login), with the account and no attempt token, once
	// the caller changed or reset that account's password: it clears the
	// account's counters of the password, never an address's.
	OutcomePasswordChanged = "password_changed"
)

// Channel values of the requests that name a destination.
const (
	ChannelSMS      = "sms"
	ChannelVoice    = "voice"
	ChannelWhatsApp = "whatsapp"
	ChannelEmail    = "email"
)

// DefaultSendFlow is the flow of a SendRequest that names none.
const DefaultSendFlow = "otp_send"

// CheckRequest is the body of POST /v1/check: may this attempt go ahead now?
//
// The server treats an absent optional key, null and the empty value alike,
// so optional fields are omitted when empty; Flow is always sent.
type CheckRequest struct {
	// Flow names a flow of the policy, such as "login". It is required.
	Flow string `json:"flow"`
	// Account is the account identifier as the end user typed it; required
	// by every flow whose rules count it (the built-in login and
	// otp_verify). tollgate hashes it and never stores or logs it.
	Account string `json:"account,omitempty"`
	// IP is the end user's address as the caller saw it; required by every
	// flow whose rules count it.
	IP string `json:"ip,omitempty"`
	// DeviceToken is the device token a previous success returned for this
	// end user, if the caller keeps one. An invalid one is ignored.
	DeviceToken string `json:"device_token,omitempty"`
	// CaptchaSolved says the end user just solved a CAPTCHA that the caller
	// verified.
	CaptchaSolved bool `json:"captcha_solved,omitempty"`
	// PasswordFingerprint is an HMAC of the password under the caller's own
	// key (never the password itself), or empty.
	PasswordFingerprint string `json:"password_fingerprint,omitempty"`
	// Destination is, on a flow that verifies one-time codes (the built-in
	// otp_verify), where the code being checked was sent; with Channel.
	Destination string `json:"destination,omitempty"`
	// Channel is the channel the code went by; with Destination.
	Channel string `json:"channel,omitempty"`
	// Ref is the caller's own opaque reference for the end user (its user
	// id), at most 128 bytes of text without control characters or
	// bidirectional formatting characters (U+061C, U+200E, U+200F,
	// U+202A–U+202E, U+2066–U+2069), or empty. tollgate passes it only to
	// the notices (webhooks) this call causes, so that their receiver can
	// act on them; it never stores or logs it.
	Ref string `json:"ref,omitempty"`
}

// ReportRequest is the body of POST /v1/report: how did the attempt end?
//
// Optional fields are omitted when empty; Flow and Outcome are always sent.
type ReportRequest struct {
	// Flow is the check's flow. It is required.
	Flow string `json:"flow"`
	// Account is the check's account; required as for a check.
	Account string `json:"account,omitempty"`
	// IP is the check's address; required as for a check.
	IP string `json:"ip,omitempty"`
	// Outcome is OutcomeFailure, OutcomeSuccess or OutcomePasswordChanged,
	// or on a step-up flow OutcomeStepUpPassed or OutcomeStepUpFailed. It
	// is required. Report a failure for an account that does not exist
	// exactly as for one that does.
	Outcome string `json:"outcome"`
	// Attempt is the attempt token the check returned, unchanged. A report
	// without one (or with one past the flow's attempt_ttl) is counted on its
	// own; one that is not this call's check's is refused (400
	// invalid-field). On a step-up flow it is the step-up ticket that the
	// login's step_up verdict carried, and it is required; after it, a
	// comma and the attempt token of this try's own check on the step-up
	// flow, which the report then settles (the ticket alone is counted on
	// its own).
	Attempt string `json:"attempt,omitempty"`
	// DeviceToken is the device token the check carried, if any.
	DeviceToken string `json:"device_token,omitempty"`
	// PasswordFingerprint is the check's password fingerprint, if any.
	PasswordFingerprint string `json:"password_fingerprint,omitempty"`
	// Destination is, on a flow that verifies one-time codes, where the
	// verified code was sent, as given to POST /v1/otp/send; with Channel.
	Destination string `json:"destination,omitempty"`
	// Channel is the channel the verified code went by; with Destination.
	Channel string `json:"channel,omitempty"`
	// Ref is as in CheckRequest.
	Ref string `json:"ref,omitempty"`
	// Breached says the password the end user typed was found in a
	// breached-password corpus (the caller found out by a k-anonymous range
	// query such as GET /v1/breached/{prefix}; tollgate never receives the
	// password, its hash or a prefix of it here). Only a boolean, never a
	// count: a count would narrow which password it is. Accepted on reports
	// of attempts flows only.
	Breached bool `json:"breached,omitempty"`
}

// SendRequest is the body of POST /v1/otp/send: may a one-time code be sent
// to this destination now?
//
// Optional fields are omitted when empty; Destination and Channel are always
// sent.
type SendRequest struct {
	// Flow names a send flow of the policy; empty means DefaultSendFlow.
	Flow string `json:"flow,omitempty"`
	// Destination is the phone number in international format for the
	// phone channels, or the e-mail address for ChannelEmail. It is
	// required. tollgate hashes it and never stores or logs it.
	Destination string `json:"destination"`
	// Channel is one of the Channel values. It is required.
	Channel string `json:"channel"`
	// IP is the end user's address; required by every send flow whose rules
	// count it (the built-in otp_send does).
	IP string `json:"ip,omitempty"`
	// Account is the account the code is for, when the caller knows one.
	Account string `json:"account,omitempty"`
	// DeviceToken is, with Account, the device token a login success
	// returned for this end user. An invalid one is ignored.
	DeviceToken string `json:"device_token,omitempty"`
	// CaptchaSolved says the end user just solved a CAPTCHA that the caller
	// verified.
	CaptchaSolved bool `json:"captcha_solved,omitempty"`
	// Ref is as in CheckRequest.
	Ref string `json:"ref,omitempty"`
}
