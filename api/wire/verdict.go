package wire

// Action values of a Verdict.
const (
	ActionProceed = "proceed"
	ActionDelay   = "delay"
	ActionCaptcha = "captcha"
	// ActionDeny is answered by send flows only: do not send at all.
	ActionDeny = "deny"
)

// Verdict is the answer to every check, report and send, always with these
// fields in this order.
type Verdict struct {
	// Action is proceed, delay, captcha or deny.
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
	// with the report.
	Attempt string `json:"attempt"`
	// DeviceToken is the device token a success report returns, to keep in
	// a long-lived cookie.
	DeviceToken string `json:"device_token"`
}
