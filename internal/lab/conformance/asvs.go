package conformance

import (
	"fmt"
	"strings"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// ProfileASVS is OWASP ASVS 5.0 Level 2's profile.
const ProfileASVS = "asvs-5.0-l2"

var asvsProfile = profile{
	name:  ProfileASVS,
	title: "OWASP ASVS 5.0, Level 2",
	requirements: []requirement{
		{"6.1.1", "How rate limiting and anti-automation defend against brute force and credential stuffing, and avoid malicious lockout, is documented.", asvsDocumented},
		{"6.3.1", "Brute force, credential stuffing and password spraying are defended against.", asvsBruteForce},
		{"6.3.8", "Failed authentication does not reveal whether an account exists, by message, status or timing.", asvsEnumeration},
		{"6.3.4", "Every authentication pathway is throttled as consistently as the password: each factor on counters of its own, bounded per account or per address.", asvsFactors},
		{"6.4.3", "A password reset does not bypass multi-factor authentication: it resets no second factor's counters.", asvsPasswordReset},
		{"6.6.3", "Out-of-band codes are rate limited: sends to one destination and guesses at its codes.", asvsOOBCodes},
		{"2.4.1", "Anti-automation stops excessive calls to the protected functions.", asvsAntiAutomation},
		{"16.5.2", "It keeps operating securely when a resource it depends on fails.", asvsDependencyFailure},
		{"16.5.3", "It fails securely: no error turns into a call let through unchecked.", asvsFailSecure},
		{"16.3.1", "Authentication decisions are logged, without the identifiers themselves.", asvsAuthLog},
		{"16.3.3", "Security events, such as attempts past anti-automation, are logged or counted.", asvsSecurityEvents},
	},
}

// ruleLine says a rule in one line: "ip_spray (ip, distinct): 10 per 1h,
// 20 per 24h of distinct accounts, then captcha".
func ruleLine(r authguard.Rule) string {
	return fmt.Sprintf("%s (%s, %s): %s, then %s", r.Name, r.Subject, r.Algorithm, r.Describe(config.FormatDuration), r.Past)
}

// asvsDocumented: the docs and design say how each defence is configured;
// the built-in policy says why each number is what it is; no account is
// ever locked.
func asvsDocumented(c *checker, r *Result) {
	howf(r, "docs/policy.md \"How it decides\" and docs/proof.md \"What holds\" say what each rule counts and what holds against which attack; docs/design.md §3 and §10 say who is counted where and which test shows each promise")
	howf(r, "the built-in policy (internal/policyfile/default_policy.yaml) says why each number is what it is; `tollgate validate-config -print` shows the effective policy of any file")
	howf(r, "no account is ever locked: past a limit a call is delayed or asks for a CAPTCHA")
	for _, f := range c.attempts() {
		dev := deviceRule(f.Flow)
		if dev == nil {
			howf(r, "%s has no device rule: the owner meets the same delays as an attacker guessing at the account", f.label)
			continue
		}
		howf(r, "%s: each known device of the owner fails %d times a day without waiting, whatever others do (%d devices a day): %s", f.label, dev.DeviceFree, dev.DeviceSlots, dev.Name)
	}
	docs(r, "docs/policy.md#how-it-decides", "docs/proof.md#what-holds", "docs/policy.md#tuning-the-policy--and-seeing-what-it-does", "docs/policy.md#conformance",
		"docs/design.md#3-the-built-in-flows-who-is-counted-where", "docs/design.md#10-what-holds-and-the-test-or-scenario-that-shows-it")
	tests(r, "TestDevice_SprayerOnTheOwnersAddressCannotSlowTheOwner", "TestOTP_OwnersDeviceProceedsWhileAnAttackerGuesses")
}

// deviceRule is a flow's device rule, or nil.
func deviceRule(f *authguard.Flow) *authguard.Rule {
	for i := range f.Rules {
		if f.Rules[i].Subject.Parts == authguard.PartDevice {
			return &f.Rules[i]
		}
	}
	return nil
}

// asvsBruteForce: each flow of checks bounds an account, counts failures
// per address, and (unless it verifies codes) counts one password across
// accounts.
func asvsBruteForce(c *checker, r *Result) {
	flows := c.attempts()
	if len(flows) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy has no flow of checks and reports")
		return
	}
	largest := 0
	for _, f := range flows {
		howf(r, "brute force: %s", f.budget())
		var ipRules, sprayRules []string
		for _, rule := range f.Rules {
			switch {
			case rule.Breached:
				// It sees only the failures a caller that looks passwords up
				// reports breached: a help beside the address rules, no
				// stand-in for them.
			case rule.Subject.Has(authguard.PartIP):
				ipRules = append(ipRules, ruleLine(rule))
			case rule.Subject.Parts == authguard.PartFingerprint:
				sprayRules = append(sprayRules, ruleLine(rule))
			}
		}
		if len(ipRules) > 0 {
			howf(r, "credential stuffing from one address: %s: %s", f.label, strings.Join(ipRules, "; "))
		}
		if len(sprayRules) > 0 {
			howf(r, "password spraying from anywhere: %s: %s", f.label, strings.Join(sprayRules, "; "))
		}
		if !enforced(r, f) {
			continue
		}
		if b, ok := f.Flow.FailureBound(); ok {
			largest = max(largest, b.Max)
		} else {
			failf(r, "%s: no backoff rule counts the account, so failed checks per account are unbounded", f.label)
		}
		if len(ipRules) == 0 {
			failf(r, "%s: no rule counts the client's address, so stuffing many accounts from one address is not seen", f.label)
		}
		if len(sprayRules) == 0 && f.Verifies == "" {
			failf(r, "%s: no rule counts a password fingerprint across accounts, so spraying one password from many addresses is not seen", f.label)
		}
	}
	c.search(r, ObjectiveAccountFailures, largest)
	for _, f := range flows {
		if b, ok := f.Flow.FailureBound(); ok && f.Mode == authguard.Enforce {
			c.simulate(r, scenarioAccountBotnet, f, b.Max)
		}
	}
	scenarioFiles(r, "brute-force-botnet", "spray-one-ip", "spray-distributed", "spray-ipv6-slash48", "spray-ipv6-rotation")
	tests(r, "TestSpray_OneIPManyAccountsNeedsCaptcha", "TestSpray_OnePasswordAcrossManyIPs", "TestSpray_LowAndSlowCaughtByLongWindow",
		"TestSpray_RandomSlash64sOfOneSlash48", "TestSpray_6to4AddressesCountAsTheirIPv4", "TestLogin_ParallelGuessesCannotOutrunBudget",
		"TestNormalisation_InvisibleSpellingsShareOneBudget")
}

// asvsEnumeration: the answers do not depend on whether an account exists;
// the end user's message is the caller's.
func asvsEnumeration(c *checker, r *Result) {
	howf(r, "a check's answer depends only on counters, which an unknown account has as a known one does: the same store operations, keys and verdicts, so nothing tollgate does depends on whether the account exists")
	howf(r, "an owner's success changes nothing an attacker sees, except two limits docs/proof.md states (an owner's login in progress without her device token, and the spray lists of her own address)")
	howf(r, "a send's answer does not depend on an account: a denied send looks to the end user like a sent code")
	r.Caller = "check every attempt, for unknown accounts too, and answer the end user the same for an unknown account and a wrong password, in message, status and time (api/client's Responder writes the same bytes; your own password check must take the same time, such as a hash against a dummy)"
	docs(r, "docs/proof.md#what-holds")
	tests(r, "TestUniformity_UnknownAccountLooksLikeAKnownOne", "TestUniformity_UnknownAccountLooksLikeKnownOne", "TestLogin_UnknownAccountAnswersLikeWrongPassword",
		"TestLogin_OwnersSuccessIsInvisibleToTheAttacker", "TestLogin_AnOwnersLoginInProgressIsInvisibleWithItsDevice",
		"TestRespond_UnknownAccountAndWrongPasswordGetIdenticalBytes", "TestSend_DenyLooksLikeASentCode")
}

// asvsOOBCodes: every send flow caps the codes one destination gets, and
// every flow that verifies codes bounds guesses per account and per
// destination.
func asvsOOBCodes(c *checker, r *Result) {
	sends, verifiers := c.sends(), c.verifiers()
	if len(sends) == 0 && len(verifiers) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy neither sends nor verifies one-time codes")
		return
	}
	largestCodes := 0
	for _, f := range sends {
		cp, ok := DestinationCodes(f.Flow)
		if ok {
			owner := ""
			if n := f.Send.OwnerCodes; n > 0 {
				owner = fmt.Sprintf("; the owner's known device %d more to a destination she verified, and %d more behind a CAPTCHA naming her account", n, n)
			}
			howf(r, "%s: at most %d codes to one destination in any 24h, whoever asks from wherever (%s)%s; phone numbers in any spelling are one E.164 number, e-mail addresses one mailbox",
				f.label, cp.Max, ruleLine(*f.Rule(cp.Rule)), owner)
		}
		for _, rule := range f.Rules {
			if rule.Subject.Parts == authguard.PartDestination && rule.Name != cp.Rule {
				howf(r, "%s: also %s", f.label, ruleLine(rule))
			}
		}
		if !enforced(r, f) {
			continue
		}
		if !ok {
			failf(r, "%s: no rule on the destination alone, counting every client and delaying or denying past its limit, caps the codes one phone or mailbox gets", f.label)
			continue
		}
		largestCodes = max(largestCodes, cp.Max+2*f.Send.OwnerCodes)
	}
	largestGuesses := 0
	for _, f := range verifiers {
		b, bok := f.Flow.FailureBound()
		g, gok := DestinationGuesses(f.Flow)
		if bok && gok {
			howf(r, "%s: guesses at codes: %s %d per account and %d per destination (%s) in any 24h", f.label, atMost(b.Exact), b.Max, g.Max, g.Rule)
		}
		if !enforced(r, f) {
			continue
		}
		if !bok {
			failf(r, "%s: no backoff rule counts the account, so guesses at its codes are unbounded", f.label)
		}
		if !gok {
			failf(r, "%s: no backoff rule on the destination counts every client, so guesses at one destination's codes multiply with the accounts an attacker owns", f.label)
		} else {
			largestGuesses = max(largestGuesses, g.Max)
		}
	}
	if len(sends) > 0 && len(verifiers) == 0 {
		failf(r, "no flow verifies the codes sent (a flow of checks with verifies: naming the send flow), so guesses at them are not counted")
	}
	if len(sends) > 0 {
		c.search(r, ObjectiveDestinationCodes, largestCodes)
		for _, f := range sends {
			if cp, ok := DestinationCodes(f.Flow); ok && f.Mode == authguard.Enforce {
				c.simulate(r, scenarioDestinationBombing, f, cp.Max)
			}
		}
	}
	if len(verifiers) > 0 {
		c.search(r, ObjectiveDestinationGuesses, largestGuesses)
	}
	scenarioFiles(r, "otp-bombing", "otp-bombing-mailbox", "otp-verify-brute-force")
	tests(r, "TestSend_OTPBombingFromAThousandAddressesSendsTenADay", "TestSend_OTPBombingSpellingsShareOneCounter",
		"TestSend_OneInboxInManySpellingsGetsTenCodesADay", "TestSend_AStolenTokenOfTheOwnerGetsAtMostHerCodes",
		"TestVerify_GuessingOnePhonesCodesUnderManyAccounts", "TestVerify_DeviceTokensOfManyAccountsCannotMultiplyGuessesAtOnePhone")
}

// asvsAntiAutomation: every flow escalates to a CAPTCHA past some limit on
// what automation does at volume.
func asvsAntiAutomation(c *checker, r *Result) {
	if len(c.flows) == 0 {
		r.Status = NotApplicable
		return
	}
	for _, f := range c.flows {
		var captcha, other []string
		for _, rule := range f.Rules {
			switch {
			case rule.Breached: // as in 6.3.1: it depends on the caller's breached flag
			case rule.Past == authguard.PastCaptcha:
				captcha = append(captcha, ruleLine(rule))
			case rule.Past == authguard.PastDeny || rule.Algorithm == authguard.TokenBucket || rule.Algorithm == authguard.LeakyBucket:
				other = append(other, ruleLine(rule))
			}
		}
		if len(captcha) > 0 {
			howf(r, "%s asks for a CAPTCHA past: %s", f.label, strings.Join(captcha, "; "))
		}
		if len(other) > 0 {
			howf(r, "%s also: %s", f.label, strings.Join(other, "; "))
		}
		if f.SecondFactor {
			// Reached only with a login's ticket, so only past the login's
			// own anti-automation; its backoff counters bound the codes.
			howf(r, "%s is a step-up flow: its reports need a ticket a login's right password earned, and its backoff counters bound second-factor guesses", f.label)
			continue
		}
		if !enforced(r, f) {
			continue
		}
		if len(captcha) == 0 {
			failf(r, "%s: no rule asks for a CAPTCHA (past: captcha), so automation at volume meets delays only", f.label)
		}
	}
	scenarioFiles(r, "spray-one-ip", "spray-distributed", "otp-pumping-sequential", "otp-pumping-country", "flood-fresh-subjects")
	tests(r, "TestSpray_OneIPManyAccountsNeedsCaptcha", "TestSpray_OnePasswordAcrossManyIPs", "TestSend_PumpingSequentialNumbersOfOneBlockStops",
		"TestSend_CountryUnderPumpingNeedsCaptchaWhileOthersDoNot", "TestSend_PumpingCannotSpendPastTheBudget")
}

// failModeLine says what a flow answers while its store is down.
func failModeLine(f namedFlow) string {
	if f.FailMode == authguard.FailClosed {
		return fmt.Sprintf("%s fails closed: while the store is down it answers a delay of %s (reason unavailable)", f.label, config.FormatDuration(f.FailClosedRetry))
	}
	held := "each account's bound"
	if f.Kind == authguard.Sends {
		held = "each destination's cap and the spend budget"
	}
	return fmt.Sprintf("%s fails open: while the store is down each instance answers from its own fallback store, every rule still counting there and starting from what the store last said of subjects in backoff, so %s then hold per instance", f.label, held)
}

// asvsDependencyFailure: each flow has a fail mode; the store is behind a
// circuit breaker; a flood is shed as a delay.
func asvsDependencyFailure(c *checker, r *Result) {
	for _, f := range c.flows {
		howf(r, "%s", failModeLine(f))
	}
	howf(r, "the store is behind a circuit breaker; a check shed under load is a delay (reason overloaded), never an error; what the fallback counted is written back once the store answers")
	r.Caller = "when tollgate itself cannot be reached, your client's fail mode answers: api/client's FailDelay or FailCaptcha, or FailOpen within its local allowance (5 per account per 30 minutes)"
	docs(r, "docs/design.md#8-fail-modes-shadow-mode-overload")
	tests(r, "TestFailOpen_AnswersFromTheFallback", "TestFailClosed_AnswersDelayUnavailable", "TestOutage_ErrorsAreUnavailableAndTheBreakerOpens",
		"TestBlip_AnAccountInBackoffStaysInBackoffThroughStoreBlips", "TestSaturation_AFloodIsShedNotAnsweredFromTheFallback",
		"TestBreaker_ClientsHangingUpCannotOpenIt", "TestClient_ServerDown_FailModes")
}

// asvsFailSecure: a flow that verifies short codes fails closed; nothing
// turns an error into a proceed.
func asvsFailSecure(c *checker, r *Result) {
	for _, f := range c.flows {
		howf(r, "%s", failModeLine(f))
		if f.Kind == authguard.Attempts && f.Verifies != "" && f.FailMode != authguard.FailClosed {
			failf(r, "%s verifies one-time codes and fails open: a short code gets its bound once per instance during an outage; fail_mode must be closed", f.label)
		}
	}
	howf(r, "bad input is a 400 that changes no state; a shed or unanswerable call is a delay, never a proceed; an admin block refuses before any rule")
	r.Caller = "never let an attempt through on a 4xx or an unknown action from tollgate (api/client answers them closed in every fail mode)"
	tests(r, "TestFailClosed_AnswersDelayUnavailable", "TestEngine_FailClosedWhileRedisIsDown", "TestFlood_AnAccountInBackoffIsAnsweredWithoutTheQueue",
		"TestClient_AShedCheckIsADelayWhateverTheFailMode", "TestClient_BadRequestIsAnErrorWithTheProblem", "TestBadInput_IsAnInputErrorAndChangesNothing")
}

// asvsAuthLog: the decision log records every check, report and send, with
// subjects as the store's keyed hashes.
func asvsAuthLog(c *checker, r *Result) {
	howf(r, "no log line, trace or stored key holds a raw account, phone number, e-mail address or IP address: subjects are keyed hashes (HMAC-SHA-256 with the secret)")
	howf(r, "every administrator's reset, allow and deny is one audit line: who, tenant, flow, kind of subject, outcome")
	if c.cfg.DecisionLog == "" {
		r.Status = Caller
		howf(r, "decision_log is not set: tollgate writes no line per decision")
		r.Caller = "log each authentication attempt in your auth system, or set decision_log (a file or stdout) to have tollgate write one JSON line per check, report and send"
	} else {
		howf(r, "decision_log %s: one JSON line per check, report and send, with the flow, the verdict and its reasons; a writer that falls behind drops lines and counts them, never slowing a verdict", c.cfg.DecisionLog)
	}
	docs(r, "docs/backtest.md#before-you-enforce-back-test")
	tests(r, "TestWriter_LinesCarryTheStoresHashesAndNoIdentifier", "TestWriter_AFullQueueDropsAndCountsNeverBlocks",
		"TestTraces_CarryNoIdentifier", "TestAdmin_Reset", "TestEntries_StoreHoldsNoRawRange")
}

// asvsSecurityEvents: every verdict's reasons are counted per flow;
// reports without an attempt are warned of.
func asvsSecurityEvents(c *checker, r *Result) {
	for _, f := range c.flows {
		var reasons []string
		for _, rs := range f.Reasons() {
			reasons = append(reasons, string(rs))
		}
		howf(r, "%s: each delay, CAPTCHA and deny is counted in tollgate_verdict_reasons_total by reason: %s", f.label, strings.Join(reasons, ", "))
	}
	howf(r, "a report without its attempt token is counted (tollgate_reports_without_attempt_total) and warned of once a minute per flow; a forged one is refused")
	docs(r, "docs/operating.md#endpoints")
	tests(r, "TestReport_WithoutAnAttemptIsCountedAndVisible", "TestReport_AForgedAttemptIsRefusedAndCountsNothing")
}

// factorFlows are the flows of factors other than the password, by the
// built-in policy's names (a flow of a file that uses one of these names is
// that factor's), with what a failure there is. They are 6.3.4's, not the
// password's 6.3.1 and 3.2.2: no password is typed, so no password
// fingerprint is counted across accounts.
var factorFlows = map[string]string{
	"passkey":       "a failed or cancelled passkey assertion (never a guess)",
	"totp":          "a wrong authenticator code",
	"recovery_code": "a wrong recovery code",
	"magic_link":    "an unknown, used or expired sign-in link (no account to count)",
}

// asvsFactors: each factor's flow bounds failures per account (within
// NIST's 100 a day) or, with no account to name, per address; it keeps its
// counters under its own name and device trust, so one factor's failures
// never slow another and a password change leaves it alone.
func asvsFactors(c *checker, r *Result) {
	flows := c.filter(func(f namedFlow) bool { return f.Kind == authguard.Attempts && factorFlows[f.Name] != "" })
	if len(flows) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy has no flow of another factor (passkey, totp, recovery_code, magic_link)")
		return
	}
	howf(r, "each flow's keys carry its name, so one factor's failures never slow another; a success on one clears nothing of another")
	password := map[string]bool{}
	for _, f := range c.attempts() {
		password[f.DeviceTrust] = true
	}
	for _, f := range flows {
		howf(r, "%s: a failure is %s; %s", f.label, factorFlows[f.Name], f.budget())
		var ipBackoff []string
		for _, rule := range f.Rules {
			if rule.Algorithm == authguard.Backoff && rule.Subject.Has(authguard.PartIP) {
				ipBackoff = append(ipBackoff, ruleLine(rule))
			}
		}
		if len(ipBackoff) > 0 {
			howf(r, "%s per address: %s", f.label, strings.Join(ipBackoff, "; "))
		}
		if !enforced(r, f) {
			continue
		}
		b, ok := f.Flow.FailureBound()
		switch {
		case ok && b.Max > authguard.NISTMaxFailures:
			failf(r, "%s: %s %d failed checks per account in any 24h, above %d", f.label, b.Phrase(), b.Max, authguard.NISTMaxFailures)
		case !ok && len(ipBackoff) == 0:
			failf(r, "%s: no backoff rule counts the account or the address, so its failures are unbounded", f.label)
		}
		if password[f.DeviceTrust] {
			failf(r, "%s trusts the device tokens of a password flow (device_trust %s): a password change clears its counters too", f.label, f.DeviceTrust)
		}
	}
	docs(r, "docs/policy.md#factors-beyond-the-password")
	scenarioFiles(r, "passkey-cancelling-user", "recovery-code-guesser")
	tests(r, "TestFactors_OneFactorsFailuresNeverSlowAnother", "TestPasswordChanged_AMailboxThiefCannotRenewHisGuessesAtTheSecondFactor")
}

// asvsPasswordReset: a password_changed report clears the counters of the
// password's flows only, never a second factor's or an address's; that the
// reset itself asks for the second factor is the caller's.
func asvsPasswordReset(c *checker, r *Result) {
	if len(c.attempts()) == 0 {
		r.Status = NotApplicable
		howf(r, "the policy has no flow of checks and reports")
		return
	}
	howf(r, "a report of password_changed clears the account's counters in the flows that trust the reported flow's device tokens (its password's), never a step-up flow's or another factor's, never an address's; device tokens stay valid")
	r.Caller = "ask for the enabled second factor before a password reset takes effect, and report password_changed only once the change is made"
	docs(r, "docs/integrate.md#after-a-password-change")
	tests(r, "TestPasswordChanged_AMailboxThiefCannotRenewHisGuessesAtTheSecondFactor", "TestPasswordChanged_AnAttackerCannotUseItToResetHisGuesses")
}
