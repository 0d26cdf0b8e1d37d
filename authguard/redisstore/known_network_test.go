package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// On one Redis node a check is first sent without its known network's
// spare allowances, and again with them only when they could exempt it
// (check.lua). Attack: the owner's account held in its delay by an
// attacker elsewhere, and someone behind her address guessing token-less.
// Redis must answer as the memory store, which always sends them: the
// owner's network gets exactly the device rule's 5 failures through the
// delay, then waits, and the attacker elsewhere waits throughout.
func TestKnownNetwork_RedisSpendsTheSparesAsTheMemoryStore(t *testing.T) {
	c := clientOf(t, "single")
	clock := testclock.New(time.Time{})
	engines, _ := memoryAndRedis(t, c, config.DefaultPolicy(), clock)
	ctx := context.Background()
	const victim = "victim@example.com"
	const owner, attacker = "198.51.100.23", "203.0.113.9"
	guess := func(e *authguard.Engine, ip string, outcome authguard.Outcome) authguard.Verdict {
		t.Helper()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action == authguard.Proceed {
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ip, Outcome: outcome, Attempt: v.Attempt}); err != nil {
				t.Fatal(err)
			}
		}
		return v
	}
	var got [2][]authguard.Action
	for i, e := range engines {
		if v := guess(e, owner, authguard.Success); v.Action != authguard.Proceed {
			t.Fatalf("engine %d: the owner's first login: %v", i, v.Action)
		}
		// The attacker elsewhere drives the account into its delay.
		for range 8 {
			if v := guess(e, attacker, authguard.Failure); v.Action == authguard.Delay {
				clock.Advance(v.Delay)
				guess(e, attacker, authguard.Failure)
			}
		}
		if v := guess(e, attacker, authguard.Failure); v.Action != authguard.Delay {
			t.Fatalf("engine %d: the attacker after his failures: %v, want delay", i, v.Action)
		}
		// Token-less failures from the owner's network while the delay runs.
		for range 8 {
			got[i] = append(got[i], guess(e, owner, authguard.Failure).Action)
		}
		if v := guess(e, attacker, authguard.Failure); v.Action != authguard.Delay {
			t.Errorf("engine %d: the attacker after the owner's network's failures: %v, want delay", i, v.Action)
		}
		clock.Advance(48 * time.Hour)
	}
	want := []authguard.Action{authguard.Proceed, authguard.Proceed, authguard.Proceed, authguard.Proceed, authguard.Proceed,
		authguard.Delay, authguard.Delay, authguard.Delay}
	for i, name := range []string{"memory store", "Redis"} {
		if len(got[i]) != len(want) {
			t.Fatalf("%s: %v", name, got[i])
		}
		for j := range want {
			if got[i][j] != want[j] {
				t.Errorf("%s: the owner's network's answers %v, want %v", name, got[i], want)
				break
			}
		}
	}
}
