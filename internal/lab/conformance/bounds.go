package conformance

import (
	"math"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// NISTMaxFailures is NIST SP 800-63B-4's limit on failed attempts per
// account (authguard.NISTMaxFailures), which 3.2.2 holds a flow's bound
// (authguard.Flow.FailureBound) to.
const NISTMaxFailures = authguard.NISTMaxFailures

// day is the span every figure of this file is over.
const day = 24 * time.Hour

// atMost is how a bound is said: "at most" when exact, "at least" beyond
// backoff.MaxExact (authguard.FailureBound.Phrase).
func atMost(exact bool) string { return authguard.FailureBound{Exact: exact}.Phrase() }

// Cap is the most calls of some kind one subject can have go ahead in any
// 24 hours, and the rule that holds it there.
type Cap struct {
	// Max is the figure; Rule the rule whose figure it is.
	Max  int
	Rule string
}

// DestinationGuesses is the most failed guesses at one destination's codes
// in any 24 hours in a flow that verifies codes, whatever account, session
// or device token they are made under: the tightest backoff rule on the
// destination that counts every client. ok is false when no such rule
// bounds it (then only each account's bound does, and an attacker with many
// accounts multiplies it).
func DestinationGuesses(f *authguard.Flow) (c Cap, ok bool) {
	c.Max = math.MaxInt
	for _, r := range f.Rules {
		if r.Algorithm != authguard.Backoff || r.Subject.Parts != authguard.PartDestination || r.Clients != authguard.AllClients {
			continue
		}
		if n := r.Backoff.MaxFailuresIn(day); n < c.Max {
			c = Cap{Max: n, Rule: r.Name}
		}
	}
	return c, c.Rule != ""
}

// DestinationCodes is the most codes a send flow lets go to one destination
// in any 24 hours, from anyone asking from anywhere, before the owner's own
// codes (SendPolicy.OwnerCodes): the tightest rule on the destination alone
// that counts every client and, past its limit, delays or denies (a
// CAPTCHA-solving attacker gets past a CAPTCHA), and charges every send
// alike (a price rule lets a free channel through). ok is false when no
// rule caps it.
func DestinationCodes(f *authguard.Flow) (c Cap, ok bool) {
	c.Max = math.MaxInt
	for _, r := range f.Rules {
		if r.Subject.Parts != authguard.PartDestination || r.Clients != authguard.AllClients || r.Past == authguard.PastCaptcha || r.PriceCost {
			continue
		}
		if n, ok := ruleCapPerDay(r); ok && n < c.Max {
			c = Cap{Max: n, Rule: r.Name}
		}
	}
	return c, c.Rule != ""
}

// ruleCapPerDay is the most calls a rule lets one of its subjects have go
// ahead in any 24 hours; ok is false for an algorithm that caps no count
// (distinct, conversion).
func ruleCapPerDay(r authguard.Rule) (int, bool) {
	windows := func(w time.Duration) int { return int((day + w - 1) / w) } // windows a day spans, rounded up
	lim := r.Rate
	switch r.Algorithm {
	case authguard.Backoff:
		return r.Backoff.MaxFailuresIn(day), true
	case authguard.SlidingLog:
		if len(r.Windows) > 0 { // a log of failures
			n := math.MaxInt
			for _, w := range r.Windows {
				n = min(n, windows(w.Length)*w.Limit)
			}
			return n, true
		}
		return windows(lim.Window) * lim.Limit / max(1, r.Cost), true
	case authguard.FixedWindow, authguard.SlidingCounter:
		// Each fixed window admits at most Limit (a sliding counter's
		// estimate is never below its current window's count), and any 24
		// hours touch one window more than they span.
		return (windows(lim.Window) + 1) * lim.Limit / max(1, r.Cost), true
	case authguard.TokenBucket, authguard.LeakyBucket:
		return (lim.Limit + int(day/lim.Interval)) / max(1, r.Cost), true
	}
	return 0, false
}
