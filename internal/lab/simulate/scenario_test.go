package simulate

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

const goodScenario = `# every field, once
name: a bit of everything
duration: 2h
seed: 7
actors:
  - name: attacker
    flow: login
    accounts: [victim@example.com, " Other@Example.com"]
    ips: {random_ipv4: 50}
    rate: 30/m
    burst: 2
    start: 10m
    stop: 1h
    outcome: failure
    password: "hunter2"
    obeys_delay: false
    solves_captcha: false
  - name: users
    accounts: {generate: 20}
    ips: [192.0.2.1, "2001:db8::1"]
    every: 30m
    typos: 1
    typo_rate: 0.25
    device_token: true
  - name: v6
    accounts: {generate: 3}
    ips: {random_ipv6_in: "2001:db8:1:2::/64", count: 5}
    every: 1h
    outcome: success
expect:
  attacker.proceeded: "<= 100"
  users.delayed: "== 0"
  v6.accounts_checked: ">= 3"
`

func TestParseScenario_Good(t *testing.T) {
	sc, err := ParseScenario("good.yaml", []byte(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Name, "a bit of everything"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := sc.Duration, 2*time.Hour; got != want {
		t.Errorf("Duration = %v, want %v", got, want)
	}
	if got, want := sc.Seed, uint64(7); got != want {
		t.Errorf("Seed = %d, want %d", got, want)
	}
	if got, want := len(sc.Actors), 3; got != want {
		t.Fatalf("%d actors, want %d", got, want)
	}
	a, u, v := sc.Actors[0], sc.Actors[1], sc.Actors[2]
	checks := []struct {
		name      string
		got, want any
	}{
		{"attacker.Flow", a.Flow, "login"},
		{"attacker.Accounts", strings.Join(a.Accounts.List, "|"), "victim@example.com| Other@Example.com"},
		{"attacker.IPs.RandomIPv4", a.IPs.RandomIPv4, 50},
		{"attacker.Rate", a.Rate, config.Rate{N: 30, Per: time.Minute}},
		{"attacker.Every", a.Every, time.Duration(0)},
		{"attacker.Burst", a.Burst, 2},
		{"attacker.Start", a.Start, 10 * time.Minute},
		{"attacker.Stop", a.Stop, time.Hour},
		{"attacker.Outcome", a.Outcome, authguard.Failure},
		{"attacker.Password", a.Password, "hunter2"},
		{"attacker.ObeysDelay", a.ObeysDelay, false},
		{"attacker.SolvesCaptcha (false)", a.SolvesCaptcha, 0.0},
		{"attacker.DeviceToken", a.DeviceToken, false},
		{"users.Flow (default)", u.Flow, "login"},
		{"users.Accounts.Generate", u.Accounts.Generate, 20},
		{"users.IPs", strings.Join(u.IPs.List, "|"), "192.0.2.1|2001:db8::1"},
		{"users.Every", u.Every, 30 * time.Minute},
		{"users.Burst (default)", u.Burst, 1},
		{"users.Start (default)", u.Start, time.Duration(0)},
		{"users.Stop (default)", u.Stop, 2 * time.Hour},
		{"users.Outcome (implied by typos)", u.Outcome, authguard.Success},
		{"users.Typos", u.Typos, 1},
		{"users.TypoRate", u.TypoRate, 0.25},
		{"users.ObeysDelay (default)", u.ObeysDelay, true},
		{"users.SolvesCaptcha (default)", u.SolvesCaptcha, 1.0},
		{"users.DeviceToken", u.DeviceToken, true},
		{"v6.IPs.RandomIPv6In", v.IPs.RandomIPv6In, netip.MustParsePrefix("2001:db8:1:2::/64")},
		{"v6.IPs.Count", v.IPs.Count, 5},
		{"v6.Outcome", v.Outcome, authguard.Success},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var exprs []string
	for _, e := range sc.Expect {
		exprs = append(exprs, e.String())
	}
	if got, want := strings.Join(exprs, "; "), "attacker.proceeded <= 100; users.delayed == 0; v6.accounts_checked >= 3"; got != want {
		t.Errorf("expectations = %q, want %q (file order)", got, want)
	}
}

// base is a valid scenario that the error cases below change one line of.
const base = `name: test
duration: 1h
actors:
  - name: attacker
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
expect:
  attacker.proceeded: "<= 100"
`

// pair is a valid scenario of a thief with the owner's device token; the
// error cases below change it.
const pair = `name: test
duration: 1h
actors:
  - name: thief
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    device_token_from: owner
  - name: owner
    accounts: [victim@example.com]
    ips: [198.51.100.1]
    every: 1h
    outcome: success
    device_token: true
`

// withFlows adds a flow of its own, which counts no account, and names it.
const withFlows = `name: test
duration: 1m
flows:
  api:
    rules:
      - name: ip_requests
        subject: ip
        algorithm: token_bucket
        limit: 5
        rate: 1/s
actors:
  - name: client
    flow: api
    accounts: [client@example.com]
    ips: [192.0.2.1]
    rate: 10/s
    obeys_delay: false
expect:
  client.proceeded: "<= 100"
`

// abilities uses every field added for the device token and flood attacks.
const abilities = `name: abilities
duration: 48h
store: {max_entries: 5000}
actors:
  - name: thief
    accounts: [VICTIM@example.com]
    ips: ["2002:c000:204::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "::ffff:192.0.2.1"]
    rate: 1/h
    device_token_from: owner
  - name: minter
    flow: otp_verify
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/h
    mints_device_token_in: login
  - name: flood
    accounts: {fresh: true}
    ips: {fresh_ipv6_in: "2001:db8:ffff:ffff::/32"}
    rate: 10/m
    burst: 5
  - name: owner
    accounts: [victim@example.com]
    ips: {fresh_ipv6_in: "2001:db8:1:2::/64"}
    every: 8h
    outcome: success
    device_token: true
expect:
  thief.proceeded_max_24h: "<= 100"
  thief.failures_max_24h: "<= 100"
  minter.mint_logins: ">= 48"
  minter.mint_refused: "== 0"
  flood.accounts_checked: ">= 1"
`

func TestParseScenario_Abilities(t *testing.T) {
	sc, err := ParseScenario("abilities.yaml", []byte(abilities))
	if err != nil {
		t.Fatal(err)
	}
	thief, minter, flood, owner := sc.Actors[0], sc.Actors[1], sc.Actors[2], sc.Actors[3]
	checks := []struct {
		name      string
		got, want any
	}{
		{"Store.MaxEntries", sc.Store.MaxEntries, 5000},
		{"thief.DeviceTokenFrom", thief.DeviceTokenFrom, "owner"},
		{"thief.DeviceToken", thief.DeviceToken, false},
		{"thief.MintsDeviceTokenIn", thief.MintsDeviceTokenIn, ""},
		{"thief.IPs (6to4, Teredo, mapped)", strings.Join(thief.IPs.List, "|"), "2002:c000:204::1|2001:0:4136:e378:8000:63bf:3fff:fdd2|::ffff:192.0.2.1"},
		{"minter.Flow", minter.Flow, "otp_verify"},
		{"minter.MintsDeviceTokenIn", minter.MintsDeviceTokenIn, "login"},
		{"minter.DeviceTokenFrom", minter.DeviceTokenFrom, ""},
		{"flood.Accounts.Fresh", flood.Accounts.Fresh, true},
		{"flood.Accounts.Len", flood.Accounts.Len(), 0},
		{"flood.IPs.FreshIPv6In (masked)", flood.IPs.FreshIPv6In, netip.MustParsePrefix("2001:db8::/32")},
		{"flood.IPs.Len", flood.IPs.Len(), 0},
		{"owner.IPs.FreshIPv6In", owner.IPs.FreshIPv6In, netip.MustParsePrefix("2001:db8:1:2::/64")},
		{"owner.DeviceToken", owner.DeviceToken, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var exprs []string
	for _, e := range sc.Expect {
		exprs = append(exprs, e.String())
	}
	want := "thief.proceeded_max_24h <= 100; thief.failures_max_24h <= 100; minter.mint_logins >= 48; minter.mint_refused == 0; flood.accounts_checked >= 1"
	if got := strings.Join(exprs, "; "); got != want {
		t.Errorf("expectations = %q, want %q", got, want)
	}
	if _, err := ParseScenario("pair.yaml", []byte(pair)); err != nil {
		t.Errorf("pair: %v", err)
	}
	// The default store is the memory store's default.
	if sc, err := ParseScenario("base.yaml", []byte(base)); err != nil || sc.Store.MaxEntries != 0 {
		t.Errorf("base: Store.MaxEntries = %d, %v; want 0 (the memory store's default)", sc.Store.MaxEntries, err)
	}
}

func TestParseScenario_Errors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the whole error starts with "s.yaml: " + want
	}{
		{"yaml syntax", "name: x\nduration: 1h\n  actors: y\n", "line 3: mapping values are not allowed"},
		{"tab indent", "name: x\nactors:\n\t- a\n", "line 3: found character that cannot start any token"},
		{"empty file", "", "line 1: the scenario is empty"},
		{"only a comment", "# nothing\n", "line 1: the scenario is empty"},
		{"two documents", base + "---\nname: again\n", "line 11: a scenario file holds one YAML document"},
		{"not a mapping", "- a\n- b\n", "line 1: want a mapping"},
		{"unknown top-level key", strings.Replace(base, "duration: 1h", "duration: 1h\nlength: 2h", 1), `line 3: unknown field "length"`},
		{"missing name", strings.Replace(base, "name: test\n", "", 1), "line 1: name is required"},
		{"missing duration", strings.Replace(base, "duration: 1h\n", "", 1), "line 1: duration is required"},
		{"missing actors", "name: x\nduration: 1h\n", "line 1: actors is required"},
		{"empty actors", "name: x\nduration: 1h\nactors: []\n", "line 3: actors: want a list of at least one actor"},
		{"bad duration", strings.Replace(base, "duration: 1h", "duration: 1 hour", 1), `line 2: duration: invalid duration "1 hour"`},
		{"zero duration", strings.Replace(base, "duration: 1h", "duration: 0s", 1), "line 2: duration: must be more than 0s"},
		{"long duration", strings.Replace(base, "duration: 1h", "duration: 60d", 1), "line 2: duration: must be more than 0s and at most 31d"},
		{"negative seed", strings.Replace(base, "duration: 1h", "duration: 1h\nseed: -1", 1), "line 3: seed: must be between 0 and"},
		{"text seed", strings.Replace(base, "duration: 1h", "duration: 1h\nseed: abc", 1), `line 3: seed: want a whole number, not "abc"`},
		{"unknown actor key", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    speed: fast", 1), `line 8: actors[0]: unknown field "speed"`},
		{"duplicate actor key", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    rate: 2/s", 1), "line 8: actors[0].rate: set twice (first on line 7)"},
		{"bad rate", strings.Replace(base, "rate: 1/s", "rate: 1/x", 1), `line 7: actors[0].rate: invalid rate "1/x" (use N/s, N/m or N/h)`},
		{"rate off", strings.Replace(base, "rate: 1/s", "rate: off", 1), `line 7: actors[0].rate: invalid rate "off"`},
		{"rate and every", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    every: 1h", 1), "line 8: actors[0].every: set rate or every, not both"},
		{"neither rate nor every", strings.Replace(base, "    rate: 1/s\n", "", 1), "line 4: actors[0]: rate or every is required"},
		{"zero every", strings.Replace(base, "rate: 1/s", "every: 0s", 1), "line 7: actors[0].every: must be more than 0s"},
		{"missing accounts", strings.Replace(base, "    accounts: [victim@example.com]\n", "", 1), "line 4: actors[0]: accounts is required"},
		{"bad actor name", strings.Replace(base, "name: attacker", "name: the.attacker", 1), `line 4: actors[0].name: invalid name "the.attacker"`},
		{"duplicate actor name", strings.Replace(base, "expect:", "  - name: attacker\n    accounts: [a@b.c]\n    ips: [192.0.2.2]\n    every: 1h\nexpect:", 1), `line 8: actors[1].name: another actor is named "attacker"`},
		{"empty account", strings.Replace(base, "[victim@example.com]", `[victim@example.com, " "]`, 1), `line 5: actors[0].accounts[1]: invalid account " ": must not be empty`},
		{"no accounts", strings.Replace(base, "[victim@example.com]", `[]`, 1), "line 5: actors[0].accounts: want at least one account"},
		{"generate zero", strings.Replace(base, "[victim@example.com]", `{generate: 0}`, 1), "line 5: actors[0].accounts.generate: must be between 1 and 100000, not 0"},
		{"generate typo", strings.Replace(base, "[victim@example.com]", `{gen: 5}`, 1), `line 5: actors[0].accounts: unknown field "gen"`},
		{"accounts scalar", strings.Replace(base, "[victim@example.com]", `victim@example.com`, 1), "line 5: actors[0].accounts: want a list of accounts, {generate: N} or {fresh: true}"},
		{"bad IP", strings.Replace(base, "[192.0.2.1]", "[192.0.2.1, 192.0.2.300]", 1), `line 6: actors[0].ips[1]: invalid IP address "192.0.2.300"`},
		{"CIDR as IP", strings.Replace(base, "[192.0.2.1]", "[192.0.2.0/24]", 1), `line 6: actors[0].ips[0]: invalid IP address "192.0.2.0/24"`},
		{"IPv4 prefix for IPv6", strings.Replace(base, "[192.0.2.1]", `{random_ipv6_in: "192.0.2.0/24", count: 5}`, 1), `line 6: actors[0].ips.random_ipv6_in: invalid IPv6 prefix "192.0.2.0/24"`},
		{"IPv6 without count", strings.Replace(base, "[192.0.2.1]", `{random_ipv6_in: "2001:db8::/64"}`, 1), "line 6: actors[0].ips: random_ipv6_in needs a count"},
		{"count over prefix", strings.Replace(base, "[192.0.2.1]", `{random_ipv6_in: "2001:db8::/120", count: 300}`, 1), "line 6: actors[0].ips.count: 2001:db8::/120 holds only 256 addresses"},
		{"both random kinds", strings.Replace(base, "[192.0.2.1]", `{random_ipv4: 5, random_ipv6_in: "2001:db8::/64"}`, 1), "line 6: actors[0].ips.random_ipv6_in: set random_ipv4 or random_ipv6_in, not both"},
		{"ips scalar", strings.Replace(base, "[192.0.2.1]", `192.0.2.1`, 1), "line 6: actors[0].ips: want a list of addresses"},
		{"burst zero", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    burst: 0", 1), "line 8: actors[0].burst: must be between 1 and 1000, not 0"},
		{"typo_rate over 1", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    typo_rate: 1.5", 1), `line 8: actors[0].typo_rate: want a probability between 0 and 1, not "1.5"`},
		{"typos with failure", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    outcome: failure\n    typos: 1", 1), "line 8: actors[0].outcome: failure contradicts typos and typo_rate"},
		{"bad outcome", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    outcome: maybe", 1), `line 8: actors[0].outcome: invalid outcome "maybe" (use failure or success)`},
		{"yes is not a bool", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    obeys_delay: yes", 1), `line 8: actors[0].obeys_delay: want true or false, not "yes"`},
		{"empty password", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    password: \"\"", 1), "line 8: actors[0].password: must not be empty"},
		{"start at end", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    start: 1h", 1), "line 8: actors[0].start: 1h0m0s is not before the scenario's end (1h0m0s)"},
		{"stop after end", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    stop: 2h", 1), "line 8: actors[0].stop: 2h0m0s is after the scenario's end (1h0m0s)"},
		{"stop before start", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    start: 30m\n    stop: 10m", 1), "line 9: actors[0].stop: 10m0s is not after start (30m0s)"},
		{"too many logins", strings.Replace(base, "rate: 1/s", "rate: 10000/s", 1), "line 7: actors[0].rate: starts about 36000000 logins"},
		{"expect not a mapping", strings.Replace(base, `  attacker.proceeded: "<= 100"`, `  - attacker.proceeded`, 1), "line 9: expect: want a mapping"},
		{"expect unknown actor", strings.Replace(base, "attacker.proceeded:", "owner.proceeded:", 1), `line 9: expect.owner.proceeded: unknown actor "owner"`},
		{"expect unknown actor in a sum", strings.Replace(base, "attacker.proceeded:", "attacker+owner.proceeded:", 1), `line 9: expect.attacker+owner.proceeded: unknown actor "owner"`},
		{"expect an empty actor in a sum", strings.Replace(base, "attacker.proceeded:", "attacker+.proceeded:", 1), `line 9: expect.attacker+.proceeded: invalid key`},
		{"expect unknown field", strings.Replace(base, "attacker.proceeded:", "attacker.guesses:", 1), `line 9: expect.attacker.guesses: unknown field "guesses"`},
		{"expect bad op", strings.Replace(base, `"<= 100"`, `"about 100"`, 1), `line 9: expect.attacker.proceeded: invalid expectation "about 100"`},
		{"expect bare number", strings.Replace(base, `"<= 100"`, `100`, 1), `line 9: expect.attacker.proceeded: invalid expectation "100"`},
		{"expect duplicate", base + "  attacker.proceeded: \">= 1\"\n", "line 10: expect.attacker.proceeded: set twice (first on line 9)"},
		{"anchors", strings.Replace(base, "[victim@example.com]", "&acc [victim@example.com]", 1), "line 5: anchors and aliases are not supported"},

		// store
		{"store scalar", strings.Replace(base, "duration: 1h", "duration: 1h\nstore: 1000", 1), "line 3: store: want {max_entries: N}"},
		{"store empty", strings.Replace(base, "duration: 1h", "duration: 1h\nstore: {}", 1), "line 3: store: max_entries is required"},
		{"store zero", strings.Replace(base, "duration: 1h", "duration: 1h\nstore: {max_entries: 0}", 1), "line 3: store.max_entries: must be between 1 and 10000000, not 0"},
		{"store huge", strings.Replace(base, "duration: 1h", "duration: 1h\nstore: {max_entries: 10000001}", 1), "line 3: store.max_entries: must be between 1 and 10000000"},
		{"store text", strings.Replace(base, "duration: 1h", "duration: 1h\nstore:\n  max_entries: lots", 1), `line 4: store.max_entries: want a whole number, not "lots"`},
		{"store unknown key", strings.Replace(base, "duration: 1h", "duration: 1h\nstore: {size: 5}", 1), `line 3: store: unknown field "size" (known: max_entries)`},
		{"store twice", strings.Replace(base, "duration: 1h", "duration: 1h\nstore: {max_entries: 5}\nstore: {max_entries: 6}", 1), "line 4: store: set twice (first on line 3)"},

		// accounts: {fresh: true}
		{"fresh false", strings.Replace(base, "[victim@example.com]", `{fresh: false}`, 1), "line 5: actors[0].accounts.fresh: only true is meaningful"},
		{"fresh yes", strings.Replace(base, "[victim@example.com]", `{fresh: yes}`, 1), `line 5: actors[0].accounts.fresh: want true or false, not "yes"`},
		{"fresh and generate", strings.Replace(base, "[victim@example.com]", "\n      generate: 5\n      fresh: true", 1), "line 7: actors[0].accounts.fresh: set generate or fresh, not both"},
		{"accounts empty mapping", strings.Replace(base, "[victim@example.com]", `{}`, 1), "line 5: actors[0].accounts: generate or fresh is required"},
		{"fresh with every", strings.Replace(strings.Replace(base, "[victim@example.com]", `{fresh: true}`, 1), "rate: 1/s", "every: 1h", 1), "line 5: actors[0].accounts: {fresh: true} needs rate"},
		{"fresh with device_token", strings.Replace(strings.Replace(base, "[victim@example.com]", `{fresh: true}`, 1), "rate: 1/s", "rate: 1/s\n    device_token: true", 1),
			"line 8: actors[0].device_token: no fresh account logs in twice"},
		{"fresh with device_token_from", strings.Replace(pair, "accounts: [victim@example.com]", `accounts: {fresh: true}`, 1),
			"line 8: actors[0].device_token_from: no other actor holds a device token for a fresh account"},

		// ips: {fresh_ipv6_in: PREFIX}
		{"fresh_ipv6_in IPv4", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6_in: "192.0.2.0/24"}`, 1), `line 6: actors[0].ips.fresh_ipv6_in: invalid IPv6 prefix "192.0.2.0/24"`},
		{"fresh_ipv6_in address", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6_in: "2001:db8::1"}`, 1), `line 6: actors[0].ips.fresh_ipv6_in: invalid IPv6 prefix "2001:db8::1"`},
		{"fresh_ipv6_in mapped", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6_in: "::ffff:192.0.2.0/120"}`, 1), `line 6: actors[0].ips.fresh_ipv6_in: invalid IPv6 prefix`},
		{"fresh_ipv6_in /128", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6_in: "2001:db8::1/128"}`, 1), "line 6: actors[0].ips.fresh_ipv6_in: 2001:db8::1/128 holds one address"},
		{"fresh_ipv6_in list", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6_in: ["2001:db8::/32"]}`, 1), "line 6: actors[0].ips.fresh_ipv6_in: want an IPv6 prefix"},
		{"fresh_ipv6_in with count", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6_in: "2001:db8::/32", count: 5}`, 1), "line 6: actors[0].ips.count: count goes with random_ipv6_in; fresh_ipv6_in has no end"},
		{"fresh_ipv6_in with random_ipv4", strings.Replace(base, "[192.0.2.1]", "\n      random_ipv4: 5\n      fresh_ipv6_in: 2001:db8::/32", 1), "line 8: actors[0].ips.fresh_ipv6_in: set one of random_ipv4, random_ipv6_in and fresh_ipv6_in"},
		{"fresh_ipv6_in with random_ipv6_in", strings.Replace(base, "[192.0.2.1]", `{random_ipv6_in: "2001:db8::/64", count: 2, fresh_ipv6_in: "2001:db8::/32"}`, 1), "line 6: actors[0].ips.fresh_ipv6_in: set one of"},
		{"fresh_ipv6_in typo", strings.Replace(base, "[192.0.2.1]", `{fresh_ipv6: "2001:db8::/32"}`, 1), `line 6: actors[0].ips: unknown field "fresh_ipv6"`},

		// device_token_from
		{"device_token_from unknown actor", strings.Replace(pair, "device_token_from: owner", "device_token_from: nobody", 1), `line 8: actors[0].device_token_from: unknown actor "nobody"`},
		{"device_token_from itself", strings.Replace(pair, "device_token_from: owner", "device_token_from: thief", 1), "line 8: actors[0].device_token_from: an actor cannot take device tokens from itself"},
		{"device_token_from a tokenless actor", strings.Replace(pair, "device_token: true", "device_token: false", 1), `line 8: actors[0].device_token_from: actor "owner" holds no device tokens (it needs device_token: true)`},
		{"device_token_from a thief", strings.Replace(pair, "    device_token: true\n", "    device_token_from: thief\n", 1), `line 8: actors[0].device_token_from: actor "owner" holds no device tokens`},
		{"device_token_from bad name", strings.Replace(pair, "device_token_from: owner", "device_token_from: the.owner", 1), `line 8: actors[0].device_token_from: invalid actor name "the.owner"`},
		{"device_token_from list", strings.Replace(pair, "device_token_from: owner", "device_token_from: [owner]", 1), "line 8: actors[0].device_token_from: want the name of another actor"},
		{"device_token_from null", strings.Replace(pair, "device_token_from: owner", "device_token_from:", 1), "line 8: actors[0].device_token_from: want the name of another actor"},
		{"device_token_from and device_token", strings.Replace(pair, "device_token_from: owner", "device_token_from: owner\n    device_token: true", 1),
			"line 9: actors[0].device_token: set only one of device_token: true, device_token_from, mints_device_token_in and own_success.device_token: true (device_token_from is set)"},
		{"device_token_from twice", strings.Replace(pair, "device_token_from: owner", "device_token_from: owner\n    device_token_from: owner", 1), "line 9: actors[0].device_token_from: set twice (first on line 8)"},

		// mints_device_token_in
		{"mints_device_token_in empty", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    mints_device_token_in: \"\"", 1), "line 8: actors[0].mints_device_token_in: must not be empty"},
		{"mints_device_token_in list", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    mints_device_token_in: [login]", 1), "line 8: actors[0].mints_device_token_in: want a string"},
		{"mints_device_token_in and device_token", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    device_token: true\n    mints_device_token_in: login", 1),
			"line 9: actors[0].mints_device_token_in: set only one of device_token: true, device_token_from, mints_device_token_in and own_success.device_token: true (device_token is set)"},
		{"mints_device_token_in and device_token_from", strings.Replace(pair, "device_token_from: owner", "mints_device_token_in: login\n    device_token_from: owner", 1),
			"line 9: actors[0].device_token_from: set only one of device_token: true, device_token_from, mints_device_token_in and own_success.device_token: true (mints_device_token_in is set)"},

		// flows
		{"flows scalar", strings.Replace(base, "duration: 1h", "duration: 1h\nflows: api", 1), "line 3: flows: want a mapping of flow names to flows, as in a config file"},
		{"flows empty", strings.Replace(base, "duration: 1h", "duration: 1h\nflows: {}", 1), "line 3: flows: want a mapping of flow names to flows"},
		{"flows changes login", strings.Replace(withFlows, "  api:", "  login:", 1), "line 4: flows.login: the policy already has this flow; a scenario adds flows, the -config file changes them"},
		{"flows twice", strings.Replace(withFlows, "duration: 1m", "duration: 1m\nflows: {other: {kind: attempts}}", 1), "line 4: flows: set twice (first on line 3)"},
		{"flow not a mapping", strings.Replace(withFlows, "  api:\n    rules:", "  api: 5\n  other:\n    rules:", 1), "line 4: flows.api must be a mapping"},
		{"flow unknown key", strings.Replace(withFlows, "    rules:", "    rulez: []\n    rules:", 1), `line 5: flows.api: unknown field "rulez"`},
		{"flow bad template", strings.Replace(withFlows, "    rules:", "    template: signup\n    rules:", 1), `line 5: flows.api: template must be one of login, magic_link, otp_send, otp_verify, passkey, recovery_code, step_up, totp or none, not "signup"`},
		{"flow bad name", strings.Replace(withFlows, "  api:", "  API:", 1), "line 4: flows.API: a flow name is 1 to 32 lower-case letters"},
		{"rule without a name", strings.Replace(withFlows, "name: ip_requests", "reason: ip_requests", 1), "line 6: flows.api.rules: every rule needs a name"},
		{"rule bad algorithm", strings.Replace(withFlows, "algorithm: token_bucket", "algorithm: fast", 1), "line 6: flows.api.rules[ip_requests]: algorithm must be one of"},
		{"rule bad duration", strings.Replace(withFlows, "rate: 1/s", "window: 1 minute", 1), `line 10: flows.api.rules[ip_requests]: invalid duration "1 minute"`},
		{"rule text limit", strings.Replace(withFlows, "limit: 5", "limit: many", 1), "line 9: flows.api.rules[ip_requests]: cannot unmarshal !!str `many` into int"},
		{"rule zero limit", strings.Replace(withFlows, "limit: 5", "limit: 0", 1), "line 6: flows.api.rules[ip_requests]: token_bucket takes limit and rate"},
		{"flows anchors", strings.Replace(withFlows, "  api:", "  api: &api", 1), "line 4: anchors and aliases are not supported"},

		// expectations
		{"expect max over a window", strings.Replace(base, "attacker.proceeded:", "attacker.proceeded_max_1h:", 1), `line 9: expect.attacker.proceeded_max_1h: unknown field "proceeded_max_1h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario("s.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParseScenario succeeded, want an error starting %q", "s.yaml: "+tt.want)
			}
			if got := err.Error(); !strings.HasPrefix(got, "s.yaml: "+tt.want) {
				t.Errorf("error = %q\nwant it to start %q", got, "s.yaml: "+tt.want)
			}
		})
	}
}

func TestParseScenario_BaseIsValid(t *testing.T) {
	for name, s := range map[string]string{"base": base, "withFlows": withFlows} {
		if _, err := ParseScenario("s.yaml", []byte(s)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A scenario's flows are added to the policy Run is given, built-in or
// not; actors name them with flow. One that policy already has is an error
// at the scenario's line.
func TestRun_ScenarioFlowsAddToThePolicy(t *testing.T) {
	sc, err := ParseScenario("s.yaml", []byte(withFlows))
	if err != nil {
		t.Fatal(err)
	}
	// Built-in: 5 at once, then one a second; nothing counts the account.
	r, err := Run(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Actors[0].Proceeded, 5+59; got != want {
		t.Errorf("built-in policy: proceeded = %d, want %d", got, want)
	}

	// A -config policy with a flow of its own: both are there.
	configured, err := config.LoadPolicy([]byte("flows:\n  signup: {template: login}\n"))
	if err != nil {
		t.Fatal(err)
	}
	two := strings.Replace(withFlows, "expect:", "  - name: user\n    flow: signup\n    accounts: [u@example.com]\n    ips: [192.0.2.2]\n    every: 1m\nexpect:", 1)
	if sc, err = ParseScenario("s.yaml", []byte(two)); err != nil {
		t.Fatal(err)
	}
	if r, err = Run(sc, configured); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Actors[1].Proceeded, 1; got != want {
		t.Errorf("-config policy: user.proceeded = %d, want %d", got, want)
	}

	// A -config policy that has the flow already.
	clash, err := config.LoadPolicy([]byte("flows:\n  api: {template: login}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(sc, clash)
	if want := "s.yaml: line 4: flows.api: the policy already has this flow"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run error = %v, want one starting %q", err, want)
	}
}

func TestRun_UnknownFlowNamesTheLine(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"flow", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    flow: signup", 1),
			`s.yaml: line 8: actors[0].flow: the policy has no flow "signup" (it has login, magic_link, otp_send, otp_verify, passkey, recovery_code, step_up, totp)`},
		{"mints_device_token_in", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    mints_device_token_in: signup", 1),
			`s.yaml: line 8: actors[0].mints_device_token_in: the policy has no flow "signup" (it has login, magic_link, otp_send, otp_verify, passkey, recovery_code, step_up, totp)`},
		{"mints_device_token_in of a later actor", strings.Replace(pair, "    device_token_from: owner\n", "", 1) +
			"  - name: minter\n    accounts: [victim@example.com]\n    ips: [192.0.2.9]\n    rate: 1/m\n    mints_device_token_in: Login\n",
			`s.yaml: line 18: actors[2].mints_device_token_in: the policy has no flow "Login"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ParseScenario("s.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(sc, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Run error = %v, want one starting %q", err, tt.want)
			}
		})
	}
}

// sends is a valid scenario of send actors; the error cases below change
// its first actor.
const sends = `name: sends
duration: 1h
actors:
  - name: pumper
    destinations: ["+44 7400 123456"]
    ips: [192.0.2.1]
    rate: 1/s
  - name: users
    flow: otp_send
    accounts: {generate: 3}
    destinations: {sequential: {from: "+44 (0)7400 123998", count: 3}}
    channel: voice
    ips: [192.0.2.2]
    every: 1h
  - name: mailer
    destinations: [a@example.com, "B@Example.COM"]
    channel: email
    ips: [192.0.2.3]
    every: 30m
expect:
  pumper.denied: "== 0"
  users.delayed: "== 0"
`

func TestParseScenario_Sends(t *testing.T) {
	sc, err := ParseScenario("sends.yaml", []byte(sends))
	if err != nil {
		t.Fatal(err)
	}
	p, u, m := sc.Actors[0], sc.Actors[1], sc.Actors[2]
	checks := []struct {
		name      string
		got, want any
	}{
		{"pumper.Sends", p.Sends(), true},
		{"pumper.Flow (default for a send actor)", p.Flow, "otp_send"},
		{"pumper.Channel (default)", p.Channel, authguard.ChannelSMS},
		{"pumper.Destinations", strings.Join(p.Destinations.List, "|"), "+44 7400 123456"},
		{"pumper.Accounts.Len (none)", p.Accounts.Len(), 0},
		{"users.Accounts.Generate", u.Accounts.Generate, 3},
		{"users.Channel", u.Channel, authguard.ChannelVoice},
		{"users.Destinations.From (E.164)", u.Destinations.From, "+447400123998"},
		{"users.Destinations.Count", u.Destinations.Count, 3},
		{"users.Destinations.Len", u.Destinations.Len(), 3},
		{"mailer.Channel", m.Channel, authguard.ChannelEmail},
		{"mailer.Destinations", strings.Join(m.Destinations.List, "|"), "a@example.com|B@Example.COM"},
		{"mailer.Flow", m.Flow, "otp_send"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if b, err := ParseScenario("base.yaml", []byte(base)); err != nil || b.Actors[0].Sends() || b.Actors[0].Flow != "login" {
		t.Errorf("base: Sends() = %v, Flow = %q, %v; want a login actor of flow login", b.Actors[0].Sends(), b.Actors[0].Flow, err)
	}
	if got, want := sc.Expect[0].String(), "pumper.denied == 0"; got != want {
		t.Errorf("expectation = %q, want %q", got, want)
	}
}

func TestParseScenario_SendErrors(t *testing.T) {
	// add puts lines after the first actor's rate.
	add := func(lines string) string { return strings.Replace(sends, "rate: 1/s", "rate: 1/s\n    "+lines, 1) }
	dest := func(v string) string {
		return strings.Replace(sends, `destinations: ["+44 7400 123456"]`, "destinations: "+v, 1)
	}
	tests := []struct {
		name string
		yaml string
		want string // the whole error starts with "s.yaml: " + want
	}{
		// Fields that mean nothing for a send.
		{"outcome", add("outcome: failure"), "line 8: actors[0].outcome: means nothing for a send actor (one with destinations)"},
		{"typos", add("typos: 1"), "line 8: actors[0].typos: means nothing for a send actor"},
		{"typo_rate", add("typo_rate: 0.1"), "line 8: actors[0].typo_rate: means nothing for a send actor"},
		{"password", add("password: hunter2"), "line 8: actors[0].password: means nothing for a send actor"},
		{"device_token", add("device_token: false"), "line 8: actors[0].device_token: means nothing for a send actor"},
		{"device_token_from without accounts", add("device_token_from: users"), "line 8: actors[0].device_token_from: a send carries a device token with its account: set accounts"},
		{"mints_device_token_in", add("mints_device_token_in: login"), "line 8: actors[0].mints_device_token_in: means nothing for a send actor"},
		{"the first of two", add("password: hunter2\n    outcome: success"), "line 8: actors[0].password: means nothing for a send actor"},

		// channel
		{"channel without destinations", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    channel: sms", 1), "line 8: actors[0].channel: goes with destinations (a send actor)"},
		{"verifies_in without destinations", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    verifies_in: otp_verify", 1), "line 8: actors[0].verifies_in: goes with destinations (a send actor)"},
		{"unknown channel", add("channel: fax"), `line 8: actors[0].channel: invalid channel "fax" (use sms, voice, whatsapp or email)`},
		{"channel in capitals", add("channel: SMS"), `line 8: actors[0].channel: invalid channel "SMS"`},
		{"channel list", add("channel: [sms]"), "line 8: actors[0].channel: want sms, voice, whatsapp or email"},

		// destinations
		{"no accounts nor destinations", strings.Replace(sends, "    destinations: [\"+44 7400 123456\"]\n", "", 1), "line 4: actors[0]: accounts is required"},
		{"empty list", dest("[]"), "line 5: actors[0].destinations: want at least one destination"},
		{"scalar", dest(`"+44 7400 123456"`), `line 5: actors[0].destinations: want a list of phone numbers or e-mail addresses, or {sequential: {from: "+44 7400 123000", count: N}}`},
		{"e-mail for sms", dest(`["+44 7400 123456", a@example.com]`), `line 5: actors[0].destinations[1]: invalid destination "a@example.com" for channel sms: must be a phone number for channel sms`},
		{"phone for email", add("channel: email"), `line 5: actors[0].destinations[0]: invalid destination "+44 7400 123456" for channel email: `},
		{"national format", dest(`["07400 123456"]`), `line 5: actors[0].destinations[0]: invalid destination "07400 123456" for channel sms: must be in international format, starting with +`},
		{"too short", dest(`["+44 7400 12345"]`), `line 5: actors[0].destinations[0]: invalid destination "+44 7400 12345" for channel sms: is not a valid phone number`},
		{"list item not a string", dest(`[["+44 7400 123456"]]`), "line 5: actors[0].destinations[0]: want a phone number or an e-mail address"},
		{"unknown kind", dest(`{range: "+44 7400 123000"}`), `line 5: actors[0].destinations: unknown field "range" (known: sequential)`},
		{"empty mapping", dest("{}"), "line 5: actors[0].destinations: want a list of phone numbers"},
		{"sequential without count", dest(`{sequential: {from: "+44 7400 123000"}}`), "line 5: actors[0].destinations.sequential: count is required"},
		{"sequential without from", dest(`{sequential: {count: 5}}`), "line 5: actors[0].destinations.sequential: from is required"},
		{"sequential count zero", dest(`{sequential: {from: "+44 7400 123000", count: 0}}`), "line 5: actors[0].destinations.sequential.count: must be between 1 and 100000, not 0"},
		{"sequential count huge", dest(`{sequential: {from: "+44 7400 123000", count: 100001}}`), "line 5: actors[0].destinations.sequential.count: must be between 1 and 100000"},
		{"sequential typo", dest(`{sequential: {start: "+44 7400 123000", count: 5}}`), `line 5: actors[0].destinations.sequential: unknown field "start"`},
		{"sequential invalid from", dest(`{sequential: {from: "+44 7400 1230", count: 5}}`), `line 5: actors[0].destinations.sequential.from: invalid destination "+44 7400 1230" for channel sms: is not a valid phone number`},
		{"sequential e-mail", strings.Replace(sends, "destinations: [a@example.com, \"B@Example.COM\"]", "destinations: {sequential: {from: \"+44 7400 123000\", count: 5}}", 1),
			"line 16: actors[2].destinations.sequential: sequential numbers need a phone channel (sms, voice or whatsapp), not email"},
		{"sequential runs out of the range", dest(`{sequential: {from: "+44 7602 999999", count: 2}}`), "line 5: actors[0].destinations.sequential.count: the last number, +447603000000, is not a valid phone number"},
		{"destinations twice", add(`destinations: ["+44 7400 123457"]`), "line 8: actors[0].destinations: set twice (first on line 5)"},
		{"guesses_at in a send actor", add(`guesses_at: ["+44 7400 123457"]`), "line 8: actors[0].guesses_at: goes with a check actor, not a send actor"},
		{"guesses_at e-mail for sms", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    guesses_at: [a@example.com]", 1), `line 8: actors[0].guesses_at[0]: invalid destination "a@example.com" for channel sms`},

		// cost: an every actor's users are its destinations.
		{"too many sends", strings.Replace(dest(`{sequential: {from: "+44 7400 100000", count: 100000}}`), "rate: 1/s", "every: 1s\n    burst: 20", 1),
			"line 7: actors[0].every: starts about 7200000000 logins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario("s.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParseScenario succeeded, want an error starting %q", "s.yaml: "+tt.want)
			}
			if got := err.Error(); !strings.HasPrefix(got, "s.yaml: "+tt.want) {
				t.Errorf("error = %q\nwant it to start %q", got, "s.yaml: "+tt.want)
			}
		})
	}
}
