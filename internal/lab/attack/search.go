package attack

import (
	"cmp"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// genome is a strategy as numbers in [0, 1), one per dimension of its
// objective; the objective's decoder turns each into a choice (a count on
// a log scale, one of a list, a toggle).
type genome []float64

// The optimiser's shape. A batch is evaluated at once (in parallel); the
// elite are the best strategies so far, parents of the next batch.
const (
	batchSize = 8
	eliteSize = 4
	// restart is the share of each batch drawn afresh at random: random
	// restarts keep the search from settling on one basin.
	restart = 0.25
	// crossover is the chance a child mixes two parents gene by gene.
	crossover = 0.3
)

// optimiser is a (μ+λ) evolution strategy with random restarts: each batch
// is λ children of the μ best strategies so far (mutated, sometimes
// crossed) plus a quarter drawn afresh. Every draw comes from one PCG
// seeded by the search's seed and objective, and happens before the batch
// is evaluated, so results do not depend on how evaluations interleave.
type optimiser struct {
	genes int
	rng   *rand.Rand
	elite []scored
	seen  int // strategies told so far: the tie-break, earlier first
}

type scored struct {
	g     genome
	score float64
	order int
}

func newOptimiser(genes int, seed int64, objective string) *optimiser {
	h := fnv.New64a()
	h.Write([]byte(objective))
	return &optimiser{genes: genes, rng: rand.New(rand.NewPCG(uint64(seed), h.Sum64()))}
}

// next returns the next n strategies to evaluate: at random until the
// elite is full, then children and restarts.
func (o *optimiser) next(n int) []genome {
	out := make([]genome, n)
	for i := range out {
		if len(o.elite) < eliteSize || o.rng.Float64() < restart {
			out[i] = o.random()
			continue
		}
		child := slices.Clone(o.elite[o.rng.IntN(len(o.elite))].g)
		if o.rng.Float64() < crossover {
			other := o.elite[o.rng.IntN(len(o.elite))].g
			for j := range child {
				if o.rng.IntN(2) == 0 {
					child[j] = other[j]
				}
			}
		}
		o.mutate(child)
		out[i] = child
	}
	return out
}

func (o *optimiser) random() genome {
	g := make(genome, o.genes)
	for i := range g {
		g[i] = o.rng.Float64()
	}
	return g
}

// mutate changes each gene with probability max(1/genes, 0.15), at least
// one: mostly a Gaussian step (σ 0.1, reflected into [0, 1)), a tenth of
// the time a fresh value (a jump to another choice of a list).
func (o *optimiser) mutate(g genome) {
	p := max(1/float64(len(g)), 0.15)
	changed := false
	for !changed {
		for i := range g {
			if o.rng.Float64() >= p {
				continue
			}
			changed = true
			if o.rng.Float64() < 0.1 {
				g[i] = o.rng.Float64()
				continue
			}
			g[i] = fold01(g[i] + o.rng.NormFloat64()*0.1)
		}
	}
}

// fold01 folds x back into [0, 1).
func fold01(x float64) float64 {
	x = math.Mod(math.Abs(x), 2)
	if x >= 1 {
		x = 2 - x
	}
	return min(x, math.Nextafter(1, 0))
}

// tell records the scores of a batch next returned and keeps the best
// eliteSize strategies so far (ties: the earlier).
func (o *optimiser) tell(batch []genome, scores []float64) {
	for i, g := range batch {
		o.elite = append(o.elite, scored{g: g, score: scores[i], order: o.seen})
		o.seen++
	}
	slices.SortStableFunc(o.elite, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	o.elite = o.elite[:min(len(o.elite), eliteSize)]
}
