package simulate

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// run parses and runs a scenario on the built-in policy laid under
// policyYAML (empty: the built-in policy itself).
func run(t *testing.T, scenario, policyYAML string) *Result {
	t.Helper()
	sc, err := ParseScenario("test.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authguard.LoadPolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(sc, policy)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkCounters compares an actor's counters with want, field by field.
func checkCounters(t *testing.T, got, want ActorResult) {
	t.Helper()
	if got != want {
		t.Errorf("counters of %s:\n got %+v\nwant %+v", want.Name, got, want)
	}
}

func TestRun_RateActorCyclesAccountsAndIPs(t *testing.T) {
	r := run(t, `
name: cycle
duration: 10s
actors:
  - name: a
    accounts: [a@example.com, b@example.com, c@example.com]
    ips: [192.0.2.1, 192.0.2.2]
    rate: 1/s
`, "")
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 10, Proceeded: 10, AccountsChecked: 3, AccountsCheckedBeforeCaptcha: 3})
}

func TestRun_EveryActorSpreadsAccountsEvenly(t *testing.T) {
	r := run(t, `
name: spread
duration: 2h
actors:
  - name: users
    accounts: {generate: 4}
    ips: [192.0.2.1]
    every: 1h
    outcome: success
`, "")
	checkCounters(t, r.Actors[0], ActorResult{Name: "users", Attempts: 8, Proceeded: 8, AccountsChecked: 4, AccountsCheckedBeforeCaptcha: 4})
	var got []time.Duration
	for _, p := range r.series[0] {
		got = append(got, p.at)
	}
	want := []time.Duration{0, 15 * time.Minute, 30 * time.Minute, 45 * time.Minute, 60 * time.Minute, 75 * time.Minute, 90 * time.Minute, 105 * time.Minute}
	if len(got) != len(want) {
		t.Fatalf("proceeds at %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("proceeds at %v, want %v", got, want)
		}
	}
}

func TestRun_TyposAreAttempts(t *testing.T) {
	r := run(t, `
name: typos
duration: 1h
actors:
  - name: user
    accounts: [u@example.com]
    ips: [192.0.2.1]
    every: 1h
    typos: 2
`, "")
	checkCounters(t, r.Actors[0], ActorResult{Name: "user", Attempts: 3, Proceeded: 3, AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1})
}

func TestRun_StartAndStopBoundTheActor(t *testing.T) {
	r := run(t, `
name: window
duration: 1h
actors:
  - name: a
    accounts: {generate: 20}
    ips: {random_ipv4: 20}
    rate: 1/m
    start: 10m
    stop: 20m
`, "")
	if got, want := r.Actors[0].Attempts, 10; got != want {
		t.Errorf("attempts = %d, want %d", got, want)
	}
	if got, want := r.series[0][0].at, 10*time.Minute; got != want {
		t.Errorf("first attempt at %v, want %v", got, want)
	}
}

// A rate actor that obeys a delay pauses as a whole, retries the delayed
// attempt when the delay is over, and goes on from there.
func TestRun_ObeyingADelayPausesTheScript(t *testing.T) {
	policy := `
flows:
  login:
    account_backoff: {free: 1, base: 10s, factor: 1, max: 10s, forget_after: 1h}
`
	r := run(t, `
name: pause
duration: 1m
actors:
  - name: a
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    obeys_delay: true
`, policy)
	// Proceeds at 0s, 10s, ..., 50s; each next second is delayed 9s.
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 12, Proceeded: 6, Delayed: 6, FirstDelayAt: "1s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1})

	// One that does not obey gives up and tries again a second later.
	r = run(t, `
name: no pause
duration: 1m
actors:
  - name: a
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    obeys_delay: false
`, policy)
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 60, Proceeded: 6, Delayed: 54, FirstDelayAt: "1s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1})
}

func TestRun_Captcha(t *testing.T) {
	policy := `
flows:
  login:
    ip_spray: [{window: 1h, limit: 1}]
`
	scenario := func(solves string) string {
		return `
name: captcha
duration: 2s
actors:
  - name: a
    accounts: [a@example.com, b@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    solves_captcha: ` + solves + "\n"
	}
	// The second account needs a CAPTCHA; solving it is a second check.
	r := run(t, scenario("true"), policy)
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 3, Proceeded: 2, Captcha: 1, FirstCaptchaAt: "1s",
		AccountsChecked: 2, AccountsCheckedBeforeCaptcha: 1})
	r = run(t, scenario("false"), policy)
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 2, Proceeded: 1, Captcha: 1, FirstCaptchaAt: "1s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1})
}

// A burst of parallel guesses on one account cannot all go ahead while the
// counter still looks low: the check reserves each failure atomically.
func TestRun_ParallelBurstCannotOutrunBudget(t *testing.T) {
	const policy = `
flows:
  login:
    account_backoff: {free: 3}
`
	r := run(t, `
name: burst
duration: 1h
actors:
  - name: a
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    every: 1h
    burst: 20
    obeys_delay: false
`, policy)
	// As many go ahead as there are failure counts with no delay after them.
	p, err := authguard.LoadPolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	budget := 1
	for p.Flow("login").AccountBackoff.Delay(budget) == 0 {
		budget++
	}
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 20, Proceeded: budget, Delayed: 20 - budget, FirstDelayAt: "0s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1})
}

// The owner's known device keeps its own counter: the attacker's failures
// delay untrusted clients only.
func TestRun_DeviceTokenShieldsTheOwner(t *testing.T) {
	scenario := func(keep string) string {
		return `
name: owner
duration: 2h
actors:
  - name: attacker
    accounts: [victim@example.com]
    ips: {random_ipv4: 100}
    rate: 1/s
    start: 1m
  - name: owner
    accounts: [victim@example.com]
    ips: [198.51.100.1]
    every: 30m
    outcome: success
    device_token: ` + keep + "\n"
	}
	if r := run(t, scenario("true"), ""); r.Actors[1].Delayed != 0 {
		t.Errorf("owner with a device token: delayed %d times, want 0", r.Actors[1].Delayed)
	}
	if r := run(t, scenario("false"), ""); r.Actors[1].Delayed == 0 {
		t.Errorf("owner without a device token was never delayed; the scenario does not exercise the device counter")
	}
}

func TestRun_GeneratedAccountsAreNamedPerActor(t *testing.T) {
	sc, err := ParseScenario("t.yaml", []byte(`
name: names
duration: 1h
actors:
  - {name: a, accounts: {generate: 2}, ips: [192.0.2.1], every: 1h}
  - {name: b, accounts: {generate: 12345}, ips: [192.0.2.1], every: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{}
	a, b := newActorRun(s, sc.Actors[0], 1, 0), newActorRun(s, sc.Actors[1], 1, 1)
	if got, want := a.accounts[1], "user0002@a.sim.example"; got != want {
		t.Errorf("a's second account = %q, want %q", got, want)
	}
	if got, want := b.accounts[0], "user00001@b.sim.example"; got != want {
		t.Errorf("b's first account = %q, want %q", got, want)
	}
}

func TestRandomIPs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct {
		prefix string
		n      int
	}{{"2001:db8:1:2::/64", 1000}, {"2001:db8::/126", 4}, {"2001:db8::1/128", 1}, {"::/0", 50}} {
		p := netip.MustParsePrefix(tt.prefix).Masked()
		got := randomInPrefix(rng, p, tt.n)
		seen := map[string]bool{}
		for _, s := range got {
			a := netip.MustParseAddr(s)
			if !p.Contains(a) {
				t.Errorf("randomInPrefix(%s) gave %s, outside the prefix", p, s)
			}
			seen[s] = true
		}
		if len(seen) != tt.n {
			t.Errorf("randomInPrefix(%s, %d) gave %d distinct addresses", p, tt.n, len(seen))
		}
	}
	got := randomIPv4(rng, 5000)
	seen := map[string]bool{}
	for _, s := range got {
		a := netip.MustParseAddr(s)
		if !a.Is4() || a.As4()[0] == 0 || a.As4()[0] >= 224 {
			t.Errorf("randomIPv4 gave %s, want a unicast IPv4 address", s)
		}
		seen[s] = true
	}
	if len(seen) != 5000 {
		t.Errorf("randomIPv4(5000) gave %d distinct addresses", len(seen))
	}
}
