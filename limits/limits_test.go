package limits_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/limits"
)

// base is the fixed instant every test counts from (testclock.Epoch, on a
// whole hour); at and ms are base+d as a time and in Unix milliseconds.
var (
	base = testclock.Epoch
	at   = testclock.At
	ms   = testclock.Ms
)

// limiter is the shape every algorithm shares, limits.Algorithm; its
// assertions are in algorithm.go.
type limiter[S any] = limits.Algorithm[S]

// allow, refuse and queued build the decisions of step tables, with their
// fields in Decision's order.
func allow(remaining int, reset time.Duration) limits.Decision {
	return limits.Decision{Allowed: true, Remaining: remaining, Reset: reset}
}

func refuse(remaining int, wait, reset time.Duration) limits.Decision {
	return limits.Decision{Remaining: remaining, Wait: wait, Reset: reset}
}

func queued(remaining int, wait, reset time.Duration) limits.Decision {
	return limits.Decision{Allowed: true, Remaining: remaining, Wait: wait, Reset: reset}
}

// step is one row of a step table: TakeN(cost) at base+at, expecting want.
type step struct {
	name string
	at   time.Duration
	cost int
	want limits.Decision
}

// runSteps runs a step table against one algorithm from state s and returns
// the final state, as runMixed does.
func runSteps[S any](t *testing.T, l limiter[S], s S, steps []step) S {
	t.Helper()
	mixed := make([]mixedStep, len(steps))
	for i, st := range steps {
		mixed[i] = mixedStep{st.name, st.at, take(st.cost), st.want}
	}
	return runMixed(t, l, s, mixed)
}

// act is what a row of a mixed step table does: take(cost) or give(cost).
type act struct {
	give bool
	cost int
}

func take(cost int) act { return act{cost: cost} }
func give(cost int) act { return act{give: true, cost: cost} }

// mixedStep is one row of a step table that takes and gives back: act at
// base+at, expecting want.
type mixedStep struct {
	name string
	at   time.Duration
	act  act
	want limits.Decision
}

// runMixed runs a mixed step table against one algorithm from state s and
// returns the final state. Besides each row's decision it checks that the
// state passed in is not modified, that a refused step leaves the state
// alone and that Reset is the TTL of the new state.
func runMixed[S any](t *testing.T, l limiter[S], s S, steps []mixedStep) S {
	t.Helper()
	for _, st := range steps {
		now := at(st.at)
		before := clone(s)
		do, name := l.TakeN, "TakeN"
		if st.act.give {
			do, name = l.GiveBackN, "GiveBackN"
		}
		next, d := do(s, now, st.act.cost)
		if d != st.want {
			t.Errorf("%s: %s(cost %d) = %+v, want %+v", st.name, name, st.act.cost, d, st.want)
		}
		if !same(s, before) {
			t.Errorf("%s: %s modified the state passed in, from %v to %v", st.name, name, before, s)
		}
		if !d.Allowed && !same(next, before) {
			t.Errorf("%s: a refused %s changed the state from %v to %v", st.name, name, before, next)
		}
		if got := l.TTL(next, now); got != d.Reset {
			t.Errorf("%s: TTL of the new state = %v, but Reset = %v", st.name, got, d.Reset)
		}
		if t.Failed() {
			t.FailNow()
		}
		s = next
	}
	return s
}

// same reports whether two states are equal; logs compare by content.
func same[S any](a, b S) bool {
	if x, ok := any(a).([]int64); ok {
		return slices.Equal(x, any(b).([]int64))
	}
	return any(a) == any(b)
}

// clone copies a state, so that a TakeN that modified its argument is caught.
func clone[S any](s S) S {
	if x, ok := any(s).([]int64); ok {
		return any(slices.Clone(x)).(S)
	}
	return s
}

// validateCase is one row of a Validate table; wantErr is a word the error
// must contain, "" for none.
type validateCase struct {
	name    string
	v       interface{ Validate() error }
	wantErr string
}

func runValidate(t *testing.T, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%+v.Validate() = %v, want nil", tt.v, err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("%+v.Validate() = nil, want an error about %s", tt.v, tt.wantErr)
			case err != nil && (!strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "limits: ")):
				t.Errorf("%+v.Validate() = %q, want a limits: error about %s", tt.v, err, tt.wantErr)
			}
		})
	}
}

// call is one TakeN, or with give one GiveBackN, of a random or fuzzed
// sequence.
type call struct {
	now  time.Time
	cost int
	give bool
}

// result is a call with its decision.
type result struct {
	ms   int64 // now in Unix ms
	cost int
	give bool
	d    limits.Decision
}

// algorithm describes one configured algorithm to checkSteps.
type algorithm[S any] struct {
	l     limiter[S]
	limit int           // the largest cost (Limit, Burst or Capacity)
	unit  time.Duration // Window or Interval: the scale of the gaps between calls
	queue bool          // allowed calls may be told to wait (LeakyBucket)
	// step, when set, checks one step further; "" is a pass.
	step func(s S, now time.Time, cost int, next S, d limits.Decision) string
	// model, when set, checks a whole sequence with time never going back
	// against an independent model of the algorithm, give-backs included;
	// "" is a pass.
	model func([]result) string
}

// gaveBack reports whether results hold a give-back.
func gaveBack(results []result) bool {
	return slices.ContainsFunc(results, func(r result) bool { return r.give })
}

// checkSteps runs calls from the zero state and checks, at every step:
//   - TakeN never modifies the state passed in, and a refused step returns it
//     unchanged (property a); a cost below 1 or above the limit is refused
//     with Wait 0;
//   - GiveBackN never modifies the state passed in, is allowed with Wait 0,
//     leaves Remaining at least what it was, and gives back nothing for a
//     cost below 1 or above the limit;
//   - a take given back at once leaves a state equivalent to the one before
//     it (checkUndo, on every step's state and cost);
//   - an allowed step has Wait 0 (except for a queue); Wait, Reset and TTL are
//     whole milliseconds; Remaining is in [0, limit] and exact: TakeN of
//     Remaining at the same instant is allowed, of Remaining+1 refused; Reset
//     is the TTL of the new state;
//   - a refused step's Wait is exact (property b): retrying the same cost at
//     now+Wait is allowed, at now+Wait−1ms refused;
//   - TTL is exact (property e): from now+TTL on, a TakeN on the state gives
//     the same decision and state as on the zero state, and 1ms before a
//     non-zero TTL it does not;
//
// then a's step check on takes, and a's model when time never went back.
func checkSteps[S any](a algorithm[S], calls []call) string {
	var s S
	results := make([]result, 0, len(calls))
	monotone := true
	for i, c := range calls {
		now := c.now
		if i > 0 && now.Before(calls[i-1].now) {
			monotone = false
		}
		before := clone(s)
		if c.give {
			next, d := a.l.GiveBackN(s, now, c.cost)
			where := fmt.Sprintf("step %d: GiveBackN(%v, +%v, cost %d) = %v, %+v", i, s, now.Sub(base), c.cost, next, d)
			if err := checkGiveBack(a, s, before, now, c.cost, next, d); err != "" {
				return where + ": " + err
			}
			results = append(results, result{now.UnixMilli(), c.cost, true, d})
			s = next
			continue
		}
		next, d := a.l.TakeN(s, now, c.cost)
		where := fmt.Sprintf("step %d: TakeN(%v, +%v, cost %d) = %v, %+v", i, s, now.Sub(base), c.cost, next, d)
		valid := c.cost >= 1 && c.cost <= a.limit
		switch {
		case !same(s, before):
			return where + ": modified the state passed in"
		case !d.Allowed && !same(next, s):
			return where + ": refused, but the state changed"
		case !valid && (d.Allowed || d.Wait != 0):
			return where + ": a cost outside [1, limit] must be refused with no wait"
		case d.Allowed && !a.queue && d.Wait != 0:
			return where + ": allowed with a wait"
		case d.Wait < 0 || d.Wait%time.Millisecond != 0 || d.Reset < 0 || d.Reset%time.Millisecond != 0:
			return where + ": Wait or Reset negative or not whole milliseconds"
		}
		if err := checkDecision(a, now, next, d); err != "" {
			return where + ": " + err
		}
		if err := checkUndo(a, s, now, c.cost); err != "" {
			return where + ": " + err
		}
		if valid && !d.Allowed {
			if d.Wait <= 0 {
				return where + ": refused without a wait"
			}
			if _, d2 := a.l.TakeN(s, now.Add(d.Wait), c.cost); !d2.Allowed {
				return where + ": still refused when the wait is over"
			}
			if _, d2 := a.l.TakeN(s, now.Add(d.Wait-time.Millisecond), c.cost); d2.Allowed {
				return where + ": allowed 1ms before the wait is over"
			}
		}
		if err := checkTTL(a, now, next, c.cost); err != "" {
			return where + ": " + err
		}
		if a.step != nil {
			if err := a.step(s, now, c.cost, next, d); err != "" {
				return where + ": " + err
			}
		}
		results = append(results, result{now.UnixMilli(), c.cost, false, d})
		s = next
	}
	if monotone && a.model != nil {
		return a.model(results)
	}
	return ""
}

// checkDecision checks what a step's decision d says about next, the state
// it returned at now: Reset is next's TTL, and Remaining is in [0, limit]
// and exact: TakeN of Remaining at the same instant is allowed, of
// Remaining+1 refused.
func checkDecision[S any](a algorithm[S], now time.Time, next S, d limits.Decision) string {
	if ttl := a.l.TTL(next, now); ttl != d.Reset {
		return fmt.Sprintf("Reset is not the TTL of the new state, %v", ttl)
	}
	if r := d.Remaining; r < 0 || r > a.limit {
		return "Remaining outside [0, limit]"
	}
	if r := d.Remaining; r >= 1 {
		if _, d2 := a.l.TakeN(next, now, r); !d2.Allowed {
			return "TakeN(Remaining) at the same instant is refused"
		}
	}
	if r := d.Remaining; r+1 <= a.limit {
		if _, d2 := a.l.TakeN(next, now, r+1); d2.Allowed {
			return "TakeN(Remaining+1) at the same instant is allowed"
		}
	}
	return ""
}

// checkTTL checks that the TTL of next at now is exact (property e): from
// now+TTL on, a TakeN on next gives the same decision and state as on the
// zero state (for costs 1 and cost), and 1ms before a non-zero TTL it does
// not.
func checkTTL[S any](a algorithm[S], now time.Time, next S, cost int) string {
	var zero S
	ttl := a.l.TTL(next, now)
	valid := cost >= 1 && cost <= a.limit
	for _, later := range []time.Duration{ttl, 2*ttl + time.Millisecond} {
		for _, c := range []int{1, cost} {
			kept, d1 := a.l.TakeN(next, now.Add(later), c)
			fresh, d2 := a.l.TakeN(zero, now.Add(later), c)
			if d1 != d2 || (c == 1 || valid) && !same(kept, fresh) {
				return fmt.Sprintf("TTL %v, but at +%v the state gives %v %+v, the zero state %v %+v", ttl, later, kept, d1, fresh, d2)
			}
		}
	}
	if ttl > 0 {
		t := now.Add(ttl - time.Millisecond)
		kept, d1 := a.l.TakeN(next, t, 1)
		fresh, d2 := a.l.TakeN(zero, t, 1)
		if d1 == d2 && same(kept, fresh) {
			return fmt.Sprintf("TTL %v is not the least: 1ms before, the state acts as the zero state", ttl)
		}
	}
	return ""
}

// checkGiveBack checks one GiveBackN of cost at now on s (before is a copy
// of s taken before the call), which returned next and d.
func checkGiveBack[S any](a algorithm[S], s, before S, now time.Time, cost int, next S, d limits.Decision) string {
	_, peek := a.l.TakeN(s, now, 0)
	switch {
	case !same(s, before):
		return "modified the state passed in"
	case !d.Allowed || d.Wait != 0:
		return "a give-back must be allowed with no wait"
	case (cost < 1 || cost > a.limit) && !same(next, s):
		return "a cost outside [1, limit] must give back nothing"
	case d.Reset < 0 || d.Reset%time.Millisecond != 0:
		return "Reset negative or not whole milliseconds"
	case d.Remaining < peek.Remaining:
		return fmt.Sprintf("Remaining fell from %d", peek.Remaining)
	}
	if err := checkDecision(a, now, next, d); err != "" {
		return err
	}
	return checkTTL(a, now, next, cost)
}

// checkUndo checks that GiveBackN undoes TakeN at the same instant: when a
// take of cost on s at now is allowed, giving it back at once returns a
// state equivalent to s at now and after (equivalent), with the decision
// a peek on s gives and the TTL of s.
func checkUndo[S any](a algorithm[S], s S, now time.Time, cost int) string {
	took, d := a.l.TakeN(s, now, cost)
	if !d.Allowed {
		return ""
	}
	back, got := a.l.GiveBackN(took, now, cost)
	_, peek := a.l.TakeN(s, now, 0)
	if want := (limits.Decision{Allowed: true, Remaining: peek.Remaining, Reset: a.l.TTL(s, now)}); got != want {
		return fmt.Sprintf("taking %d and giving it back at once: %v, %+v, want %+v", cost, back, got, want)
	}
	if err := equivalent(a, s, back, now, cost); err != "" {
		return fmt.Sprintf("taking %d and giving it back at once: %v is not %v: %s", cost, back, s, err)
	}
	return ""
}

// equivalent reports how states x and y differ at now or after: at instants
// from now to past both TTLs, TakeN and GiveBackN of a few costs (1, cost,
// cost+1, the limit) must give the same decisions, the same TTL, and the
// same state after an allowed TakeN; "" when they do not differ.
func equivalent[S any](a algorithm[S], x, y S, now time.Time, cost int) string {
	unit := a.unit.Milliseconds()
	offsets := []int64{0, 1, unit / 2, unit - 1, unit, unit + 1, 2*unit - 1, 2 * unit, 3 * unit}
	for _, ttl := range []time.Duration{a.l.TTL(x, now), a.l.TTL(y, now)} {
		offsets = append(offsets, ttl.Milliseconds()-1, ttl.Milliseconds(), ttl.Milliseconds()+1)
	}
	costs := []int{1, cost, min(cost+1, a.limit), a.limit}
	for _, off := range offsets {
		t := now.Add(millis(max(0, off)))
		if tx, ty := a.l.TTL(x, t), a.l.TTL(y, t); tx != ty {
			return fmt.Sprintf("at +%v: TTL %v and %v", t.Sub(now), tx, ty)
		}
		for _, c := range costs {
			sx, dx := a.l.TakeN(x, t, c)
			sy, dy := a.l.TakeN(y, t, c)
			if dx != dy || dx.Allowed && !same(sx, sy) {
				return fmt.Sprintf("at +%v: TakeN(%d) gives %v %+v and %v %+v", t.Sub(now), c, sx, dx, sy, dy)
			}
			_, gx := a.l.GiveBackN(x, t, c)
			_, gy := a.l.GiveBackN(y, t, c)
			if gx != gy {
				return fmt.Sprintf("at +%v: GiveBackN(%d) gives %+v and %+v", t.Sub(now), c, gx, gy)
			}
		}
	}
	return ""
}

// millis is n milliseconds.
func millis(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// randomCalls is a sequence of n calls on the scale of unit: bursts at one
// instant, small and large gaps, idle periods, sometimes part of a
// millisecond, and when back is set, steps back in time. Costs are mostly 1,
// sometimes up to limit, and sometimes outside [1, limit]. When give is set,
// about one call in four gives back: half of those the take just before it,
// at the same instant.
func randomCalls(r *rand.Rand, unit time.Duration, limit, n int, back, give bool) []call {
	u := unit.Milliseconds()
	calls := make([]call, n)
	off := time.Duration(r.Int64N(10*u)) * time.Millisecond // not always on a window boundary
	for i := range calls {
		switch r.IntN(8) {
		case 0, 1: // same instant
		case 2:
			off += time.Duration(r.IntN(10)) * time.Millisecond
		case 3, 4:
			off += time.Duration(r.Int64N(u+1)) * time.Millisecond
		case 5:
			off += time.Duration(r.Int64N(3*u*int64(min(limit, 50))+1)) * time.Millisecond
		case 6:
			off += time.Duration(r.Int64N(u + 1))
		default:
			if back {
				off -= time.Duration(r.Int64N(2*u+1)) * time.Millisecond
			}
		}
		cost := 1
		switch r.IntN(10) {
		case 0:
			cost = 1 + r.IntN(limit)
		case 1:
			cost = []int{0, -1, limit + 1}[r.IntN(3)]
		case 2:
			cost = max(1, limit-r.IntN(3))
		}
		calls[i] = call{now: base.Add(max(off, -time.Hour)), cost: cost}
		if give && r.IntN(4) == 0 {
			calls[i].give = true
			if i > 0 && r.IntN(2) == 0 {
				calls[i].now, calls[i].cost = calls[i-1].now, calls[i-1].cost
			}
		}
	}
	return calls
}

// checkRandom runs checkSteps on random sequences for random configurations
// from mk (given a random source), half of them with time stepping back and,
// across both halves, half of them with give-backs. Under -short it runs
// the first quarter of the runs, each kind of sequence among them; make
// test runs them all.
func checkRandom[S any](t *testing.T, seed uint64, runs int, mk func(r *rand.Rand) algorithm[S]) {
	t.Helper()
	if testing.Short() {
		runs /= 4
	}
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range runs {
		a := mk(r)
		for a.l.Validate() != nil { // a long interval with a large burst
			a = mk(r)
		}
		calls := randomCalls(r, a.unit, a.limit, 100+r.IntN(100), i%2 == 1, i%4 >= 2)
		if err := checkSteps(a, calls); err != "" {
			t.Fatalf("run %d: %+v: %s", i, a.l, err)
		}
	}
}

// randomUnit is a random window or interval: mostly short, sometimes long.
func randomUnit(r *rand.Rand) time.Duration {
	if r.IntN(10) == 0 {
		return time.Duration(1+r.Int64N(limits.MaxInterval.Milliseconds())) * time.Millisecond
	}
	return time.Duration(1+r.IntN(2000)) * time.Millisecond
}

// randomLimit is a random limit up to top: mostly small, sometimes large.
func randomLimit(r *rand.Rand, top int) int {
	if r.IntN(10) == 0 {
		return 1 + r.IntN(top)
	}
	return 1 + r.IntN(min(top, 20))
}

// fuzzAlgorithm is the fuzz target of one algorithm's TakeN: mk builds it
// from a fuzzed duration in ms (Window or Interval) and count (Limit, Burst
// or Capacity); start places the sequence anywhere from 1970 to 2^51 ms;
// each pair of bytes of steps is a gap (high bit: back in time) and a cost.
// Configurations that Validate rejects are skipped.
func fuzzAlgorithm[S any](f *testing.F, mk func(unit time.Duration, n int) algorithm[S]) {
	f.Add(int64(1000), 3, uint64(0), []byte{0, 0, 0, 0, 0, 0, 16, 0, 16, 0, 255, 0})
	f.Add(int64(60_000), 10, uint64(1_767_603_600_123_456), []byte{0, 100, 0, 250, 1, 251, 200, 0, 3, 252, 0, 0})
	f.Add(int64(1), 1, uint64(7), []byte{0, 0, 1, 0, 0, 253, 128, 0, 0, 0})
	f.Add(int64(86_400_000), 1000, uint64(1<<51-1), []byte{0, 252, 0, 0, 40, 7, 129, 1, 0, 0})
	fuzzSteps(f, 2, mk)
}

// fuzzGiveBack is the fuzz target of one algorithm's TakeN and GiveBackN
// together, as fuzzAlgorithm but with three bytes a step: a gap, a cost, and
// an odd byte for a give-back.
func fuzzGiveBack[S any](f *testing.F, mk func(unit time.Duration, n int) algorithm[S]) {
	f.Add(int64(1000), 3, uint64(0), []byte{0, 0, 0, 0, 0, 1, 0, 100, 0, 0, 100, 1, 16, 0, 1, 0, 0, 1})
	f.Add(int64(60_000), 10, uint64(1_767_603_600_123_456), []byte{0, 100, 0, 0, 100, 1, 40, 250, 0, 20, 0, 1, 200, 0, 0, 3, 252, 1, 0, 255, 1})
	f.Add(int64(1), 1, uint64(7), []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 129, 0, 1, 0, 254, 1})
	f.Add(int64(86_400_000), 1000, uint64(1<<51-1), []byte{0, 252, 0, 0, 252, 1, 0, 40, 0, 40, 7, 0, 129, 100, 1, 0, 252, 1})
	fuzzSteps(f, 3, mk)
}

// fuzzSteps is the body of fuzzAlgorithm (width 2) and fuzzGiveBack (width
// 3).
func fuzzSteps[S any](f *testing.F, width int, mk func(unit time.Duration, n int) algorithm[S]) {
	f.Fuzz(func(t *testing.T, unitMS int64, n int, start uint64, steps []byte) {
		if unitMS < 1 || unitMS > limits.MaxWindow.Milliseconds() || len(steps) > 400 {
			t.Skip()
		}
		a := mk(time.Duration(unitMS)*time.Millisecond, n)
		if a.l.Validate() != nil {
			t.Skip()
		}
		// The sequence starts between 1970 and 2^51 ms, at any nanosecond.
		first := int64(start % (1 << 51))
		frac := time.Duration(start % uint64(time.Millisecond))
		calls := make([]call, 0, len(steps)/width)
		off := first
		for i := 0; i+width <= len(steps); i += width {
			g, c := steps[i], steps[i+1]
			if g&0x80 == 0 {
				off += int64(g) * unitMS / 32 // forward, up to about 4 units
			} else {
				off = max(0, off-int64(g&0x7f)*unitMS/64) // back, up to about 2 units
			}
			var cost int
			switch c {
			case 255:
				cost = 0
			case 254:
				cost = a.limit + 1
			case 253:
				cost = -1
			default:
				cost = 1 + int(c)*(a.limit-1)/252
			}
			calls = append(calls, call{now: time.UnixMilli(off).Add(frac), cost: cost, give: width == 3 && steps[i+2]%2 == 1})
		}
		if err := checkSteps(a, calls); err != "" {
			t.Fatalf("%+v: %s", a.l, err)
		}
	})
}

// maxInSpan is the most units the results, in time order, admitted within
// any span of span ms, [t, t+span−1], and where that span starts.
func maxInSpan(results []result, span int64) (most int, from int64) {
	n, j := 0, 0 // units admitted in [results[j].ms, results[i].ms]
	for _, r := range results {
		if r.d.Allowed {
			n += r.cost
		}
		for ; results[j].ms <= r.ms-span; j++ {
			if results[j].d.Allowed {
				n -= results[j].cost
			}
		}
		if n > most {
			most, from = n, results[j].ms
		}
	}
	return most, from
}

// TestGiveBackN_UndoesTakeNAtTheSameInstant: on a random state, a random
// take given back at the same instant leaves a state that acts, at now and
// after, as the one before the take did, with the decision a peek on that
// one gives (checkUndo). The states are drawn at random, not only reached by
// calls, and now lies before, within or after them; but, as from TakeN and
// GiveBackN, a state that counts nothing is the zero state.
func TestGiveBackN_UndoesTakeNAtTheSameInstant(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for i := range 3000 {
		unit := randomUnit(r)
		u := unit.Milliseconds()
		now := base.Add(time.Duration(r.Int64N(20*u)) * time.Millisecond)
		if r.IntN(4) == 0 {
			now = now.Add(time.Duration(r.Int64N(int64(time.Millisecond))))
		}
		// near is a random Unix ms within three units of now.
		near := func() int64 { return now.UnixMilli() + r.Int64N(6*u+1) - 3*u }
		empty := r.IntN(8) == 0
		var err string
		switch i % 5 {
		case 0:
			f := limits.FixedWindow{Window: unit, Limit: randomLimit(r, limits.MaxLimit)}
			var s limits.FixedState
			if !empty {
				start := near()
				s = limits.FixedState{Start: start - start%u, Count: 1 + r.IntN(f.Limit)}
			}
			err = checkUndo(fixedWindow(f), s, now, 1+r.IntN(f.Limit))
		case 1:
			l := limits.SlidingLog{Window: unit, Limit: randomLimit(r, limits.MaxLogLimit)}
			var log []int64
			if !empty {
				for range r.IntN(l.Limit + 1) {
					log = append(log, near())
				}
				slices.Sort(log)
			}
			err = checkUndo(slidingLog(l), log, now, 1+r.IntN(l.Limit))
		case 2:
			c := limits.SlidingCounter{Window: unit, Limit: randomLimit(r, limits.MaxLimit)}
			var s limits.CounterState
			if !empty {
				start := near()
				s = limits.CounterState{Start: start - start%u, Prev: r.IntN(c.Limit + 1), Curr: r.IntN(c.Limit + 1)}
				if s.Prev == 0 && s.Curr == 0 {
					s.Curr = 1
				}
			}
			err = checkUndo(slidingCounter(c), s, now, 1+r.IntN(c.Limit))
		case 3, 4:
			size := randomLimit(r, limits.MaxBurst)
			for checkFill(size, unit) {
				size = randomLimit(r, 20)
			}
			var tat int64
			if !empty {
				tat = now.UnixMilli() + r.Int64N(2*int64(size)*u+1) - int64(size)*u
			}
			if i%5 == 3 {
				err = checkUndo(bucket(limits.Bucket{Interval: unit, Burst: size}), tat, now, 1+r.IntN(size))
			} else {
				err = checkUndo(leakyBucket(limits.LeakyBucket{Interval: unit, Capacity: size}), tat, now, 1+r.IntN(size))
			}
		}
		if err != "" {
			t.Fatalf("case %d: %s", i, err)
		}
	}
}

// checkFill reports whether size slots of interval take longer than
// MaxFillTime, which Validate rejects.
func checkFill(size int, interval time.Duration) bool {
	return limits.Bucket{Interval: interval, Burst: size}.Validate() != nil
}
