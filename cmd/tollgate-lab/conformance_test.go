package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// conform runs `tollgate-lab conformance` with args and a search (nil: none),
// and returns its exit status, stdout and stderr.
func conform(t *testing.T, worst conformance.WorstCase, args ...string) (int, string, string) {
	t.Helper()
	var search func(*config.Config) conformance.WorstCase
	if worst != nil {
		search = func(cfg *config.Config) conformance.WorstCase {
			if cfg == nil || cfg.Policy == nil {
				t.Errorf("the search is made without the policy checked")
			}
			return worst
		}
	}
	var out, errOut bytes.Buffer
	code := conformanceCmd(context.Background(), args, &out, &errOut, search)
	return code, out.String(), errOut.String()
}

// builtInWorst is what the report's search (searchFor: conformanceBudget
// strategies, seed 1) reaches on the built-in policy for each objective:
// the figures of the evidence lines the test below wants.
var builtInWorst = map[string]float64{
	conformance.ObjectiveAccountFailures:    71,
	conformance.ObjectiveDestinationCodes:   10,
	conformance.ObjectiveDestinationGuesses: 54,
}

// searchedOnce is search with each objective of a configuration searched
// once, however many profiles ask: the search is seeded, so a second
// search of an objective would find what the first found, and the
// searches are nearly all that the report costs.
func searchedOnce(search func(*config.Config) conformance.WorstCase) func(*config.Config) conformance.WorstCase {
	type found struct {
		score    float64
		scenario string
		err      error
	}
	return func(cfg *config.Config) conformance.WorstCase {
		worst := search(cfg)
		var mu sync.Mutex
		memo := map[string]found{}
		return func(ctx context.Context, objective string) (float64, string, error) {
			mu.Lock()
			defer mu.Unlock()
			f, ok := memo[objective]
			if !ok {
				f.score, f.scenario, f.err = worst(ctx, objective)
				memo[objective] = f
			}
			return f.score, f.scenario, f.err
		}
	}
}

// TestConformanceCmd_TheBuiltInPolicyPassesBothProfiles: through run's
// dispatch, as a user types it, with the attack search plugged in, each
// objective searched once for both profiles. Under -short the search
// answers builtInWorst without searching, so that the report's reading of
// it is checked in a moment; the full make test runs the search itself,
// which must reach exactly those figures.
func TestConformanceCmd_TheBuiltInPolicyPassesBothProfiles(t *testing.T) {
	search := conformanceSearch
	if testing.Short() {
		search = func(*config.Config) conformance.WorstCase {
			return func(_ context.Context, objective string) (float64, string, error) {
				score, ok := builtInWorst[objective]
				if !ok {
					return 0, "", conformance.ErrNotSearched
				}
				return score, "", nil
			}
		}
	}
	defer func(plugged func(*config.Config) conformance.WorstCase) { conformanceSearch = plugged }(conformanceSearch)
	conformanceSearch = searchedOnce(search)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"conformance"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	for _, want := range []string{
		"NIST SP 800-63B-4 (nist-800-63b-4), policy built-in: pass",
		"OWASP ASVS 5.0, Level 2 (asvs-5.0-l2), policy built-in: pass",
		"pass   3.2.2  ", "login: at most 90 failed checks per account in any 24h",
		"evidence: scenario account-botnet on login: 62 (bound 90, held)",
		"evidence: search account_failures_24h: 71 (bound 90, held)", // the attack search, plugged in
		"evidence: search destination_codes_24h: 10 (bound 16, held)",
		"evidence: search destination_guesses_24h: 54 (bound 59, held)",
		"not the standard's text",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(usage, "tollgate-lab conformance [-profile P]") {
		t.Errorf("tollgate-lab help does not list conformance")
	}
}

// TestConformanceCmd_ALoginAllowing200FailuresADayFailsNamingTheRequirement:
// exit 1, and stderr names the profile, the requirement and why.
func TestConformanceCmd_ALoginAllowing200FailuresADayFailsNamingTheRequirement(t *testing.T) {
	path := writeTemp(t, "lax.yaml", "flows:\n  login:\n    rules:\n      - {name: account_backoff, max: 9m}\n")
	code, stdout, stderr := conform(t, nil, "-profile", "nist-800-63b-4", "-config", path)
	if code != 1 || !strings.Contains(stderr, "nist-800-63b-4 3.2.2 fails: login: at most 201 failed checks per account in any 24 hours, above 100") {
		t.Errorf("exit %d, stderr %q; want 1 naming 3.2.2", code, stderr)
	}
	if !strings.Contains(stdout, "FAIL   3.2.2") || !strings.Contains(stdout, "policy "+path+": FAIL") {
		t.Errorf("stdout does not show the failure:\n%s", stdout)
	}
	// A send flow without a per-destination limit fails ASVS 6.6.3; an
	// otp_verify failing open fails 16.5.3.
	path = writeTemp(t, "nocap.yaml", "flows:\n  otp_verify:\n    fail_mode: open\n  otp_send:\n    rules:\n      - {name: destination_backoff, off: true}\n      - {name: destination_hourly, off: true}\n      - {name: destination_daily, off: true}\n")
	code, _, stderr = conform(t, nil, "-profile", "asvs-5.0-l2", "-config", path)
	if code != 1 || !strings.Contains(stderr, "asvs-5.0-l2 6.6.3 fails: otp_send: no rule on the destination alone") || !strings.Contains(stderr, "asvs-5.0-l2 16.5.3 fails: otp_verify verifies one-time codes and fails open") {
		t.Errorf("exit %d, stderr %q; want 1 naming 6.6.3 and 16.5.3", code, stderr)
	}
}

// conformanceJSON is the documented shape of -json (README, "Conformance"):
// decoding with unknown fields refused catches a renamed or added field.
type conformanceJSON struct {
	Pass    bool `json:"pass"`
	Reports []struct {
		Profile      string `json:"profile"`
		Title        string `json:"title"`
		Policy       string `json:"policy"`
		Pass         bool   `json:"pass"`
		Reading      string `json:"reading"`
		Requirements []struct {
			ID       string   `json:"id"`
			Summary  string   `json:"summary"`
			Status   string   `json:"status"`
			How      []string `json:"how"`
			Failures []string `json:"failures"`
			Caller   string   `json:"caller"`
			Evidence []struct {
				Kind     string   `json:"kind"`
				Name     string   `json:"name"`
				Flow     string   `json:"flow"`
				Ran      bool     `json:"ran"`
				Value    *float64 `json:"value"`
				Bound    *float64 `json:"bound"`
				Held     *bool    `json:"held"`
				Scenario string   `json:"scenario"`
				Note     string   `json:"note"`
			} `json:"evidence"`
		} `json:"requirements"`
	} `json:"reports"`
}

// TestConformanceCmd_JSONHasAStableShape: CI parses this; its shape is a
// contract.
func TestConformanceCmd_JSONHasAStableShape(t *testing.T) {
	code, stdout, stderr := conform(t, nil, "-json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var out conformanceJSON
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode: %v\n%s", err, stdout)
	}
	if !out.Pass || len(out.Reports) != 2 || out.Reports[0].Profile != "nist-800-63b-4" || out.Reports[1].Profile != "asvs-5.0-l2" {
		t.Fatalf("decoded pass %v, %d reports", out.Pass, len(out.Reports))
	}
	r := out.Reports[0].Requirements[0]
	if r.ID != "3.2.2" || r.Status != "pass" || len(r.How) == 0 || r.Failures == nil {
		t.Errorf("first requirement %+v", r)
	}
	ran := false
	for _, e := range r.Evidence {
		if e.Kind == "scenario" && e.Flow == "login" && e.Ran && *e.Value == 62 && *e.Bound == 90 && *e.Held {
			ran = true
		}
	}
	if !ran {
		t.Errorf("3.2.2's evidence lacks the scenario run on login: %+v", r.Evidence)
	}
}

// TestConformanceCmd_MarkdownRendersATable: one row per requirement.
func TestConformanceCmd_MarkdownRendersATable(t *testing.T) {
	code, stdout, _ := conform(t, nil, "-markdown", "-profile", "nist-800-63b-4")
	if code != 0 || !strings.Contains(stdout, "## NIST SP 800-63B-4 (`nist-800-63b-4`): pass") ||
		!strings.Contains(stdout, "| requirement | status | how the policy meets it | evidence |\n|---|---|---|---|\n| **3.2.2** ") {
		t.Errorf("exit %d, output:\n%s", code, stdout)
	}
	if n := strings.Count(stdout, "\n| **"); n != 4 {
		t.Errorf("%d rows, want NIST's 4 requirements", n)
	}
}

// TestConformanceCmd_ShowsTheWorstCaseAndFailsPastTheBound: with a search
// plugged in, its worst case is in the report, and one past the policy's
// figure fails the run.
func TestConformanceCmd_ShowsTheWorstCaseAndFailsPastTheBound(t *testing.T) {
	fake := func(score float64) conformance.WorstCase {
		return func(_ context.Context, objective string) (float64, string, error) {
			if objective == conformance.ObjectiveAccountFailures {
				return score, "name: the fake search's strategy\n", nil
			}
			return 1, "", nil
		}
	}
	code, stdout, _ := conform(t, fake(60), "-profile", "nist-800-63b-4", "-json")
	if code != 0 || !strings.Contains(stdout, `"scenario": "name: the fake search's strategy\n"`) || !strings.Contains(stdout, `"value": 60`) {
		t.Errorf("a worst case within the bound: exit %d, output:\n%s", code, stdout)
	}
	code, stdout, stderr := conform(t, fake(120), "-profile", "nist-800-63b-4")
	if code != 1 || !strings.Contains(stderr, "3.2.2 fails: an adversarial search reached 120 account_failures_24h, past the bound 90") ||
		!strings.Contains(stdout, "evidence: search account_failures_24h: 120 (bound 90, PAST THE BOUND)") {
		t.Errorf("a worst case past the bound: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestConformanceCmd_BadFlagsAreUsageErrors: exit 2 and the usage, never a
// report that could be mistaken for a result.
func TestConformanceCmd_BadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-profile", "nist"}, {"-profile", ""}, {"-nope"}, {"extra"}, {"-json", "-markdown"},
		{"-preset"}, {"-preset", "-profile", "asvs-5.0-l2", "-json"},
		{"-config", "/nonexistent/tollgate.yaml"},
	} {
		code, stdout, stderr := conform(t, nil, args...)
		if code != 2 || stdout != "" || stderr == "" {
			t.Errorf("conformance %q: exit %d, stdout %q, stderr %q; want 2, no output, an error", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := conform(t, nil, "-profile", "nist"); !strings.Contains(stderr, `unknown profile "nist" (the profiles are nist-800-63b-4, asvs-5.0-l2)`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := conform(t, nil, "-h"); code != 0 {
		t.Errorf("-h: exit %d, want 0", code)
	}
}

// TestConformanceCmd_PresetsAreTheirFilesAndPassTheirProfile: what -preset
// prints is the file docs/policy.md points at, within what validate-config
// -strict takes (every flow's bound exact and within NIST's 100: the
// server's TestValidateConfig_ConformancePresetsPassStrict runs it on the
// same files), and it passes its profile.
func TestConformanceCmd_PresetsAreTheirFilesAndPassTheirProfile(t *testing.T) {
	for _, p := range conformance.Profiles() {
		code, preset, stderr := conform(t, nil, "-profile", p, "-preset")
		if code != 0 || !strings.Contains(preset, "flows:") {
			t.Fatalf("-preset %s: exit %d, stderr %q, output %q", p, code, stderr, preset)
		}
		file, err := os.ReadFile(filepath.Join("..", "..", "internal", "lab", "conformance", "presets", p+".yaml"))
		if err != nil || string(file) != preset {
			t.Errorf("-preset %s is not the file docs/policy.md points at (%v)", p, err)
		}
		cfg, err := config.Parse([]byte(preset))
		if err != nil {
			t.Fatalf("preset %s: %v", p, err)
		}
		for _, name := range cfg.Policy.FlowNames() {
			if b, ok := cfg.Policy.Flow(name).FailureBound(); ok && (!b.Exact || b.Max > authguard.NISTMaxFailures) {
				t.Errorf("preset %s: flow %s: %+v, which validate-config -strict fails", p, name, b)
			}
		}
		path := writeTemp(t, p+".yaml", preset)
		if code, stdout, stderr := conform(t, nil, "-profile", p, "-config", path); code != 0 {
			t.Errorf("preset %s under its profile: exit %d\n%s%s", p, code, stdout, stderr)
		}
	}
}
