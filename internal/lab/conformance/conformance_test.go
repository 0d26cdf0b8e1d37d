package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// parse loads a config file's text as serve would, without the environment.
func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// report runs a profile on cfg (nil: the built-in) with a search (nil: none).
func report(t *testing.T, profile string, cfg *config.Config, worst conformance.WorstCase) *conformance.Report {
	t.Helper()
	rep, err := conformance.Run(context.Background(), conformance.Options{Profile: profile, Config: cfg, WorstCase: worst})
	if err != nil {
		t.Fatalf("Run(%s): %v", profile, err)
	}
	return rep
}

// result is the report's result of requirement id.
func result(t *testing.T, rep *conformance.Report, id string) conformance.Result {
	t.Helper()
	for _, r := range rep.Requirements {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("%s has no requirement %s", rep.Profile, id)
	return conformance.Result{}
}

// failed lists the ids of the requirements that fail.
func failed(rep *conformance.Report) []string {
	var ids []string
	for _, r := range rep.Requirements {
		if r.Status == conformance.Fail {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// wantOnlyFailures checks that exactly the requirements ids fail, each
// with a failure that says want, and that the report does not pass.
func wantOnlyFailures(t *testing.T, rep *conformance.Report, want string, ids ...string) {
	t.Helper()
	if got := strings.Join(failed(rep), ","); got != strings.Join(ids, ",") {
		t.Errorf("%s: failing requirements %q, want %q", rep.Profile, got, strings.Join(ids, ","))
	}
	if rep.Pass {
		t.Errorf("%s: the report passes", rep.Profile)
	}
	for _, id := range ids {
		if r := result(t, rep, id); !strings.Contains(strings.Join(r.Failures, "\n"), want) {
			t.Errorf("%s %s: failures %q, want one saying %q", rep.Profile, id, r.Failures, want)
		}
	}
}

// TestConformance_TheBuiltInPolicyMeetsBothProfiles: the shipped policy is
// what README promises an auditor; every requirement passes or is the
// caller's, and the figures are the policy's own (90, 81, 10, 59).
func TestConformance_TheBuiltInPolicyMeetsBothProfiles(t *testing.T) {
	for _, p := range conformance.Profiles() {
		rep := report(t, p, nil, nil)
		if !rep.Pass || len(failed(rep)) > 0 {
			t.Errorf("%s: pass %v, failing %v", p, rep.Pass, failed(rep))
		}
		if rep.Policy != "built-in" || rep.Reading != conformance.Reading || rep.Title == "" {
			t.Errorf("%s: policy %q, title %q, reading %q", p, rep.Policy, rep.Title, rep.Reading)
		}
		for _, r := range rep.Requirements {
			if len(r.How) == 0 || r.Summary == "" {
				t.Errorf("%s %s: no how or no summary", p, r.ID)
			}
			if r.Status == conformance.Caller && r.Caller == "" {
				t.Errorf("%s %s: the caller's, and not said what the caller does", p, r.ID)
			}
		}
	}
	nist := report(t, conformance.ProfileNIST, nil, nil)
	for id, want := range map[string]string{
		"3.2.2":          "login: at most 90 failed checks per account in any 24h",
		"3.2.2-new-code": "per destination (destination_backoff, every client: 59 in any 24h)",
		"3.1.3-attempts": "otp_verify: at most 81 failed checks per account in any 24h",
	} {
		if how := strings.Join(result(t, nist, id).How, "\n"); !strings.Contains(how, want) {
			t.Errorf("%s how = %q, want %q", id, how, want)
		}
	}
	asvs := report(t, conformance.ProfileASVS, nil, nil)
	if how := strings.Join(result(t, asvs, "6.6.3").How, "\n"); !strings.Contains(how, "otp_send: at most 10 codes to one destination in any 24h") {
		t.Errorf("6.6.3 how = %q, want the 10 a day of destination_daily", how)
	}
	if r := result(t, asvs, "16.3.1"); r.Status != conformance.Caller {
		t.Errorf("16.3.1 without a decision log: %s, want caller", r.Status)
	}
}

// TestNIST_ALoginAllowing200FailuresADayFails322: a 9-minute cap lets 201
// failed checks a day through; 3.2.2 fails naming the flow and its figure,
// and the patient botnet run on the policy shows it (173 > 100).
func TestNIST_ALoginAllowing200FailuresADayFails322(t *testing.T) {
	cfg := parse(t, "flows:\n  login:\n    rules:\n      - {name: account_backoff, max: 9m}\n")
	rep := report(t, conformance.ProfileNIST, cfg, nil)
	wantOnlyFailures(t, rep, "login: at most 201 failed checks per account in any 24 hours, above 100", "3.2.2")
	r := result(t, rep, "3.2.2")
	found := false
	for _, e := range r.Evidence {
		if e.Kind == conformance.EvidenceScenario && e.Flow == "login" && e.Ran {
			found = true
			if *e.Value != 173 || *e.Bound != 100 || *e.Held {
				t.Errorf("scenario on login: value %v, bound %v, held %v; want 173, 100, false", *e.Value, *e.Bound, *e.Held)
			}
		}
	}
	if !found {
		t.Errorf("no scenario ran on login: %+v", r.Evidence)
	}
	// ASVS sets no number: the same policy still defends against brute force.
	if rep := report(t, conformance.ProfileASVS, cfg, nil); len(failed(rep)) > 0 {
		t.Errorf("ASVS on a 201-a-day login: failing %v", failed(rep))
	}
}

// TestNIST_ALoginWithoutAnAccountRuleIsUnbounded: turning account_backoff
// off leaves the device rule only for known devices; everyone else is
// unbounded, and both profiles say so.
func TestNIST_ALoginWithoutAnAccountRuleIsUnbounded(t *testing.T) {
	cfg := parse(t, "flows:\n  login:\n    rules:\n      - {name: account_backoff, off: true}\n")
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, cfg, nil), "login: no backoff rule counts the account", "3.2.2")
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "login: no backoff rule counts the account", "6.3.1")
}

// TestASVS_ASendFlowWithoutAPerDestinationLimitFails663: with the three
// destination rules off, nothing caps the codes one phone gets; 6.6.3
// fails naming otp_send.
func TestASVS_ASendFlowWithoutAPerDestinationLimitFails663(t *testing.T) {
	cfg := parse(t, `flows:
  otp_send:
    rules:
      - {name: destination_backoff, off: true}
      - {name: destination_hourly, off: true}
      - {name: destination_daily, off: true}
`)
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "otp_send: no rule on the destination alone", "6.6.3")
	if rep := report(t, conformance.ProfileNIST, cfg, nil); !rep.Pass {
		t.Errorf("NIST does not limit sends, yet fails %v", failed(rep))
	}
}

// TestASVS_ADestinationLimitAnAttackerCanSolveOrAvoidIsNoCap: a CAPTCHA
// past the limit, a rule counting unknown clients only (an attacker owns
// devices of its own accounts), and a price-cost rule (a free channel goes
// uncounted) cap nothing.
func TestASVS_ADestinationLimitAnAttackerCanSolveOrAvoidIsNoCap(t *testing.T) {
	for name, rule := range map[string]string{
		"captcha": "{name: dst_cap, subject: destination, clients: all, algorithm: sliding_log, counts: proceed, window: 24h, limit: 10, past: captcha}",
		"unknown": "{name: dst_cap, subject: destination, clients: unknown, algorithm: sliding_log, counts: proceed, window: 24h, limit: 10}",
		"price":   "{name: dst_cap, subject: destination, clients: all, algorithm: fixed_window, counts: proceed, cost: price, window: 24h, limit: 100}",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := parse(t, `flows:
  otp_send:
    rules:
      - {name: destination_backoff, off: true}
      - {name: destination_hourly, off: true}
      - {name: destination_daily, off: true}
      - `+rule+"\n")
			wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "otp_send: no rule on the destination alone", "6.6.3")
		})
	}
}

// TestFailMode_AnOTPVerifyFlowThatFailsOpenFails: otp_verify failing open
// gives a 6-digit code its bound once per instance during an outage; ASVS
// 16.5.3 and NIST 3.1.3 fail naming it, login failing open does not.
func TestFailMode_AnOTPVerifyFlowThatFailsOpenFails(t *testing.T) {
	cfg := parse(t, "flows:\n  otp_verify:\n    fail_mode: open\n")
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "otp_verify verifies one-time codes and fails open", "16.5.3")
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, cfg, nil), "otp_verify fails open", "3.1.3-attempts")
	if rep := report(t, conformance.ProfileASVS, parse(t, "flows:\n  login:\n    fail_mode: closed\n  otp_send:\n    fail_mode: closed\n"), nil); !rep.Pass {
		t.Errorf("login and otp_send failing closed: failing %v", failed(rep))
	}
}

// TestNIST_ARepeatedWrongCodeMustCountAgain: a same_password_window on
// otp_verify lets a value wrong against one code be tried, uncounted,
// against the next.
func TestNIST_ARepeatedWrongCodeMustCountAgain(t *testing.T) {
	cfg := parse(t, "flows:\n  otp_verify:\n    same_password_window: 1h\n")
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, cfg, nil), "otp_verify: same_password_window is 1h", "3.1.3-attempts")
}

// TestNIST_GuessesAtOnePhoneMustNotStartAfreshUnderAnotherAccount: without
// otp_verify's destination rule, a new code under another account is a
// fresh count; 3.2.2-new-code and 6.6.3 fail.
func TestNIST_GuessesAtOnePhoneMustNotStartAfreshUnderAnotherAccount(t *testing.T) {
	cfg := parse(t, "flows:\n  otp_verify:\n    rules:\n      - {name: destination_backoff, off: true}\n")
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, cfg, nil), "otp_verify: no backoff rule on the destination counts every client", "3.2.2-new-code")
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "otp_verify: no backoff rule on the destination counts every client", "6.6.3")
}

// TestConformance_AShadowFlowEnforcesNothing: a flow in shadow mode answers
// proceed to everything; its limits do not count for any requirement.
func TestConformance_AShadowFlowEnforcesNothing(t *testing.T) {
	cfg := parse(t, "flows:\n  login:\n    mode: shadow\n")
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, cfg, nil), "login is in shadow mode", "3.2.2")
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "login is in shadow mode", "6.3.1", "2.4.1")
}

// TestASVS_SprayingAndStuffingNeedTheirRules: a login without the
// password_spray rule does not see one password sprayed from many
// addresses; one without IP rules does not see stuffing from one address.
func TestASVS_SprayingAndStuffingNeedTheirRules(t *testing.T) {
	cfg := parse(t, "flows:\n  login:\n    rules:\n      - {name: password_spray, off: true}\n")
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "login: no rule counts a password fingerprint", "6.3.1")
	cfg = parse(t, `flows:
  login:
    rules:
      - {name: ip_rate, off: true}
      - {name: ip_spray, off: true}
      - {name: ip_spray_56, off: true}
      - {name: ip_spray_48, off: true}
      - {name: ip_failures, off: true}
`)
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, cfg, nil), "login: no rule counts the client's address", "6.3.1")
	cfg = parse(t, `flows:
  login:
    rules:
      - {name: ip_spray, off: true}
      - {name: ip_spray_56, off: true}
      - {name: ip_spray_48, off: true}
      - {name: ip_failures, off: true}
      - {name: password_spray, off: true}
`)
	rep := report(t, conformance.ProfileASVS, cfg, nil)
	if r := result(t, rep, "2.4.1"); r.Status != conformance.Fail || !strings.Contains(strings.Join(r.Failures, "\n"), "login: no rule asks for a CAPTCHA") {
		t.Errorf("2.4.1 on a login without CAPTCHA rules: %s %q", r.Status, r.Failures)
	}
}

// TestConformance_ATenantsFlowsAreChecked: a tenant's own login above 100
// fails 3.2.2 under the tenant's name, though the file's login passes.
func TestConformance_ATenantsFlowsAreChecked(t *testing.T) {
	cfg := parse(t, "flows: {}\n")
	lax := parse(t, "flows:\n  login:\n    rules:\n      - {name: account_backoff, max: 9m}\n")
	cfg.TenantPolicies = map[string]*authguard.Policy{"bank": lax.Policy}
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, cfg, nil), "tenant bank: login: at most 201", "3.2.2")
}

// TestSearch_AWorstCasePastTheBoundFails: the search's worst case is shown
// with its scenario; one past the policy's own figure fails the
// requirement, one within it does not; each objective is asked once.
func TestSearch_AWorstCasePastTheBoundFails(t *testing.T) {
	asked := map[string]int{}
	hook := func(accountFailures float64) conformance.WorstCase {
		return func(_ context.Context, objective string) (float64, string, error) {
			asked[objective]++
			if objective == conformance.ObjectiveAccountFailures {
				return accountFailures, "name: found by the fake search\n", nil
			}
			return 5, "", nil
		}
	}
	rep := report(t, conformance.ProfileNIST, nil, hook(75))
	if !rep.Pass {
		t.Fatalf("a worst case of 75 against 90: failing %v", failed(rep))
	}
	ev := evidenceOf(t, result(t, rep, "3.2.2"), conformance.EvidenceSearch, conformance.ObjectiveAccountFailures)
	if !ev.Ran || *ev.Value != 75 || *ev.Bound != 90 || !*ev.Held || ev.Scenario != "name: found by the fake search\n" {
		t.Errorf("evidence %+v; want ran, 75 of 90, held, with its scenario", ev)
	}
	if asked[conformance.ObjectiveAccountFailures] != 1 {
		t.Errorf("account_failures_24h asked %d times in one report, want once", asked[conformance.ObjectiveAccountFailures])
	}

	rep = report(t, conformance.ProfileNIST, nil, hook(95)) // under NIST's 100, over the policy's own 90
	wantOnlyFailures(t, rep, "an adversarial search reached 95 account_failures_24h, past the bound 90", "3.2.2")
	// Guesses at one phone's codes past otp_verify's destination_backoff
	// (59) fail the requirements on code guesses, and only those.
	guesses := func(_ context.Context, objective string) (float64, string, error) {
		if objective == conformance.ObjectiveDestinationGuesses {
			return 60, "", nil
		}
		return 1, "", nil
	}
	wantOnlyFailures(t, report(t, conformance.ProfileNIST, nil, guesses), "reached 60 destination_guesses_24h, past the bound 59", "3.2.2-new-code", "3.1.3-attempts")
	wantOnlyFailures(t, report(t, conformance.ProfileASVS, nil, guesses), "reached 60 destination_guesses_24h, past the bound 59", "6.6.3")
	var text bytes.Buffer
	if err := conformance.WriteText(&text, []*conformance.Report{rep}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "evidence: search account_failures_24h: 95 (bound 90, PAST THE BOUND)") {
		t.Errorf("the text report does not show the worst case:\n%s", text.String())
	}
}

// TestSearch_WithoutASearchTheReportSaysNotSearched: no hook is no claim.
func TestSearch_WithoutASearchTheReportSaysNotSearched(t *testing.T) {
	ev := evidenceOf(t, result(t, report(t, conformance.ProfileASVS, nil, nil), "6.6.3"), conformance.EvidenceSearch, conformance.ObjectiveDestinationCodes)
	if ev.Ran || ev.Value != nil || !strings.Contains(ev.Note, "not searched") {
		t.Errorf("evidence %+v; want not run and \"not searched\"", ev)
	}
}

// TestSearch_AFailedSearchMakesNoReport: a report with a hole where the
// search should be would read as a pass. A search that says it did not look
// (ErrNotSearched) is reported as not searched.
func TestSearch_AFailedSearchMakesNoReport(t *testing.T) {
	boom := errors.New("search crashed")
	_, err := conformance.Run(context.Background(), conformance.Options{Profile: conformance.ProfileNIST,
		WorstCase: func(context.Context, string) (float64, string, error) { return 0, "", boom }})
	if !errors.Is(err, boom) {
		t.Errorf("Run = %v, want the search's error", err)
	}
	notHere := fmt.Errorf("the search has no objective %w", conformance.ErrNotSearched)
	rep, err := conformance.Run(context.Background(), conformance.Options{Profile: conformance.ProfileNIST,
		WorstCase: func(context.Context, string) (float64, string, error) { return 0, "", notHere }})
	if err != nil || !rep.Pass {
		t.Fatalf("a search that does not know the objectives: %v, %+v", err, rep)
	}
	if ev := evidenceOf(t, result(t, rep, "3.2.2"), conformance.EvidenceSearch, conformance.ObjectiveAccountFailures); ev.Ran || ev.Note != notHere.Error() {
		t.Errorf("evidence %+v; want not run, noting %q", ev, notHere)
	}
	if _, err := conformance.Run(context.Background(), conformance.Options{Profile: "nist"}); !errors.Is(err, conformance.ErrUnknownProfile) {
		t.Errorf("Run(nist) = %v, want ErrUnknownProfile", err)
	}
}

func evidenceOf(t *testing.T, r conformance.Result, kind, name string) conformance.Evidence {
	t.Helper()
	for _, e := range r.Evidence {
		if e.Kind == kind && e.Name == name {
			return e
		}
	}
	t.Fatalf("%s has no %s evidence %s: %+v", r.ID, kind, name, r.Evidence)
	return conformance.Evidence{}
}

// TestPresets_MeetTheirProfileWithLessFriction: each preset loads as a
// config file, passes its own profile (and NIST's 100), and gives real
// users more free attempts than the built-in policy.
func TestPresets_MeetTheirProfileWithLessFriction(t *testing.T) {
	for _, p := range conformance.Profiles() {
		data, err := conformance.Preset(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg := parse(t, string(data))
		for _, q := range conformance.Profiles() {
			if rep := report(t, q, cfg, nil); !rep.Pass {
				t.Errorf("preset %s under %s: failing %v", p, q, failed(rep))
			}
		}
		login, builtIn := cfg.Policy.Flow("login"), config.DefaultPolicy().Flow("login")
		if got, was := login.Rule("account_backoff").Backoff.Free, builtIn.Rule("account_backoff").Backoff.Free; got <= was {
			t.Errorf("preset %s: login's free attempts %d, not more than the built-in %d", p, got, was)
		}
		if b, ok := login.FailureBound(); !ok || b.Max > conformance.NISTMaxFailures {
			t.Errorf("preset %s: login's bound %+v", p, b)
		}
	}
	asvs, _ := conformance.Preset(conformance.ProfileASVS)
	if r := result(t, report(t, conformance.ProfileASVS, parse(t, string(asvs)), nil), "16.3.1"); r.Status != conformance.Pass {
		t.Errorf("ASVS preset's 16.3.1: %s, want pass (it sets decision_log)", r.Status)
	}
	if _, err := conformance.Preset("nist"); !errors.Is(err, conformance.ErrUnknownProfile) {
		t.Errorf("Preset(nist) = %v, want ErrUnknownProfile", err)
	}
}

// TestJSON_RoundTripsWithAStableShape: the JSON form decodes, field for
// field, into a struct of the documented shape (unknown fields refused).
func TestJSON_RoundTripsWithAStableShape(t *testing.T) {
	var buf bytes.Buffer
	reps := []*conformance.Report{report(t, conformance.ProfileNIST, nil, nil), report(t, conformance.ProfileASVS, nil, nil)}
	if err := conformance.WriteJSON(&buf, reps); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	var out conformance.Output
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !out.Pass || len(out.Reports) != 2 || out.Reports[0].Profile != conformance.ProfileNIST || out.Reports[1].Requirements[0].ID != "6.1.1" {
		t.Errorf("decoded %+v", out)
	}
}

// TestMarkdown_OneRowPerRequirementAndNoBrokenCells: a pipe in a value
// would split a cell and shift every column after it.
func TestMarkdown_OneRowPerRequirementAndNoBrokenCells(t *testing.T) {
	rep := report(t, conformance.ProfileASVS, nil, nil)
	rep.Policy = "odd|name.yaml"
	var buf bytes.Buffer
	if err := conformance.WriteMarkdown(&buf, []*conformance.Report{rep}); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(line, "| **") {
			continue
		}
		rows++
		if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != 5 {
			t.Errorf("row with %d cell separators, want 5: %s", n, line)
		}
	}
	if rows != len(rep.Requirements) || !strings.Contains(buf.String(), "| requirement | status | how the policy meets it | evidence |") {
		t.Errorf("%d rows for %d requirements:\n%s", rows, len(rep.Requirements), buf.String())
	}
	if !strings.Contains(buf.String(), `odd\|name.yaml`) {
		t.Errorf("the policy's pipe is not escaped")
	}
}
