package attack

import (
	"bytes"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// decoder reads a genome's numbers in order, one or more per choice. Every
// choice consumes its numbers whatever was chosen before, so a gene always
// means the same dimension; a decoder without a genome reads zeros and
// counts (countGenes).
type decoder struct {
	g genome
	i int
}

func (d *decoder) next() float64 {
	d.i++
	if d.i > len(d.g) {
		return 0
	}
	return d.g[d.i-1]
}

// pick chooses one of n (n >= 1).
func (d *decoder) pick(n int) int { return min(int(d.next()*float64(n)), n-1) }

// toggle chooses true or false.
func (d *decoder) toggle() bool { return d.next() >= 0.5 }

// logInt chooses an integer in [lo, hi] on a log scale.
func (d *decoder) logInt(lo, hi int) int {
	v := math.Round(float64(lo) * math.Pow(float64(hi)/float64(lo), d.next()))
	return min(max(int(v), lo), hi)
}

// subset chooses a non-empty subset of list, in order: the first always,
// each other by a toggle.
func (d *decoder) subset(list []string) []string {
	out := []string{list[0]}
	for _, s := range list[1:] {
		if d.toggle() {
			out = append(out, s)
		}
	}
	return out
}

// share chooses solves_captcha: false below 0.3, true from 0.7, and in
// between the share of CAPTCHAs solved, in steps of 0.05: an attacker who
// pays for some CAPTCHAs and not others.
func (d *decoder) share() string {
	x := d.next()
	switch {
	case x < 0.3:
		return "false"
	case x >= 0.7:
		return "true"
	}
	return strconv.FormatFloat(math.Round((x-0.3)/0.4*20)/20, 'f', -1, 64)
}

// window chooses when the attack runs, in whole minutes from the start of
// the day: a start (earlier more likely) from minStart, and a stop, half
// the time the end of the day and else any minute after the start.
func (d *decoder) window(minStart int) (start, stop int) {
	const day = 24 * 60
	s, e := d.next(), d.next()
	start = minStart + int(s*s*float64(day-60-minStart))
	stop = day
	if e < 0.5 {
		stop = start + max(1, int(math.Ceil(2*e*float64(day-start))))
	}
	return start, min(stop, day)
}

// poolKind renders an address pool from a count n (1 to 5,000, on a log
// scale) and two free numbers in [0, 1).
type poolKind func(n int, a, b float64) string

// pool chooses an address pool from kinds.
func (d *decoder) pool(kinds []poolKind) string {
	k, n, a, b := d.pick(len(kinds)), d.logInt(1, 5000), d.next(), d.next()
	return kinds[k](n, a, b)
}

// ipv6Bits are the prefix lengths an IPv6 pool spreads over.
var ipv6Bits = []int{32, 40, 48, 56, 64}

func choose[T any](list []T, x float64) T { return list[min(int(x*float64(len(list))), len(list)-1)] }

// randomIn and freshIn are pools in a prefix of base (masked to bits).
func randomIn(base netip.Addr, bits int, n int) string {
	p := netip.PrefixFrom(base, bits).Masked()
	return fmt.Sprintf("{random_ipv6_in: %q, count: %d}", p, n)
}

func freshIn(base netip.Addr, bits int) string {
	return fmt.Sprintf("{fresh_ipv6_in: %q}", netip.PrefixFrom(base, bits).Masked())
}

var (
	docV6      = netip.MustParseAddr("2001:db8:4200::")
	slash48    = netip.MustParseAddr("2001:db8:42::")
	attackerV4 = netip.MustParseAddr("203.0.113.9")
	sprayerV4  = netip.MustParseAddr("192.0.2.7")
	ownerV4    = netip.MustParseAddr("198.51.100.23")
)

// embedded returns n spellings of the IPv4 address v4, taking in turn the
// forms mask selects (bit 0: the address itself, 1: IPv4-mapped, 2: 6to4
// in a different /64 each time, 3: Teredo with a different port each
// time).
func embedded(v4 netip.Addr, mask, n int) []string {
	b := v4.As4()
	hi, lo := uint16(b[0])<<8|uint16(b[1]), uint16(b[2])<<8|uint16(b[3])
	var forms []func(i int) string
	if mask&1 != 0 {
		forms = append(forms, func(int) string { return v4.String() })
	}
	if mask&2 != 0 {
		forms = append(forms, func(int) string { return "::ffff:" + v4.String() })
	}
	if mask&4 != 0 {
		forms = append(forms, func(i int) string { return fmt.Sprintf("2002:%x:%x:%x::1", hi, lo, i) })
	}
	if mask&8 != 0 {
		// Teredo (2001::/32): server 65.54.227.120, cone flag, the port
		// and the client's address obfuscated (inverted).
		forms = append(forms, func(i int) string { return fmt.Sprintf("2001:0:4136:e378:8000:%x:%x:%x", 0xffff-i, ^hi, ^lo) })
	}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, forms[i%len(forms)](i/len(forms)))
	}
	return out
}

// Address pools. A brute force or a bomber may come from anywhere;
// sprayers are held to one /48 or to one IPv4 address, which is what
// their objectives measure; an attack on an owner may share her address.
var (
	brutePools = []poolKind{
		func(int, float64, float64) string { return yamlList([]string{attackerV4.String()}) },
		func(n int, _, _ float64) string { return fmt.Sprintf("{random_ipv4: %d}", n) },
		func(n int, a, _ float64) string { return randomIn(docV6, choose(ipv6Bits, a), n) },
		func(_ int, a, _ float64) string { return freshIn(docV6, choose(ipv6Bits, a)) },
		func(n int, _, b float64) string {
			return yamlList(embedded(attackerV4, 1+int(b*15), min(n, 200)))
		},
		func(int, float64, float64) string { return freshIn(netip.MustParseAddr("2002:cb00:7109::"), 48) },
	}
	slash48Pools = []poolKind{
		func(n int, a, _ float64) string {
			bits := choose([]int{48, 52, 56, 60, 64}, a)
			return randomIn(slash48, bits, min(n, 1<<(128-bits-60)))
		},
		func(_ int, a, _ float64) string { return freshIn(slash48, choose([]int{48, 52, 56, 60, 64}, a)) },
	}
	ipv4Pools = []poolKind{
		func(int, float64, float64) string { return yamlList([]string{sprayerV4.String()}) },
		func(n int, _, b float64) string { return yamlList(embedded(sprayerV4, 1+int(b*15), min(n, 200))) },
		func(_ int, a, _ float64) string {
			return freshIn(netip.MustParseAddr("2002:c000:207::"), choose([]int{48, 52, 56, 60, 64}, a))
		},
	}
	ownerPools = append([]poolKind{
		func(int, float64, float64) string { return yamlList([]string{ownerV4.String()}) },
		func(n int, _, b float64) string {
			list := []string{ownerV4.String()}
			for i := range min(n, 253) {
				if i+1 != 23 || b < 0.5 { // b < 0.5: the owner's address twice
					list = append(list, fmt.Sprintf("198.51.100.%d", i+1))
				}
			}
			return yamlList(list)
		},
	}, brutePools...)
	// neighbourPools are the addresses of an attacker who is not behind the
	// owner's own address: her /24's neighbours and the brute-force pools.
	// From her address itself (her household, her office's NAT) an attacker
	// shares her known network, which only a device token tells apart
	// (scenarios/attack-owner-shared-address.yaml).
	neighbourPools = append([]poolKind{
		func(n int, _, _ float64) string {
			var list []string
			for i := range min(n, 253) {
				if i+1 != 23 {
					list = append(list, fmt.Sprintf("198.51.100.%d", i+1))
				}
			}
			return yamlList(list)
		},
	}, brutePools...)
)

// Spellings of one identifier, each valid where it is used. The engine
// promises the account spellings are one account (authguard.
// NormalizeAccount), the phone spellings one number, and the mailbox
// spellings reach one Gmail inbox, which delivers tags and ignores dots.
var (
	accountSpellings = valid([]string{
		"victim@example.com", "VICTIM@EXAMPLE.COM", "Victim@Example.com", "ｖｉｃｔｉｍ@example.com",
		"ｖｉｃｔｉｍ＠ｅｘａｍｐｌｅ．ｃｏｍ", "vic\u200ctim@example.com", "vic\u200dtim@EXAMPLE.com", " victim@example.com ",
	}, func(s string) error { _, err := authguard.NormalizeAccount(s); return err })
	phoneSpellings = valid([]string{
		"+44 7400 123456", "+447400123456", "+44-7400-123456", "+44 (7400) 123456", "+44 7400 123 456",
		"+44.7400.123456", "+44 74 00 12 34 56",
	}, func(s string) error { _, err := authguard.ParseDestination(authguard.ChannelSMS, s, 3); return err })
	mailboxSpellings = valid([]string{
		"victim@gmail.com", "Victim@Gmail.com", "VICTIM@GMAIL.COM", "vic.tim@gmail.com", "victim+1@gmail.com",
		"v.i.c.t.i.m+bomb@googlemail.com", "victim@googlemail.com", "Vic.Tim+x@GoogleMail.com",
	}, func(s string) error { _, err := authguard.ParseDestination(authguard.ChannelEmail, s, 3); return err })
)

// valid keeps the spellings ok accepts (the first must be one).
func valid(list []string, ok func(string) error) []string {
	var out []string
	for _, s := range list {
		if ok(s) == nil {
			out = append(out, s)
		}
	}
	if len(out) == 0 || out[0] != list[0] {
		panic("attack: the first spelling of a catalogue is invalid: " + list[0])
	}
	return out
}

// yamlQuote quotes s as a YAML double-quoted scalar (Go's escapes, \u
// included, are YAML's).
func yamlQuote(s string) string { return strconv.Quote(s) }

func yamlList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = yamlQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// startStop writes an actor's start and stop (minutes of the day) where
// they are not the defaults.
func startStop(start, stop int) string {
	var b strings.Builder
	if start > 0 {
		fmt.Fprintf(&b, "    start: %dm\n", start)
	}
	if stop < 24*60 {
		fmt.Fprintf(&b, "    stop: %dm\n", stop)
	}
	return b.String()
}

// shortDuration writes d without zero units: "8h", "1h30m".
func shortDuration(d time.Duration) string { return config.FormatDuration(d) }

// countGenes is how many numbers build reads.
func countGenes(build func(*decoder, float64) (string, []string)) int {
	d := &decoder{}
	d.next() // the scenario's seed
	build(d, 0)
	return d.i
}

// scenario writes the scenario of strategy g: a day, the scenario's seed
// (for its random addresses and passwords) from the first gene, the
// actors, and the expectation that the score stays within the bound.
func (o *objective) scenario(g genome) []byte {
	d := &decoder{g: g}
	seed := 1 + d.pick(1000)
	actors, expect := o.build(d, o.Bound)
	var b bytes.Buffer
	fmt.Fprintf(&b, "name: %q\nduration: 24h\nseed: %d\n", "tollgate-lab attack: "+o.Name, seed)
	if strings.Contains(actors, secondInstance) {
		b.WriteString("instances: 2\n")
	}
	fmt.Fprintf(&b, "actors:\n%sexpect:\n", actors)
	for _, e := range expect {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return b.Bytes()
}

// header prefixes the best scenario with what found it and what it scores.
// The budget it names is the evaluations made: the same seed with that
// budget makes the same search, also when this one stopped early.
func (o *objective) header(scenario []byte, res Result, seed int64, claimed bool) []byte {
	boundFlag := ""
	if claimed {
		boundFlag = fmt.Sprintf(" -bound %g", o.Bound)
	}
	verdict := "the bound holds against the best strategy found"
	if res.Beaten {
		verdict = "BEATS THE BOUND"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Found by `tollgate-lab attack -objective %s -seed %d -budget %d%s` (with the policy searched).\n",
		o.Name, seed, res.Evaluations, boundFlag)
	fmt.Fprintf(&b, "#\n# Objective %s: %s.\n", o.Name, o.Summary)
	fmt.Fprintf(&b, "# Score: %s = %g %s; bound %g: %s.\n", o.scoreText, res.Best, o.Unit, o.Bound, verdict)
	if o.Unit == "failures/24h" {
		fmt.Fprintf(&b, "# NIST SP 800-63B allows %d.\n", NISTMaxFailures)
	}
	b.WriteString("#\n# Reproduce: tollgate-lab simulate [-config FILE] THIS_FILE (with the policy searched);\n")
	if o.note != "" {
		fmt.Fprintf(&b, "# %s\n", o.note)
	} else {
		b.WriteString("# the expectation below fails exactly when the bound is beaten.\n")
	}
	b.Write(scenario)
	return b.Bytes()
}
