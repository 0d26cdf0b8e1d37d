package wire

// Action values of a Verdict.
const (
	ActionProceed = "proceed"
	ActionDelay   = "delay"
	ActionCaptcha = "captcha"
	// ActionDeny is answered by send flows only: do not send at all.
	ActionDeny = "deny"
	// ActionStepUp is answered only by a success report, after the password
	// was verified: ask for a second factor (or a password reset) before
	// signing the end user in. Attempt carries the step-up ticket to report
	// on the step-up flow with; DeviceToken is empty.
	ActionStepUp = "step_up"
)

// Verdict is the answer to every check, report and send, always with these
// fields in this order.
type Verdict struct {
	// Action is proceed, delay, captcha, deny or step_up.
	Action string `json:"action"`
	// DelayMS is, with delay, how long to wait before checking again; with
	// proceed, a queued call's place in its queue (hold it that long, then go
	// ahead without checking again). Zero otherwise.
	DelayMS int64 `json:"delay_ms"`
	// RetryAfter is DelayMS in whole seconds, rounded up: the value of a
	// Retry-After header.
	RetryAfter int64 `json:"retry_after"`
	// Reasons are the stable lower-case codes of the rules that shaped the
	// verdict, for the caller's logs; never for the end user.
	Reasons []string `json:"reasons"`
	// Attempt is the attempt token a check's proceed carries, to pass back
	// with the report; with step_up, the step-up ticket.
	Attempt string `json:"attempt"`
	// DeviceToken is the device token a success report (or a
	// step_up_passed report) returns, to keep in a long-lived cookie; never
	// with step_up.
	DeviceToken string `json:"device_token"`
}
