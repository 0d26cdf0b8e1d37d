package backoff

import "time"

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
// never buys a later attempt; these schedules are therefore the ones that
// matter. Figures above MaxExact are lower bounds. The default policy's
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
	for k := 1; k < len(times); k++ {
		cycle := times[k-1] + forget // the next cycle starts once the quiet period has passed
		for _, start := range times[:k] {
			n := 0
			for c := int64(0); c*cycle < start+w; c++ {
				for _, t := range times[:k] {
					if at := c*cycle + t; at >= start && at < start+w {
						n++
					}
				}
			}
			best = max(best, n)
		}
	}
	return best
}
