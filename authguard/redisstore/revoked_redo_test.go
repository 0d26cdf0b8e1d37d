package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// requestCountingPolicy is login revoking device tokens on a password
// change, with a rule that counts every check from an address, delayed
// past limit a day.
func requestCountingPolicy(t *testing.T, limit int) *authguard.Policy {
	t.Helper()
	p, err := policyfile.LoadPolicy(fmt.Appendf(nil, `
flows:
  login:
    revoke_devices_on_password_change: true
    device_token_ttl: 400d
    rules:
      - {name: ip_requests, clients: all, subject: ip, algorithm: fixed_window, counts: check, window: 24h, limit: %d}
`, limit))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stealRevoked signs owner in at home on e, which issues a device token,
// and reports her password change, which revokes it: the stolen token.
func stealRevoked(t *testing.T, e *authguard.Engine, owner string) string {
	t.Helper()
	ctx := context.Background()
	const home = "203.0.113.9"
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: owner, IP: home})
	if err != nil || v.Action != authguard.Proceed {
		t.Fatalf("the owner's sign-in: %v %v, %v", v.Action, v.Reasons, err)
	}
	r, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.Success, Attempt: v.Attempt})
	if err != nil || r.DeviceToken == "" {
		t.Fatalf("the owner's sign-in issued no device token: %v", err)
	}
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.PasswordChanged}); err != nil {
		t.Fatal(err)
	}
	return r.DeviceToken
}

// bystanderHeldAt returns which of up to 12 checks of a bystander without
// a token from ip is the first that ip_requests holds (1-based; 0 for
// none).
func bystanderHeldAt(t *testing.T, e *authguard.Engine, bystander, ip string) int {
	t.Helper()
	for n := 1; n <= 12; n++ {
		v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: bystander, IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(v.Reasons, "ip_requests") {
			return n
		}
	}
	return 0
}

// Attack: TestRevokedToken_ARedoRefusedEarlyStillChargesTheRequestRule
// (package authguard) on Redis. The thief's checks with the revoked token
// come while others' failures hold the account: the token's batch goes
// ahead and its take on ip_requests is given back, and the redo as an
// unknown client is refused by the account's delay, ahead of ip_requests
// in the batch, where one node's script peeks the ops it would undo and a
// Cluster's hints peek them before the batch is sent. ip_requests' take
// must be made for real there, or the give-back leaves the thief's check
// counted by nothing: after 5 of his checks a bystander's second check
// from the address is the first held by its limit of 6, on one node, the
// generic script, a Cluster and one with subject hash tags as on the
// memory store.
func TestRevokedToken_RedisChargesARedoRefusedEarlyAsTheMemoryStore(t *testing.T) {
	const limit = 6
	p := requestCountingPolicy(t, limit)
	ctx := context.Background()
	const nat, others = "198.51.100.30", "192.0.2.77"
	for _, kind := range []string{"single", "generic", "cluster", "subject", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, p, clock)
			generic(kind, rs)
			for i, e := range engines {
				owner, bystander := fmt.Sprintf("owner%d@example.com", i), fmt.Sprintf("bystander%d@example.com", i)
				stolen := stealRevoked(t, e, owner)
				for range 12 {
					if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: owner, IP: others, Outcome: authguard.Failure}); err != nil {
						t.Fatal(err)
					}
				}
				for n := 1; n < limit; n++ {
					v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: owner, IP: nat, DeviceToken: stolen})
					if err != nil {
						t.Fatal(err)
					}
					if v.Action != authguard.Delay || !slices.Equal(v.Reasons, []authguard.Reason{"account_backoff"}) {
						t.Fatalf("engine %d: the thief's check %d: %v %v, want a delay by account_backoff only (the redo refused ahead of ip_requests)", i, n, v.Action, v.Reasons)
					}
				}
				if sent, _ := rs.Hinted(); i == 1 && onCluster(kind) && sent == 0 {
					t.Errorf("no check of the thief's was sent on a hint: the Cluster's peeks ahead of the batch went untried")
				}
				if got := bystanderHeldAt(t, e, bystander, nat); got != 2 {
					t.Errorf("engine %d (0 memory, 1 Redis): after %d of the thief's checks the bystander's check %d was the first held by ip_requests, want 2 (each of his counted once)", i, limit-1, got)
				}
			}
		})
	}
}

// Attack: TestRevokedToken_ManyAtOnceGetNoMorePastTheRequestRule
// (package authguard) on Redis: 20 checks with the revoked token at once,
// their give-backs landing between the others' takes, on one node's script
// and on a Cluster's pipelines (its hints too, once the rule holds the
// address). Under the rule's limit of 30 each counts once (the bystander's
// 11th check is the first held); past a limit of 6, no more than 6 get
// past it and the bystander's first is held.
func TestRevokedToken_RedisGivesManyAtOnceNoMorePastTheRequestRule(t *testing.T) {
	ctx := context.Background()
	const nat = "198.51.100.30"
	for _, kind := range []string{"single", "cluster", "subject-shared"} {
		for _, tt := range []struct {
			limit, maxPast, heldAt int
		}{{30, 20, 11}, {6, 6, 1}} {
			t.Run(fmt.Sprintf("%s/limit %d", kind, tt.limit), func(t *testing.T) {
				c := clientOf(t, kind)
				clock := testclock.New(time.Time{})
				engines, _ := memoryAndRedis(t, c, requestCountingPolicy(t, tt.limit), clock)
				e := engines[1]
				stolen := stealRevoked(t, e, "owner@example.com")
				var passed atomic.Int64
				var wg sync.WaitGroup
				for range 20 {
					wg.Go(func() {
						v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "owner@example.com", IP: nat, DeviceToken: stolen})
						if err != nil {
							t.Error(err)
						} else if !slices.Contains(v.Reasons, "ip_requests") {
							passed.Add(1)
						}
					})
				}
				wg.Wait()
				if got := int(passed.Load()); got > tt.maxPast {
					t.Errorf("%d of the thief's 20 checks at once got past ip_requests, want at most %d", got, tt.maxPast)
				}
				if got := bystanderHeldAt(t, e, "bystander@example.com", nat); got != tt.heldAt {
					t.Errorf("after the thief's 20 checks at once the bystander's check %d was the first held by ip_requests, want %d", got, tt.heldAt)
				}
			})
		}
	}
}

// Attack: TestRevokedToken_ARevokedTokenDoesNotSpendTheKnownDevicesRule
// (package authguard) on Redis: the thief's 6 checks with a revoked token
// must not spend a rule of known clients only on the owner's account, so
// that her own device (a token issued after the change) still has its 6,
// on one node, the generic script, a Cluster and one with subject hash
// tags as on the memory store.
func TestRevokedToken_RedisLeavesTheKnownDevicesRuleAsTheMemoryStore(t *testing.T) {
	p, err := policyfile.LoadPolicy([]byte(`
flows:
  login:
    revoke_devices_on_password_change: true
    device_token_ttl: 400d
    rules:
      - {name: known_requests, clients: known, subject: account, algorithm: fixed_window, counts: check, window: 24h, limit: 6}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const home, nat = "203.0.113.9", "198.51.100.30"
	for _, kind := range []string{"single", "generic", "cluster", "subject", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, p, clock)
			generic(kind, rs)
			check := func(e *authguard.Engine, owner, ip, token string) authguard.Verdict {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: owner, IP: ip, DeviceToken: token})
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for i, e := range engines {
				owner := fmt.Sprintf("owner%d@example.com", i)
				stolen := stealRevoked(t, e, owner)
				v := check(e, owner, home, "")
				r, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.Success, Attempt: v.Attempt})
				if err != nil || r.DeviceToken == "" {
					t.Fatalf("the owner's sign-in after the change issued no device token: %v %v, %v", v.Action, v.Reasons, err)
				}
				for range 6 {
					check(e, owner, nat, stolen)
				}
				got := 0
				for n := 1; n <= 12 && got == 0; n++ {
					if slices.Contains(check(e, owner, home, r.DeviceToken).Reasons, "known_requests") {
						got = n
					}
				}
				if got != 7 {
					t.Errorf("engine %d (0 memory, 1 Redis): after the thief's 6 checks the owner's own device was first held by known_requests at her check %d, want 7", i, got)
				}
			}
		})
	}
}
