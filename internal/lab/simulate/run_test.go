package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// run parses and runs a scenario on the built-in policy laid under
// policyYAML (empty: the built-in policy itself).
func run(t *testing.T, scenario, policyYAML string) *Result {
	t.Helper()
	sc, err := ParseScenario("test.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := config.LoadPolicy([]byte(policyYAML))
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
	if want.DelaySeconds == 0 {
		got.DelaySeconds = 0 // held by TestRun_DelaySecondsSumsWhatTheActorWasToldToWait
	}
	if want.Spent == 0 {
		got.Spent = 0 // held by TestRun_SpentIsWhatTheCodesSentCost
	}
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
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 10, Proceeded: 10, AccountsChecked: 3, AccountsCheckedBeforeCaptcha: 3,
		ProceededMax24h: 10, FailuresMax24h: 10})
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
	checkCounters(t, r.Actors[0], ActorResult{Name: "users", Attempts: 8, Proceeded: 8, AccountsChecked: 4, AccountsCheckedBeforeCaptcha: 4,
		ProceededMax24h: 8, DeviceTokens: 8})
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
	checkCounters(t, r.Actors[0], ActorResult{Name: "user", Attempts: 3, Proceeded: 3, AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1,
		ProceededMax24h: 3, FailuresMax24h: 2, DeviceTokens: 1})
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
    rules:
      - {name: account_backoff, free: 1, base: 10s, factor: 1, max: 10s, forget_after: 1h}
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
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 6, FailuresMax24h: 6})

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
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 6, FailuresMax24h: 6})
}

// leakyFlow is a flow whose one rule queues calls per address: 3 at most,
// one going ahead every second.
const leakyFlow = `
flows:
  api:
    rules:
      - {name: ip_queue, subject: ip, algorithm: leaky_bucket, limit: 3, rate: 1/s}
`

// A proceed with a delay (a leaky_bucket's place in its queue) is held: an
// actor that obeys delays waits that long and then reports, without
// checking again; one that does not reports at once.
func TestRun_HeldProceedGoesAheadWithoutCheckingAgain(t *testing.T) {
	scenario := func(obeys string) string {
		return `
name: held
duration: 1m
actors:
  - name: users
    flow: api
    accounts: [u@example.com]
    ips: [192.0.2.1]
    every: 1h
    burst: 3
    obeys_delay: ` + obeys + "\n"
	}
	tests := []struct {
		obeys     string
		reportsAt []time.Duration // when the failures were reported
	}{
		{"true", []time.Duration{0, time.Second, 2 * time.Second}},
		{"false", []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run("obeys_delay="+tt.obeys, func(t *testing.T) {
			rec := &recorder{}
			r, _ := execRun(t, scenario(tt.obeys), leakyFlow, func(e engineAPI) engineAPI {
				rec.engineAPI = e
				return rec
			})
			checkCounters(t, r.Actors[0], ActorResult{Name: "users", Attempts: 3, Proceeded: 3, AccountsChecked: 1,
				AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 3, FailuresMax24h: 3})

			// Three checks, queued 0s, 1s and 2s back, and one report of
			// each, with its attempt token.
			var delays []time.Duration
			attempts := map[string]bool{}
			reports := 0
			for _, c := range rec.calls {
				switch {
				case c.check != nil:
					delays = append(delays, c.answer.Delay)
					attempts[c.answer.Attempt] = true
				case !attempts[c.report.Attempt]:
					t.Errorf("a report with an attempt token no check returned")
				default:
					delete(attempts, c.report.Attempt)
					reports++
				}
			}
			slices.Sort(delays)
			if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(delays, want) {
				t.Errorf("checks answered delays %v, want %v", delays, want)
			}
			if reports != 3 {
				t.Errorf("%d reports, want 3", reports)
			}

			var got []time.Duration
			for i, p := range r.series[0] {
				for range int(p.failures) - failuresBefore(r.series[0], i) {
					got = append(got, p.at)
				}
			}
			if !slices.Equal(got, tt.reportsAt) {
				t.Errorf("failures reported at %v, want %v", got, tt.reportsAt)
			}
		})
	}
}

// failuresBefore is the failures count of the point before pts[i].
func failuresBefore(pts []point, i int) int {
	if i == 0 {
		return 0
	}
	return int(pts[i-1].failures)
}

// A rate actor that holds a proceed pauses as a whole, as for a delay: a
// script that waits for its answer.
func TestRun_HoldingAProceedPausesTheScript(t *testing.T) {
	r := run(t, `
name: paced
duration: 10s
actors:
  - name: a
    flow: api
    accounts: [u@example.com]
    ips: [192.0.2.1]
    rate: 2/s
`, leakyFlow)
	// Checks at 0s, 0.5s (held 0.5s), 1.5s (held 0.5s), ... 9.5s: one
	// goes ahead a second, as the queue lets it; none is refused. The
	// last, held until 10s, never goes ahead.
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 11, Proceeded: 11, AccountsChecked: 1,
		AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 11, FailuresMax24h: 10})
}

func TestRun_Captcha(t *testing.T) {
	policy := `
flows:
  login:
    rules:
      - {name: ip_spray, windows: [{window: 1h, limit: 1}]}
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
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 3, Proceeded: 2, Captcha: 1, CaptchaSolved: 1, FirstCaptchaAt: "1s",
		AccountsChecked: 2, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 2, FailuresMax24h: 2})
	r = run(t, scenario("false"), policy)
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 2, Proceeded: 1, Captcha: 1, FirstCaptchaAt: "1s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 1, FailuresMax24h: 1})
}

// A burst of parallel guesses on one account cannot all go ahead while the
// counter still looks low: the check reserves each failure atomically.
func TestRun_ParallelBurstCannotOutrunBudget(t *testing.T) {
	const policy = `
flows:
  login:
    rules:
      - {name: account_backoff, free: 3}
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
	p, err := config.LoadPolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	budget := 1
	for p.Flow("login").Rule("account_backoff").Backoff.Delay(budget) == 0 {
		budget++
	}
	checkCounters(t, r.Actors[0], ActorResult{Name: "a", Attempts: 20, Proceeded: budget, Delayed: 20 - budget, FirstDelayAt: "0s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: budget, FailuresMax24h: budget})
}

// The owner's known device keeps its own counter: the attacker's failures
// delay untrusted clients only. Without a token she is delayed unless she
// comes from a network she signed in from before (authguard's known
// networks): here a fresh /64 each time.
func TestRun_DeviceTokenShieldsTheOwner(t *testing.T) {
	scenario := func(keep, ips string) string {
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
    ips: ` + ips + `
    every: 30m
    outcome: success
    device_token: ` + keep + "\n"
	}
	if r := run(t, scenario("true", "{random_ipv4: 100}"), ""); r.Actors[1].Delayed != 0 {
		t.Errorf("owner with a device token: delayed %d times, want 0", r.Actors[1].Delayed)
	}
	if r := run(t, scenario("false", "[198.51.100.1]"), ""); r.Actors[1].Delayed != 0 {
		t.Errorf("owner without a device token from the address she signed in from: delayed %d times, want 0", r.Actors[1].Delayed)
	}
	if r := run(t, scenario("false", `{fresh_ipv6_in: "2001:db8:77::/48"}`), ""); r.Actors[1].Delayed == 0 {
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

// execRun is run, with the engine wrapped by wrap (unless nil), returning
// the actors' runs too.
func execRun(t *testing.T, scenario, policyYAML string, wrap func(engineAPI) engineAPI) (*Result, []*actorRun) {
	t.Helper()
	sc, err := ParseScenario("test.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := config.LoadPolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	r, runs, err := execute(sc, policy, wrap)
	if err != nil {
		t.Fatal(err)
	}
	return r, runs
}

// call is one engine call a recorder saw: a check, a report or a send, and
// the verdict it got.
type call struct {
	check  *authguard.CheckRequest
	report *authguard.ReportRequest
	send   *authguard.SendRequest
	answer authguard.Verdict
}

// recorder wraps the engine and keeps every call, in the order they
// returned.
type recorder struct {
	engineAPI
	mu    sync.Mutex
	calls []call
}

func (r *recorder) Check(ctx context.Context, req authguard.CheckRequest) (authguard.Verdict, error) {
	v, err := r.engineAPI.Check(ctx, req)
	r.mu.Lock()
	r.calls = append(r.calls, call{check: &req, answer: v})
	r.mu.Unlock()
	return v, err
}

func (r *recorder) Report(ctx context.Context, req authguard.ReportRequest) (authguard.Verdict, error) {
	v, err := r.engineAPI.Report(ctx, req)
	r.mu.Lock()
	r.calls = append(r.calls, call{report: &req, answer: v})
	r.mu.Unlock()
	return v, err
}

func (r *recorder) Send(ctx context.Context, req authguard.SendRequest) (authguard.Verdict, error) {
	v, err := r.engineAPI.Send(ctx, req)
	r.mu.Lock()
	r.calls = append(r.calls, call{send: &req, answer: v})
	r.mu.Unlock()
	return v, err
}

// record runs scenario on the built-in policy laid under policyYAML and
// returns its result and every engine call.
func record(t *testing.T, scenario, policyYAML string) (*Result, []call) {
	t.Helper()
	rec := &recorder{}
	r, _ := execRun(t, scenario, policyYAML, func(e engineAPI) engineAPI {
		rec.engineAPI = e
		return rec
	})
	return r, rec.calls
}

// A thief sends, with each check and report, the device token the owner
// holds at that moment for the account attacked (however spelled), and none
// for an account, or at a time, the owner holds none for.
func TestRun_DeviceTokenFromSendsTheOwnersCurrentToken(t *testing.T) {
	_, calls := record(t, `
name: thief
duration: 20s
actors:
  - name: thief
    accounts: [VICTIM@example.com, other@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    device_token_from: owner
  - name: owner
    accounts: [victim@example.com]
    ips: [198.51.100.1]
    every: 4s
    start: 5s
    outcome: success
    device_token: true
`, "")
	const thiefIP, ownerIP = "192.0.2.1", "198.51.100.1"
	var held, sentInCheck string // the owner's token; the thief's last check's
	owned := map[string]bool{}   // tokens the owner held
	var with, without int
	for i, c := range calls {
		switch {
		case c.report != nil && c.report.IP == ownerIP:
			if c.answer.DeviceToken != "" {
				held = c.answer.DeviceToken
				owned[held] = true
			}
		case c.check != nil && c.check.IP == thiefIP:
			want := held
			if c.check.Account == "other@example.com" {
				want = ""
			}
			if c.check.DeviceToken != want {
				t.Fatalf("call %d: the thief's check on %s carries %q, want %q (the owner's)", i, c.check.Account, c.check.DeviceToken, want)
			}
			if want == "" {
				without++
			} else {
				with++
			}
			sentInCheck = c.check.DeviceToken
		case c.report != nil && c.report.IP == thiefIP:
			if c.report.DeviceToken != sentInCheck {
				t.Fatalf("call %d: the thief's report carries %q, its check %q", i, c.report.DeviceToken, sentInCheck)
			}
		}
	}
	if with == 0 || without == 0 {
		t.Errorf("%d thief checks with the owner's token and %d without: want both", with, without)
	}
	if len(owned) < 2 {
		t.Errorf("the owner held %d distinct tokens; want it to renew its token so that the thief's must follow", len(owned))
	}
}

// A valid device token puts the attempt on the known-device path (the
// device's allowance, then the devices' shared counter, made lax here): the
// thief's guesses on the victim all go ahead, while its guesses on another
// account, and a thief without the token, meet the account counter.
func TestRun_StolenDeviceTokenUsesTheDeviceCounter(t *testing.T) {
	r := run(t, `
name: thief
duration: 1m
actors:
  - name: thief
    accounts: [VICTIM@example.com, other@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    start: 1s
    stop: 41s
    obeys_delay: false
    device_token_from: owner
  - name: control
    accounts: [victim2@example.com, other2@example.com]
    ips: [192.0.2.2]
    rate: 1/s
    start: 1s
    stop: 41s
    obeys_delay: false
  - name: owner
    accounts: [victim@example.com, victim2@example.com]
    ips: [198.51.100.1]
    every: 1h
    outcome: success
    device_token: true
`, `
flows:
  login:
    rules:
      - {name: account_backoff, free: 2, base: 1h, factor: 1, max: 1h, forget_after: 24h}
      - {name: device_backoff, free: 1000}
`)
	// 20 guesses on each account: all 20 on the victim go ahead with the
	// stolen token; 2 on the other account, then an hour's delay.
	checkCounters(t, r.Actors[0], ActorResult{Name: "thief", Attempts: 40, Proceeded: 22, Delayed: 18, FirstDelayAt: "6s",
		AccountsChecked: 2, AccountsCheckedBeforeCaptcha: 2, ProceededMax24h: 22, FailuresMax24h: 22})
	checkCounters(t, r.Actors[1], ActorResult{Name: "control", Attempts: 40, Proceeded: 4, Delayed: 36, FirstDelayAt: "5s",
		AccountsChecked: 2, AccountsCheckedBeforeCaptcha: 2, ProceededMax24h: 4, FailuresMax24h: 4})
}

// Before each check of its own (retries and CAPTCHA checks included) a
// minting actor makes exactly one check in the minting flow, with no device
// token; when it proceeds, reports a success, and sends the device token
// that returns with its check and report; when it does not, sends none.
func TestRun_MintsOneDeviceTokenPerAttempt(t *testing.T) {
	r, calls := record(t, `
name: mint
duration: 30s
actors:
  - name: minter
    flow: otp_verify
    mints_device_token_in: login
    accounts: [victim@example.com, victim2@example.com]
    ips: [192.0.2.1]
    rate: 1/s
`, `
flows:
  login:
    rules:
      - {name: ip_rate, rate: 1/h, limit: 5}
  otp_verify:
    rules:
      - {name: account_backoff, free: 1, base: 3s, factor: 1, max: 3s}
      - {name: ip_spray, windows: [{window: 1h, limit: 1}]}
`)
	var mints, refused, attempts, retries int
	minted, token, sent := false, "", ""
	var mintedFor authguard.CheckRequest
	tokens := map[string]bool{}
	for i, c := range calls {
		switch {
		case c.check != nil && c.check.Flow == "login":
			if minted {
				t.Fatalf("call %d: a second minting check before the attempt", i)
			}
			if c.check.DeviceToken != "" {
				t.Fatalf("call %d: minting check %+v, want one without a device token", i, *c.check)
			}
			mintedFor = *c.check
			mints++
			minted, token = true, ""
			if c.answer.Action != authguard.Proceed {
				refused++
			}
		case c.report != nil && c.report.Flow == "login":
			if c.report.Outcome != authguard.Success || c.answer.DeviceToken == "" {
				t.Fatalf("call %d: minting report %+v answered %+v, want a success that returns a device token", i, *c.report, c.answer)
			}
			token = c.answer.DeviceToken
			tokens[token] = true
		case c.check != nil:
			if !minted {
				t.Fatalf("call %d: a check without a minting login before it", i)
			}
			if mintedFor.Account != c.check.Account || mintedFor.IP != c.check.IP {
				t.Fatalf("call %d: a check for %s from %s after minting for %s from %s", i, c.check.Account, c.check.IP, mintedFor.Account, mintedFor.IP)
			}
			if c.check.DeviceToken != token {
				t.Fatalf("call %d: the check carries %q, want the token just minted, %q", i, c.check.DeviceToken, token)
			}
			if c.check.CaptchaSolved {
				retries++
			}
			attempts++
			minted, sent = false, token
		case c.report != nil:
			if c.report.DeviceToken != sent {
				t.Fatalf("call %d: the report carries %q, its check %q", i, c.report.DeviceToken, sent)
			}
		}
	}
	a := r.Actors[0]
	if a.Attempts != attempts || a.MintLogins != mints || a.MintRefused != refused || mints != attempts {
		t.Errorf("attempts = %d, mint_logins = %d, mint_refused = %d; the engine saw %d attempts, %d minting checks, %d refused",
			a.Attempts, a.MintLogins, a.MintRefused, attempts, mints, refused)
	}
	// The login flow's ip_rate lets 5 minting checks through, then refuses
	// them all; the second account needs a CAPTCHA, and the first is
	// delayed once its device counters run out.
	if refused != mints-5 || retries == 0 || a.Delayed == 0 {
		t.Errorf("%d minting checks, %d refused, %d CAPTCHA checks, %d delays: want all but 5 refused, and retries to mint too", mints, refused, retries, a.Delayed)
	}
	if len(tokens) != 5 {
		t.Errorf("%d distinct device tokens minted, want 5 (one new device per success)", len(tokens))
	}
}

// Minted login tokens are not trusted by otp_verify: the minter gets no
// more guesses than an attacker who does not mint.
func TestRun_MintedTokensCannotDodgeTheAccountCounter(t *testing.T) {
	r := run(t, `
name: mint
duration: 1m
actors:
  - name: minter
    flow: otp_verify
    mints_device_token_in: login
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    obeys_delay: false
  - name: control
    flow: otp_verify
    accounts: [victim2@example.com]
    ips: [192.0.2.2]
    rate: 1/s
    obeys_delay: false
`, "")
	m, c := r.Actors[0], r.Actors[1]
	if m.Proceeded != c.Proceeded || m.MintRefused != 0 || m.MintLogins != m.Attempts {
		t.Errorf("minter: %+v; want as many guesses as the control's %d, one minting login per check", m, c.Proceeded)
	}
	if c.Proceeded > 10 || c.MintLogins != 0 {
		t.Errorf("control: %+v; want the account counter to hold it to a few guesses", c)
	}
}

// A flood of fresh accounts from fresh /64s keeps no state per subject in
// the simulator: no map entry per account, and a series point per batch,
// not per login.
func TestRun_FreshSubjectFloodKeepsNoStatePerSubject(t *testing.T) {
	seconds := 200 // 200,000 logins
	if raceEnabled || testing.Short() {
		seconds = 5 // 5,000 logins, 50 bursts
	}
	r, runs := execRun(t, fmt.Sprintf(`
name: flood
duration: %ds
store: {max_entries: 10000}
actors:
  - name: flood
    accounts: {fresh: true}
    ips: {fresh_ipv6_in: "2001:db8::/32"}
    rate: 1000/s
    burst: 100
`, seconds), "", nil)
	logins := seconds * 1000
	checkCounters(t, r.Actors[0], ActorResult{Name: "flood", Attempts: logins, Proceeded: logins,
		AccountsChecked: logins, AccountsCheckedBeforeCaptcha: logins, ProceededMax24h: logins, FailuresMax24h: logins})
	ar := runs[0]
	if len(ar.checked) != 0 || len(ar.devices) != 0 || len(ar.accounts) != 0 || len(ar.ips) != 0 || len(ar.pending) != 0 {
		t.Errorf("after %d logins: %d checked, %d devices, %d accounts, %d addresses, %d pending; want none",
			logins, len(ar.checked), len(ar.devices), len(ar.accounts), len(ar.ips), len(ar.pending))
	}
	if got, want := len(r.series[0]), logins/100; got != want {
		t.Errorf("%d series points, want %d (one per burst)", got, want)
	}
}

func TestRun_FreshAccountsAreNeverReused(t *testing.T) {
	sc, err := ParseScenario("t.yaml", []byte(`
name: fresh
duration: 1h
actors:
  - {name: Bot-1, accounts: {fresh: true}, ips: [192.0.2.1], rate: 1/s}
`))
	if err != nil {
		t.Fatal(err)
	}
	ar := newActorRun(&sim{}, sc.Actors[0], 1, 0)
	seen := map[string]bool{}
	for i := range 10_000 {
		a := ar.freshAccount()
		if i == 0 && a != "fresh1@bot-1.sim.example" {
			t.Errorf("first fresh account = %q, want fresh1@bot-1.sim.example", a)
		}
		n, err := authguard.NormalizeAccount(a)
		if err != nil || n != a {
			t.Fatalf("fresh account %q normalises to %q, %v", a, n, err)
		}
		if seen[a] {
			t.Fatalf("fresh account %q given twice", a)
		}
		seen[a] = true
	}
}

func TestFreshIP(t *testing.T) {
	tests := []struct {
		prefix string
		n      int
		bits   int // the prefix length each address is new at
	}{
		{"2001:db8::/32", 100_000, 64},           // a new /64 each time
		{"2001:db8:ff00::/48", 65_536, 64},       // every /64 of the /48, once
		{"::/0", 10_000, 64},                     // anywhere
		{"2001:db8:1:2::/64", 10_000, 128},       // a new address in one /64
		{"2001:db8:1:2:3:4:5:0/112", 65536, 128}, // every address, once
		{"2001:db8::/127", 2, 128},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			p := netip.MustParsePrefix(tt.prefix)
			ar := &actorRun{Actor: &Actor{IPs: IPs{FreshIPv6In: p}}, rng: rand.New(rand.NewPCG(1, 2)), freshKey: 0x1234_5678_9abc_def1}
			seen := make(map[netip.Prefix]bool, tt.n)
			for i := range tt.n {
				s := ar.freshIP()
				a, err := netip.ParseAddr(s)
				if err != nil || !p.Contains(a) {
					t.Fatalf("address %d: %q is not in %s (%v)", i, s, p, err)
				}
				sub := netip.PrefixFrom(a, tt.bits).Masked()
				if seen[sub] {
					t.Fatalf("address %d: %s is in %s, already used", i, s, sub)
				}
				seen[sub] = true
			}
		})
	}
	// Consecutive /64s of a /32 look unrelated: they do not share their /48.
	ar := &actorRun{Actor: &Actor{IPs: IPs{FreshIPv6In: netip.MustParsePrefix("2001:db8::/32")}}, rng: rand.New(rand.NewPCG(1, 2))}
	same := 0
	prev := netip.Prefix{}
	for range 1000 {
		p48 := netip.PrefixFrom(netip.MustParseAddr(ar.freshIP()), 48).Masked()
		if p48 == prev {
			same++
		}
		prev = p48
	}
	if same > 10 {
		t.Errorf("%d of 1000 consecutive fresh addresses share the /48 of the one before", same)
	}
}

// permute is one to one over every width, for every key.
func TestPermute(t *testing.T) {
	for w := uint(1); w <= 14; w++ {
		for _, key := range []uint64{0, 1, 0xdead_beef_cafe_f00d} {
			seen := make([]bool, 1<<w)
			for x := range uint64(1) << w {
				y := permute(x, w, key)
				if y >= 1<<w || seen[y] {
					t.Fatalf("permute(%d, %d, %#x) = %d: out of range or repeated", x, w, key, y)
				}
				seen[y] = true
			}
		}
	}
	if got := permute(7, 64, 3); got == permute(8, 64, 3) {
		t.Errorf("permute(7, 64, 3) == permute(8, 64, 3) == %d", got)
	}
}

func TestMaxInWindow(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name string
		at   []time.Duration // one event at each
		want int
	}{
		{"none", nil, 0},
		{"one", []time.Duration{5 * h}, 1},
		{"within a day", []time.Duration{0, h, 23 * h}, 3},
		{"exactly a day apart are two windows", []time.Duration{0, 24 * h}, 1},
		{"just under a day apart", []time.Duration{0, 24*h - time.Nanosecond}, 2},
		{"the densest day wins", []time.Duration{0, 30 * h, 31 * h, 32 * h, 60 * h}, 3},
		{"the window slides", []time.Duration{0, 20 * h, 25 * h, 43 * h, 50 * h}, 3},
		{"same instant", []time.Duration{h, h, h, 30 * h}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pts []point
			for i, at := range tt.at {
				if n := len(pts); n > 0 && pts[n-1].at == at {
					pts[n-1].n = int32(i + 1)
					continue
				}
				pts = append(pts, point{at: at, n: int32(i + 1)})
			}
			if got := maxInWindow(pts, day, func(p point) int { return int(p.n) }); got != tt.want {
				t.Errorf("maxInWindow(%v) = %d, want %d", tt.at, got, tt.want)
			}
		})
	}
}

// Over three days a user who logs in every hour with one typo proceeds 48
// times and fails 24 times in any 24 hours.
func TestRun_Max24hCountsTheBusiestDay(t *testing.T) {
	r := run(t, `
name: days
duration: 3d
actors:
  - name: user
    accounts: [u@example.com]
    ips: ["2002:c000:204::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"]
    every: 1h
    typos: 1
  - name: attacker
    accounts: [v@example.com]
    ips: [203.0.113.1]
    rate: 1/h
    start: 30h
    stop: 40h
expect:
  user.proceeded_max_24h: "== 48"
  user.failures_max_24h: "== 24"
  attacker.proceeded_max_24h: "== 10"
  attacker.failures_max_24h: "== 10"
`, "")
	if !r.Passed() {
		t.Errorf("expectations: %+v", r.Expectations)
	}
	if got, want := r.Actors[0].Proceeded, 144; got != want {
		t.Errorf("user proceeded %d times, want %d", got, want)
	}
}

// store.max_entries reaches the memory store: a flood of fresh subjects
// against a store of 64 keys evicts the victim's counter, so the brute
// force that the default store holds to 13 guesses almost always goes ahead.
func TestRun_SmallStoreEvictsUnderAFlood(t *testing.T) {
	const scenario = `
name: store
duration: 5m
actors:
  - name: attacker
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
    obeys_delay: false
  - name: flood
    accounts: {fresh: true}
    ips: {fresh_ipv6_in: "2001:db8::/32"}
    rate: 10/s
    burst: 10
`
	big := run(t, scenario, "").Actors[0].Proceeded
	small := run(t, strings.Replace(scenario, "duration: 5m", "duration: 5m\nstore: {max_entries: 64}", 1), "").Actors[0].Proceeded
	if big > 20 || small < 200 {
		t.Errorf("attacker proceeded %d times with the default store and %d with 64 entries; want at most 20 and at least 200", big, small)
	}
}

// The address list takes any IPv6 text, 6to4 and Teredo included, and the
// engine takes them too.
func TestRun_IPv6ListTakesEmbeddedIPv4Forms(t *testing.T) {
	r := run(t, `
name: forms
duration: 1m
actors:
  - name: a
    accounts: [a@example.com]
    ips: ["2002:c000:204::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "::ffff:192.0.2.1", "2001:DB8::1", "fe80::1"]
    rate: 1/s
    outcome: success
`, "")
	if got, want := r.Actors[0].Proceeded, 60; got != want {
		t.Errorf("proceeded %d times, want %d", got, want)
	}
}

// A send actor sends: each login is one send, a delay it obeys is waited
// out and the send repeated, and a denied send (a premium-rate number) is
// over, never retried. Nothing is reported.
func TestRun_SendActorCounts(t *testing.T) {
	r, calls := record(t, `
name: sends
duration: 10m
actors:
  - name: bomber
    destinations: ["+44 7400 123456"]
    ips: [192.0.2.1]
    rate: 6/m
  - name: premium
    destinations: ["+44 909 8790000"]
    channel: voice
    ips: [192.0.2.2]
    rate: 1/m
  - name: quitter
    destinations: ["+44 7400 654321"]
    ips: [192.0.2.3]
    rate: 6/m
    obeys_delay: false
`, "")
	// destination_backoff: sends at 0s, 30s, 1m30s, 3m30s and 7m30s; each
	// 10 seconds after one is delayed and waited out; the next would be at
	// 15m30s.
	checkCounters(t, r.Actors[0], ActorResult{Name: "bomber", Attempts: 10, Proceeded: 5, Delayed: 5, FirstDelayAt: "10s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 5})
	checkCounters(t, r.Actors[1], ActorResult{Name: "premium", Attempts: 10, Denied: 10})
	// Without waiting, every send after the first until 30s is given up:
	// the ones at 30s, 1m30s, 3m30s and 7m30s go out.
	checkCounters(t, r.Actors[2], ActorResult{Name: "quitter", Attempts: 60, Proceeded: 5, Delayed: 55, FirstDelayAt: "10s",
		AccountsChecked: 1, AccountsCheckedBeforeCaptcha: 1, ProceededMax24h: 5})
	for _, c := range calls {
		if c.send == nil {
			t.Fatalf("a send actor called the engine with %+v", c)
		}
	}
	if want := (authguard.SendRequest{Flow: "otp_send", Destination: "+44 909 8790000", Channel: "voice", IP: "192.0.2.2"}); !slices.ContainsFunc(calls, func(c call) bool {
		return *c.send == want
	}) {
		t.Errorf("no send of %+v", want)
	}
}

// A rate send actor takes its destinations in order, cycling, and its
// accounts in order, each list at its own pace; a CAPTCHA it solves is
// answered by sending again at once with CaptchaSolved.
func TestRun_SendActorCyclesDestinationsAndSolvesCaptchas(t *testing.T) {
	r, calls := record(t, `
name: sequential
duration: 7s
actors:
  - name: pumper
    accounts: [a@example.com, b@example.com]
    destinations: {sequential: {from: "+44 7400 123000", count: 6}}
    ips: [192.0.2.1]
    rate: 1/s
`, "")
	// One block of 1,000: prefix_destinations (5 numbers an hour) asks the
	// sixth for a CAPTCHA; the seventh send, to the first number again 6
	// seconds after its code, is delayed by destination_backoff (30 s).
	send := func(dest, account string, solved bool) authguard.SendRequest {
		return authguard.SendRequest{Flow: "otp_send", Destination: dest, Channel: "sms", IP: "192.0.2.1", Account: account, CaptchaSolved: solved}
	}
	want := []struct {
		req    authguard.SendRequest
		action authguard.Action
	}{
		{send("+447400123000", "a@example.com", false), authguard.Proceed},
		{send("+447400123001", "b@example.com", false), authguard.Proceed},
		{send("+447400123002", "a@example.com", false), authguard.Proceed},
		{send("+447400123003", "b@example.com", false), authguard.Proceed},
		{send("+447400123004", "a@example.com", false), authguard.Proceed},
		{send("+447400123005", "b@example.com", false), authguard.Captcha},
		{send("+447400123005", "b@example.com", true), authguard.Proceed},
		{send("+447400123000", "a@example.com", false), authguard.Delay},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d engine calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		if c := calls[i]; c.send == nil || *c.send != w.req || c.answer.Action != w.action {
			t.Errorf("call %d = %+v, answered %v; want %+v, answered %v", i, c.send, c.answer.Action, w.req, w.action)
		}
	}
	checkCounters(t, r.Actors[0], ActorResult{Name: "pumper", Attempts: 8, Proceeded: 6, Delayed: 1, Captcha: 1, CaptchaSolved: 1,
		FirstDelayAt: "6s", FirstCaptchaAt: "5s", AccountsChecked: 6, AccountsCheckedBeforeCaptcha: 5, ProceededMax24h: 6})
}

// An every send actor's users are its destinations: destination i of n is
// sent to from address i mod len(ips), for account i mod len(accounts), at
// i×every/n.
func TestRun_EverySendActorSpreadsDestinations(t *testing.T) {
	r, calls := record(t, `
name: spread
duration: 1h
actors:
  - name: users
    accounts: [a@example.com, b@example.com]
    destinations: ["+44 7400 100001", "+44 7400 200002", "+44 7400 300003", "+44 7400 400004"]
    ips: [192.0.2.1, 192.0.2.2, 192.0.2.3]
    every: 1h
    channel: whatsapp
`, "")
	send := func(dest, ip, account string) authguard.SendRequest {
		return authguard.SendRequest{Flow: "otp_send", Destination: dest, Channel: "whatsapp", IP: ip, Account: account}
	}
	want := []authguard.SendRequest{
		send("+44 7400 100001", "192.0.2.1", "a@example.com"),
		send("+44 7400 200002", "192.0.2.2", "b@example.com"),
		send("+44 7400 300003", "192.0.2.3", "a@example.com"),
		send("+44 7400 400004", "192.0.2.1", "b@example.com"),
	}
	if len(calls) != len(want) {
		t.Fatalf("%d engine calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		if c := calls[i]; c.send == nil || *c.send != w || c.answer.Action != authguard.Proceed {
			t.Errorf("call %d = %+v, answered %v; want %+v, answered proceed", i, c.send, c.answer.Action, w)
		}
	}
	var at []time.Duration
	for _, p := range r.series[0] {
		at = append(at, p.at)
	}
	if want := []time.Duration{0, 15 * time.Minute, 30 * time.Minute, 45 * time.Minute}; !slices.Equal(at, want) {
		t.Errorf("codes sent at %v, want %v", at, want)
	}
}

// Run checks the flows' kinds against the policy it is given, naming the
// scenario's line: destinations go with a send flow, and a send flow needs
// them.
func TestRun_SendFlowKinds(t *testing.T) {
	tests := []struct {
		name, yaml, policy, want string
	}{
		{"send flow without destinations", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    flow: otp_send", 1), "",
			`s.yaml: line 8: actors[0].flow: "otp_send" is a send flow (kind: send): the actor needs destinations`},
		{"destinations in a login flow", strings.Replace(sends, "rate: 1/s", "rate: 1/s\n    flow: login", 1), "",
			`s.yaml: line 5: actors[0].destinations: flow "login" is not a send flow (kind: send), such as otp_send`},
		{"destinations in a -config login flow", strings.Replace(sends, "rate: 1/s", "rate: 1/s\n    flow: signup", 1), "flows:\n  signup: {template: login}\n",
			`s.yaml: line 5: actors[0].destinations: flow "signup" is not a send flow`},
		{"a -config send flow without destinations", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    flow: sms", 1), "flows:\n  sms: {template: otp_send}\n",
			`s.yaml: line 8: actors[0].flow: "sms" is a send flow`},
		{"minting in a send flow", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    mints_device_token_in: otp_send", 1), "",
			`s.yaml: line 8: actors[0].mints_device_token_in: "otp_send" is a send flow (kind: send): it returns no device tokens`},
		{"verifying in a flow that verifies other codes", strings.Replace(sends, "rate: 1/s", "rate: 1/s\n    verifies_in: login", 1), "",
			`s.yaml: line 8: actors[0].verifies_in: "login" does not verify "otp_send"'s codes (it needs verifies: otp_send)`},
		{"verifying in a flow that does not exist", strings.Replace(sends, "rate: 1/s", "rate: 1/s\n    verifies_in: nope", 1), "",
			`s.yaml: line 8: actors[0].verifies_in: the policy has no flow "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ParseScenario("s.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			policy, err := config.LoadPolicy([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			if _, err = Run(sc, policy); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Run error = %v, want one starting %q", err, tt.want)
			}
		})
	}
	// A send flow of the -config policy takes destinations.
	policy, err := config.LoadPolicy([]byte("flows:\n  sms: {template: otp_send}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScenario("s.yaml", []byte(strings.Replace(sends, "rate: 1/s", "rate: 1/s\n    flow: sms", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc, policy); err != nil {
		t.Errorf("a -config send flow: %v", err)
	}
}

func TestRun_DelaySecondsSumsWhatTheActorWasToldToWait(t *testing.T) {
	policy := `
flows:
  login:
    rules:
      - {name: account_backoff, free: 1, base: 10s, factor: 1, max: 10s, forget_after: 1h}
`
	r := run(t, `
name: pause
duration: 1m
actors:
  - name: a
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/s
`, policy)
	// Six delays of 9 s each (TestRun_ObeyingADelayPausesTheScript).
	if got := r.Actors[0].DelaySeconds; got != 54 {
		t.Errorf("delay_seconds = %d, want 54", got)
	}
}

func TestRun_StopsAtCaptchaStopsTheSprayerForGood(t *testing.T) {
	scenario := `
name: spray
duration: 1h
actors:
  - name: a
    accounts: {fresh: true}
    ips: [192.0.2.1]
    rate: 1/s
    solves_captcha: true
    stops_at_captcha: %v
`
	stopped := run(t, fmt.Sprintf(scenario, true), "").Actors[0]
	going := run(t, fmt.Sprintf(scenario, false), "").Actors[0]
	// ip_spray: 10 accounts an hour from one address, then a CAPTCHA.
	if stopped.AccountsCheckedBeforeCaptcha != 10 || going.AccountsCheckedBeforeCaptcha != 10 {
		t.Errorf("accounts before the captcha = %d and %d, want 10 and 10", stopped.AccountsCheckedBeforeCaptcha, going.AccountsCheckedBeforeCaptcha)
	}
	if stopped.Captcha != 1 || stopped.Attempts != 11 {
		t.Errorf("stopping actor: %d captchas in %d attempts, want 1 in 11", stopped.Captcha, stopped.Attempts)
	}
	if going.Attempts <= stopped.Attempts {
		t.Errorf("an actor that does not stop made %d attempts, no more than one that stops (%d)", going.Attempts, stopped.Attempts)
	}
}

// TestRun_OwnersDeviceTokenGetsHerCodeWhileHerNumberIsBombed: a send actor
// with device_token_from sends its owner's login token, which owner_codes
// honours once her account has verified the number: she gets her code at
// once past a bomber who filled the number's quota; without the token, a
// CAPTCHA first.
func TestRun_OwnersDeviceTokenGetsHerCodeWhileHerNumberIsBombed(t *testing.T) {
	scenario := `
name: owner codes
duration: 24h
actors:
  - name: login
    accounts: [victim@example.com]
    ips: [198.51.100.23]
    every: 8h
    outcome: success
    device_token: true
  - name: owner
    destinations: ["+44 7400 123456"]
    accounts: [victim@example.com]
    ips: [198.51.100.23]
    every: 8h
    start: 1m
    verifies_in: otp_verify
    %s
  - name: bomber
    destinations: ["+44 7400 123456"]
    ips: {random_ipv4: 100}
    rate: 6/m
    start: 2m
`
	with := run(t, fmt.Sprintf(scenario, "device_token_from: login"), "").Actors[1]
	without := run(t, fmt.Sprintf(scenario, "solves_captcha: true"), "").Actors[1]
	if with.Proceeded != 3 || with.Delayed != 0 || with.Captcha != 0 {
		t.Errorf("the owner with her token: %+v, want 3 codes at once", with)
	}
	// Without it her account still earns her codes, behind a CAPTCHA.
	if without.Captcha == 0 {
		t.Errorf("the owner without her token met no CAPTCHA (%+v): the token is not what let her through", without)
	}
}

// TestRun_ExpectationAddsUpSeveralActors: "a+b.field" holds the sum, so a
// scenario can bound what several attackers get from one account together.
func TestRun_ExpectationAddsUpSeveralActors(t *testing.T) {
	r := run(t, `
name: two
duration: 1h
actors:
  - name: a
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 1/m
  - name: b
    accounts: [victim@example.com]
    ips: [192.0.2.2]
    rate: 1/m
    start: 30s
expect:
  a+b.failures_max_24h: "<= 1000"
  a+b.proceeded: "<= 1"
`, "")
	a, b := r.Actors[0].FailuresMax24h, r.Actors[1].FailuresMax24h
	if got := r.Expectations[0].got; got != int64(a+b) || a == 0 || b == 0 {
		t.Errorf("a+b.failures_max_24h = %d, want %d + %d", got, a, b)
	}
	if r.Expectations[1].OK {
		t.Errorf("a+b.proceeded <= 1 held with %d and %d proceeds", r.Actors[0].Proceeded, r.Actors[1].Proceeded)
	}
}

// TestRun_SpentIsWhatTheCodesSentCost: spent adds up the prices of the
// codes that went out (sms 10, voice 30, e-mail 0 in the built-in
// prices) and nothing for a send denied, so that a pumper's spend can be
// held to the tenant's budget: with a budget of 300 the voice pumper's
// spend stops at 300, its later sends denied.
func TestRun_SpentIsWhatTheCodesSentCost(t *testing.T) {
	scenario := `
name: spend
duration: 1h
actors:
  - name: sms
    destinations: {sequential: {from: "+44 7400 100000", count: 50}}
    ips: {random_ipv4: 50}
    rate: 10/h
  - name: voice
    destinations: {sequential: {from: "+44 7400 200000", count: 50}}
    channel: voice
    ips: {random_ipv4: 50}
    rate: 20/h
  - name: mail
    destinations: [a@example.com, b@example.com, c@example.com]
    channel: email
    ips: {random_ipv4: 50}
    rate: 3/h
`
	r := run(t, scenario, "")
	for i, price := range []int{10, 30, 0} {
		a := r.Actors[i]
		if a.Proceeded == 0 || a.Spent != price*a.Proceeded {
			t.Errorf("%s: spent %d on %d codes, want %d each", a.Name, a.Spent, a.Proceeded, price)
		}
		if got, ok := a.Get("spent"); !ok || got != int64(a.Spent) {
			t.Errorf("%s: Get(spent) = %d, %t", a.Name, got, ok)
		}
	}
	low := run(t, scenario, `
flows:
  otp_send:
    rules:
      - {name: spend_captcha, limit: 200}
      - {name: spend_budget, limit: 300}
`)
	voice := low.Actors[1]
	if voice.Spent+low.Actors[0].Spent > 300 || voice.Denied == 0 || voice.Spent != 30*voice.Proceeded {
		t.Errorf("with a budget of 300: sms spent %d, voice %d on %d codes, %d denied", low.Actors[0].Spent, voice.Spent, voice.Proceeded, voice.Denied)
	}
	var b strings.Builder
	if err := WriteText(&b, low); err != nil || !strings.Contains(b.String(), " spent") {
		t.Errorf("the table lacks the spent column (%v):\n%s", err, b.String())
	}
}

// TestRun_GuessesAtOneNumberFromManyAccountsShareItsBudget: checks that
// name the destination whose code they guess at are held to the
// destination's budget (59 a day in the built-in otp_verify), whatever
// accounts and spellings they come under; the same guesses naming no
// destination get each account's budget.
func TestRun_GuessesAtOneNumberFromManyAccountsShareItsBudget(t *testing.T) {
	scenario := `
name: guesses
duration: 24h
actors:
  - name: attacker
    flow: otp_verify
    accounts: {generate: 20}
    guesses_at: ["+44 7400 123456", "+447400123456", "+44-7400-123456"]
    ips: {random_ipv4: 500}
    rate: 360/h
`
	r := run(t, scenario, "")
	if got := r.Actors[0].FailuresMax24h; got != 59 {
		t.Errorf("guesses naming the number: %d failures in 24 h, want 59 (destination_backoff)", got)
	}
	r = run(t, strings.Replace(scenario, `    guesses_at: ["+44 7400 123456", "+447400123456", "+44-7400-123456"]
`, "", 1), "")
	if got := r.Actors[0].FailuresMax24h; got <= 59 {
		t.Errorf("guesses naming no number: %d failures in 24 h, want each account's own budget (far above 59)", got)
	}
	sc, err := ParseScenario("s.yaml", []byte(strings.Replace(scenario, "flow: otp_verify", "flow: login", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc, nil); err == nil || !strings.Contains(err.Error(), "guesses_at") {
		t.Errorf("guesses_at in login (which verifies no codes): err = %v, want one naming guesses_at", err)
	}
}
