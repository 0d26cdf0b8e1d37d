package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// longScenarios take a second or more each; -short leaves them to the full
// make test.
var longScenarios = map[string]bool{
	"flood-fresh-subjects":   true, // 330,000 logins
	"otp-pumping-sequential": true, // a day at one send a second, and 10,000 numbers
	"otp-pumping-country":    true, // a day of pumping one country while others verify
	"nat-sprayer-with-owner": true, // 1,000 accounts sprayed from the owner's address
	"attack-spend-midnight":  true, // 36,500 voice codes asked for, each past a CAPTCHA
}

// shortDurations are the day-long sprays that -short runs for a few hours:
// one attacker at a steady rate, expectations that are upper bounds on
// counts that only grow (a shortened run over the bound is a full run over
// it), and hours enough for the run to reach its bound and then spend an
// hour held at it. Most of a whole day's logins (86,400 for a sprayer at
// 1/s) come after that point.
var shortDurations = map[string]time.Duration{
	"spray-one-ip":        2 * time.Hour, // 10 accounts in the first hour, no 11th in the second
	"spray-ipv6-rotation": 2 * time.Hour, // the same from one /64
	"spray-6to4":          3 * time.Hour, // 10 an hour: the day's 20 in the second hour, none in the third
	"spray-ipv6-slash48":  5 * time.Hour, // 50 an hour: the day's 200 in the fourth hour, none in the fifth
}

// TestScenarios runs every scenario in scenarios/ with the built-in policy:
// each one is an attack or a population of users whose outcome the policy
// must keep.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 6 {
		t.Fatalf("found %d scenarios in ../../../scenarios, want at least 6", len(paths))
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each run has its own engine, store and clock
			if testing.Short() && longScenarios[name] {
				t.Skip("hundreds of thousands of logins: runs in the full make test, not under -short")
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := ParseScenario(path, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Expect) == 0 {
				t.Errorf("%s has no expectations", path)
			}
			short, shortened := shortDurations[name]
			if shortened && testing.Short() {
				for _, e := range sc.Expect {
					if e.Op != "<=" {
						t.Fatalf("%s: -short cannot shorten %s: only upper bounds (<=) hold for a part of the run", path, e)
					}
				}
				sc.Duration = short
			}
			r, err := Run(sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if shortened && testing.Short() {
				for i, e := range sc.Expect {
					if got := r.Expectations[i].got; got != e.Value {
						t.Errorf("%s in %v under -short: %s is %d, want it at the bound (a run too short to reach its limit shows nothing)", path, short, e, got)
					}
				}
			}
			var table strings.Builder
			if err := WriteText(&table, r); err != nil {
				t.Fatal(err)
			}
			if !r.Passed() {
				t.Errorf("%s: an expectation failed:\n%s", path, table.String())
			} else {
				t.Logf("\n%s", table.String())
			}
		})
	}
}

// TestScenarios_HaveHeaders checks that each scenario file starts with a
// comment saying what it shows.
func TestScenarios_HaveHeaders(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "scenarios", "*.yaml"))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), "# ") || !strings.Contains(string(data), "# Shows:") {
			t.Errorf("%s: want a comment header ending in \"# Shows: ...\"", path)
		}
	}
}
