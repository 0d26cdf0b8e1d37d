package conformance

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
)

// NISTMaxFailures is NIST SP 800-63B-4's limit (§3.2.2; §5.2.2 in revision
// 3): at most 100 failed authentication attempts on one account. tollgate
// reads it as failed checks per account in any 24 hours.
const NISTMaxFailures = 100

// day is the span every bound of this file is over.
const day = 24 * time.Hour

// Bound is a flow's worst case: the most failed checks one account can have
// in it in any 24 hours, whatever an attacker does.
type Bound struct {
	// Max is authguard.Flow.MaxFailuresPerDay.
	Max int
	// Exact is false when a backoff rule's figure is beyond
	// backoff.MaxExact, where Max is a lower bound only.
	Exact bool
}

// FlowBound is a flow of checks and reports' daily bound; ok is false for a
// send flow and for a flow no backoff rule on the account bounds.
func FlowBound(f *authguard.Flow) (b Bound, ok bool) {
	if f.Kind == authguard.Sends {
		return Bound{}, false
	}
	n, ok := f.MaxFailuresPerDay()
	if !ok {
		return Bound{}, false
	}
	b = Bound{Max: n, Exact: true}
	for _, r := range f.Rules {
		if accountBackoff(r) && r.Backoff.MaxFailuresIn(day) > backoff.MaxExact {
			b.Exact = false
		}
	}
	return b, true
}

// accountBackoff reports whether r is a backoff rule on the account or the
// device: one of the rules that bound a flow (authguard.Flow.MaxFailuresPerDay).
func accountBackoff(r authguard.Rule) bool {
	return r.Algorithm == authguard.Backoff && (r.Subject.Parts == authguard.PartAccount || r.Subject.Parts == authguard.PartDevice)
}

// BudgetLine says, in one line, how many failed checks one account can have
// in a flow in any 24 hours, from which backoff rules, and flags a flow
// above NIST SP 800-63B's 100; for a send flow, what it never sends to.
// validate-config prints it per flow.
func BudgetLine(f *authguard.Flow, dur func(time.Duration) string) string {
	if f.Kind == authguard.Sends {
		sp := f.Send
		var types []string
		for _, t := range sp.DenyTypes {
			types = append(types, t.String())
		}
		countries := "every country"
		switch {
		case len(sp.AllowCountries) > 0:
			countries = "only " + strings.Join(sp.AllowCountries, ", ")
		case len(sp.DenyCountries) > 0:
			countries = "every country but " + strings.Join(sp.DenyCountries, ", ")
		}
		deny := "no number type"
		if len(types) > 0 {
			deny = strings.Join(types, ", ")
		}
		owner := "no owner codes"
		if sp.OwnerCodes > 0 {
			owner = fmt.Sprintf("%d owner codes a day to a verified destination", sp.OwnerCodes)
		}
		return fmt.Sprintf("%s: sends one-time codes to %s; denies %s numbers; destination prefixes leave out %d digits; %s",
			f.Name, countries, deny, sp.PrefixDigits, owner)
	}
	b, ok := FlowBound(f)
	if !ok {
		return fmt.Sprintf("%s: no bound on failed checks per account: no backoff rule counts the account", f.Name)
	}
	line := fmt.Sprintf("%s: %s %d failed checks per account in any 24h (%s)", f.Name, atMost(b.Exact), b.Max, strings.Join(boundParts(f), "; "))
	if b.Max > NISTMaxFailures {
		line += fmt.Sprintf("; above NIST SP 800-63B's %d", NISTMaxFailures)
	}
	return line
}

// boundParts are the figures of a flow's account and device backoff rules:
// "account_backoff 62", "device_backoff 13 shared + 3 devices x 5 of their own".
func boundParts(f *authguard.Flow) []string {
	var parts []string
	for _, r := range f.Rules {
		if !accountBackoff(r) {
			continue
		}
		n := r.Backoff.MaxFailuresIn(day)
		part := fmt.Sprintf("%s %d", r.Name, n)
		if r.Subject.Parts == authguard.PartDevice {
			part = fmt.Sprintf("%s %d shared + %d devices x %d of their own", r.Name, n, r.DeviceSlots, r.DeviceFree)
		}
		parts = append(parts, part)
	}
	return parts
}

// atMost is how a bound is said: "at most" when exact, "at least" beyond
// backoff.MaxExact.
func atMost(exact bool) string {
	if exact {
		return "at most"
	}
	return "at least"
}

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
