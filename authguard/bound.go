package authguard

import (
	"fmt"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
)

// NISTMaxFailures is NIST SP 800-63B-4's limit (§3.2.2; §5.2.2 in revision
// 3): at most 100 failed authentication attempts on one account. tollgate
// reads it as failed checks per account in any 24 hours.
const NISTMaxFailures = 100

// FailureBound is a flow's worst case: the most failed checks one account
// can have in it in any 24 hours, whatever an attacker does.
type FailureBound struct {
	// Max is Flow.MaxFailuresPerDay.
	Max int
	// Exact is false when a backoff rule's figure is beyond
	// backoff.MaxExact, where Max is a lower bound only.
	Exact bool
}

// FailureBound is the daily bound of a flow of checks and reports; ok is
// false for a send flow and for a flow no backoff rule on the account
// bounds. validate-config prints it and -strict fails a flow above
// NISTMaxFailures.
func (f *Flow) FailureBound() (b FailureBound, ok bool) {
	if f.Kind == Sends {
		return FailureBound{}, false
	}
	n, ok := f.MaxFailuresPerDay()
	if !ok {
		return FailureBound{}, false
	}
	b = FailureBound{Max: n, Exact: true}
	for i := range f.Rules {
		if r := &f.Rules[i]; r.boundsAccount() && r.Backoff.MaxFailuresIn(24*time.Hour) > backoff.MaxExact {
			b.Exact = false
		}
	}
	return b, true
}

// boundsAccount reports whether r is a backoff rule on the account or the
// device: one of the rules that bound a flow (MaxFailuresPerDay).
func (r *Rule) boundsAccount() bool {
	return r.Algorithm == Backoff && (r.Subject.Parts == PartAccount || r.Subject.Parts == PartDevice)
}

// BudgetLine says, in one line, how many failed checks one account can have
// in the flow in any 24 hours, from which backoff rules, and flags a flow
// above NISTMaxFailures; for a send flow, what it never sends to.
// validate-config prints it per flow.
func (f *Flow) BudgetLine() string {
	if f.Kind == Sends {
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
	b, ok := f.FailureBound()
	if !ok {
		if n, rule, ok := f.addressBound(); ok { // a flow that names no account (the built-in magic_link)
			return fmt.Sprintf("%s: no bound per account (no backoff rule counts the account); at most %d failed checks per address in any 24h (%s %d)", f.Name, n, rule, n)
		}
		return fmt.Sprintf("%s: no bound on failed checks per account: no backoff rule counts the account", f.Name)
	}
	line := fmt.Sprintf("%s: %s %d failed checks per account in any 24h (%s)", f.Name, b.Phrase(), b.Max, strings.Join(f.boundParts(), "; "))
	if b.Max > NISTMaxFailures {
		line += fmt.Sprintf("; above NIST SP 800-63B's %d", NISTMaxFailures)
	}
	return line
}

// Phrase is how the bound is said: "at most" when exact, "at least" beyond
// backoff.MaxExact.
func (b FailureBound) Phrase() string {
	if b.Exact {
		return "at most"
	}
	return "at least"
}

// boundParts are the figures of a flow's account and device backoff rules:
// "account_backoff 62", "device_backoff 13 shared + 3 devices x 5 of their own".
func (f *Flow) boundParts() []string {
	var parts []string
	for i := range f.Rules {
		r := &f.Rules[i]
		if !r.boundsAccount() {
			continue
		}
		n := r.Backoff.MaxFailuresIn(24 * time.Hour)
		part := fmt.Sprintf("%s %d", r.Name, n)
		if r.Subject.Parts == PartDevice {
			part = fmt.Sprintf("%s %d shared + %d devices x %d of their own", r.Name, n, r.DeviceSlots, r.DeviceFree)
		}
		parts = append(parts, part)
	}
	return parts
}

// addressBound is the tightest backoff rule on the address alone that
// counts every client: the most failed checks one address can have in any
// 24 hours, and that rule's name; ok false when there is none.
func (f *Flow) addressBound() (n int, rule string, ok bool) {
	for i := range f.Rules {
		r := &f.Rules[i]
		if r.Algorithm != Backoff || r.Subject.Parts != PartIP || r.Subject.IPBits != 0 || r.Clients != AllClients {
			continue
		}
		if m := r.Backoff.MaxFailuresIn(24 * time.Hour); !ok || m < n {
			n, rule, ok = m, r.Name, true
		}
	}
	return n, rule, ok
}
