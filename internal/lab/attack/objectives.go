package attack

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// captchaSeconds is what one CAPTCHA costs the owner in the owner's-loss
// objectives: a minute of her time.
const captchaSeconds = 60

// maxRate is the fastest attack searched, in logins an hour outside the
// sprays (which stop at their first CAPTCHA): one every 10 s. A faster
// script that waits out delays gains nothing against backoff (it pauses
// through them), and one that does not obey loses at most 10 s a delay,
// while each evaluation's cost grows with the checks made.
const maxRate = 360

// objective is an Objective with how its strategies are built and scored.
type objective struct {
	Objective
	// genes is the number of dimensions of a strategy.
	genes int
	// build writes the actors of a strategy (YAML, indented as a list item
	// of actors) and returns the lines of the expectations that hold
	// exactly when the score is within bound.
	build func(d *decoder, bound float64) (actors string, expect []string)
	// score combines the counters of a run into the score.
	score func(r *simulate.Result) float64
	// scoreText says how the score is made from the counters.
	scoreText string
	// note, when set, says how the expectations relate to the bound
	// where they cannot state it exactly.
	note string
}

// objectives returns the objectives of policy p, in a fixed order.
func objectives(p *authguard.Policy) []objective {
	var out []objective
	var checkFlows []string
	for _, name := range p.FlowNames() {
		// A step-up flow takes a login's ticket, not a password: its
		// guesses are second-factor codes this model does not play.
		if f := p.Flow(name); f.Kind != authguard.Sends && !f.SecondFactor {
			checkFlows = append(checkFlows, name)
		}
	}
	for _, name := range checkFlows {
		f := p.Flow(name)
		n, ok := f.MaxFailuresPerDay()
		if !ok {
			continue
		}
		var mintIn []string
		for _, other := range checkFlows {
			if other != name {
				mintIn = append(mintIn, other)
			}
		}
		out = append(out, failuresObjective(name, float64(n), mintIn, edgesOf(f)))
	}
	for _, name := range checkFlows {
		if f := p.Flow(name); f.Verifies != "" {
			if c, ok := conformance.DestinationGuesses(f); ok {
				out = append(out, guessesObjective(name, c, edgesOf(f)))
			}
			break // the first flow that verifies codes: otp_verify in the built-in policy
		}
	}
	if f := p.Flow("login"); f != nil && f.Kind != authguard.Sends {
		if b, ok := sprayBound(f, 48); ok {
			out = append(out, sprayObjective("spray_ipv6_48", "login", b, false,
				"accounts tried from one IPv6 /48 before the first CAPTCHA, in 24 h (bound: the distinct-accounts rules that cover the /48)"))
		}
		if b, ok := sprayBound(f, 0); ok {
			out = append(out, sprayObjective("spray_ipv4", "login", b, true,
				"accounts tried from one IPv4 address, in any spelling (IPv4-mapped, 6to4, Teredo), before the first CAPTCHA, in 24 h (bound: the distinct-accounts rules on the address)"))
		}
		if _, ok := f.MaxFailuresPerDay(); ok {
			out = append(out, ownerObjective(f, true), ownerObjective(f, false))
		}
		// Step-up is what stops a stuffer's right password; without it
		// (or with breached passwords no reason) nothing bounds them.
		if f.StepUp.Flow != "" && !f.StepUp.BreachedOff {
			out = append(out, stuffingObjective(f), ownerStepUpObjective(f))
		}
	}
	for _, name := range p.FlowNames() {
		f := p.Flow(name)
		if f.Kind != authguard.Sends {
			continue
		}
		if b, ok := destinationBound(f); ok {
			out = append(out, codesObjective(name, "codes_phone", b, false), codesObjective(name, "codes_mailbox", b, true))
		}
		if login, verify := ownerCodeFlows(p, f); login != "" && f.Send.OwnerCodes > 0 {
			out = append(out, ownerCodeObjective(f, login, verify, true), ownerCodeObjective(f, login, verify, false))
		}
		if b, rule, ok := spendBound(f); ok {
			out = append(out, spendObjective(f, b, rule))
		}
		break // the first send flow only: otp_send in the built-in policy
	}
	return out
}

// windowsBound is the most a windows limit admits in 24 hours from a clean
// start.
func windowsBound(ws spraydetect.Windows) int {
	best := math.MaxInt
	for _, w := range ws {
		n := w.Limit * int(math.Ceil(float64(24*time.Hour)/float64(w.Length)))
		best = min(best, n)
	}
	return best
}

// sprayBound is the fewest accounts the distinct-accounts rules (past a
// CAPTCHA) that count a whole IPv6 prefix of bits (0: an IPv4 address)
// admit in 24 hours.
func sprayBound(f *authguard.Flow, bits int) (float64, bool) {
	best := math.MaxInt
	for _, r := range f.Rules {
		// A Breached rule counts only failures reported breached, which a
		// sprayer of guessed passwords does not send.
		if r.Subject.Parts != authguard.PartIP || r.Algorithm != authguard.Distinct || r.Of != authguard.PartAccount || r.Past != authguard.PastCaptcha || r.Breached {
			continue
		}
		covers := r.Subject.IPBits == 0
		if bits > 0 {
			group := r.Subject.IPBits
			if group == 0 {
				group = f.Grouping.IPv6Bits
				if group == 0 {
					group = 64
				}
			}
			covers = group <= bits
		}
		if covers {
			best = min(best, windowsBound(r.Windows))
		}
	}
	return float64(best), best < math.MaxInt
}

// destinationBound is the fewest codes the rules on a destination that
// count every client's sends admit in 24 hours.
func destinationBound(f *authguard.Flow) (float64, bool) {
	best := math.MaxInt
	for _, r := range f.Rules {
		if r.Subject.Parts != authguard.PartDestination || r.Clients != authguard.AllClients || r.Counts != authguard.OnProceed {
			continue
		}
		switch r.Algorithm {
		case authguard.SlidingLog, authguard.SlidingCounter, authguard.FixedWindow:
			if r.Rate.Window > 0 {
				best = min(best, r.Rate.Limit*int(math.Ceil(float64(24*time.Hour)/float64(r.Rate.Window))))
			}
		case authguard.Backoff:
			best = min(best, r.Backoff.MaxFailuresIn(24*time.Hour))
		}
	}
	return float64(best), best < math.MaxInt
}

// counter returns a score that is one counter of one actor.
func counter(actor, field string) func(r *simulate.Result) float64 {
	return func(r *simulate.Result) float64 {
		for _, a := range r.Actors {
			if a.Name == actor {
				v, _ := a.Get(field)
				return float64(v)
			}
		}
		return 0
	}
}

func failuresObjective(flow string, bound float64, mintIn []string, edges []time.Duration) objective {
	o := objective{
		Objective: Objective{
			Name: flow + "_failures",
			Summary: fmt.Sprintf("failed %s checks on one account in 24 h, by one attacker or two at once (through one instance or two on one store), "+
				"replaying, dropping or swapping its reports' attempt tokens or sending none, logging in to an account it owns, solving a share of the CAPTCHAs, "+
				"and bursting at a window's edge (bound: validate-config's figure for the flow; NIST SP 800-63B allows %d)",
				flow, NISTMaxFailures),
			Bound: bound, Unit: "failures/24h",
		},
		score: func(r *simulate.Result) float64 {
			return counter("attacker", "failures_max_24h")(r) + counter("attacker2", "failures_max_24h")(r)
		},
		scoreText: "attacker.failures_max_24h + attacker2.failures_max_24h (when there is an attacker2)",
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		// Every attempt has a password of its own: repeats of one wrong
		// password are one guess (same_password_window), not an attack.
		first, owner1 := bruteForcer(d, "attacker", flow, mintIn, edges)
		second, owner2 := bruteForcer(d, "attacker2", flow, mintIn, edges)
		two, apart := d.toggle(), d.toggle()
		var b strings.Builder
		attackers(&b, first, second, two, apart)
		if owner1 || two && owner2 {
			fmt.Fprintf(&b, "  - name: owner\n    flow: %s\n    accounts: [%s]\n    ips: [198.51.100.23]\n    every: 8h\n    typos: 1\n    device_token: true\n",
				flow, yamlQuote(accountSpellings[0]))
		}
		key := "attacker"
		if two {
			key = "attacker+attacker2"
		}
		return b.String(), []string{fmt.Sprintf("%s.failures_max_24h: \"<= %d\"", key, int64(bound))}
	}
	o.genes = countGenes(o.build)
	return o
}

// secondInstance puts an actor on the scenario's second engine
// (scenario writes instances: 2 for it): a second attacker that goes
// through another tollgate instance on the same store.
const secondInstance = "    instance: 2\n"

// edgesOf are the times flow f's counters turn over, shorter than a day,
// in order: each window's length, each backoff's forget_after and the
// attempt tokens' lifetime. A second phase lands on one of them, a
// second either side, after the attacker's start: a burst at a window's
// edge.
func edgesOf(f *authguard.Flow) []time.Duration {
	var out []time.Duration
	add := func(d time.Duration) {
		if d > 0 && d < 24*time.Hour && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, r := range f.Rules {
		add(r.Rate.Window)
		for _, w := range r.Windows {
			add(w.Length)
		}
		add(r.Backoff.ForgetAfter)
	}
	add(f.AttemptTTL)
	slices.Sort(out)
	return out
}

// reportTokens are the attempt tokens an attacker's reports may carry:
// simulate's report_token.
var reportTokens = []string{"own", "none", "foreign", "skip"}

// attackers writes the first attacker, and the second too when two, on a
// second instance of the store when apart.
func attackers(b *strings.Builder, first, second string, two, apart bool) {
	b.WriteString(first)
	if two {
		b.WriteString(second)
		if apart {
			b.WriteString(secondInstance)
		}
	}
}

// behaviour writes what an attacker of a check flow does besides its
// guesses, each chosen by its own genes: which attempt token its reports
// carry and how often each is replayed; logins to an account it owns
// (named after it) every so many attempts, with the device token they
// earn when ownDevice (the actor has no other); and a second phase of
// logins at one instant, an edge (of edges) after its start, a second
// before, on or after it.
func behaviour(d *decoder, name string, ownDevice bool, start, stop int, edges []time.Duration) string {
	token, replays := d.pick(len(reportTokens)), d.pick(4)
	owns, every, ownToken := d.toggle(), d.logInt(1, 100), d.toggle()
	phase, edge, eps, logins := d.toggle(), d.pick(max(len(edges), 1)), d.pick(3), d.logInt(1, 500)
	var b strings.Builder
	if token > 0 {
		fmt.Fprintf(&b, "    report_token: %s\n", reportTokens[token])
	}
	if replays > 0 && reportTokens[token] != "skip" {
		fmt.Fprintf(&b, "    report_replays: %d\n", replays)
	}
	if owns {
		fmt.Fprintf(&b, "    own_success: {account: %s-own@example.net, every: %d, device_token: %t}\n", strings.ToLower(name), every, ownToken && ownDevice)
	}
	if phase && len(edges) > 0 {
		at := time.Duration(start)*time.Minute + edges[edge] + time.Duration(eps-1)*time.Second
		if at >= time.Duration(start)*time.Minute && at < time.Duration(stop)*time.Minute {
			fmt.Fprintf(&b, "    second_phase: {at: %s, logins: %d}\n", shortDuration(at), logins)
		}
	}
	return b.String()
}

// bruteForcer writes one attacker of an account in flow, and whether it
// steals the owner's device token (so that the owner must be there).
func bruteForcer(d *decoder, name, flow string, mintIn []string, edges []time.Duration) (string, bool) {
	spellings := d.subset(accountSpellings)
	ips := d.pool(brutePools)
	rate := d.logInt(1, maxRate)
	start, stop := d.window(0)
	obeys, solves := d.toggle(), d.share()
	device := d.pick(3)
	mintFlow := d.pick(max(len(mintIn), 1))
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    flow: %s\n    accounts: %s\n    ips: %s\n    rate: %d/h\n%s    outcome: failure\n    obeys_delay: %t\n    solves_captcha: %s\n",
		name, flow, yamlList(spellings), ips, rate, startStop(start, stop), obeys, solves)
	b.WriteString(behaviour(d, name, device == 0 || device == 2 && len(mintIn) == 0, start, stop, edges))
	steals := false
	switch {
	case device == 1: // a thief with a copy of the owner's token
		steals = true
		b.WriteString("    device_token_from: owner\n")
	case device == 2 && len(mintIn) > 0: // knows the password of another flow
		fmt.Fprintf(&b, "    mints_device_token_in: %s\n", mintIn[mintFlow])
	}
	return b.String(), steals
}

func sprayObjective(name, flow string, bound float64, ipv4 bool, summary string) objective {
	o := objective{
		Objective: Objective{Name: name, Summary: summary, Bound: bound, Unit: "accounts"},
		score:     counter("attacker", "accounts_checked_before_captcha"),
		scoreText: "attacker.accounts_checked_before_captcha",
	}
	pools := slash48Pools
	if ipv4 {
		pools = ipv4Pools
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		ips := d.pool(pools)
		rate := d.logInt(1, 7200)
		start, stop := d.window(0)
		fixedPassword := d.toggle()
		accounts := "{fresh: true}"
		if n := d.logInt(1, 2000); d.toggle() {
			accounts = fmt.Sprintf("{generate: %d}", n)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "  - name: attacker\n    flow: %s\n    accounts: %s\n    ips: %s\n    rate: %d/h\n%s    outcome: failure\n    stops_at_captcha: true\n",
			flow, accounts, ips, rate, startStop(start, stop))
		if fixedPassword {
			b.WriteString("    password: hunter2\n")
		}
		return b.String(), []string{fmt.Sprintf("attacker.accounts_checked_before_captcha: \"<= %d\"", int64(bound))}
	}
	o.genes = countGenes(o.build)
	return o
}

func codesObjective(flow, name string, bound float64, mailbox bool) objective {
	what, catalogue, channels := "phone number", phoneSpellings, []string{"sms", "voice", "whatsapp"}
	if mailbox {
		what, catalogue, channels = "mailbox", mailboxSpellings, []string{"email"}
	}
	o := objective{
		Objective: Objective{
			Name: name,
			Summary: fmt.Sprintf("codes %s delivers to one %s in 24 h, in any spelling, for one or two attackers who cannot read them (bound: the destination rules that count every client)",
				flow, what),
			Bound: bound, Unit: "codes/24h",
		},
		score: func(r *simulate.Result) float64 {
			return counter("attacker", "proceeded")(r) + counter("attacker2", "proceeded")(r)
		},
		scoreText: "attacker.proceeded + attacker2.proceeded (when there is an attacker2)",
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		first := bomber(d, "attacker", flow, catalogue, channels)
		second := bomber(d, "attacker2", flow, catalogue, channels)
		key := "attacker"
		if d.toggle() {
			first += second
			key = "attacker+attacker2"
		}
		return first, []string{fmt.Sprintf("%s.proceeded: \"<= %d\"", key, int64(bound))}
	}
	o.genes = countGenes(o.build)
	return o
}

// bomber writes one attacker asking flow for codes to spellings of one
// destination (from catalogue) by one of channels.
func bomber(d *decoder, name, flow string, catalogue, channels []string) string {
	dests := d.subset(catalogue)
	channel := channels[d.pick(len(channels))]
	ips := d.pool(brutePools)
	rate := d.logInt(1, maxRate)
	start, stop := d.window(0)
	obeys, solves := d.toggle(), d.share()
	accountMode, accounts := d.pick(3), d.logInt(2, 50)
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    flow: %s\n    destinations: %s\n    channel: %s\n    ips: %s\n    rate: %d/h\n%s    obeys_delay: %t\n    solves_captcha: %s\n",
		name, flow, yamlList(dests), channel, ips, rate, startStop(start, stop), obeys, solves)
	switch accountMode {
	case 1:
		b.WriteString("    accounts: [bomber@example.net]\n")
	case 2:
		fmt.Fprintf(&b, "    accounts: {generate: %d}\n", accounts)
	}
	return b.String()
}

// ownerLogins is how often the owner logs in, and ownerTypos how many
// times she mistypes each time, in the owner's-loss objectives.
const (
	ownerEvery = 8 * time.Hour
	ownerTypos = 1
)

func ownerObjective(f *authguard.Flow, device bool) objective {
	name, summary, bound := "owner_device_delay", fmt.Sprintf(
		"seconds of delay (a CAPTCHA counts %d s) an attacker causes the account's owner in 24 h, who logs in to %s every %v with %d typo from a device that holds its token (bound: none: the known device goes ahead)",
		captchaSeconds, f.Name, shortDuration(ownerEvery), ownerTypos), 0.0
	if !device {
		// Without a token she signs in from the address she signed in from
		// before: a known network of her account, which goes ahead while
		// the account's delay runs (authguard's known networks). Only
		// someone behind that very address shares it (neighbourPools).
		name = "owner_delay"
		summary = fmt.Sprintf(
			"seconds of delay (a CAPTCHA counts %d s) an attacker from any address but hers causes the account's owner in 24 h, who logs in to %s every %v with %d typo from the address she signed in from before and keeps no device token (bound: none: her known network goes ahead)",
			captchaSeconds, f.Name, shortDuration(ownerEvery), ownerTypos)
	}
	o := objective{
		Objective: Objective{Name: name, Summary: summary, Bound: bound, Unit: "seconds"},
		score: func(r *simulate.Result) float64 {
			return counter("owner", "delay_seconds")(r) + captchaSeconds*counter("owner", "captcha")(r)
		},
		scoreText: fmt.Sprintf("owner.delay_seconds + %d × owner.captcha", captchaSeconds),
	}
	if bound >= captchaSeconds {
		o.note = "the expectation checks owner.delay_seconds alone; add 60 s per owner.captcha for the score."
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		spellings := d.subset(accountSpellings)
		pools := ownerPools
		if !device {
			pools = neighbourPools
		}
		ips := d.pool(pools)
		rate := d.logInt(1, maxRate)
		start, stop := d.window(1)
		obeys, solves := d.toggle(), d.toggle()
		fixedPassword := d.toggle()
		var b strings.Builder
		fmt.Fprintf(&b, "  - name: owner\n    flow: %s\n    accounts: [%s]\n    ips: [198.51.100.23]\n    every: %v\n    typos: %d\n    device_token: %t\n",
			f.Name, yamlQuote(accountSpellings[0]), shortDuration(ownerEvery), ownerTypos, device)
		fmt.Fprintf(&b, "  - name: attacker\n    flow: %s\n    accounts: %s\n    ips: %s\n    rate: %d/h\n%s    outcome: failure\n    obeys_delay: %t\n    solves_captcha: %t\n",
			f.Name, yamlList(spellings), ips, rate, startStop(start, stop), obeys, solves)
		if fixedPassword {
			b.WriteString("    password: hunter2\n")
		}
		b.WriteString(behaviour(d, "attacker", true, start, stop, edgesOf(f)))
		expect := []string{fmt.Sprintf("owner.delay_seconds: \"<= %d\"", int64(bound))}
		if bound < captchaSeconds {
			expect = append(expect, "owner.captcha: \"== 0\"")
		}
		return b.String(), expect
	}
	o.genes = countGenes(o.build)
	return o
}

// ownerCodeFlows returns a check flow whose device tokens send flow f
// trusts and a flow that verifies f's codes, or "" for either when p has
// none.
func ownerCodeFlows(p *authguard.Policy, f *authguard.Flow) (login, verify string) {
	for _, name := range p.FlowNames() {
		g := p.Flow(name)
		switch {
		case g.Kind == authguard.Sends:
		case g.Verifies == f.Name && verify == "":
			verify = name
		case g.DeviceTrust == f.DeviceTrust && login == "":
			login = name
		}
	}
	if verify == "" {
		return "", ""
	}
	return login, verify
}

// deniedSeconds is what a code refused for good costs the owner in the
// owner's-code objectives: an hour, until she tries another way.
const deniedSeconds = 3600

func ownerCodeObjective(f *authguard.Flow, login, verify string, device bool) objective {
	n := f.Send.OwnerCodes
	name, bound := "owner_code_device_delay", 0.0
	summary := fmt.Sprintf("seconds (a CAPTCHA counts %d s, a denied code %d s) an attacker keeps the owner from her one-time code in 24 h, "+
		"who asks %s for one every %v with her %s device token and types it in %s (bound: none: %d owner codes a day skip the destination's waits)",
		captchaSeconds, deniedSeconds, f.Name, shortDuration(ownerEvery), login, verify, n)
	if !device {
		name, bound = "owner_code_delay", float64(3*captchaSeconds)
		summary = fmt.Sprintf("the same for an owner without her device token, asking from the address she verified the number from, by an attacker from any address but hers "+
			"(bound: %d CAPTCHAs: a send naming her account from a network it verified the number from is asked for a CAPTCHA instead of the destination's wait, %d times a day)", 3, n)
	}
	o := objective{
		Objective: Objective{Name: name, Summary: summary, Bound: bound, Unit: "seconds"},
		score: func(r *simulate.Result) float64 {
			return counter("owner", "delay_seconds")(r) + captchaSeconds*counter("owner", "captcha")(r) + deniedSeconds*counter("owner", "denied")(r)
		},
		scoreText: fmt.Sprintf("owner.delay_seconds + %d × owner.captcha + %d × owner.denied", captchaSeconds, deniedSeconds),
	}
	if !device {
		o.note = "the expectations allow no delay or denial and 3 CAPTCHAs; the score weighs them as above."
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		dests := d.subset(phoneSpellings)
		channel := []string{"sms", "voice", "whatsapp"}[d.pick(3)]
		pools := ownerPools
		if !device {
			pools = neighbourPools
		}
		ips := d.pool(pools)
		rate := d.logInt(1, maxRate)
		start, stop := d.window(2)
		obeys, solves := d.toggle(), d.toggle()
		accountMode, accounts := d.pick(4), d.logInt(2, 50)
		var b strings.Builder
		fmt.Fprintf(&b, "  - name: login\n    flow: %s\n    accounts: [%s]\n    ips: [198.51.100.23]\n    every: %s\n    outcome: success\n    device_token: true\n",
			login, yamlQuote(accountSpellings[0]), shortDuration(ownerEvery))
		fmt.Fprintf(&b, "  - name: owner\n    flow: %s\n    destinations: [%s]\n    channel: sms\n    accounts: [%s]\n    ips: [198.51.100.23]\n    every: %s\n    start: 1m\n    verifies_in: %s\n",
			f.Name, yamlQuote(phoneSpellings[0]), yamlQuote(accountSpellings[0]), shortDuration(ownerEvery), verify)
		if device {
			b.WriteString("    device_token_from: login\n")
		}
		fmt.Fprintf(&b, "  - name: attacker\n    flow: %s\n    destinations: %s\n    channel: %s\n    ips: %s\n    rate: %d/h\n%s    obeys_delay: %t\n    solves_captcha: %t\n",
			f.Name, yamlList(dests), channel, ips, rate, startStop(start, stop), obeys, solves)
		switch accountMode {
		case 1:
			b.WriteString("    accounts: [bomber@example.net]\n")
		case 2:
			fmt.Fprintf(&b, "    accounts: {generate: %d}\n", accounts)
		case 3: // names the owner's account, to spend her codes
			fmt.Fprintf(&b, "    accounts: [%s]\n", yamlQuote(accountSpellings[0]))
		}
		expect := []string{"owner.delay_seconds: \"== 0\"", "owner.denied: \"== 0\""}
		expect = append(expect, fmt.Sprintf("owner.captcha: \"<= %d\"", int64(bound)/captchaSeconds))
		return b.String(), expect
	}
	o.genes = countGenes(o.build)
	return o
}

// guessesObjective scores failed checks at one destination's codes in
// verify, a flow that verifies a send flow's codes, whose checks name the
// destination; bound is conformance.DestinationGuesses, the destination
// rule's figure that tollgate-lab conformance checks.
func guessesObjective(verify string, c conformance.Cap, edges []time.Duration) objective {
	o := objective{
		Objective: Objective{
			Name: "destination_guesses",
			Summary: fmt.Sprintf("failed %s checks at one phone number's codes in 24 h, in any spelling, by one attacker or two with many accounts, "+
				"sessions, addresses and device tokens (of accounts they own, minted, or stolen from the owner), report behaviours, shares of CAPTCHAs solved, "+
				"bursts at a window's edge and two instances, when the checks name the destination "+
				"as the API asks (bound: %s's figure, conformance.DestinationGuesses, which tollgate-lab conformance checks; checks that name no destination get "+
				"each account's own figure instead)", verify, c.Rule),
			Bound: float64(c.Max), Unit: "failures/24h",
		},
		score: func(r *simulate.Result) float64 {
			return counter("attacker", "failures_max_24h")(r) + counter("attacker2", "failures_max_24h")(r)
		},
		scoreText: "attacker.failures_max_24h + attacker2.failures_max_24h (when there is an attacker2)",
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		first, owner1 := guesser(d, "attacker", verify, edges)
		second, owner2 := guesser(d, "attacker2", verify, edges)
		two, apart := d.toggle(), d.toggle()
		var b strings.Builder
		attackers(&b, first, second, two, apart)
		if owner1 || two && owner2 {
			// The owner types her own codes: a success naming the number,
			// from a device that keeps the token the thief copies.
			fmt.Fprintf(&b, "  - name: owner\n    flow: %s\n    accounts: [%s]\n    guesses_at: [%s]\n    ips: [198.51.100.23]\n    every: 8h\n    typos: 1\n    device_token: true\n",
				verify, yamlQuote(accountSpellings[0]), yamlQuote(phoneSpellings[0]))
		}
		key := "attacker"
		if two {
			key = "attacker+attacker2"
		}
		return b.String(), []string{fmt.Sprintf("%s.failures_max_24h: \"<= %d\"", key, int64(bound))}
	}
	o.genes = countGenes(o.build)
	return o
}

// guesser writes one attacker guessing at the codes of the victim's
// number in flow verify, and whether it steals the owner's device token
// (so that the owner must be there).
func guesser(d *decoder, name, verify string, edges []time.Duration) (string, bool) {
	dests := d.subset(phoneSpellings)
	channel := []string{"sms", "voice", "whatsapp"}[d.pick(3)]
	ips := d.pool(brutePools)
	rate := d.logInt(1, maxRate)
	start, stop := d.window(0)
	obeys, solves := d.toggle(), d.share()
	accountMode, accounts := d.pick(3), d.logInt(2, 500)
	device := d.pick(3)
	fixedCode := d.toggle()
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    flow: %s\n    guesses_at: %s\n    channel: %s\n    ips: %s\n    rate: %d/h\n%s    outcome: failure\n    obeys_delay: %t\n    solves_captcha: %s\n",
		name, verify, yamlList(dests), channel, ips, rate, startStop(start, stop), obeys, solves)
	b.WriteString(behaviour(d, name, device == 0, start, stop, edges))
	if fixedCode {
		b.WriteString("    password: \"000000\"\n")
	}
	switch {
	case device == 1: // a thief with a copy of the owner's token, under her account
		fmt.Fprintf(&b, "    accounts: [%s]\n    device_token_from: owner\n", yamlQuote(accountSpellings[0]))
		return b.String(), true
	case accountMode == 0 && device != 2: // a new session each time
		b.WriteString("    accounts: {fresh: true}\n")
	case accountMode == 1:
		b.WriteString("    accounts: [guesser@example.net]\n")
	default: // accounts of its own
		fmt.Fprintf(&b, "    accounts: {generate: %d}\n", accounts)
	}
	if device == 2 {
		// It knows its accounts' codes: a success in the flow before
		// each guess mints a device token of its own account.
		fmt.Fprintf(&b, "    mints_device_token_in: %s\n", verify)
	}
	return b.String(), false
}

// maxSpendRate is the fastest pumper searched, in sends an hour: fast
// enough to spend the built-in budget (1,000,000 units, 33,334 voice
// codes) within one UTC day, while each strategy's cost grows with its
// sends (a CAPTCHA-solving pumper makes two engine calls a code).
const maxSpendRate = 4000

// spendBound is the most the rules that price each send (cost: price) on
// the tenant, counting every client and past their limit delaying or
// denying (a CAPTCHA a pumper solves), let a send flow spend in any 24
// hours, where a send whose price would take a window's count past the
// limit does not go ahead: a sliding log's limit per window the day
// spans; a fixed window's for each window any 24 hours touch, one more
// than fit in them (a window is a UTC period: 24 hours from 09:00 touch two
// UTC days, scenarios/attack-spend-midnight.yaml); a sliding counter's
// twice that, its documented worst case. The rule's name is returned with
// it.
func spendBound(f *authguard.Flow) (float64, string, bool) {
	best, name := math.MaxInt, ""
	for _, r := range f.Rules {
		if !r.PriceCost || r.Subject.Parts != authguard.PartTenant || r.Clients != authguard.AllClients || r.Past == authguard.PastCaptcha || r.Rate.Window <= 0 {
			continue
		}
		windows := int(math.Ceil(float64(24*time.Hour) / float64(r.Rate.Window)))
		n := 0
		switch r.Algorithm {
		case authguard.SlidingLog:
			n = r.Rate.Limit * windows
		case authguard.FixedWindow:
			n = r.Rate.Limit * (windows + 1)
		case authguard.SlidingCounter:
			n = 2 * r.Rate.Limit * (windows + 1)
		default:
			continue
		}
		if n < best {
			best, name = n, r.Name
		}
	}
	return float64(best), name, best < math.MaxInt
}

// pumpRanges are the first numbers of the ranges a pumper walks: mobile
// ranges of three countries, 100,000 numbers each.
var pumpRanges = valid([]string{"+447400100000", "+33612000000", "+31612000000"},
	func(s string) error { _, err := authguard.ParseDestination(authguard.ChannelSMS, s, 3); return err })

func spendObjective(f *authguard.Flow, bound float64, rule string) objective {
	o := objective{
		Objective: Objective{
			Name: "spend_per_day",
			Summary: fmt.Sprintf("price units the codes %s sends cost the tenant in 24 h (from 09:00 UTC, so across a UTC midnight), for one pumper or two "+
				"walking many numbers, blocks and countries from many addresses and solving every CAPTCHA (bound: %d, what %s's windows let through in any 24 h: "+
				"a send whose price would take a window's spend past its limit is denied, so each window's spend stops at the limit exactly; "+
				"a fixed window is a UTC period, and 24 h across midnight touch two)",
				f.Name, int64(bound), rule),
			Bound: bound, Unit: "units/24h",
		},
		score: func(r *simulate.Result) float64 {
			return counter("pumper", "spent")(r) + counter("pumper2", "spent")(r)
		},
		scoreText: "pumper.spent + pumper2.spent (when there is a pumper2)",
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		first := pumper(d, "pumper", f.Name)
		second := pumper(d, "pumper2", f.Name)
		key := "pumper"
		if d.toggle() {
			first += second
			key = "pumper+pumper2"
		}
		return first, []string{fmt.Sprintf("%s.spent: \"<= %d\"", key, int64(bound))}
	}
	o.genes = countGenes(o.build)
	return o
}

// pumper writes one pumper asking flow for codes to consecutive numbers of
// one of pumpRanges.
func pumper(d *decoder, name, flow string) string {
	from := pumpRanges[d.pick(len(pumpRanges))]
	count := d.logInt(1, 100_000)
	channel := []string{"sms", "voice", "whatsapp"}[d.pick(3)]
	ips := d.pool(brutePools)
	rate := d.logInt(1, maxSpendRate)
	start, stop := d.window(0)
	obeys := d.toggle()
	return fmt.Sprintf("  - name: %s\n    flow: %s\n    destinations: {sequential: {from: %q, count: %d}}\n    channel: %s\n    ips: %s\n    rate: %d/h\n%s    obeys_delay: %t\n    solves_captcha: true\n",
		name, flow, from, count, channel, ips, rate, startStop(start, stop), obeys)
}
