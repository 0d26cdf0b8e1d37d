package attack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
)

// stepUpOff is the built-in policy with login's step-up turned off: a
// right password gets a device token whatever the caller reports.
const stepUpOff = `
flows:
  login:
    step_up: {flow: ""}
`

// firstStrategies are the first n strategies a search of o draws with
// seed (a first batch is drawn at random).
func firstStrategies(o objective, seed int64, n int) []genome {
	return newOptimiser(o.genes, seed, o.Name).next(n)
}

func objectiveOf(t *testing.T, p *authguard.Policy, name string) objective {
	t.Helper()
	for _, o := range objectives(p) {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("the policy has no objective %s", name)
	return objective{}
}

// TestAttack_NoStrategyGetsADeviceTokenWithALeakedBreachedPassword: a
// stuffer holding leaked pairs whose right passwords the caller reports
// breached gets no device token, however he spreads, paces and orders his
// pairs; the very strategies searched get tokens once login's step-up is
// off, so the search scores what step-up stops.
func TestAttack_NoStrategyGetsADeviceTokenWithALeakedBreachedPassword(t *testing.T) {
	// Under the race detector TestBuiltInPolicy_NoStrategyBeatsABound's
	// search (seed 1) is this one's; this searches seed 2 without it.
	if !raceEnabled {
		r, err := Search(context.Background(), Config{Objective: "stolen_device_tokens", Budget: ciBudget(), Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Beaten {
			t.Errorf("a stuffer got %g device tokens with breached right passwords:\n%s", r.Best, r.Scenario)
		}
	}

	off, err := config.LoadPolicy([]byte(stepUpOff))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Search(context.Background(), Config{Objective: "stolen_device_tokens", Policy: off, Budget: 1}); err == nil {
		t.Error("a policy without step-up has the stolen_device_tokens objective: nothing of it bounds the score")
	}
	o := stuffingObjective(off.Flow("login"))
	// Four strategies: with step-up off, each right pair that checks in
	// is a sign-in, thousands of engine calls a strategy.
	batch := firstStrategies(o, 2, 4)
	scores, scenarios, err := evaluate(context.Background(), &o, off, batch, len(batch))
	if err != nil {
		t.Fatal(err)
	}
	beaten := 0
	for i, s := range scores {
		if s > 0 {
			beaten++
			continue
		}
		t.Logf("no token with step-up off either (the stuffer never got a check through):\n%s", scenarios[i])
	}
	if beaten == 0 {
		t.Errorf("with step-up off, none of %d strategies got a device token: the objective scores nothing step-up stops", len(batch))
	}
}

// TestAttack_NoStrategyGetsTheOwnerSteppedUpAtHerKnownDevice: the owner
// signing in with her reused (breached) password from the device that
// holds her token is stepped up once, at her first sign-in without it,
// whatever an attacker from any other address does: stuffing her account
// with her right or wrong password, or other accounts' pairs to escalate
// his addresses.
func TestAttack_NoStrategyGetsTheOwnerSteppedUpAtHerKnownDevice(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector TestBuiltInPolicy_NoStrategyBeatsABound/owner_step_ups makes this search with seed 1")
	}
	r, err := Search(context.Background(), Config{Objective: "owner_step_ups", Budget: ciBudget(), Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Beaten {
		t.Errorf("an attacker got the owner stepped up %g times at her known device:\n%s", r.Best, r.Scenario)
	}
}

// TestAttack_AStufferBehindTheOwnersAddressGetsHerSteppedUp is the
// exception owner_step_ups states: a stuffer behind her very address (her
// household's or office's NAT) escalates it, and an escalated address
// exempts no device token: she meets the second factor at each sign-in.
// The objective's score counts it, so a search that found it would fail.
func TestAttack_AStufferBehindTheOwnersAddressGetsHerSteppedUp(t *testing.T) {
	p := config.DefaultPolicy()
	o := objectiveOf(t, p, "owner_step_ups")
	scenario := []byte(`name: a stuffer behind the owner's address
duration: 24h
actors:
  - name: owner
    accounts: ["victim@example.com"]
    ips: [198.51.100.23]
    every: 8h
    outcome: success
    breached: true
    device_token: true
    passes_step_up: true
  - name: stuffer
    accounts: {fresh: true}
    ips: [198.51.100.23]
    rate: 60/h
    start: 1m
    outcome: failure
    breached: true
    obeys_delay: true
    solves_captcha: true
expect:
  owner.step_ups: "== 3"
`)
	score, err := o.run(scenario, p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := score, 2.0; got != want {
		t.Errorf("owner_step_ups scores %g for a stuffer behind her address, want %g (her second and third sign-ins)", got, want)
	}
}

// TestAttack_ARightPasswordTheCorpusMissesIsStoppedOnlyByAnEscalatedAddress
// states what holds when the breached-password corpus misses a right
// password: from an address that stuffing escalated it is answered
// step_up, from addresses no rule escalated it gets a device token
// (scenarios/credential-stuffing-corpus-miss.yaml).
func TestAttack_ARightPasswordTheCorpusMissesIsStoppedOnlyByAnEscalatedAddress(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "scenarios", "credential-stuffing-corpus-miss.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := simulate.ParseScenario("credential-stuffing-corpus-miss.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := simulate.Run(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{ // step_ups, device_tokens
		"missed_escalated": {20, 0}, "missed_clean": {0, 20}, "breached_clean": {20, 0},
	}
	for _, a := range r.Actors {
		w, ok := want[a.Name]
		if !ok {
			continue
		}
		ups, _ := a.Get("step_ups")
		tokens, _ := a.Get("device_tokens")
		if ups != w[0] || tokens != w[1] {
			t.Errorf("%s: %d step-ups and %d device tokens, want %d and %d", a.Name, ups, tokens, w[0], w[1])
		}
	}
}
