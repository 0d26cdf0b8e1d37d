package backoff_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// replay drives a counter with Charge the way an attacker with a schedule
// would: cycles[0] attempts as fast as allowed, then quiet until forgotten,
// then cycles[1], and so on, the last length repeating (0: never stop). It
// returns the most charges within any window.
func replay(p backoff.Policy, window time.Duration, cycles ...int) int {
	start := testclock.Epoch
	now := start
	var s backoff.State
	var times []time.Time
	inCycle, c := 0, 0
	for now.Sub(start) < 3*window {
		var d backoff.Decision
		s, d = p.Charge(s, now, "", 0)
		if !d.Charged {
			now = now.Add(d.Wait)
			continue
		}
		times = append(times, now)
		inCycle++
		if k := cycles[c]; k > 0 && inCycle == k {
			now, inCycle, c = now.Add(p.ForgetAfter), 0, min(c+1, len(cycles)-1)
		}
	}
	best, j := 0, 0
	for i := range times { // two pointers: times are in order
		for j < len(times) && times[j].Sub(times[i]) < window {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

func TestMaxFailuresIn_MatchesTheBestScheduleOnRealCharges(t *testing.T) {
	policies := []backoff.Policy{
		{Free: 5, Base: time.Second, Factor: 2, Max: 30 * time.Minute, ForgetAfter: 24 * time.Hour},
		{Free: 3, Base: 2 * time.Second, Factor: 2, Max: 15 * time.Minute, ForgetAfter: time.Hour}, // the old otp_verify
		{Free: 3, Base: 2 * time.Second, Factor: 2, Max: 30 * time.Minute, ForgetAfter: 24 * time.Hour},
		{Free: 1, Base: time.Minute, Factor: 2, Max: 4 * time.Hour, ForgetAfter: 24 * time.Hour},
		{Free: 2, Base: 10 * time.Minute, Factor: 1, Max: 10 * time.Minute, ForgetAfter: 90 * time.Minute},
		// A quiet period just over the cap: stopping after two attempts and
		// starting over beats waiting out the delays, many times a day.
		{Free: 2, Base: time.Minute, Factor: 2, Max: 10 * time.Minute, ForgetAfter: 11 * time.Minute},
	}
	// The best schedules of these policies repeat their first length at
	// most twice; -short tries up to 3 repeats, make test 12.
	repeats := 12
	if testing.Short() {
		repeats = 3
	}
	for _, p := range policies {
		got := p.MaxFailuresIn(24 * time.Hour)
		best := 0
		for k := 0; k <= got; k++ { // cycles of one length
			best = max(best, replay(p, 24*time.Hour, k))
		}
		for a := 1; a <= 15; a++ { // x cycles of a, then cycles of b
			for b := 1; b <= 15; b++ {
				for x := 1; x <= repeats; x++ {
					cycles := append(slices.Repeat([]int{a}, x), b)
					best = max(best, replay(p, 24*time.Hour, cycles...))
				}
			}
		}
		if got != best {
			t.Errorf("%+v: MaxFailuresIn = %d, the best schedule on real charges gives %d", p, got, best)
		}
	}
}

func TestMaxFailuresIn_BeyondMaxExactIsALowerBound(t *testing.T) {
	p := backoff.Policy{Free: 2, Base: time.Second, Factor: 1, Max: time.Second, ForgetAfter: 10 * time.Minute}
	if got := p.MaxFailuresIn(24 * time.Hour); got <= backoff.MaxExact {
		t.Errorf("a one-second constant delay: MaxFailuresIn = %d, want more than %d", got, backoff.MaxExact)
	}
}

func TestMaxFailuresIn_QuietPeriodExploitOfTheOldOTPPolicy(t *testing.T) {
	// An hour's quiet period let an attacker stop after each ramp and start
	// over: 240 a day (a cycle of 10, then cycles of 11), far more than
	// waiting out the 15-minute cap (106).
	p := backoff.Policy{Free: 3, Base: 2 * time.Second, Factor: 2, Max: 15 * time.Minute, ForgetAfter: time.Hour}
	if got := p.MaxFailuresIn(24 * time.Hour); got != 240 {
		t.Errorf("MaxFailuresIn = %d, want 240", got)
	}
	p.ForgetAfter = 24 * time.Hour
	if got := p.MaxFailuresIn(24 * time.Hour); got != 106 {
		t.Errorf("with a day's quiet period MaxFailuresIn = %d, want 106 (3 + 9 ramp + 94 at the cap)", got)
	}
}

func TestPending_EachAttemptSettlesOnce(t *testing.T) {
	p := backoff.Policy{Free: 5, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}
	now := testclock.Epoch
	var s backoff.State
	for _, a := range []string{"a1", "a2", "a3"} {
		s, _ = p.Charge(s, now, "", 0)
		s = s.Hold(a)
	}
	s, _ = p.Settle(s, now, "a2", 0)
	if s.Failures != 2 {
		t.Fatalf("after a2 succeeded: %d failures, want 2", s.Failures)
	}
	for range 11 {
		s, _ = p.Settle(s, now, "a2", 0)
	}
	if s.Failures != 2 {
		t.Fatalf("after a2's success was reported 12 times: %d failures, want 2", s.Failures)
	}
	if _, ok := s.Release("a2"); ok {
		t.Error("a2 still pending after it settled")
	}
	if s, _ = p.Settle(s, now, "", 0); s.Failures != 2 {
		t.Error("a success without an attempt changed the counter")
	}
}

func TestPending_OldestDropsPastTheCap(t *testing.T) {
	var s backoff.State
	for i := range backoff.MaxPending + 3 {
		s = s.Hold(string(rune('a' + i)))
	}
	if len(s.Pending) != backoff.MaxPending {
		t.Fatalf("%d pending, want %d", len(s.Pending), backoff.MaxPending)
	}
	if _, ok := s.Release("a"); ok {
		t.Error("the oldest attempt should have been dropped")
	}
	if _, ok := s.Release(string(rune('a' + backoff.MaxPending + 2))); !ok {
		t.Error("the newest attempt should be pending")
	}
	if got := s.Hold(""); len(got.Pending) != len(s.Pending) {
		t.Error("Hold of an empty attempt changed the list")
	}
	before := append([]string(nil), s.Pending...)
	s.Hold("z")
	s.Release(before[0])
	if len(s.Pending) != len(before) || s.Pending[0] != before[0] {
		t.Error("Hold or Release changed the state it was called on")
	}
}

func TestPending_ForgottenWithTheCounter(t *testing.T) {
	p := backoff.Policy{Free: 5, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}
	now := testclock.Epoch
	s, _ := p.Charge(backoff.State{}, now, "", 0)
	s = s.Hold("a1")
	s = p.Current(s, now.Add(time.Hour), 0)
	if s.Failures != 0 || s.Pending != nil {
		t.Errorf("after the quiet period: %+v, want a fresh counter with nothing pending", s)
	}
}

func TestPending_ReleasingTheLastLeavesNone(t *testing.T) {
	s, ok := backoff.State{}.Hold("a1").Release("a1")
	if !ok || s.Pending != nil {
		t.Errorf("Release of the only pending attempt: %+v %v, want nothing pending", s, ok)
	}
	if _, ok := s.Release(""); ok {
		t.Error("an empty attempt is never pending")
	}
}

// TestMaxFailuresIn_CyclesOfDifferentLengthsCanBeatIt: an attacker facing
// a policy whose forget_after fits several cycles into a day mixes cycle
// lengths (7, 7, 7, 7, 7, 8, 8 attempts, each cycle ended by forget_after
// of quiet) and gets 51 failures counted in 24 hours. MaxFailuresIn, which
// once tried cycles of one length only and said 49, must cover it.
func TestMaxFailuresIn_CoversCyclesOfDifferentLengths(t *testing.T) {
	p := backoff.Policy{Free: 4, Base: 45 * time.Second, Factor: 4, Max: 78 * time.Minute, ForgetAfter: 203 * time.Minute}
	start := time.Unix(1_700_000_000, 0)
	now, s, counted := start, backoff.State{}, 0
	for _, k := range []int{7, 7, 7, 7, 7, 8, 8} {
		for range k {
			s = p.Current(s, now, 0)
			now = now.Add(p.Wait(s, now))
			var d backoff.Decision
			s, d = p.Charge(s, now, "", 0)
			if !d.Charged {
				t.Fatalf("a charge after waiting out the delay was refused at %v", now.Sub(start))
			}
			if now.Sub(start) < 24*time.Hour {
				counted++
			}
		}
		now = now.Add(p.ForgetAfter) // quiet until the counter forgets
	}
	if got := p.MaxFailuresIn(24 * time.Hour); counted != 51 || got < counted {
		t.Errorf("mixed cycles counted %d in 24 h and MaxFailuresIn says %d", counted, got)
	}
}
