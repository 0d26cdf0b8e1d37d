package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/attack"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// conformanceBudget is the strategies the report's search evaluates per
// attack objective: the CI search's budget, so that a report takes seconds
// (`tollgate-lab attack -budget N` searches longer).
const conformanceBudget = 48

// conformanceObjectives maps each of the report's objectives to the attack
// search's objectives it is the worst of.
var conformanceObjectives = map[string][]string{
	conformance.ObjectiveAccountFailures:    {"login_failures", "otp_verify_failures"},
	conformance.ObjectiveDestinationCodes:   {"codes_phone", "codes_mailbox"},
	conformance.ObjectiveDestinationGuesses: {"destination_guesses"},
}

func init() { conformanceSearch = searchFor }

// searchFor is the report's WorstCase on cfg's policy: for each objective
// it knows, the worst score a seeded search of each of its attack
// objectives reaches, with the scenario that reaches it; ErrNotSearched for
// the others, and for attack objectives the policy lacks (a flow it does
// not have).
func searchFor(cfg *config.Config) conformance.WorstCase {
	return func(ctx context.Context, objective string) (float64, string, error) {
		names := conformanceObjectives[objective]
		best, scenario, searched := 0.0, "", false
		for _, name := range names {
			r, err := attack.Search(ctx, attack.Config{Objective: name, Policy: cfg.Policy, Budget: conformanceBudget, Seed: 1})
			if errors.Is(err, attack.ErrUnknownObjective) {
				continue
			}
			if err != nil {
				return 0, "", fmt.Errorf("the search of %s: %w", name, err)
			}
			if !searched || r.Best > best {
				best, scenario = r.Best, string(r.Scenario)
			}
			searched = true
		}
		if !searched {
			return 0, "", conformance.ErrNotSearched
		}
		return best, scenario, nil
	}
}
