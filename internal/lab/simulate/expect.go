package simulate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Expectation is one line of a scenario's expect mapping:
// "actor.field": "<op> number", or "actor+other.field" for the sum of
// several actors' counters.
type Expectation struct {
	// Actor names the actor, or several joined by "+" (Actors).
	Actor string
	// Field is one of Fields.
	Field string
	// Op is one of <=, <, ==, >= and >.
	Op string
	// Value is the number the field is compared with.
	Value int64
}

// Fields lists the counters an expectation can name, in output order.
// ParseScenario describes them.
var Fields = []string{"attempts", "proceeded", "delayed", "captcha", "denied", "accounts_checked", "accounts_checked_before_captcha",
	"proceeded_max_24h", "failures_max_24h", "mint_logins", "mint_refused", "delay_seconds", "spent",
	"captcha_solved", "reports_refused", "own_logins", "own_refused", "step_ups", "device_tokens"}

// ops lists the comparison operators, longest first so that "<=" is not
// read as "<".
var ops = []string{"<=", ">=", "==", "<", ">"}

// String is the expectation as it appears in output: "attacker.proceeded <= 100".
func (e Expectation) String() string {
	return e.Actor + "." + e.Field + " " + e.Op + " " + strconv.FormatInt(e.Value, 10)
}

// Actors are the actors whose counters the expectation adds up: Actor
// split at "+".
func (e Expectation) Actors() []string { return strings.Split(e.Actor, "+") }

// Holds reports whether got meets the expectation.
func (e Expectation) Holds(got int64) bool {
	switch e.Op {
	case "<=":
		return got <= e.Value
	case "<":
		return got < e.Value
	case "==":
		return got == e.Value
	case ">=":
		return got >= e.Value
	case ">":
		return got > e.Value
	}
	return false
}

// ParseExpectation parses one expectation from its key ("actor.field") and
// value ("<op> number"). It does not check that the actor exists.
func ParseExpectation(key, value string) (Expectation, error) {
	e, err := parseKey(key)
	if err != nil {
		return e, err
	}
	e.Op, e.Value, err = parseComparison(value)
	return e, err
}

func parseKey(key string) (Expectation, error) {
	actor, fieldName, ok := strings.Cut(key, ".")
	if !ok || actor == "" || slices.Contains(strings.Split(actor, "+"), "") {
		return Expectation{}, fmt.Errorf(`invalid key %q (use "actor.field", e.g. "attacker.proceeded", or "actor+other.field" for a sum)`, key)
	}
	if !slices.Contains(Fields, fieldName) {
		return Expectation{}, fmt.Errorf("unknown field %q in %q (use %s)", fieldName, key, strings.Join(Fields, ", "))
	}
	return Expectation{Actor: actor, Field: fieldName}, nil
}

func parseComparison(value string) (op string, n int64, err error) {
	v := strings.TrimSpace(value)
	for _, op := range ops {
		if rest, ok := strings.CutPrefix(v, op); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return "", 0, fmt.Errorf(`invalid number in %q (want a whole number, e.g. "%s 100")`, value, op)
			}
			return op, n, nil
		}
	}
	return "", 0, fmt.Errorf(`invalid expectation %q (use <=, <, ==, >= or > and a whole number, e.g. "<= 100")`, value)
}

// parseExpectations decodes the expect mapping in file order; every actor it
// names must be in actors.
func parseExpectations(n *yaml.Node, path string, actors map[string]bool) ([]Expectation, error) {
	var es []Expectation
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, errAt(k, path, `keys must be "actor.field"`)
		}
		p := path + "." + k.Value
		if line, dup := seen[k.Value]; dup {
			return nil, errAt(k, p, "set twice (first on line %d)", line)
		}
		seen[k.Value] = k.Line
		if v.Kind != yaml.ScalarNode {
			return nil, errAt(v, p, `want a string such as "<= 100"`)
		}
		e, err := parseKey(k.Value)
		if err != nil {
			return nil, errAt(k, p, "%v", err)
		}
		for _, a := range e.Actors() {
			if !actors[a] {
				return nil, errAt(k, p, "unknown actor %q", a)
			}
		}
		if e.Op, e.Value, err = parseComparison(v.Value); err != nil {
			return nil, errAt(v, p, "%v", err)
		}
		es = append(es, e)
	}
	return es, nil
}
