package authguard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/limits"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

func TestRestricting(t *testing.T) {
	at, ms := testclock.At, testclock.Ms
	pol := backoff.Policy{Free: 5, Base: time.Second, Factor: 2, Max: 30 * time.Minute, ForgetAfter: 24 * time.Hour}
	bo := &authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: pol, SeenWindow: time.Hour}
	wins := spraydetect.Windows{{Length: time.Hour, Limit: 3}, {Length: 24 * time.Hour, Limit: 5}}
	lo := &authguard.LogOp{Key: "k", Action: authguard.LogAdmit, Member: "m", Windows: wins}
	bk := &authguard.RateOp{Key: "k", Action: authguard.RateTake, Cost: 1,
		Rate: authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: 100 * time.Millisecond, Limit: 10}}
	log := func(ago ...time.Duration) spraydetect.Log { // members m0, m1, … recorded ago before t=+24h
		var l spraydetect.Log
		for i, d := range ago {
			l.Entries = append(l.Entries, spraydetect.Entry{Member: fmt.Sprint("m", i), At: ms(24*time.Hour - d)})
		}
		return l
	}
	day := at(24 * time.Hour)
	fw := &authguard.RateOp{Key: "k", Action: authguard.RateTake, Cost: 1,
		Rate: authguard.RateLimit{Algorithm: authguard.FixedWindow, Window: time.Hour, Limit: 3}}
	lb := &authguard.RateOp{Key: "k", Action: authguard.RateTake, Cost: 1,
		Rate: authguard.RateLimit{Algorithm: authguard.LeakyBucket, Interval: time.Second, Limit: 3}}

	tests := []struct {
		name  string
		op    authguard.Op
		state any
		now   time.Time
		want  bool
	}{
		{"backoff: no state", bo, nil, day, false},
		{"backoff: zero counter", bo, backoff.State{}, day, false},
		{"backoff: free-1 failures, the next attempt is free", bo, backoff.State{Failures: 4, Last: ms(24 * time.Hour)}, day, false},
		{"backoff: free failures, the next attempt waits", bo, backoff.State{Failures: 5, Last: ms(24 * time.Hour)}, day, true},
		{"backoff: free failures, wait passed: the one after waits", bo, backoff.State{Failures: 5, Last: ms(23 * time.Hour)}, day, true},
		{"backoff: deep in backoff", bo, backoff.State{Failures: 40, Last: ms(24 * time.Hour)}, day, true},
		{"backoff: forgotten after forget_after", bo, backoff.State{Failures: 40, Last: ms(0)}, day, false},
		{"backoff: 1ms before forget_after", bo, backoff.State{Failures: 40, Last: ms(time.Millisecond)}, day, true},
		{"backoff: wrong state type", bo, int64(7), day, false},

		{"log: no state", lo, nil, day, false},
		{"log: empty", lo, spraydetect.Log{}, day, false},
		{"log: short window one below its limit", lo, log(time.Minute, 2*time.Minute), day, false},
		{"log: short window at its limit", lo, log(time.Minute, 2*time.Minute, 3*time.Minute), day, true},
		{"log: short window limit, oldest just out of it", lo, log(time.Hour, 2*time.Minute, 3*time.Minute), day, false},
		{"log: long window at its limit", lo, log(20*time.Hour, 10*time.Hour, 5*time.Hour, 2*time.Hour, time.Minute), day, true},
		{"log: long window one below", lo, log(20*time.Hour, 10*time.Hour, 5*time.Hour, time.Minute), day, false},
		{"log: long window limit, oldest out of it", lo, log(24*time.Hour, 10*time.Hour, 5*time.Hour, 2*time.Hour, time.Minute), day, false},
		{"log: wrong state type", lo, backoff.State{Failures: 99}, day, false},

		{"bucket: no state", bk, nil, day, false},
		{"bucket: full (TAT passed)", bk, ms(time.Hour), day, false},
		{"bucket: one token left", bk, ms(24*time.Hour + 900*time.Millisecond), day, false},
		{"bucket: less than one token left", bk, ms(24*time.Hour + 901*time.Millisecond), day, true},
		{"bucket: empty", bk, ms(24*time.Hour + time.Second), day, true},
		{"bucket: wrong state type", bk, 5, day, false},

		// Rate limits: restricting when one unit would be refused now.
		{"fixed window: no state", fw, nil, day, false},
		{"fixed window: 2 of 3 taken", fw, limits.FixedState{Start: ms(24 * time.Hour), Count: 2}, day, false},
		{"fixed window: full", fw, limits.FixedState{Start: ms(24 * time.Hour), Count: 3}, day, true},
		{"fixed window: full, but the window is over", fw, limits.FixedState{Start: ms(23 * time.Hour), Count: 3}, day, false},
		{"leaky bucket: queue full", lb, ms(24*time.Hour + 3*time.Second), day, true},
		{"leaky bucket: one place left", lb, ms(24*time.Hour + 2*time.Second), day, false},

		{"nil op", nil, backoff.State{Failures: 99}, day, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := authguard.Restricting(tt.op, tt.state, tt.now); got != tt.want {
				t.Errorf("Restricting(%T, %+v) = %v, want %v", tt.op, tt.state, got, tt.want)
			}
		})
	}
}

// TestRestricting_AgreesWithApply drives each kind of state with Apply and
// checks that Restricting is true exactly when the next step is refused, or
// (for a counter whose wait has passed) when it would be after one more
// failure.
func TestRestricting_AgreesWithApply(t *testing.T) {
	pol := backoff.Policy{Free: 3, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}
	wins := spraydetect.Windows{{Length: 10 * time.Second, Limit: 2}, {Length: time.Minute, Limit: 4}}
	bucket := authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: time.Second, Limit: 3}
	clock := testclock.New(time.Time{})

	charge := &authguard.BackoffOp{Key: "a", Action: authguard.BackoffCharge, Policy: pol}
	refund := &authguard.BackoffOp{Key: "a", Action: authguard.BackoffRefund, Policy: pol}
	var counter any
	step := func(op authguard.Op, state any) (any, authguard.Result) {
		next, _, r := authguard.Apply(op, state, clock.Now())
		return next, r
	}
	for i := 1; i <= 6; i++ {
		var r authguard.Result
		counter, r = step(charge, counter)
		if !r.Charged {
			clock.Advance(r.Wait)
			counter, _ = step(charge, counter)
		}
		if got, want := authguard.Restricting(charge, counter, clock.Now()), i >= pol.Free; got != want {
			t.Errorf("after %d failures: Restricting = %v, want %v", i, got, want)
		}
	}
	for counter.(backoff.State).Failures >= pol.Free {
		counter, _ = step(refund, counter)
	}
	if authguard.Restricting(refund, counter, clock.Now()) {
		t.Errorf("refunded below free (%+v): still restricting", counter)
	}
	counter, _ = step(charge, counter)
	clock.Advance(pol.ForgetAfter)
	if authguard.Restricting(charge, counter, clock.Now()) {
		t.Errorf("after forget_after: still restricting")
	}

	var l any
	overs := 0
	for i := range 6 {
		op := &authguard.LogOp{Key: "l", Action: authguard.LogAdmit, Member: fmt.Sprint("m", i), Windows: wins}
		restricting := authguard.Restricting(op, l, clock.Now())
		var r authguard.Result
		l, r = step(op, l)
		if r.Over != restricting {
			t.Errorf("member %d: Restricting before = %v, but Admit over = %v", i, restricting, r.Over)
		}
		if r.Over {
			overs++
		}
		clock.Advance(3 * time.Second)
	}
	if overs == 0 || overs == 6 {
		t.Errorf("%d of 6 admits over: the sequence must test both answers", overs)
	}

	var tat any
	op := &authguard.RateOp{Key: "b", Action: authguard.RateTake, Rate: bucket, Cost: 1}
	refused := 0
	for i := range 8 {
		restricting := authguard.Restricting(op, tat, clock.Now())
		var r authguard.Result
		tat, r = step(op, tat)
		if r.Charged == restricting {
			t.Errorf("take %d: Restricting before = %v, but Take allowed = %v", i, restricting, r.Charged)
		}
		if !r.Charged {
			refused++
		}
		clock.Advance(300 * time.Millisecond)
	}
	if refused == 0 || refused == 8 {
		t.Errorf("%d of 8 takes refused: the sequence must test both answers", refused)
	}
}
