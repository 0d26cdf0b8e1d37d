package wire

import "time"

// DeadLetter is an event delivery that was given up on: its endpoint did not
// answer 2xx before the event's age limit (webhooks.max_age). It holds no
// event data (no account, destination or ref), only what names it.
type DeadLetter struct {
	// ID is the event's webhook-id, the same in every delivery of it.
	ID       string `json:"id"`
	Type     string `json:"type"`
	Tenant   string `json:"tenant"`
	Endpoint string `json:"endpoint"`
	// LastError is why the last attempt failed ("status 503", "timeout").
	LastError string    `json:"last_error"`
	Attempts  int       `json:"attempts"`
	Time      time.Time `json:"time"`    // when the event happened
	DeadAt    time.Time `json:"dead_at"` // when it was given up on
}

// DeadLetters is the answer of GET /v1/admin/webhooks/dead-letters.
type DeadLetters struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
}

// ReplayRequest is the body of POST /v1/admin/webhooks/replay.
type ReplayRequest struct {
	// ID is the dead letter's id (DeadLetter.ID).
	ID string `json:"id"`
	// Reason says why, for the audit log: at most 200 bytes, no identifier.
	Reason string `json:"reason"`
}

// Replayed is the answer of POST /v1/admin/webhooks/replay.
type Replayed struct {
	// Replayed is false when the caller's tenant has no such dead letter.
	Replayed bool `json:"replayed"`
}
