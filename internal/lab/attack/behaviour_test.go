package attack

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
)

// TestSpace_ReachesEveryAttackerBehaviour: the failures objectives and
// destination_guesses search the report behaviours, successes on the
// attacker's own accounts (with and without their device token), shares
// of CAPTCHAs solved, a second phase at a window's edge and a second
// instance; were a dimension lost, the search would never try it.
func TestSpace_ReachesEveryAttackerBehaviour(t *testing.T) {
	want := []string{
		"report_token: none", "report_token: foreign", "report_token: skip", "report_replays: 3",
		"own_success: {account: attacker-own@example.net", "device_token: true}", "device_token: false}",
		"second_phase: {at:", "\ninstances: 2\n", "    instance: 2\n", "solves_captcha: 0.5\n", "solves_captcha: true\n", "solves_captcha: false\n",
	}
	for _, o := range objectives(config.DefaultPolicy()) {
		if o.Name != "login_failures" && o.Name != "otp_verify_failures" && o.Name != "destination_guesses" {
			continue
		}
		t.Run(o.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			found := map[string]bool{}
			for range 400 {
				g := make(genome, o.genes)
				for i := range g {
					g[i] = rng.Float64()
				}
				sc := o.scenario(g)
				for _, w := range want {
					found[w] = found[w] || strings.Contains(string(sc), w)
				}
			}
			for _, w := range want {
				if !found[w] {
					t.Errorf("no strategy of 400 has %q", w)
				}
			}
		})
	}
}

// TestSpace_SecondPhaseLandsOnAnEdgeOfThePolicy: a second phase starts a
// window's length or a counter's forget_after after the attacker's start,
// give or take a second, and within its activity.
func TestSpace_SecondPhaseLandsOnAnEdgeOfThePolicy(t *testing.T) {
	p := config.DefaultPolicy()
	edges := edgesOf(p.Flow("login"))
	if len(edges) == 0 {
		t.Fatal("the built-in login flow has no edge shorter than a day")
	}
	var o objective
	for _, x := range objectives(p) {
		if x.Name == "login_failures" {
			o = x
		}
	}
	rng := rand.New(rand.NewPCG(2, 2))
	phases := 0
	for range 300 {
		g := make(genome, o.genes)
		for i := range g {
			g[i] = rng.Float64()
		}
		sc, err := simulate.ParseScenario("s.yaml", o.scenario(g))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range sc.Actors {
			if a.SecondPhase.Logins == 0 {
				continue
			}
			phases++
			off := a.SecondPhase.At - a.Start
			ok := false
			for _, e := range edges {
				ok = ok || off >= e-time.Second && off <= e+time.Second
			}
			if !ok || a.SecondPhase.At >= a.Stop {
				t.Errorf("%s's second phase at %v, %v after its start: on no edge of %v, or after its stop %v", a.Name, a.SecondPhase.At, off, edges, a.Stop)
			}
		}
	}
	if phases == 0 {
		t.Errorf("%d second phases in 300 strategies", phases)
	}
}
