package simulate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// The attacker behaviours the attack search draws from: report tokens and
// replays, successes on accounts it owns, CAPTCHAs solved at a price, a
// burst at one instant, several instances on one store.

func TestParseScenario_BehaviourErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"report_token unknown", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    report_token: stolen", 1),
			`line 8: actors[0].report_token: invalid report_token "stolen" (use own, none, foreign or skip)`},
		{"report_replays too many", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    report_replays: 11", 1),
			"line 8: actors[0].report_replays: must be between 0 and 10, not 11"},
		{"report_replays negative", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    report_replays: -1", 1),
			"line 8: actors[0].report_replays: must be between 0 and 10, not -1"},
		{"report_token on a send actor", strings.Replace(sendBase, "rate: 1/s", "rate: 1/s\n    report_token: none", 1),
			"line 8: actors[0].report_token: means nothing for a send actor"},
		{"own_success without every", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    own_success: {account: me@example.net}", 1),
			"line 8: actors[0].own_success: every is required"},
		{"own_success bad account", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    own_success: {account: \" \", every: 2}", 1),
			`line 8: actors[0].own_success.account: invalid account " "`},
		{"own_success every zero", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    own_success: {account: me@example.net, every: 0}", 1),
			"line 8: actors[0].own_success.every: must be between 1 and 100000, not 0"},
		{"own_success's token and device_token", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    device_token: true\n    own_success: {account: me@example.net, every: 2, device_token: true}", 1),
			"line 9: actors[0].own_success: set only one of device_token: true, device_token_from, mints_device_token_in and own_success.device_token: true (device_token is set)"},
		{"solves_captcha over 1", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    solves_captcha: 1.5", 1),
			`line 8: actors[0].solves_captcha: want true, false or the share of CAPTCHAs solved, from 0 to 1, not "1.5"`},
		{"solves_captcha text", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    solves_captcha: often", 1),
			`line 8: actors[0].solves_captcha: want true, false or the share`},
		{"second_phase after stop", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    stop: 30m\n    second_phase: {at: 30m, logins: 5}", 1),
			"line 9: actors[0].second_phase.at: 30m0s is not from start (0s) to before stop (30m0s)"},
		{"second_phase of an every actor", strings.Replace(base, "rate: 1/s", "every: 1h\n    second_phase: {at: 1m, logins: 5}", 1),
			"line 8: actors[0].second_phase: goes with rate"},
		{"second_phase without logins", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    second_phase: {at: 1m}", 1),
			"line 8: actors[0].second_phase: logins is required"},
		{"second_phase too many logins", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    second_phase: {at: 1m, logins: 10001}", 1),
			"line 8: actors[0].second_phase.logins: must be between 1 and 10000, not 10001"},
		{"instance beyond instances", strings.Replace(base, "rate: 1/s", "rate: 1/s\n    instance: 2", 1),
			"line 8: actors[0].instance: 2 is more than the scenario's instances (1)"},
		{"instances zero", strings.Replace(base, "duration: 1h", "duration: 1h\ninstances: 0", 1),
			"line 3: instances: must be between 1 and 8, not 0"},
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

// sendBase is a valid send actor for the error cases above.
const sendBase = `name: test
duration: 1h
actors:
  - name: bomber
    destinations: ["+44 7400 123456"]
    ips: [192.0.2.1]
    rate: 1/s
expect:
  bomber.proceeded: "<= 100"
`

// guesser attacks one account in login at 120 a minute for an hour,
// with what extra adds to the actor.
func guesser(extra string) string {
	return `
name: guesser
duration: 1h
actors:
  - name: attacker
    accounts: [victim@example.com]
    ips: [192.0.2.1]
    rate: 120/m
    obeys_delay: true
` + extra
}

// TestRun_ReplayedFailureReportChangesNoCounter: sending each failure
// report four times buys the attacker nothing and costs it nothing: each
// attempt settles once, so the counters are those of reporting once.
func TestRun_ReplayedFailureReportChangesNoCounter(t *testing.T) {
	once := run(t, guesser(""), "").Actors[0]
	r, calls := record(t, guesser("    report_replays: 3\n"), "")
	replayed := r.Actors[0]
	if once.Delayed == 0 || once.FailuresMax24h == 0 {
		t.Fatalf("the account counter never delayed the attacker: %+v", once)
	}
	checkCounters(t, replayed, once)
	reports := 0
	var last *authguard.ReportRequest
	for _, c := range calls {
		if c.report == nil {
			continue
		}
		if reports%4 != 0 && *c.report != *last {
			t.Fatalf("replay %d differs from its report: %+v, %+v", reports%4, c.report, last)
		}
		reports++
		last = c.report
	}
	if reports != 4*once.FailuresMax24h {
		t.Errorf("%d reports, want 4 for each of %d failures", reports, once.FailuresMax24h)
	}
}

// TestRun_ReportWithoutTokenCountsItsFailureOnItsOwn: a failure reported
// with no attempt token settles nothing and counts on its own, so an
// attacker who drops the token is delayed sooner, never later.
func TestRun_ReportWithoutTokenCountsItsFailureOnItsOwn(t *testing.T) {
	own := run(t, guesser(""), "").Actors[0]
	r, calls := record(t, guesser("    report_token: none\n"), "")
	none := r.Actors[0]
	for _, c := range calls {
		if c.report != nil && c.report.Attempt != "" {
			t.Fatalf("a report carries a token: %+v", c.report)
		}
	}
	if none.Proceeded >= own.Proceeded || none.FailuresMax24h >= own.FailuresMax24h {
		t.Errorf("without tokens %d checks proceeded (%d failures), with them %d (%d): dropping the token must not buy guesses",
			none.Proceeded, none.FailuresMax24h, own.Proceeded, own.FailuresMax24h)
	}
}

// TestRun_ForeignTokenIsAnotherChecksAndAnotherAccountsIsRefused: with
// report_token: foreign each report carries the token of the actor's
// previous check that proceeded; the engine refuses another account's
// (counted in reports_refused) and the guesses stay within the account's
// own budget.
func TestRun_ForeignTokenIsAnotherChecksAndAnotherAccountsIsRefused(t *testing.T) {
	sc := strings.Replace(guesser("    report_token: foreign\n"), "[victim@example.com]", "[victim@example.com, victim@example.com, other@example.com]", 1)
	r, calls := record(t, sc, "")
	a := r.Actors[0]
	// Each proceed is followed by its report: the report carries the
	// token of the proceed before that one.
	var before, latest string
	reports := 0
	for _, c := range calls {
		switch {
		case c.check != nil && c.answer.Action == authguard.Proceed:
			before, latest = latest, c.answer.Attempt
		case c.report != nil:
			if c.report.Attempt != before {
				t.Fatalf("report %d carries %q, want the previous proceed's %q", reports, c.report.Attempt, before)
			}
			reports++
		}
	}
	if a.ReportsRefused == 0 || a.ReportsRefused >= reports-1 {
		t.Errorf("%d of %d reports refused: want those that carried the other account's token, not the victim's own earlier ones", a.ReportsRefused, reports)
	}
	solo := run(t, guesser(""), "").Actors[0]
	if a.FailuresMax24h > 2*solo.FailuresMax24h {
		t.Errorf("foreign tokens got %d failures on two accounts, one account alone gets %d", a.FailuresMax24h, solo.FailuresMax24h)
	}
}

// TestRun_SkippedReportsStillCountAsGuesses: an attacker that never
// reports leaves each check's charge pending; it sends no report, yet
// each wrong password a check let through is counted, and the pending
// charges hold it to no more than reporting does.
func TestRun_SkippedReportsStillCountAsGuesses(t *testing.T) {
	own := run(t, guesser(""), "").Actors[0]
	r, calls := record(t, guesser("    report_token: skip\n"), "")
	skip := r.Actors[0]
	for _, c := range calls {
		if c.report != nil {
			t.Fatalf("a report went: %+v", c.report)
		}
	}
	if skip.FailuresMax24h != skip.Proceeded {
		t.Errorf("%d failures counted for %d proceeds: each proceed is a guess", skip.FailuresMax24h, skip.Proceeded)
	}
	if skip.FailuresMax24h > own.FailuresMax24h {
		t.Errorf("skipping reports got %d guesses, reporting %d: an unsettled charge must count", skip.FailuresMax24h, own.FailuresMax24h)
	}
}

// TestRun_OwnSuccessLogsInToTheAttackersAccount: own_success logs in to
// the attacker's own account before every N-th attempt, reports the
// success with its own token, and sends the device token it earns with
// the attempts on the victim, which do not get past the victim's budget
// for it.
func TestRun_OwnSuccessLogsInToTheAttackersAccount(t *testing.T) {
	plain := run(t, strings.Replace(guesser(""), "duration: 1h", "duration: 24h", 1), "").Actors[0]
	sc := strings.Replace(guesser("    own_success: {account: me@example.net, every: 3, device_token: true}\n"), "duration: 1h", "duration: 24h", 1)
	r, calls := record(t, sc, "")
	a := r.Actors[0]
	var ownChecks, ownReports, victimChecks, withToken int
	var ownToken string
	for i, c := range calls {
		switch {
		case c.check != nil && c.check.Account == "me@example.net":
			ownChecks++
			if victimChecks%3 != 0 {
				t.Fatalf("call %d: an own login after %d attempts, want one before every 3rd", i, victimChecks)
			}
		case c.report != nil && c.report.Account == "me@example.net":
			ownReports++
			if c.report.Outcome != authguard.Success || c.report.Attempt == "" {
				t.Fatalf("call %d: own report %+v, want a success with its token", i, c.report)
			}
			ownToken = c.answer.DeviceToken
		case c.check != nil:
			victimChecks++
			if c.check.DeviceToken != "" {
				if c.check.DeviceToken != ownToken {
					t.Fatalf("call %d: the victim's check carries a token that is not the last own success's", i)
				}
				withToken++
			}
		}
	}
	if ownChecks == 0 || ownChecks != a.OwnLogins || ownReports != a.OwnLogins-a.OwnRefused || withToken == 0 {
		t.Errorf("%d own checks, %d own reports, %d victim checks with its token; counters %+v", ownChecks, ownReports, withToken, a)
	}
	if victimChecks != a.Attempts || (victimChecks+2)/3 != ownChecks {
		t.Errorf("%d victim checks and %d own logins, want one before every 3rd attempt (attempts %d)", victimChecks, ownChecks, a.Attempts)
	}
	if a.FailuresMax24h > plain.FailuresMax24h || a.FailuresMax24h > 90 {
		t.Errorf("with its own successes the attacker made %d guesses, without %d: successes on its own account must not buy guesses on the victim",
			a.FailuresMax24h, plain.FailuresMax24h)
	}
}

// TestRun_SolvesCaptchaShareSolvesEveryKth: solves_captcha: 0.5 solves
// the 2nd, 4th… CAPTCHA the actor is asked, and captcha_solved counts
// them, as the checks sent with a solved CAPTCHA.
func TestRun_SolvesCaptchaShareSolvesEveryKth(t *testing.T) {
	policy := `
flows:
  login:
    rules:
      - {name: ip_spray, windows: [{window: 1h, limit: 1}]}
`
	sc := `
name: captcha share
duration: 20s
actors:
  - name: a
    accounts: {generate: 50}
    ips: [192.0.2.1]
    rate: 1/s
    solves_captcha: %s
`
	r, calls := record(t, strings.Replace(sc, "%s", "0.5", 1), policy)
	a := r.Actors[0]
	asked, solved := 0, 0
	for i, c := range calls {
		if c.check == nil {
			continue
		}
		if c.check.CaptchaSolved {
			solved++
			if asked%2 != 0 {
				t.Fatalf("call %d: solved CAPTCHA %d, want every 2nd", i, asked)
			}
		}
		if c.answer.Action == authguard.Captcha && !c.check.CaptchaSolved {
			asked++
		}
	}
	if asked < 10 || solved != asked/2 || a.CaptchaSolved != solved {
		t.Errorf("asked %d CAPTCHAs, solved %d, captcha_solved %d: want half of them", asked, solved, a.CaptchaSolved)
	}
	all := run(t, strings.Replace(sc, "%s", "true", 1), policy).Actors[0]
	none := run(t, strings.Replace(sc, "%s", "0", 1), policy).Actors[0]
	if none.CaptchaSolved != 0 || all.CaptchaSolved <= a.CaptchaSolved || a.Proceeded <= none.Proceeded || a.Proceeded >= all.Proceeded {
		t.Errorf("solving none, half and all: %d, %d and %d solved, %d, %d and %d proceeded", none.CaptchaSolved, a.CaptchaSolved, all.CaptchaSolved,
			none.Proceeded, a.Proceeded, all.Proceeded)
	}
}

// TestRun_SecondPhaseIsABurstAtOneInstantInOrder: second_phase starts its
// logins at one virtual instant, one after another, each the script's
// next account; the script goes on as before.
func TestRun_SecondPhaseIsABurstAtOneInstantInOrder(t *testing.T) {
	sc := `
name: phase
duration: 1h
actors:
  - name: a
    accounts: [a@example.com, b@example.com, c@example.com, d@example.com, e@example.com, f@example.com, g@example.com]
    ips: [192.0.2.1]
    rate: 2/h
    second_phase: {at: 10m, logins: 5}
`
	var order []string
	r, runs := execRun(t, sc, "", func(e engineAPI) engineAPI {
		return checkOrder{e, &order}
	})
	want := "a b c d e f g"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("checks went to %s, want %s (the script's first at 0, the phase's five at 10m, the script's second at 30m)", got, want)
	}
	if a := r.Actors[0]; a.Attempts != 7 {
		t.Errorf("%d attempts, want 7", a.Attempts)
	}
	pts := runs[0].series
	if len(pts) != 3 || pts[1].at != 10*time.Minute || pts[1].n != 6 {
		t.Errorf("series %+v, want the phase's five proceeds at 10m in one point", pts)
	}
}

// checkOrder keeps the account of each check.
type checkOrder struct {
	engineAPI
	order *[]string
}

func (c checkOrder) Check(ctx context.Context, req authguard.CheckRequest) (authguard.Verdict, error) {
	*c.order = append(*c.order, strings.TrimSuffix(req.Account, "@example.com"))
	return c.engineAPI.Check(ctx, req)
}

// TestRun_TwoInstancesShareOneStore: two attackers of one account, each
// on its own engine on the one store, share the account's budget: two
// instances do not double it.
func TestRun_TwoInstancesShareOneStore(t *testing.T) {
	sc := `
name: instances
duration: 24h
instances: 2
actors:
  - name: a
    accounts: [victim@example.com]
    ips: {random_ipv4: 500}
    rate: 360/h
  - name: b
    instance: 2
    accounts: [VICTIM@example.com]
    ips: {random_ipv4: 500}
    rate: 360/h
expect:
  a+b.failures_max_24h: "<= 90"
`
	r, runs := execRun(t, sc, "", nil)
	if runs[0].engine == runs[1].engine {
		t.Fatal("both actors call one engine")
	}
	if !r.Passed() {
		t.Errorf("two instances let %d + %d failures through, more than the account's 90", r.Actors[0].FailuresMax24h, r.Actors[1].FailuresMax24h)
	}
	if r.Actors[0].FailuresMax24h == 0 || r.Actors[1].FailuresMax24h == 0 {
		t.Errorf("an instance made no guess: %+v", r.Actors)
	}
}

// TestRun_TenantsAreSeparateKeySpaces: two bombers of one number in one
// tenant share its 10 codes a day; in two tenants each tenant counts its
// own, so the number gets each tenant's 10 (tenants are separate key
// spaces, with secrets of their own).
func TestRun_TenantsAreSeparateKeySpaces(t *testing.T) {
	sc := `
name: tenants
duration: 24h
actors:
  - name: a
    tenant: shop
    destinations: ["+44 7400 123456"]
    ips: {random_ipv4: 100}
    rate: 60/h
  - name: b
    tenant: %s
    destinations: ["+447400123456"]
    ips: {random_ipv4: 100}
    rate: 60/h
`
	var calls []call
	rec := func(tenant string) *Result {
		r, c := record(t, strings.Replace(sc, "%s", tenant, 1), "")
		calls = c
		return r
	}
	same := rec("shop")
	for _, c := range calls {
		if c.send.Tenant != "shop" {
			t.Fatalf("a send names tenant %q, want shop", c.send.Tenant)
		}
	}
	if got := same.Actors[0].Proceeded + same.Actors[1].Proceeded; got != 10 {
		t.Errorf("one tenant sent %d codes to the number, want its 10", got)
	}
	apart := rec("bank")
	if a, b := apart.Actors[0].Proceeded, apart.Actors[1].Proceeded; a != 10 || b != 10 {
		t.Errorf("two tenants sent %d and %d codes, want 10 each: each counts its own", a, b)
	}
	if _, err := ParseScenario("s.yaml", []byte(strings.Replace(sc, "%s", "Bank", 1))); err == nil ||
		!strings.Contains(err.Error(), `line 11: actors[1].tenant: invalid tenant "Bank"`) {
		t.Errorf("a tenant in capitals: %v", err)
	}
}
