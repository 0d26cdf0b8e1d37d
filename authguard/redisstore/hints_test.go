package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// A credential-stuffing run against one account in backoff, on a Cluster.
// The account's failures were reported through another instance, so this
// one's first refused check is Reserve's two pipelines (reserve, undo);
// every later one is one pipeline that peeks what it would undo, and
// writes nothing but its ip_rate take. An instance that saw the failures
// itself sends even the first as one pipeline.
func TestCluster_RefusedChecksAreOnePipelineOnceExpected(t *testing.T) {
	c := clusterClient(t)
	counter := &pipelineCounter{}
	c.AddHook(counter)
	ctx := context.Background()
	engine := func() (*authguard.Engine, *redisstore.Store) {
		s := newStore(t, c, nil)
		if err := s.Preload(ctx); err != nil { // no NOSCRIPT round trips below
			t.Fatal(err)
		}
		e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		return e, s
	}
	e, s := engine()
	other, _ := engine()
	fail := func(e *authguard.Engine, account string) {
		for range 10 { // 10 failures: 32 s of delay
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: "192.0.2.9", Outcome: authguard.Failure}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(account string, i int) {
		t.Helper()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account,
			IP: fmt.Sprintf("198.51.100.%d", i+1), PasswordFingerprint: fmt.Sprint("guess", i)})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Delay {
			t.Fatalf("check %d: %v, want delay", i, v.Action)
		}
	}
	fail(e, "seen@example.com")
	p0 := counter.pipelines.Load()
	check("seen@example.com", 0)
	if p := counter.pipelines.Load() - p0; p != 1 {
		t.Errorf("first refused check after failures this instance saw: %d pipelines, want 1", p)
	}
	fail(other, "victim@example.com")
	p0 = counter.pipelines.Load()
	check("victim@example.com", 0)
	if p := counter.pipelines.Load() - p0; p != 2 {
		t.Errorf("first refused check after failures another instance saw: %d pipelines, want 2 (reserve, undo)", p)
	}
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ConfigResetStat(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	const checks = 10
	p0 = counter.pipelines.Load()
	for i := 1; i <= checks; i++ {
		check("victim@example.com", i)
	}
	if p := counter.pipelines.Load() - p0; p != checks {
		t.Errorf("%d refused checks expected to be refused: %d pipelines, want %d", checks, p, checks)
	}
	if sent, wrong := s.Hinted(); sent != checks+1 || wrong != 0 {
		t.Errorf("checks sent on a hint: %d (%d wrong), want %d (0)", sent, wrong, checks+1)
	}
	checkOnlyRateWrites(t, c, checks)
}

// The hint says the account is in backoff, but another instance has reset
// it: the check is sent as peeks, comes back unblocked, and applies what it
// peeked in a second pipeline. Its reservations must all be there: the check
// is left in flight, and ten more accounts failing from the same address
// must meet ip_spray's limit of 10 exactly where the memory store does.
func TestCluster_AWrongHintCostsARoundTripNotAVerdict(t *testing.T) {
	c := clusterClient(t)
	clock := testclock.New(time.Time{})
	p := builtinpolicy.Policy()
	engines, rs := memoryAndRedis(t, c, p, clock)
	other, err := authguard.New(authguard.Config{Policy: p, Store: newStore(t, c, clock.Now), Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rs.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	counter := &pipelineCounter{}
	c.AddHook(counter)
	both := func(what string, f func(e *authguard.Engine) (authguard.Verdict, error)) authguard.Verdict {
		t.Helper()
		var got [2]authguard.Verdict
		for i, e := range engines {
			v, err := f(e)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got[i] = v
		}
		if a, b := fmt.Sprint(got[0].Action, got[0].Delay, got[0].Reasons), fmt.Sprint(got[1].Action, got[1].Delay, got[1].Reasons); a != b {
			t.Fatalf("%s: memory %s, Redis Cluster %s", what, a, b)
		}
		return got[1]
	}
	checkFrom := func(acct string) func(e *authguard.Engine) (authguard.Verdict, error) {
		return func(e *authguard.Engine) (authguard.Verdict, error) {
			return e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "203.0.113.5"})
		}
	}
	for i := range 10 {
		both(fmt.Sprint("failure ", i), func(e *authguard.Engine) (authguard.Verdict, error) {
			return e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim", IP: "192.0.2.9", Outcome: authguard.Failure})
		})
	}
	for i := range 2 {
		if v := both(fmt.Sprint("refused check ", i), checkFrom("victim")); v.Action != authguard.Delay {
			t.Fatalf("check in backoff: %v, want delay", v.Action)
		}
	}
	// The reset happens elsewhere: on the memory side on its own engine, on
	// Redis through another instance, whose store shares no hints.
	reset := authguard.ResetRequest{Flow: "login", Account: "victim", Reason: "owner called the help desk"}
	for _, e := range []*authguard.Engine{engines[0], other} {
		if _, err := e.Reset(ctx, reset); err != nil {
			t.Fatal(err)
		}
	}
	p0 := counter.pipelines.Load()
	if v := both("check after the reset", checkFrom("victim")); v.Action != authguard.Proceed {
		t.Fatalf("check after the reset: %v, want proceed", v.Action)
	}
	if p := counter.pipelines.Load() - p0; p != 2 {
		t.Errorf("check on a wrong hint: %d pipelines, want 2 (the peeks, then what they peeked)", p)
	}
	// (the first refused check was already sent on a hint: this instance
	// saw the failures)
	if sent, wrong := rs.Hinted(); sent != 3 || wrong != 1 {
		t.Errorf("checks sent on a hint: %d (%d wrong), want 3 (1)", sent, wrong)
	}
	// That check stays in flight. Ten accounts fail from the same address:
	// with it, the tenth is the eleventh distinct account of the hour.
	var actions []authguard.Action
	for i := range 10 {
		acct := fmt.Sprint("sprayed", i)
		// each engine reports the attempt its own check gave
		v := both("spray attempt "+acct, func(e *authguard.Engine) (authguard.Verdict, error) {
			v, err := checkFrom(acct)(e)
			if err != nil || v.Action != authguard.Proceed {
				return v, err
			}
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "203.0.113.5", Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
				return v, err
			}
			return v, nil
		})
		actions = append(actions, v.Action)
	}
	if actions[9] != authguard.Captcha {
		t.Errorf("spray checks answered %v: the tenth must be a CAPTCHA (the check in flight counts)", actions)
	}
}
