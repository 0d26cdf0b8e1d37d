package conformance

import (
	"embed"
	"fmt"
	"strings"

	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
)

// scenarioFS holds the scenarios the report runs on the policy it checks,
// each with FLOW where the flow's name goes.
//
//go:embed scenarios/*.yaml
var scenarioFS embed.FS

// The embedded scenarios, and the counter of their one actor ("attacker")
// each is judged by.
const (
	// scenarioAccountBotnet: failed checks on one account in any 24 hours.
	scenarioAccountBotnet = "account-botnet"
	// scenarioDestinationBombing: codes sent to one phone in any 24 hours.
	scenarioDestinationBombing = "destination-bombing"
)

// simulate runs an embedded scenario on flow f of its policy and adds its
// outcome to r, held to bound: past it fails r. The figure is the attacker's
// failures in any 24 hours for a flow of checks, its codes sent in any 24
// hours for a send flow. A scenario the simulator cannot run is noted, not
// failed: it is evidence missing, not evidence against.
func (c *checker) simulate(r *Result, name string, f namedFlow, bound int) {
	if c.noScenarios {
		return
	}
	ev := Evidence{Kind: EvidenceScenario, Name: name, Flow: f.label}
	value, err := runScenario(name, f)
	if err != nil {
		ev.Note = fmt.Sprintf("could not run: %v", err)
		r.Evidence = append(r.Evidence, ev)
		return
	}
	ev.Ran = true
	if !setFigures(&ev, float64(value), bound) {
		what := "failed checks on one account"
		if name == scenarioDestinationBombing {
			what = "codes to one destination"
		}
		failf(r, "scenario %s on %s: %d %s in 24 hours, past the bound %d", name, f.label, value, what, bound)
	}
	r.Evidence = append(r.Evidence, ev)
}

// runScenario runs the embedded scenario name on flow f and returns its
// attacker's figure.
func runScenario(name string, f namedFlow) (int, error) {
	data, err := scenarioFS.ReadFile("scenarios/" + name + ".yaml")
	if err != nil {
		return 0, err
	}
	data = []byte(strings.ReplaceAll(string(data), "FLOW", f.Name)) // flow names are [a-z0-9_]
	sc, err := simulate.ParseScenario(name+".yaml", data)
	if err != nil {
		return 0, err
	}
	res, err := simulate.Run(sc, f.policy)
	if err != nil {
		return 0, err
	}
	for _, a := range res.Actors {
		if a.Name != "attacker" {
			continue
		}
		if name == scenarioDestinationBombing {
			return a.ProceededMax24h, nil
		}
		return a.FailuresMax24h, nil
	}
	return 0, fmt.Errorf("scenario %s has no attacker", name)
}
