package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
)

// NISTMaxFailures is NIST SP 800-63B's limit (§5.2.2): at most 100 failed
// attempts on one account before stronger measures. Every failures
// objective reports it beside the flow's own figure.
const NISTMaxFailures = 100

// DefaultBudget is the evaluations Search makes when Config.Budget is zero.
const DefaultBudget = 200

// Objective is one bound the search tries to beat: a score to maximise
// over strategies and the most the policy promises it can be.
type Objective struct {
	// Name identifies the objective: "login_failures", "spray_ipv6_48",
	// "codes_phone", "owner_device_delay", ...
	Name string `json:"name"`
	// Summary says in a sentence what is scored and where the bound comes
	// from.
	Summary string `json:"summary"`
	// Bound is the most the score may be; a score above it beats it.
	Bound float64 `json:"bound"`
	// Unit is the score's unit: "failures/24h", "accounts", "codes/24h",
	// "seconds".
	Unit string `json:"unit"`
}

// Config configures one search.
type Config struct {
	// Objective names one of Objectives(Policy).
	Objective string
	// Policy is the policy attacked. The default (nil) is the built-in
	// policy.
	Policy *authguard.Policy
	// Budget is the number of strategies evaluated. The default is
	// DefaultBudget.
	Budget int
	// Seed seeds every choice of the search: the same seed, budget,
	// objective and policy give the same Result. The default is 0, a seed
	// like any other.
	Seed int64
	// Workers is how many strategies are evaluated at once; it changes
	// nothing in the Result. The default is GOMAXPROCS.
	Workers int
	// Bound, when above zero, replaces the objective's bound: a claim to
	// test a policy against, such as the built-in policy's figure against a
	// policy weakened on purpose. The default is the policy's own bound.
	Bound float64
	// StopWhenBeaten ends the search after the batch of strategies in
	// which one beats the bound, instead of spending the whole budget on
	// beating it by more; where it stops depends on the seed only. The
	// default is false.
	StopWhenBeaten bool
}

// Result is what a search found.
type Result struct {
	// Objective is the objective searched, with the bound judged against.
	Objective Objective `json:"objective"`
	// Best is the best strategy's score.
	Best float64 `json:"best"`
	// Beaten is Best > Objective.Bound.
	Beaten bool `json:"beaten"`
	// Scenario is the best strategy as a scenario file (YAML) whose
	// expectations state the bound: `tollgate-lab simulate` on it (with the same
	// -config) gives Best and fails when Beaten (exactly, but for an owner's
	// loss whose score weighs several counters: its header says how). It
	// is left out of
	// the JSON form, whose readers want text (`tollgate-lab attack -json`
	// writes it as a string).
	Scenario []byte `json:"-"`
	// Evaluations counts the strategies evaluated.
	Evaluations int `json:"evaluations"`
	// Progress is the best score after each evaluation, in order.
	Progress []float64 `json:"progress"`
	// Scores is each evaluation's own score, in order.
	Scores []float64 `json:"scores"`
}

// Objectives returns the objectives searched for policy p (nil: the
// built-in policy), with p's bounds, in a fixed order. An objective whose
// flow p lacks, or that no rule of p bounds, is left out.
func Objectives(p *authguard.Policy) []Objective {
	var out []Objective
	for _, o := range objectives(orDefault(p)) {
		out = append(out, o.Objective)
	}
	return out
}

func orDefault(p *authguard.Policy) *authguard.Policy {
	if p == nil {
		return config.DefaultPolicy()
	}
	return p
}

// ErrUnknownObjective is returned by Search for an objective the policy
// does not have.
var ErrUnknownObjective = errors.New("attack: unknown objective")

// Search runs the optimiser for cfg.Objective and returns the best strategy
// it found. Every evaluation is a deterministic simulator run; the result
// depends only on the objective, policy, budget and seed, not on Workers.
// When ctx ends first, Search returns what it found so far with ctx's
// error.
func Search(ctx context.Context, cfg Config) (Result, error) {
	p := orDefault(cfg.Policy)
	var obj *objective
	var names []string
	for _, o := range objectives(p) {
		names = append(names, o.Name)
		if o.Name == cfg.Objective {
			obj = &o
		}
	}
	if obj == nil {
		return Result{}, fmt.Errorf("%w %q (the policy has %s)", ErrUnknownObjective, cfg.Objective, strings.Join(names, ", "))
	}
	if cfg.Bound > 0 {
		obj.Bound = cfg.Bound
	}
	budget := cfg.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	res := Result{Objective: obj.Objective, Best: math.Inf(-1)}
	var best []byte
	opt := newOptimiser(obj.genes, cfg.Seed, obj.Name)
	for res.Evaluations < budget {
		batch := opt.next(min(batchSize, budget-res.Evaluations))
		scores, scenarios, err := evaluate(ctx, obj, p, batch, workers)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return Result{}, err
		}
		for i, s := range scores {
			res.Evaluations++
			res.Scores = append(res.Scores, s)
			if s > res.Best {
				res.Best, best = s, scenarios[i]
			}
			res.Progress = append(res.Progress, res.Best)
		}
		opt.tell(batch, scores)
		if cfg.StopWhenBeaten && res.Best > obj.Bound {
			break
		}
	}
	if res.Evaluations == 0 {
		return Result{}, ctx.Err()
	}
	res.Beaten = res.Best > obj.Bound
	res.Scenario = obj.header(best, res, cfg.Seed, cfg.Bound > 0)
	return res, ctx.Err()
}

// evaluate scores each genome of batch, workers at a time; each score
// lands at its genome's index, so the order of completion does not matter.
func evaluate(ctx context.Context, obj *objective, p *authguard.Policy, batch []genome, workers int) ([]float64, [][]byte, error) {
	scores := make([]float64, len(batch))
	scenarios := make([][]byte, len(batch))
	errs := make([]error, len(batch))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(batch)) {
		wg.Go(func() {
			for i := range next {
				scenarios[i] = obj.scenario(batch[i])
				scores[i], errs[i] = obj.run(scenarios[i], p)
			}
		})
	}
	for i := range batch {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("attack: %s: strategy %v: %w\n%s", obj.Name, batch[i], err, scenarios[i])
		}
	}
	return scores, scenarios, nil
}

// Score runs scenario (a file Search wrote for objective name) on policy p
// (nil: the built-in policy) and returns its score: what `tollgate
// simulate` shows, combined as the objective scores it.
func Score(name string, scenario []byte, p *authguard.Policy) (float64, error) {
	p = orDefault(p)
	i := slices.IndexFunc(objectives(p), func(o objective) bool { return o.Name == name })
	if i < 0 {
		return 0, fmt.Errorf("%w %q", ErrUnknownObjective, name)
	}
	o := objectives(p)[i]
	return o.run(scenario, p)
}

// run parses and runs one scenario and scores it.
func (o *objective) run(scenario []byte, p *authguard.Policy) (float64, error) {
	sc, err := simulate.ParseScenario(o.Name+".yaml", scenario)
	if err != nil {
		return 0, err
	}
	r, err := simulate.Run(sc, p)
	if err != nil {
		return 0, err
	}
	return o.score(r), nil
}
