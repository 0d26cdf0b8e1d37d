// Package replay feeds recorded auth traffic — tollgate's own decision log,
// Keycloak's login events, or a CSV — through the engine with candidate
// policies on a virtual clock, and reports whom each would have slowed and
// what it would have stopped (tollgate-lab replay). Identifiers are hashed on
// read and never written anywhere; memory stays flat in the number of
// events.
package replay

import (
	"fmt"
	"time"
)

// Call is what an Event records.
type Call uint8

const (
	// CallCheck is a check of tollgate's decision log; its outcome comes
	// with a later CallReport that names the same Attempt.
	CallCheck Call = iota + 1
	// CallReport is a report of tollgate's decision log.
	CallReport
	// CallAttempt is an attempt whose outcome is known at once (a Keycloak
	// LOGIN or LOGIN_ERROR event, a CSV row): replayed as a check and, when
	// the candidate lets it proceed, a report of Outcome.
	CallAttempt
	// CallSend is a code send; replay counts it and skips it.
	CallSend
)

// Outcome is an attempt's outcome.
type Outcome uint8

const (
	// OutcomeNone is a check's: its outcome is in its report, if any.
	OutcomeNone Outcome = iota
	OutcomeFailure
	OutcomeSuccess
	// OutcomeStepUpPassed and OutcomeStepUpFailed are a step-up flow's
	// reports: the second factor a login success answered step_up asked
	// for, passed or failed (tollgate's decision log only).
	OutcomeStepUpPassed
	OutcomeStepUpFailed
	// OutcomePasswordChanged is a password_changed report: the account's
	// password was changed, which clears its password counters (tollgate's
	// decision log only).
	OutcomePasswordChanged
)

// IPKey is a client address as opaque keys of its prefixes: IPv4 as its
// /32, IPv6 as its /64, /56 and /48 (a 6to4 or Teredo address as the IPv4
// it embeds). Equal keys are the same prefix; nothing else can be learnt.
type IPKey struct {
	V6          bool
	P, P56, P48 string // P: the /32 or /64
}

// Valid reports whether the key names an address.
func (k IPKey) Valid() bool { return k.P != "" }

// Event is one recorded call, its identifiers already hashed.
type Event struct {
	// File and Line say where it was read, for messages.
	File string
	Line int
	// Time is when it happened.
	Time time.Time
	// Tenant and Flow are the call's ("default" and "login" when the input
	// does not say).
	Tenant, Flow string
	Call         Call
	Outcome      Outcome
	// Account and Fingerprint are opaque keys ("" when absent); IP the
	// address's.
	Account, Fingerprint string
	IP                   IPKey
	// Device is the id of the valid device token the call carried, Issued
	// the id of the one a success returned, Attempt the attempt a check
	// reserved and its report settled ("" when unknown). Inputs other than
	// tollgate's log have none, unless a CSV maps a device column.
	Device, Issued, Attempt string
	// Action, DelayMS and Reasons are what tollgate's policy decided at the
	// time (its own log only; empty otherwise). DelayMS is 0 for a delay
	// whose length the line did not record (a shadow verdict logged before
	// computed_delay_ms).
	Action  string
	DelayMS int64
	Reasons []string
}

// LineError is an input line that cannot be read.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Source yields a file's events in order. Next returns io.EOF at the end,
// a *LineError for a line it cannot read (the caller decides to skip it or
// stop), or another error for a failure to read at all.
type Source interface {
	Next() (Event, error)
}
