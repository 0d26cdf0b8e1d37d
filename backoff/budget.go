package backoff

import (
	"math"
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
// window. An attacker gains nothing by waiting longer than a delay (delays
// never shrink as failures grow), except to let the counter forget: so the
// schedules that matter are cycles, each of k attempts as fast as allowed
// followed by ForgetAfter of quiet, of any lengths in any order, with the
// span starting at any attempt of a cycle and the last cycle cut off by its
// end. MaxFailuresIn takes the best of them exactly, by dynamic
// programming over the number of attempts: the earliest a fresh cycle can
// start after c attempts in whole cycles, and the earliest the n-th attempt
// can come. (It once tried cycles of one length only, and fell short for
// policies that fit several forget cycles into the span: 49 where cycles of
// 7, 7, 7, 7, 7, 8 and 8 attempts give 51.) Figures above MaxExact are
// lower bounds. The default policy's figures are tested against NIST SP
// 800-63B's limit of 100.
func (p Policy) MaxFailuresIn(window time.Duration) int {
	w := window.Milliseconds()
	// Greedy attempt times from a fresh counter, within the window.
	var times []int64
	for t, n := int64(0), 0; t < w && len(times) <= MaxExact; n++ {
		times = append(times, t)
		t += p.Delay(n + 1).Milliseconds()
	}
	if len(times) > MaxExact {
		return len(times)
	}
	forget := p.ForgetAfter.Milliseconds()
	const never = math.MaxInt64
	n := 2*MaxExact + 1 // room for a span's first cycle and the whole cycles after it
	// start[c]: the earliest a fresh cycle can start once c attempts were
	// made in whole cycles; first[n]: the earliest the n-th attempt from a
	// fresh start can be, whole cycles and then a ramp of the rest.
	start, first := make([]int64, 1, n+1), make([]int64, 1, n+1)
	for c := 1; c <= n; c++ {
		s, f := int64(never), int64(never)
		for k := 1; k <= min(c, len(times)); k++ {
			if b := start[c-k]; b != never {
				s = min(s, b+times[k-1]+forget)
				f = min(f, b+times[k-1])
			}
		}
		start, first = append(start, s), append(first, f)
		if f >= w {
			// Both grow with c (dropping an attempt never makes a schedule
			// later), so fits below reads no further than the first
			// attempt past the window: stopping here saves most of the
			// table for a policy that allows far fewer than MaxExact.
			n = c
			break
		}
	}
	// fits is how many attempts a fresh start leaves room for before r.
	fits := func(r int64) int { return sort.Search(n, func(i int) bool { return first[i+1] >= r }) }
	best := fits(w)
	for k := 2; k <= len(times); k++ { // the span starts at attempt j of a cycle of k
		for j := 1; j < k; j++ {
			got := k - j
			if next := times[k-1] - times[j] + forget; next < w {
				got += fits(w - next)
			}
			best = max(best, got)
		}
	}
	return best
}
