package simulate

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseScenario checks that no input makes the parser panic, and that
// what it accepts is consistent.
func FuzzParseScenario(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{goodScenario, base, small, "", "a: [", "name: x\nduration: 1h\nactors: [{}]\n",
		"name: x\nduration: 1h\nactors:\n  - &a {name: a}\n  - *a\n", "expect: {a.b: c}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario("fuzz.yaml", data)
		if err != nil {
			return
		}
		if sc.Name == "" || sc.Duration <= 0 || sc.Duration > MaxDuration || len(sc.Actors) == 0 {
			t.Fatalf("accepted an invalid scenario: %+v", sc)
		}
		for _, a := range sc.Actors {
			if a.Accounts.Len() == 0 || a.IPs.Len() == 0 || a.Burst < 1 || a.Start < 0 || a.Stop <= a.Start || a.Stop > sc.Duration ||
				(a.Every > 0) == (a.Rate.Per > 0) {
				t.Fatalf("accepted an invalid actor: %+v", a)
			}
		}
	})
}
