package conformance

import (
	"fmt"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// ProfileNIST is NIST SP 800-63B-4's profile.
const ProfileNIST = "nist-800-63b-4"

var nistProfile = profile{
	name:  ProfileNIST,
	title: "NIST SP 800-63B-4",
	requirements: []requirement{
		{"3.2.2", "Failed authentication attempts on one account are limited to at most 100.", nistLimit},
		{"3.2.2-new-code", "Sending a new out-of-band code does not reset the count of failed attempts.", nistNewCode},
		{"3.1.3-attempts", "Attempts at an out-of-band code are rate limited, and never go unthrottled.", nistOOBAttempts},
		{"3.1.3-lifetime", "An out-of-band code is valid for a short time and accepted once.", nistOOBLifetime},
	},
}

// nistLimit: every flow of checks and reports holds one account to at most
// 100 failed checks in any 24 hours.
func nistLimit(c *checker, r *Result) {
	flows := c.attempts()
	if len(flows) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy has no flow of checks and reports")
		return
	}
	largest := 0
	for _, f := range flows {
		howf(r, "%s", f.budget())
		if f.FailMode == authguard.FailOpen {
			howf(r, "%s fails open: while the store is down each instance counts on its own fallback store, so the bound then holds per instance", f.label)
		}
		if !enforced(r, f) {
			continue
		}
		b, ok := f.Flow.FailureBound()
		switch {
		case !ok:
			failf(r, "%s: no backoff rule counts the account, so failed checks per account are unbounded", f.label)
		case b.Max > NISTMaxFailures:
			failf(r, "%s: %s %d failed checks per account in any 24 hours, above %d", f.label, atMost(b.Exact), b.Max, NISTMaxFailures)
		}
		if ok {
			largest = max(largest, b.Max)
		}
	}
	howf(r, "read as: in any 24 hours, whatever an attacker does; failures are forgotten only after a quiet day (forget_after), never locked, so an attacker who keeps going gets this many each day")
	c.search(r, ObjectiveAccountFailures, min(largest, NISTMaxFailures))
	for _, f := range flows {
		if b, ok := f.Flow.FailureBound(); ok && f.Mode == authguard.Enforce {
			c.simulate(r, scenarioAccountBotnet, f, min(b.Max, NISTMaxFailures))
		}
	}
	scenarioFiles(r, "brute-force-botnet", "stolen-device-token", "otp-minted-device-tokens")
	tests(r, "TestPolicy_BuiltInFlowsStayWithinNIST", "TestMaxFailuresIn_CoversCyclesOfDifferentLengths",
		"TestDevice_StolenTokenCannotMultiplyTheBudget", "TestDevices_ASlotLastsADayFromTheDevicesLastFailure",
		"TestLogin_ParallelGuessesCannotOutrunBudget", "TestValidateConfig_StrictFailsAPolicyAboveNIST")
}

// nistNewCode: guesses at codes are counted per account and per
// destination, never per code or session, so a new code resets nothing.
func nistNewCode(c *checker, r *Result) {
	flows := c.verifiers()
	if len(flows) == 0 {
		noVerifier(c, r)
		return
	}
	largest := 0
	for _, f := range flows {
		b, bok := f.Flow.FailureBound()
		g, gok := DestinationGuesses(f.Flow)
		switch {
		case bok && gok:
			howf(r, "%s: guesses are counted per account (%s %d in any 24h) and per destination (%s, every client: %d in any 24h); no rule counts per code or session, and a send in %s changes no counter of %s",
				f.label, atMost(b.Exact), b.Max, g.Rule, g.Max, f.Verifies, f.Name)
		case bok:
			howf(r, "%s: guesses are counted per account (%s %d in any 24h) only", f.label, atMost(b.Exact), b.Max)
		}
		if !enforced(r, f) {
			continue
		}
		if !bok {
			failf(r, "%s: no backoff rule counts the account, so guesses at its codes are unbounded", f.label)
		}
		if !gok {
			failf(r, "%s: no backoff rule on the destination counts every client (clients: all), so guesses at one phone's or mailbox's codes start afresh under another account", f.label)
		} else {
			largest = max(largest, g.Max)
		}
	}
	c.search(r, ObjectiveDestinationGuesses, min(largest, NISTMaxFailures))
	scenarioFiles(r, "otp-verify-brute-force", "otp-minted-device-tokens")
	tests(r, "TestOTP_PatientGuesserStaysWithin100ADay", "TestVerify_GuessingOnePhonesCodesUnderManyAccounts",
		"TestVerify_DeviceTokensOfManyAccountsCannotMultiplyGuessesAtOnePhone", "TestOTP_FreshLoginsCannotBuyOTPGuesses")
}

// noVerifier is the outcome of a requirement on code guesses for a policy
// whose flows verify no codes: the caller's, when it sends codes.
func noVerifier(c *checker, r *Result) {
	if len(c.sends()) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy neither sends nor verifies one-time codes")
		return
	}
	r.Status = Caller
	howf(r, "no flow of the policy verifies the codes its send flows send (a flow with verifies: naming the send flow)")
	r.Caller = "count every guess at a code in a flow of checks and reports that names the send flow in verifies, with a backoff rule on the account and one on the destination (clients: all), as the built-in otp_verify does"
}

// nistOOBAttempts: a flow that verifies codes bounds guesses per account
// and per destination, counts a repeated wrong code again, and fails
// closed.
func nistOOBAttempts(c *checker, r *Result) {
	flows := c.verifiers()
	if len(flows) == 0 {
		noVerifier(c, r)
		return
	}
	largest := 0 // guesses at one destination's codes
	for _, f := range flows {
		b, bok := f.Flow.FailureBound()
		if g, ok := DestinationGuesses(f.Flow); ok && f.Mode == authguard.Enforce {
			largest = max(largest, g.Max)
		}
		retry := ""
		if f.FailMode == authguard.FailClosed {
			retry = fmt.Sprintf(" (a delay of %s, reason unavailable)", config.FormatDuration(f.FailClosedRetry))
		}
		howf(r, "%s; same_password_window %s; fails %s%s", f.budget(),
			config.FormatDuration(f.SamePasswordWindow), f.FailMode, retry)
		if !enforced(r, f) {
			continue
		}
		switch {
		case !bok:
			failf(r, "%s: no backoff rule counts the account, so guesses at its codes are unbounded", f.label)
		case b.Max > NISTMaxFailures:
			failf(r, "%s: %s %d guesses per account in any 24 hours, above %d", f.label, atMost(b.Exact), b.Max, NISTMaxFailures)
		}
		if f.SamePasswordWindow > 0 {
			failf(r, "%s: same_password_window is %s: a code that was wrong against one code is a new guess against the next, and is not counted again", f.label, config.FormatDuration(f.SamePasswordWindow))
		}
		if f.FailMode != authguard.FailClosed {
			failf(r, "%s fails open: while the store is down each instance answers from its own fallback, so a short code gets the bound once per instance; fail_mode must be closed", f.label)
		}
	}
	if largest > 0 { // else 3.2.2-new-code fails: nothing bounds a destination
		c.search(r, ObjectiveDestinationGuesses, min(largest, NISTMaxFailures))
	}
	for _, f := range flows {
		if b, ok := f.Flow.FailureBound(); ok && f.Mode == authguard.Enforce {
			c.simulate(r, scenarioAccountBotnet, f, min(b.Max, NISTMaxFailures))
		}
	}
	scenarioFiles(r, "otp-verify-brute-force")
	tests(r, "TestOTP_PatientGuesserStaysWithin100ADay", "TestOTPVerify_ARepeatedWrongCodeIsCountedAgain",
		"TestFailClosed_AnswersDelayUnavailable", "TestEngine_FailClosedWhileRedisIsDown", "TestBlip_FailClosedKeepsTheRememberedWait")
}

// nistOOBLifetime: tollgate never sees a code; its lifetime and single use
// are the caller's.
func nistOOBLifetime(c *checker, r *Result) {
	if len(c.sends()) == 0 && len(c.verifiers()) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy neither sends nor verifies one-time codes")
		return
	}
	r.Status = Caller
	howf(r, "tollgate never sees a code: it decides whether one may be sent and whether a guess may be checked")
	for _, f := range c.verifiers() {
		howf(r, "%s: attempt_ttl %s bounds only how long a check waits for its report, not a code's life", f.label, config.FormatDuration(f.AttemptTTL))
	}
	r.Caller = "your code store gives each code a short lifetime (NIST's figure for your assurance level), and accepts it once"
}
