package authguard

import (
	"errors"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

// Algorithm names one of the rate-limiting algorithms of package limits.
// On the wire and in configuration they are lower-case words.
type Algorithm uint8

// The algorithms; see the types of the same names in package limits.
const (
	// FixedWindow: at most Limit per Window, windows aligned to the epoch.
	FixedWindow Algorithm = iota + 1
	// SlidingLog: exactly at most Limit in any Window; a timestamp per unit.
	SlidingLog
	// SlidingCounter: the weighted estimate of two fixed windows; constant memory.
	SlidingCounter
	// TokenBucket: a burst of Limit, then one unit every Interval (GCRA).
	TokenBucket
	// LeakyBucket: a queue of at most Limit, one unit leaving every Interval;
	// an admitted call waits for its place in the queue.
	LeakyBucket
	// Backoff: a progressive-delay failure counter (package backoff); a
	// rule algorithm only, not a RateLimit.
	Backoff
	// Distinct: a sliding-window log of distinct members, such as the
	// accounts that failed from one address (package spraydetect); a rule
	// algorithm only, not a RateLimit.
	Distinct
	// Conversion: one-time-code sends and their verifications in a sliding
	// window; refuses sends while the volume is high enough to judge and
	// the verified share too low (limits.Conversion).
	Conversion
)

func (a Algorithm) String() string { return enumName(algorithmNames, int(a)) }

// ParseAlgorithm parses an algorithm's name.
func ParseAlgorithm(s string) (Algorithm, error) {
	i, err := parseEnum(algorithmNames, s, "algorithm")
	return Algorithm(i), err
}

// RateLimit is a rate limit: an algorithm and its parameters.
type RateLimit struct {
	Algorithm Algorithm
	// Window is the window of FixedWindow, SlidingLog and SlidingCounter.
	Window time.Duration
	// Interval is the time one unit takes to return to a TokenBucket or to
	// leave a LeakyBucket.
	Interval time.Duration
	// Limit is how many units a window admits, a TokenBucket's burst, or a
	// LeakyBucket's capacity; for Conversion, the sends within Window it
	// takes to judge (limits.Conversion.MinVolume).
	Limit int
	// MinPercent is a Conversion's least verified share, in percent.
	MinPercent int
}

// Validate reports whether r is usable, with the limits of package limits.
func (r RateLimit) Validate() error {
	if f := r.Algorithm.row().rate; f != nil {
		return f.validate(r)
	}
	return errors.New("authguard: unknown rate algorithm")
}

// take runs the algorithm on a key's state: the state after taking cost
// units (the same state when refused) and the decision, whose Reset is how
// long the store keeps that state (package limits guarantees it equals the
// algorithm's TTL). States are limits.FixedState, []int64 (a SlidingLog),
// limits.CounterState and int64 (a bucket's TAT or drain time).
func (r RateLimit) take(state any, now time.Time, cost int) (any, limits.Decision) {
	if f := r.Algorithm.row().rate; f != nil {
		return f.take(r, state, now, cost)
	}
	return state, limits.Decision{}
}

// giveBack runs the algorithm's GiveBackN on a key's state: the state after
// giving back cost units, and the decision, whose Reset is the new state's
// TTL. States are as for take.
func (r RateLimit) giveBack(state any, now time.Time, cost int) (any, limits.Decision) {
	if f := r.Algorithm.row().rate; f != nil {
		return f.giveBack(r, state, now, cost)
	}
	return state, limits.Decision{}
}

// RateAction selects what a RateOp does.
type RateAction uint8

const (
	// RateTake takes Cost units when the rate allows it, or refuses.
	RateTake RateAction = iota + 1
	// RatePeek reports what RateTake would decide and changes nothing.
	RatePeek
	// RateRefund gives back Cost units that an earlier RateTake of the same
	// Cost on the key took, as if that take had not happened, as far as the
	// state still holds them (see GiveBackN in package limits: exact at the
	// instant of the take, an approximation on some algorithms after other
	// takes); never below an empty state. It never refuses. A Cost that
	// RateTake never takes (below 1 or above the Limit) gives back nothing.
	RateRefund
	// RateCredit counts Cost verifications on a Conversion (a verified
	// code); on any other algorithm it changes nothing. It never refuses.
	RateCredit
)

var rateActionNames = [...]string{"", "take", "peek", "refund", "credit"}

func (a RateAction) String() string { return enumName(rateActionNames[:], int(a)) }

// RateOp is one step of a rate limit on one key. Its Result says: Charged
// when units were taken, Over when the call is (or, for a peek, would be)
// refused, Wait as limits.Decision.Wait (for a LeakyBucket that admits, the
// call's place in the queue), Remaining and Reset as in limits.Decision. A
// refund is never Charged nor Over and has no Wait; its Remaining and Reset
// are those of the state it leaves.
type RateOp struct {
	Key    string
	Action RateAction
	Rate   RateLimit
	// Cost is how many units the call takes; at least 1 and at most the
	// rate's Limit, or it is never allowed.
	Cost int
}

func (o *RateOp) StoreKey() string { return o.Key }
func (*RateOp) isOp()              {}

// applyRate is Apply for a RateOp. A peek keeps the state, and with it the
// state's own TTL: what a cost of 0, which is never taken, reports as Reset.
// A refund keeps the state it leaves for that state's TTL.
func applyRate(op *RateOp, state any, now time.Time) (any, time.Duration, Result) {
	if op.Action == RateRefund {
		next, d := op.Rate.giveBack(state, now, op.Cost)
		return next, d.Reset, Result{Remaining: d.Remaining, Reset: d.Reset}
	}
	if op.Action == RateCredit {
		f := op.Rate.Algorithm.row().rate
		if f == nil || f.credit == nil {
			_, kept := op.Rate.take(state, now, 0)
			return state, kept.Reset, Result{Remaining: kept.Remaining, Reset: kept.Reset}
		}
		next, d := f.credit(op.Rate, state, now, op.Cost)
		return next, d.Reset, Result{Remaining: d.Remaining, Reset: d.Reset}
	}
	next, d := op.Rate.take(state, now, op.Cost)
	ttl := d.Reset
	if op.Action != RateTake {
		next = state
		_, kept := op.Rate.take(state, now, 0)
		ttl = kept.Reset
	}
	return next, ttl, Result{
		Charged: d.Allowed && op.Action == RateTake, Over: !d.Allowed,
		Wait: d.Wait, Remaining: d.Remaining, Reset: ttl,
	}
}

// DeleteOp forgets a key, whatever it holds: an administrator's reset of
// one counter, log or limit. Its Result is zero.
type DeleteOp struct {
	Key string
}

func (o *DeleteOp) StoreKey() string { return o.Key }
func (*DeleteOp) isOp()              {}
