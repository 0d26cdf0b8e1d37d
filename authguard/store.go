package authguard

import (
	"context"
	"slices"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// Store keeps the state behind every signal. The engine turns one call into a
// batch of single-key operations and hands the whole batch to Do at once, so a
// networked store can answer a call in one round trip.
//
// Every operation is atomic on its own key; nothing needs two keys to be
// atomic together. Operations on the same key within one batch apply in
// order. Each store reads its own clock (the Redis store reads Redis TIME), so
// results carry durations, never absolute times. The semantics of every
// operation are those of Apply; internal/testkit/storetest checks a Store against it.
type Store interface {
	// Do applies ops and returns one Result per op, in order. An error means
	// the store could not be reached or did not answer in time; it is then
	// unknown which operations took effect.
	Do(ctx context.Context, ops []Op) ([]Result, error)
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// Op is one atomic operation on one key: a *BackoffOp, *LogOp, *RateOp or
// *DeleteOp.
type Op interface {
	// StoreKey is the one key the operation reads and writes.
	StoreKey() string
	isOp()
}

// Result is what one operation reports. Fields that do not apply to an
// operation are zero.
type Result struct {
	// Charged is true when the operation reserved something that a refund
	// must undo: a backoff failure counted, a log member added, a token taken.
	Charged bool
	// Wait is how long the subject must wait before its next attempt; zero
	// when it may go ahead.
	Wait time.Duration
	// Over is true when a log's limit is reached: recording the member now
	// would exceed a window. For LogAdmit without Bypass it means refused.
	Over bool
	// Count is the backoff's failure count, or the number of distinct
	// members in a log's longest window, after the operation.
	Count int
	// Remaining is, for a RateOp, how many units are still available.
	Remaining int
	// Reset is, for a RateOp, the time until the key holds nothing.
	Reset time.Duration
}

// BackoffAction selects what a BackoffOp does.
type BackoffAction uint8

// Backoff actions; see the functions of the same name in package backoff.
const (
	// BackoffCharge reserves a failure for an attempt about to go ahead, or
	// refuses it with a Wait. A fingerprint already counted for this counter
	// goes ahead without a charge. A charge holds the op's Attempt as pending
	// until it is settled.
	BackoffCharge BackoffAction = iota + 1
	// BackoffRefund undoes a charge: the op's Attempt's, only while it is
	// pending; with no Attempt, the last charge.
	BackoffRefund
	// BackoffConfirm settles a charged attempt that failed: it remembers the
	// fingerprint and releases the Attempt, whose failure stays counted.
	BackoffConfirm
	// BackoffFail counts a failure no charge reserved. With an Attempt it
	// counts it once: not when the Attempt is pending already, and else
	// holds it as pending, so that a fallback's charge written back twice
	// counts once and its report settles it as a charge's.
	BackoffFail
	// BackoffClear forgets the counter (an administrator's reset).
	BackoffClear
	// BackoffSucceed settles an attempt that succeeded: while its Attempt is
	// pending its charge is refunded; nothing else changes (backoff.Settle).
	BackoffSucceed
	// BackoffPeek reports the counter's wait and count and changes nothing.
	BackoffPeek
)

var backoffActionNames = [...]string{"", "charge", "refund", "confirm", "fail", "clear", "succeed", "peek"}

func (a BackoffAction) String() string { return enumName(backoffActionNames[:], int(a)) }

// BackoffOp is one step of a progressive-delay counter.
type BackoffOp struct {
	Key    string
	Action BackoffAction
	Policy backoff.Policy
	// Fingerprint is the hashed password fingerprint, or empty.
	Fingerprint string
	// SeenWindow is how long a counted fingerprint is remembered.
	SeenWindow time.Duration
	// Attempt names the attempt a charge reserves and a refund, confirm or
	// succeed settles, so that each attempt settles once; empty for none.
	Attempt string
}

// LogAction selects what a LogOp does.
type LogAction uint8

// Log actions; see the methods of the same name on spraydetect.Windows.
const (
	// LogAdmit records a new member unless a limit would be exceeded; a
	// member already in the log is left as it is.
	LogAdmit LogAction = iota + 1
	// LogAdd records the member whatever the limits say.
	LogAdd
	// LogRemove takes the member out.
	LogRemove
	// LogPeek changes nothing.
	LogPeek
	// LogRenew records the member at now, a member already in the log
	// included, unless a new one would exceed a limit.
	LogRenew
)

var logActionNames = [...]string{"", "admit", "add", "remove", "peek", "renew"}

func (a LogAction) String() string { return enumName(logActionNames[:], int(a)) }

// LogOp is one step of a sliding-window log of distinct members.
type LogOp struct {
	Key     string
	Action  LogAction
	Member  string
	Windows spraydetect.Windows
	// Bypass lets LogAdmit record a member over the limit (a solved CAPTCHA).
	Bypass bool
}

func (o *BackoffOp) StoreKey() string { return o.Key }
func (o *LogOp) StoreKey() string     { return o.Key }
func (*BackoffOp) isOp()              {}
func (*LogOp) isOp()                  {}

// Apply is the reference semantics of every operation: given the key's state
// (nil when the key holds nothing) and the store's current time it returns the
// new state, how long the store must keep it (zero: delete the key now), and
// the result. States are backoff.State, spraydetect.Log, int64 (a bucket's
// TAT in Unix ms) and the states of RateOp's algorithms. Stores that keep
// state in process call Apply; others must behave exactly as it does.
func Apply(op Op, state any, now time.Time) (next any, ttl time.Duration, res Result) {
	switch op := op.(type) {
	case *BackoffOp:
		s, _ := state.(backoff.State)
		p, w := op.Policy, op.SeenWindow
		var d backoff.Decision
		switch op.Action {
		case BackoffCharge:
			s, d = p.Charge(s, now, op.Fingerprint, w)
			if d.Charged {
				s = s.Hold(op.Attempt)
			}
		case BackoffRefund:
			s = p.Current(s, now, w)
			released := op.Attempt == ""
			if !released {
				s, released = s.Release(op.Attempt)
			}
			if released {
				s, d = p.Refund(s, now, w)
			} else {
				d.Wait = p.Wait(s, now)
			}
		case BackoffConfirm:
			s, _ = p.Current(s, now, w).Release(op.Attempt)
			s, d = p.Confirm(s, now, op.Fingerprint, w)
		case BackoffFail:
			if s = p.Current(s, now, w); op.Attempt != "" && slices.Contains(s.Pending, op.Attempt) {
				d.Wait = p.Wait(s, now) // written back already: counted once
			} else if s, d = p.Fail(s, now, op.Fingerprint, w); d.Charged {
				s = s.Hold(op.Attempt)
			}
		case BackoffClear:
			return nil, 0, Result{}
		case BackoffSucceed:
			s, d = p.Settle(s, now, op.Attempt, w)
		case BackoffPeek:
			s = p.Current(s, now, w)
			d.Wait = p.Wait(s, now)
		}
		return s, p.TTL(s, now, w), Result{Charged: d.Charged, Wait: d.Wait, Count: s.Failures}
	case *LogOp:
		l, _ := state.(spraydetect.Log)
		var r spraydetect.LogResult
		switch op.Action {
		case LogAdmit:
			l, r = op.Windows.Admit(l, op.Member, now, op.Bypass)
		case LogAdd:
			l, r = op.Windows.Add(l, op.Member, now)
		case LogRemove:
			l, r = op.Windows.Remove(l, op.Member, now)
		case LogPeek:
			l, r = op.Windows.Peek(l, op.Member, now)
		case LogRenew:
			l, r = op.Windows.Renew(l, op.Member, now)
		}
		return l, op.Windows.TTL(l, now), Result{Charged: r.Added, Over: r.Over, Count: r.Count}
	case *RateOp:
		return applyRate(op, state, now)
	case *DeleteOp:
		return nil, 0, Result{}
	}
	return state, 0, Result{}
}

// MemoryStats describe the contents of a store held in the process's
// memory (memstore's Stats), for metrics.
type MemoryStats struct {
	// Entries is the number of keys held, expired ones included until they
	// are dropped. It is never more than the store's MaxEntries.
	Entries int
	// Protected is how many of the Entries are protected: their state
	// restricted their subject when last touched (Restricting).
	Protected int
	// Evicted counts live keys dropped because the store was full:
	// EvictedProbation + EvictedProtected.
	Evicted int64
	// EvictedProbation counts evicted keys whose state restricted nothing.
	EvictedProbation int64
	// EvictedProtected counts evicted keys whose state restricted their
	// subject: each was the least recently used protected key of a shard
	// that held no other kind. Above zero, the store's MaxEntries or
	// MemoryLimit is too small for the attack in progress.
	EvictedProtected int64
	// Bytes is the memory the keys hold as the store accounts it. It is
	// never more than MemoryLimit, but for a shard whose budget is smaller
	// than the one key it holds.
	Bytes int64
	// MemoryLimit is the store's memory limit, its default applied.
	MemoryLimit int64
}
