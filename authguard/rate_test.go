package authguard_test

import (
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/limits"
)

func TestParseAlgorithm(t *testing.T) {
	for _, a := range []authguard.Algorithm{authguard.FixedWindow, authguard.SlidingLog, authguard.SlidingCounter, authguard.TokenBucket, authguard.LeakyBucket} {
		got, err := authguard.ParseAlgorithm(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	for _, bad := range []string{"", "unknown", "Fixed_Window", "gcra"} {
		if _, err := authguard.ParseAlgorithm(bad); err == nil {
			t.Errorf("ParseAlgorithm(%q) accepted", bad)
		}
	}
	if got := authguard.Algorithm(0).String(); got != "unknown" {
		t.Errorf("Algorithm(0) = %q", got)
	}
	if got := authguard.RateAction(9).String(); got != "unknown" {
		t.Errorf("RateAction(9) = %q", got)
	}
}

func TestRateLimit_Validate(t *testing.T) {
	tests := []struct {
		r  authguard.RateLimit
		ok bool
	}{
		{authguard.RateLimit{Algorithm: authguard.FixedWindow, Window: time.Minute, Limit: 10}, true},
		{authguard.RateLimit{Algorithm: authguard.FixedWindow, Limit: 10}, false}, // no window
		{authguard.RateLimit{Algorithm: authguard.SlidingLog, Window: time.Minute, Limit: limits.MaxLogLimit}, true},
		{authguard.RateLimit{Algorithm: authguard.SlidingLog, Window: time.Minute, Limit: limits.MaxLogLimit + 1}, false},
		{authguard.RateLimit{Algorithm: authguard.SlidingCounter, Window: time.Minute, Limit: 10}, true},
		{authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: time.Second, Limit: 10}, true},
		{authguard.RateLimit{Algorithm: authguard.TokenBucket, Window: time.Second, Limit: 10}, false}, // no interval
		{authguard.RateLimit{Algorithm: authguard.LeakyBucket, Interval: time.Second, Limit: 10}, true},
		{authguard.RateLimit{Algorithm: authguard.LeakyBucket, Interval: time.Second}, false},
		{authguard.RateLimit{Window: time.Minute, Limit: 10}, false}, // no algorithm
	}
	for _, tt := range tests {
		if err := tt.r.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tt.r, err, tt.ok)
		}
	}
}

// A peek tells what a take would decide and leaves the state as it was,
// on every algorithm.
func TestRateOp_PeekChangesNothing(t *testing.T) {
	now := testclock.Epoch
	for _, r := range []authguard.RateLimit{
		{Algorithm: authguard.FixedWindow, Window: time.Minute, Limit: 3},
		{Algorithm: authguard.SlidingLog, Window: time.Minute, Limit: 3},
		{Algorithm: authguard.SlidingCounter, Window: time.Minute, Limit: 3},
		{Algorithm: authguard.TokenBucket, Interval: time.Second, Limit: 3},
		{Algorithm: authguard.LeakyBucket, Interval: time.Second, Limit: 3},
	} {
		take := &authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: r, Cost: 2}
		peek := &authguard.RateOp{Key: "k", Action: authguard.RatePeek, Rate: r, Cost: 2}
		state, _, first := authguard.Apply(take, nil, now)
		if !first.Charged || first.Over {
			t.Fatalf("%v: first take of 2 of 3: %+v", r.Algorithm, first)
		}
		after, _, p := authguard.Apply(peek, state, now)
		_, _, second := authguard.Apply(take, state, now)
		if p.Charged || p.Over != second.Over || p.Wait != second.Wait || p.Remaining != second.Remaining {
			t.Errorf("%v: peek %+v, take %+v: the peek must tell the take's decision and charge nothing", r.Algorithm, p, second)
		}
		if _, _, again := authguard.Apply(take, after, now); again != second {
			t.Errorf("%v: after a peek, take %+v; without it %+v", r.Algorithm, again, second)
		}
	}
}

func TestRateAction_String(t *testing.T) {
	tests := []struct {
		a    authguard.RateAction
		want string
	}{
		{authguard.RateTake, "take"},
		{authguard.RatePeek, "peek"},
		{authguard.RateRefund, "refund"},
		{authguard.RateAction(0), "unknown"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("RateAction(%d).String() = %q, want %q", tt.a, got, tt.want)
		}
	}
}

// A refund gives back what a take took, never refuses, never goes below an
// empty state, and gives back nothing for a cost no take takes; on every
// algorithm.
func TestRateOp_Refund(t *testing.T) {
	now := testclock.Epoch // on a whole minute
	tests := []struct {
		r authguard.RateLimit
		// The Reset after taking 2 of 3, after giving 1 back, and after
		// taking all 3 from empty.
		took2, gave1, took3 time.Duration
	}{
		{authguard.RateLimit{Algorithm: authguard.FixedWindow, Window: time.Minute, Limit: 3}, time.Minute, time.Minute, time.Minute},
		{authguard.RateLimit{Algorithm: authguard.SlidingLog, Window: time.Minute, Limit: 3}, time.Minute, time.Minute, time.Minute},
		{authguard.RateLimit{Algorithm: authguard.SlidingCounter, Window: time.Minute, Limit: 3}, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute},
		{authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: time.Second, Limit: 3}, 2 * time.Second, time.Second, 3 * time.Second},
		{authguard.RateLimit{Algorithm: authguard.LeakyBucket, Interval: time.Second, Limit: 3}, 2 * time.Second, time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.r.Algorithm.String(), func(t *testing.T) {
			op := func(a authguard.RateAction, cost int) *authguard.RateOp {
				return &authguard.RateOp{Key: "k", Action: a, Rate: tt.r, Cost: cost}
			}
			steps := []struct {
				name string
				op   *authguard.RateOp
				want authguard.Result
			}{
				{"take 2 of 3", op(authguard.RateTake, 2), authguard.Result{Charged: true, Remaining: 1, Reset: tt.took2}},
				{"refund 1", op(authguard.RateRefund, 1), authguard.Result{Remaining: 2, Reset: tt.gave1}},
				{"refund of a cost above the limit gives back nothing", op(authguard.RateRefund, 4), authguard.Result{Remaining: 2, Reset: tt.gave1}},
				{"refund of cost 0 gives back nothing", op(authguard.RateRefund, 0), authguard.Result{Remaining: 2, Reset: tt.gave1}},
				{"refund 2: empty, not below", op(authguard.RateRefund, 2), authguard.Result{Remaining: 3}},
				{"refund of an empty state", op(authguard.RateRefund, 1), authguard.Result{Remaining: 3}},
				{"all 3 as if nothing had been taken", op(authguard.RateTake, 3), authguard.Result{Charged: true, Remaining: 0, Reset: tt.took3}},
			}
			var state any
			for _, st := range steps {
				next, ttl, got := authguard.Apply(st.op, state, now)
				if got != st.want {
					t.Fatalf("%s: got %+v, want %+v", st.name, got, st.want)
				}
				if ttl != got.Reset {
					t.Errorf("%s: kept for %v, but Reset = %v", st.name, ttl, got.Reset)
				}
				state = next
				if ttl <= 0 {
					state = nil // as a store drops it
				}
			}
		})
	}
}
