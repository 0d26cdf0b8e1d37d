package backoff

import (
	"sort"
	"time"
)

// MaxExact is the largest figure MaxFailuresIn computes exactly. A policy
// that lets an attacker wait out its delays more often than this in the
// window is far beyond any sane budget (NIST SP 800-63B allows 100), and
// MaxFailuresIn then returns that greedy count, a lower bound.
const MaxExact = 400

// MaxFailuresIn is the most failures a counter with this policy lets an
// attacker who knows the policy have counted within any span of length
// window. It is the larger of:
//   - waiting out every delay from a fresh counter (the ramp is the densest
//     part, so a span starting with it holds the most), and
//   - for every k, making k attempts as fast as allowed and then keeping
//     quiet for ForgetAfter so the counter forgets them, over and over; the
//     span may start at any attempt of a cycle.
//
// Delays never shrink as failures grow, so waiting longer than a delay
// never buys a later attempt. Cycles of different lengths can do better
// than cycles of one length when several fit in the window: {free 4, base
// 45s, factor 4, max 78m, forget_after 203m} allows 51 in a day with
// cycles of 7, 7, 7, 7, 7, 8 and 8 attempts, where this returns 49. So the
// figure is exact for one cycle or a ramp (the default policies: their
// forget_after is a day) and otherwise may fall short by a few. Figures
// above MaxExact are lower bounds. The default policy's
// figures are tested against NIST SP 800-63B's limit of 100.
func (p Policy) MaxFailuresIn(window time.Duration) int {
	w := window.Milliseconds()
	// Greedy attempt times from a fresh counter, within the window.
	var times []int64
	for t, n := int64(0), 0; t < w && len(times) <= MaxExact; n++ {
		times = append(times, t)
		t += p.Delay(n + 1).Milliseconds()
	}
	best := len(times)
	if best > MaxExact {
		return best
	}
	forget := p.ForgetAfter.Milliseconds()
	// upTo counts the attempts of one cycle (its first k) made before x.
	upTo := func(k int, x int64) int { return sort.Search(k, func(i int) bool { return times[i] >= x }) }
	for k := 1; k < len(times); k++ {
		last := times[k-1]
		cycle := last + forget // the next cycle starts once the quiet period has passed
		for j, start := range times[:k] {
			end := start + w
			n := max(0, upTo(k, end)-j) // the rest of this cycle
			if full := (end - 1 - last) / cycle; full > 0 {
				n += int(full) * k // whole cycles after it
			}
			if c := max(1, (end-1-last)/cycle+1); c*cycle < end {
				n += upTo(k, end-c*cycle) // the cycle the span ends in
			}
			best = max(best, n)
		}
	}
	return best
}
