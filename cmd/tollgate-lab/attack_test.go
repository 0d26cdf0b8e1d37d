package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// attackRun runs `tollgate-lab attack` with args and returns its exit status,
// stdout and stderr.
func attackRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"attack"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// weakConfig lets 200 failures through on an account before any delay and
// has no device counter: far above the built-in policy's 90 a day.
const weakConfig = "flows:\n  login:\n    rules:\n      - {name: account_backoff, free: 200}\n      - {name: device_backoff, off: true}\n"

// TestAttack_WeakenedConfigIsBeatenAndSimulateReproducesIt: attack exits 1
// when a strategy beats the bound claimed for a config, writes it, and
// `tollgate-lab simulate -config` on what it wrote fails the same way; the
// built-in policy holds against the very same scenario.
func TestAttack_WeakenedConfigIsBeatenAndSimulateReproducesIt(t *testing.T) {
	weak := writeTemp(t, "weak.yaml", weakConfig)
	dir := t.TempDir()
	found, chart := filepath.Join(dir, "found.yaml"), filepath.Join(dir, "progress.svg")
	code, out, errOut := attackRun(t, "-config", weak, "-objective", "login_failures", "-bound", "90", "-budget", "16", "-stop-when-beaten",
		"-out", found, "-svg", chart)
	if code != 1 || !strings.Contains(out, "BEATEN") {
		t.Fatalf("attack on a weakened config: exit %d, want 1 and BEATEN\n%s%s", code, out, errOut)
	}
	if svg, err := os.ReadFile(chart); err != nil || !bytes.Contains(svg, []byte("bound (90)")) {
		t.Errorf("the progress chart: %v, lacks the bound", err)
	}
	var simOut, simErr bytes.Buffer
	code = run(context.Background(), []string{"simulate", "-config", weak, found}, &simOut, &simErr)
	if code != 1 || !regexp.MustCompile(`FAIL +attacker(\+attacker2)?\.failures_max_24h <= 90 `).MatchString(simOut.String()) {
		t.Errorf("simulate -config weak on the strategy found: exit %d, want 1 and the failed bound\n%s%s", code, simOut.String(), simErr.String())
	}
	simOut.Reset()
	if code := run(context.Background(), []string{"simulate", found}, &simOut, &simErr); code != 0 {
		t.Errorf("simulate with the built-in policy: exit %d, want 0\n%s%s", code, simOut.String(), simErr.String())
	}
}

// TestAttack_JSONWhenTheBoundHolds: exit 0 and one JSON object per
// objective, with the scenario as text.
func TestAttack_JSONWhenTheBoundHolds(t *testing.T) {
	code, out, errOut := attackRun(t, "-objective", "spray_ipv4", "-budget", "8", "-json")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	var v struct {
		Name        string  `json:"name"`
		Bound       float64 `json:"bound"`
		Best        float64 `json:"best"`
		Beaten      bool    `json:"beaten"`
		Evaluations int     `json:"evaluations"`
		Scenario    string  `json:"scenario"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Name != "spray_ipv4" || v.Bound != 20 || v.Beaten || v.Best > 20 || v.Evaluations != 8 || !strings.Contains(v.Scenario, "actors:") {
		t.Errorf("JSON = %+v", v)
	}
}

func TestAttack_UsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown objective", []string{"-objective", "nope"}, `unknown objective "nope"`},
		{"budget and seconds", []string{"-budget", "3", "-seconds", "1"}, "not both"},
		{"svg of every objective", []string{"-svg", "x.svg"}, "one -objective"},
		{"bound of every objective", []string{"-bound", "5"}, "one -objective"},
		{"negative budget", []string{"-budget", "-1"}, "negative"},
		{"a stray argument", []string{"scenario.yaml"}, "unexpected argument"},
		{"a missing config", []string{"-config", "/nonexistent/tollgate.yaml"}, "nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := attackRun(t, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
		})
	}
}

func TestAttack_ListsTheObjectives(t *testing.T) {
	code, out, _ := attackRun(t, "-list")
	for _, want := range []string{"login_failures", "spray_ipv6_48", "codes_mailbox", "owner_device_delay"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("attack -list: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}
