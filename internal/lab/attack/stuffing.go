package attack

import (
	"fmt"
	"strings"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
)

// Credential stuffing: an attacker holds leaked account–password pairs,
// some right. He cannot choose what the caller reports: a right password
// the caller finds in its breached-password corpus is reported breached
// whatever he does, and one the corpus misses is not. So the strategies
// split his pairs into three actors that share one address pool:
//
//   - stuffer: right pairs whose password the corpus holds (breached:
//     true), the ones scored;
//   - stuffer_wrong: wrong pairs, reported breached or not (a corpus holds
//     most leaked passwords, not all), before, with or after the right
//     ones: they escalate the addresses (ip_spray, credential_stuffing)
//     and make CAPTCHAs the attacker solves or not;
//   - stuffer_missed: right pairs the corpus misses (breached: false), not
//     scored: only the account's failures (under_attack_failures,
//     new_device_failures) or an escalated address step them up, and a
//     stuffer trying one pair per account from addresses no rule has
//     escalated gets a device token for each
//     (scenarios/credential-stuffing-corpus-miss.yaml).
//
// None of them holds a device token of a victim's account: a stolen one is
// a different attack (device_token_from in the failures objectives).

// maxStuffedAccounts is the most leaked pairs of one kind a strategy
// tries: each is a check and a report, and the bound is about whether any
// right one gets in, not how many.
const maxStuffedAccounts = 2000

func stuffingObjective(f *authguard.Flow) objective {
	o := objective{
		Objective: Objective{
			Name: "stolen_device_tokens",
			Summary: fmt.Sprintf("device tokens a credential stuffer gets in 24 h from leaked pairs whose right password the caller reports breached, "+
				"without the second factor: spread over addresses, pacing, right pairs before, among or after wrong ones reported breached or not, "+
				"solving a share of the CAPTCHAs or none, keeping tokens, beside right pairs the corpus misses (not scored: no counter of a "+
				"once-tried account stops them; only an address past ip_spray or credential_stuffing, or an account's own failures, step them up) "+
				"(bound: none: %s's step_up answers every breached right password without a device token of its account)", f.Name),
			Bound: 0, Unit: "device tokens",
		},
		score:     counter("stuffer", "device_tokens"),
		scoreText: "stuffer.device_tokens (stuffer_missed's, the corpus misses, are not scored)",
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		ips := d.pool(brutePools)
		obeys, solves, keep := d.toggle(), d.share(), d.toggle()
		var b strings.Builder
		stuffer := func(name, outcome string, breached bool) {
			accounts, fresh := d.logInt(1, maxStuffedAccounts), d.toggle()
			rate := d.logInt(1, maxRate)
			start, stop := d.window(0)
			acc := fmt.Sprintf("{generate: %d}", accounts)
			if fresh {
				acc = "{fresh: true}"
			}
			fmt.Fprintf(&b, "  - name: %s\n    flow: %s\n    accounts: %s\n    ips: %s\n    rate: %d/h\n%s    outcome: %s\n    breached: %t\n    obeys_delay: %t\n    solves_captcha: %s\n",
				name, f.Name, acc, ips, rate, startStop(start, stop), outcome, breached, obeys, solves)
			if keep && outcome == "success" && !fresh { // a fresh account logs in once: no token to send
				b.WriteString("    device_token: true\n")
			}
		}
		stuffer("stuffer", "success", true)
		wrong, wrongBreached := d.toggle(), d.toggle()
		missed := d.toggle()
		text := b.String()
		b.Reset()
		stuffer("stuffer_wrong", "failure", wrongBreached)
		if wrong {
			text += b.String()
		}
		b.Reset()
		stuffer("stuffer_missed", "success", false)
		if missed {
			text += b.String()
		}
		return text, []string{fmt.Sprintf("stuffer.device_tokens: \"<= %d\"", int64(bound))}
	}
	o.genes = countGenes(o.build)
	return o
}

// ownerStepUpObjective scores the step-ups an attacker causes the owner of
// an account at her known device: she signs in every ownerEvery from her
// address, with her reused (breached) password, keeping her device token;
// her first sign-in, without one, is stepped up whatever anyone does and
// is not scored.
func ownerStepUpObjective(f *authguard.Flow) objective {
	o := objective{
		Objective: Objective{
			Name: "owner_step_ups",
			Summary: fmt.Sprintf("step-ups an attacker from any address but hers causes the account's owner in 24 h, who signs in to %s every %v "+
				"with her breached (reused) password from the device that holds its token, passing the second factor: stuffing her right or wrong "+
				"passwords and other accounts' pairs, reported breached or not, from her /24's neighbours or anywhere, escalating addresses "+
				"(bound: none beyond her first, cookie-less sign-in: a device token of the account exempts from every reason but an escalated "+
				"address, and only someone behind her own address escalates hers)", f.Name, shortDuration(ownerEvery)),
			Bound: 0, Unit: "step-ups",
		},
		score: func(r *simulate.Result) float64 {
			return max(counter("owner", "step_ups")(r)-1, 0)
		},
		scoreText: "owner.step_ups − 1 (her first sign-in, without a device token, is stepped up for the breached password)",
	}
	o.build = func(d *decoder, bound float64) (string, []string) {
		spellings := d.subset(accountSpellings)
		ips := d.pool(neighbourPools)
		rate := d.logInt(1, maxRate)
		start, stop := d.window(1)
		obeys, solves := d.toggle(), d.share()
		outcome, breached := []string{"failure", "success"}[d.pick(2)], d.toggle()
		others, othersBreached, otherRate := d.toggle(), d.toggle(), d.logInt(1, maxRate)
		var b strings.Builder
		fmt.Fprintf(&b, "  - name: owner\n    flow: %s\n    accounts: [%s]\n    ips: [198.51.100.23]\n    every: %v\n    outcome: success\n    breached: true\n    device_token: true\n    passes_step_up: true\n",
			f.Name, yamlQuote(accountSpellings[0]), shortDuration(ownerEvery))
		fmt.Fprintf(&b, "  - name: attacker\n    flow: %s\n    accounts: %s\n    ips: %s\n    rate: %d/h\n%s    outcome: %s\n    breached: %t\n    obeys_delay: %t\n    solves_captcha: %s\n",
			f.Name, yamlList(spellings), ips, rate, startStop(start, stop), outcome, breached, obeys, solves)
		if others {
			// Other accounts' pairs from the same addresses: they escalate
			// the addresses, never hers.
			fmt.Fprintf(&b, "  - name: stuffer\n    flow: %s\n    accounts: {fresh: true}\n    ips: %s\n    rate: %d/h\n%s    outcome: failure\n    breached: %t\n    obeys_delay: %t\n    solves_captcha: %s\n",
				f.Name, ips, otherRate, startStop(start, stop), othersBreached, obeys, solves)
		}
		return b.String(), []string{fmt.Sprintf("owner.step_ups: \"<= %d\"", int64(bound)+1)}
	}
	o.genes = countGenes(o.build)
	return o
}
