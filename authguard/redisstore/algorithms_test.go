package redisstore

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit/storetest"
)

// luaAlgRE finds rate.lua's dispatch on the algorithm's name.
var luaAlgRE = regexp.MustCompile(`alg == "([a-z_]+)"`)

// algorithmGaps lists what adding an algorithm left out (docs/design.md §2):
// a rate algorithm of authguard's table without its branch in rateLua or
// without its row in rates (internal/testkit/storetest's conformance rows), a
// branch or a row naming no rate algorithm of the table, a row twice; and
// an algorithm of another kind without its own script in others.
func algorithmGaps(rateLua string, rates []authguard.RateLimit, others map[authguard.Algorithm]string) []string {
	var gaps []string
	inLua := map[string]bool{}
	for _, m := range luaAlgRE.FindAllStringSubmatch(rateLua, -1) {
		inLua[m[1]] = true
	}
	rows := map[authguard.Algorithm]int{}
	for _, r := range rates {
		rows[r.Algorithm]++
	}
	var names []string
	for _, a := range authguard.Algorithms() {
		if !a.IsRate() {
			if others[a] == "" {
				gaps = append(gaps, fmt.Sprintf("%s: not a rate algorithm, and no script of its own", a))
			}
			continue
		}
		names = append(names, a.String())
		if !inLua[a.String()] {
			gaps = append(gaps, fmt.Sprintf("%s: no Lua twin in rate.lua (alg == %q)", a, a.String()))
		}
		switch rows[a] {
		case 0:
			gaps = append(gaps, fmt.Sprintf("%s: no conformance row in storetest.Rates", a))
		case 1:
		default:
			gaps = append(gaps, fmt.Sprintf("%s: %d conformance rows in storetest.Rates", a, rows[a]))
		}
	}
	for name := range inLua {
		if !slices.Contains(names, name) {
			gaps = append(gaps, fmt.Sprintf("rate.lua dispatches on %q, no rate algorithm of the table", name))
		}
	}
	for _, r := range rates {
		if !r.Algorithm.IsRate() {
			gaps = append(gaps, fmt.Sprintf("storetest.Rates has a row of %s, no rate algorithm of the table", r.Algorithm))
		} else if err := r.Validate(); err != nil {
			gaps = append(gaps, fmt.Sprintf("storetest.Rates' %s row is invalid: %v", r.Algorithm, err))
		}
	}
	slices.Sort(gaps)
	return gaps
}

// otherScripts are the scripts of the algorithms that are not rate
// algorithms, held by their own conformance steps (storetest's
// BackoffSteps and LogSteps).
var otherScripts = map[authguard.Algorithm]string{authguard.Backoff: backoffLua, authguard.Distinct: logLua}

// TestAlgorithms_EveryRowHasALuaTwinAndAConformanceRow: every rate algorithm
// of authguard's table has its branch in rate.lua and its row in
// storetest.Rates, which the conformance suite runs on every store against
// authguard.Apply; adding an algorithm without them fails here.
func TestAlgorithms_EveryRowHasALuaTwinAndAConformanceRow(t *testing.T) {
	if gaps := algorithmGaps(rateLua, storetest.Rates, otherScripts); len(gaps) > 0 {
		t.Errorf("the algorithm table and its twins disagree:\n%s", strings.Join(gaps, "\n"))
	}
	// Negative controls: each gap is found.
	noLua := strings.ReplaceAll(rateLua, `alg == "sliding_counter"`, `alg == "x"`)
	noRow := slices.DeleteFunc(slices.Clone(storetest.Rates), func(r authguard.RateLimit) bool { return r.Algorithm == authguard.LeakyBucket })
	twice := append(slices.Clone(storetest.Rates), storetest.Rates[0])
	for _, c := range []struct {
		name   string
		lua    string
		rates  []authguard.RateLimit
		others map[authguard.Algorithm]string
		want   []string
	}{
		{"no Lua twin", noLua, storetest.Rates, otherScripts, []string{
			`rate.lua dispatches on "x", no rate algorithm of the table`,
			`sliding_counter: no Lua twin in rate.lua (alg == "sliding_counter")`,
		}},
		{"no conformance row", rateLua, noRow, otherScripts, []string{"leaky_bucket: no conformance row in storetest.Rates"}},
		{"two conformance rows", rateLua, twice, otherScripts, []string{"fixed_window: 2 conformance rows in storetest.Rates"}},
		{"no script", rateLua, storetest.Rates, map[authguard.Algorithm]string{authguard.Backoff: backoffLua}, []string{"distinct: not a rate algorithm, and no script of its own"}},
	} {
		if got := algorithmGaps(c.lua, c.rates, c.others); !slices.Equal(got, c.want) {
			t.Errorf("%s: gaps %q, want %q", c.name, got, c.want)
		}
	}
}
