package redisstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
)

// verdictLines are the lines of check.lua that read gates, written from
// authguard's verdict rule (Block.Reading) and blockLetters: each op's
// result as waits and over, then whether its gate makes it a spare
// allowance, binds the check's exemption, stops the check, or stops it
// only when it is not exempt (shared). check.lua reads a shared result as
// stopping the check when it has a wait, so every Shared row must read so.
func verdictLines() ([]string, error) {
	var spare, shared []string
	var binds, stops []gateCond
	for _, b := range authguard.Blocks() {
		letter, ok := blockLetters[b]
		if !ok {
			return nil, fmt.Errorf("block %d has no letter", b)
		}
		rd := b.Reading()
		if rd.Spare {
			spare = append(spare, letter)
		}
		binds = addGate(binds, rd.Binds, letter)
		if rd.Shared {
			if rd.Stops != authguard.CondWait || rd.Queues || rd.Binds != 0 {
				return nil, fmt.Errorf("block %q is shared and reads otherwise than a wait", letter)
			}
			shared = append(shared, letter)
			continue
		}
		stops = addGate(stops, rd.Stops, letter)
	}
	return []string{
		"local spare = " + orGates(spare),
		"local waits, over = r[2] > 0, r[3] == 1",
		"local binds = " + luaGates(binds),
		"local stops = " + luaGates(stops),
		"local shared = " + orGates(shared),
	}, nil
}

// gateCond is a condition and the gates it applies to.
type gateCond struct {
	c       authguard.Cond
	letters []string
}

// addGate adds letter to c's gates in cs, in the order the conditions
// first appear; a condition that never holds applies to no gate.
func addGate(cs []gateCond, c authguard.Cond, letter string) []gateCond {
	if c == 0 {
		return cs
	}
	for i := range cs {
		if cs[i].c == c {
			cs[i].letters = append(cs[i].letters, letter)
			return cs
		}
	}
	return append(cs, gateCond{c, []string{letter}})
}

func orGates(letters []string) string {
	if len(letters) == 0 {
		return "false"
	}
	parts := make([]string, len(letters))
	for i, l := range letters {
		parts[i] = fmt.Sprintf("gate == %q", l)
	}
	return strings.Join(parts, " or ")
}

// luaGates is cs as one Lua expression: per condition, its gates and it.
func luaGates(cs []gateCond) string {
	if len(cs) == 0 {
		return "false"
	}
	var terms []string
	for _, gc := range cs {
		g := orGates(gc.letters)
		if len(gc.letters) > 1 {
			g = "(" + g + ")"
		}
		switch c := luaCond(gc.c); {
		case c == "true":
			terms = append(terms, g)
		case strings.Contains(c, " or "):
			terms = append(terms, g+" and ("+c+")")
		default:
			terms = append(terms, g+" and "+c)
		}
	}
	return strings.Join(terms, " or ")
}

// condVars are the Lua names of a Cond's three facts, by bit: the result
// has a wait, it is over, a CAPTCHA was solved.
var condVars = [3]string{"waits", "over", "solved"}

// luaCond writes c as a Lua expression over condVars: its prime implicants
// (each an and of facts or their negations), or'ed, as few as cover it.
func luaCond(c authguard.Cond) string {
	switch c {
	case 0:
		return "false"
	case 0xff:
		return "true"
	}
	// A cube fixes some facts: care says which, value to what.
	type cube struct{ care, value int }
	minterms := func(q cube) (m authguard.Cond) {
		for i := range 8 {
			if i&q.care == q.value {
				m |= 1 << i
			}
		}
		return m
	}
	var implicants []cube
	for care := range 8 {
		for value := range 8 {
			if value&^care != 0 {
				continue
			}
			if q := (cube{care, value}); minterms(q)&^c == 0 {
				implicants = append(implicants, q)
			}
		}
	}
	var primes []cube
	for _, q := range implicants {
		prime := true
		for _, p := range implicants {
			if p != q && minterms(q)&^minterms(p) == 0 {
				prime = false // p covers q and more
			}
		}
		if prime {
			primes = append(primes, q)
		}
	}
	// fewest facts first, then by the first fact's bit
	slices.SortStableFunc(primes, func(a, b cube) int {
		if d := popcount(a.care) - popcount(b.care); d != 0 {
			return d
		}
		return (a.care & -a.care) - (b.care & -b.care)
	})
	var terms []string
	var covered authguard.Cond
	for _, q := range primes {
		if minterms(q)&^covered == 0 {
			continue
		}
		covered |= minterms(q)
		var facts []string
		for bit, name := range condVars {
			if q.care&(1<<bit) == 0 {
				continue
			}
			if q.value&(1<<bit) == 0 {
				name = "not " + name
			}
			facts = append(facts, name)
		}
		terms = append(terms, strings.Join(facts, " and "))
	}
	return strings.Join(terms, " or ")
}

func popcount(x int) (n int) {
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestCheckScript_ReadsGatesByAuthguardsVerdictRule: check.lua decides a
// check by the lines verdictLines writes from authguard's verdict rule, and
// no other line of it names a gate, so a change to the rule that check.lua
// does not follow fails here, with the lines to put in.
// TestCheckScript_DecidesEveryCombinationAsBlocked runs what they decide
// through a real Redis.
func TestCheckScript_ReadsGatesByAuthguardsVerdictRule(t *testing.T) {
	lines, err := verdictLines()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range lines {
		if !strings.Contains(checkLua, "\n  "+want+"\n") {
			name, _, _ := strings.Cut(want, " =")
			t.Errorf("check.lua's line %q is not, as authguard's verdict rule has it:\n  %s", name, want)
		}
	}
	for line := range strings.Lines(checkLua) {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "gate ==") && !slices.Contains(lines, line) {
			t.Errorf("check.lua names a gate outside the verdict rule's lines: %s", line)
		}
	}
	letters := map[string]bool{}
	for _, b := range authguard.Blocks() {
		if l := blockLetters[b]; l == "" || letters[l] {
			t.Errorf("block %d's letter %q is missing or not its own", b, l)
		} else {
			letters[l] = true
		}
	}
	if len(blockLetters) != len(authguard.Blocks()) {
		t.Errorf("%d letters for %d blocks", len(blockLetters), len(authguard.Blocks()))
	}
}

// luaCond writes each condition as a Lua expression true exactly where the
// condition holds: checked here in Go's own terms (a Lua reading of the
// expressions runs in TestCheckScript_DecidesEveryCombinationAsBlocked).
func TestLuaCond_WritesTheTruthTable(t *testing.T) {
	for c := range 256 {
		expr := luaCond(authguard.Cond(c))
		for i := range 8 {
			vals := map[string]bool{"waits": i&1 != 0, "over": i&2 != 0, "solved": i&4 != 0}
			got := false
			for _, term := range strings.Split(expr, " or ") {
				all := true
				for _, fact := range strings.Split(term, " and ") {
					switch {
					case fact == "true":
					case fact == "false":
						all = false
					case strings.HasPrefix(fact, "not "):
						all = all && !vals[strings.TrimPrefix(fact, "not ")]
					default:
						all = all && vals[fact]
					}
				}
				got = got || all
			}
			if want := c>>i&1 == 1; got != want {
				t.Fatalf("luaCond(%08b) = %q: %v at %03b, want %v", c, expr, got, i, want)
			}
		}
	}
}
