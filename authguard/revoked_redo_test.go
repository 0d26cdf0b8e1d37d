package authguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// The attacks below hold a stolen device token that the owner's password
// change revoked, and look for a way to have its calls counted by a rule
// that counts checks less than an unknown client's are: a call with a
// revoked token is decided twice, and the first decision's take on such a
// rule is given back when the second (as an unknown client) takes the
// same key again.

// revokedThief signs the owner in at home, which issues a device token,
// then reports her password change, which revokes it: the stolen token.
func revokedThief(h *harness, owner string) string {
	h.t.Helper()
	const home = "203.0.113.9"
	token := h.attempt(owner, home, authguard.Success, "").DeviceToken
	if token == "" {
		h.t.Fatal("the owner's sign-in issued no device token")
	}
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	return token
}

// firstHeldBy returns which of up to 12 calls of call is the first that
// reason holds (1-based; 0 for none).
func firstHeldBy(call func() authguard.Verdict, reason authguard.Reason) int {
	for n := 1; n <= 12; n++ {
		if heldBy(call(), reason) {
			return n
		}
	}
	return 0
}

// Attack: the thief's checks with the revoked token come while the
// account is held by others' failures. The token's batch goes ahead (a
// known device is not held by them) and its take on ip_requests is given
// back; the redo as an unknown client is then refused by the account's
// delay, an op ahead of ip_requests in the batch. A store that turns a
// refused batch's later ops into peeks (one Redis node's script, a
// Cluster's hints) must still take ip_requests' units there: were the
// take given back while the redo only peeked, the thief's checks would
// count nothing and he could sign in from behind the address for ever
// without spending its limit. After limit-1 of his checks a bystander's
// first check from the address is its limit-th (not held by ip_requests),
// and her second is held: each of his counted once.
func TestRevokedToken_ARedoRefusedEarlyStillChargesTheRequestRule(t *testing.T) {
	const limit = 6
	const owner, bystander, nat = "owner@example.com", "bystander@example.com", "198.51.100.30"
	h := newHarness(t, requestCounting(limit))
	stolen := revokedThief(h, owner)
	heldByOthers(h, owner)
	for i := range limit - 1 {
		v := tokenCheck(h, owner, nat, stolen)
		if !heldAsUnknown(v) || heldBy(v, "ip_requests") {
			t.Fatalf("the thief's check %d: %v %v, want a delay by account_backoff only (the redo refused ahead of ip_requests)", i+1, v.Action, v.Reasons)
		}
	}
	got := firstHeldBy(func() authguard.Verdict { return tokenCheck(h, bystander, nat, "") }, "ip_requests")
	if got != 2 {
		t.Errorf("after %d of the thief's checks the bystander's check %d was the first held by ip_requests, want 2 (each of his counted once: 1 is twice, 0 or past 2 not at all)", limit-1, got)
	}
}

// Attack: the thief sends his revoked-token checks all at once, hoping
// that a give-back of one lands between the takes of others and lets
// more of them past ip_requests than its limit. However they interleave,
// a check is counted by its redo's take alone: at most limit of them get
// past the rule, and none counts twice while under it (20 at once with a
// limit of 30 leave 10 for the bystander, her 11th held).
func TestRevokedToken_ManyAtOnceGetNoMorePastTheRequestRule(t *testing.T) {
	for _, tt := range []struct {
		name            string
		limit, n        int
		maxPast, heldAt int // at most maxPast of the n get past the rule; the bystander's check first held
	}{
		{"under the limit", 30, 20, 20, 11},
		{"past the limit", 6, 20, 6, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const owner, bystander, nat = "owner@example.com", "bystander@example.com", "198.51.100.30"
			h := newHarness(t, requestCounting(tt.limit))
			stolen := revokedThief(h, owner)
			var passed atomic.Int64
			var wg sync.WaitGroup
			for range tt.n {
				wg.Go(func() {
					v, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: owner, IP: nat, DeviceToken: stolen})
					if err != nil {
						t.Error(err)
					} else if !heldBy(v, "ip_requests") {
						passed.Add(1)
					}
				})
			}
			wg.Wait()
			if got := int(passed.Load()); got > tt.maxPast {
				t.Errorf("%d of the thief's %d checks at once got past ip_requests, want at most %d", got, tt.n, tt.maxPast)
			}
			if got := firstHeldBy(func() authguard.Verdict { return tokenCheck(h, bystander, nat, "") }, "ip_requests"); got != tt.heldAt {
				t.Errorf("after the thief's %d checks at once the bystander's check %d was the first held by ip_requests, want %d", tt.n, got, tt.heldAt)
			}
		})
	}
}

// Attack: the thief checks with the revoked token while the store is
// down, so that both of its decisions are the fallback's: the token's
// batch goes ahead there, and what it reserved for the device (a failure
// on the counter the account's devices share, the device's slot and
// allowance) is given back there before the redo as an unknown client.
// Once the store is back, what the fallback counted is written to it; the
// give-back must be written too, or each of his checks in the outage
// stays a failure of the owner's devices in the store, and her own device
// (a token issued after the change) is held back sooner than after as
// many checks without a token.
func TestRevokedToken_AGiveBackOnTheFallbackIsWrittenBackToo(t *testing.T) {
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	held := map[bool]string{}
	for _, revoked := range []bool{true, false} {
		h := newHarness(t, revokingLogin("90d"))
		stolen := revokedThief(h, owner)
		mine := h.attempt(owner, home, authguard.Success, "").DeviceToken
		if !revoked {
			stolen = ""
		}
		h.store.fail.Store(true)
		for i := range 3 {
			if v := tokenCheck(h, owner, nat, stolen); v.Action != authguard.Proceed {
				t.Fatalf("the thief's check %d while the store is down: %v %v", i+1, v.Action, v.Reasons)
			}
		}
		h.store.fail.Store(false)
		for n := 1; n <= 12 && held[revoked] == ""; n++ {
			if v := tokenCheck(h, owner, home, mine); v.Action != authguard.Proceed {
				held[revoked] = fmt.Sprintf("check %d: %v %v for %v", n, v.Action, v.Reasons, v.Delay)
			}
		}
	}
	if held[true] != held[false] {
		t.Errorf("the owner's own device, after the thief's 3 checks on the fallback, was first held at %s with a revoked token, at %s without: want the same", held[true], held[false])
	}
}

// Attack: the policy caps what known devices may do (a rule of known
// clients only that counts every check on the account). The thief's
// revoked token is no token, but its first batch is made as the token's:
// were that batch's take on the known clients' rule kept (the redo as an
// unknown client does not make it again), his 6 checks would spend the
// owner's known devices' day and her own device, with a token issued
// after the change, would be held, which 6 checks without a token do not
// do. A revoked token must count on no rule of known clients.
func TestRevokedToken_ARevokedTokenDoesNotSpendTheKnownDevicesRule(t *testing.T) {
	const limit = 6
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	policy := revokingLogin("90d") + fmt.Sprintf("    rules:\n"+
		"      - {name: known_requests, clients: known, subject: account, algorithm: fixed_window, counts: check, window: 24h, limit: %d}\n", limit)
	for _, tt := range []struct {
		name    string
		revoked bool
	}{{"a revoked token", true}, {"no token", false}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, policy)
			stolen := revokedThief(h, owner)
			mine := h.attempt(owner, home, authguard.Success, "").DeviceToken
			if !tt.revoked {
				stolen = ""
			}
			for range limit {
				tokenCheck(h, owner, nat, stolen)
			}
			// Her sign-ins were without a token: her own device's 6 go ahead.
			if got := firstHeldBy(func() authguard.Verdict { return tokenCheck(h, owner, home, mine) }, "known_requests"); got != limit+1 {
				t.Errorf("after the thief's %d checks the owner's own device was first held by known_requests at her check %d, want %d (her own checks alone count)", limit, got, limit+1)
			}
		})
	}
}

// failAfterGiveBack is a store that, once armed, passes on the first call
// that gives back a rate take and fails every call after it: the store
// going down between a revoked token's give-back and its redo.
type failAfterGiveBack struct {
	authguard.Store
	armed, down atomic.Bool
}

func (s *failAfterGiveBack) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if s.down.Load() {
		return nil, fmt.Errorf("test: %w", authguard.ErrStoreUnavailable)
	}
	res, err := s.Store.Do(ctx, ops)
	for _, op := range ops {
		if r, ok := op.(*authguard.RateOp); ok && r.Action == authguard.RateRefund && s.armed.Load() {
			s.down.Store(true)
		}
	}
	return res, err
}

// Attack: the thief's check with the revoked token gives back its first
// batch's take on ip_requests, and the store fails before the redo (a
// timeout, a breaker opening) so that the redo's charge is lost while the
// give-back stands. On a flow that fails open the redo is the fallback's
// and counted there, where every client's call is counted while the store
// is down: a bystander's 6th check then is the first held by the limit of
// 6, as after a thief's check without a token that the store failed. On
// a flow that fails closed the redo is refused, so the thief gets no
// guess that nothing counted.
func TestRevokedToken_AStoreFailingBetweenTheGiveBackAndTheRedoLosesNoCount(t *testing.T) {
	const limit = 6
	const owner, bystander, nat = "owner@example.com", "bystander@example.com", "198.51.100.30"
	for _, tt := range []struct {
		name       string
		closed     bool
		revoked    bool
		bystanders int // the bystander's check first held by ip_requests while the store is down
	}{
		{"open, a revoked token", false, true, limit},
		{"open, no token", false, false, limit},
		{"closed, a revoked token", true, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			policy := requestCounting(limit)
			if tt.closed {
				policy = strings.Replace(policy, "  login:\n", "  login:\n    fail_mode: closed\n", 1)
			}
			p, err := policyfile.LoadPolicy([]byte(policy))
			if err != nil {
				t.Fatal(err)
			}
			clock := testclock.New(time.Time{})
			st := &failAfterGiveBack{Store: memstore.New(memstore.Config{Now: clock.Now})}
			e, err := authguard.New(authguard.Config{Policy: p, Store: st, Secret: secret, Now: clock.Now, Fallback: memstore.New(memstore.Config{Now: clock.Now})})
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, e: e, clock: clock}
			token := ""
			if tt.revoked {
				token = revokedThief(h, owner)
				st.armed.Store(true)
			} else {
				st.down.Store(true)
			}
			v := tokenCheck(h, owner, nat, token)
			if !st.down.Load() {
				t.Fatal("the thief's check gave nothing back")
			}
			if tt.closed {
				if v.Action == authguard.Proceed {
					t.Errorf("the thief's check whose redo the store failed on a flow that fails closed: %v %v, want it refused", v.Action, v.Reasons)
				}
				return
			}
			if got := firstHeldBy(func() authguard.Verdict { return tokenCheck(h, bystander, nat, "") }, "ip_requests"); got != tt.bystanders {
				t.Errorf("with the store down after the thief's check, the bystander's check %d was the first held by ip_requests, want %d (his counted once, on the fallback)", got, tt.bystanders)
			}
		})
	}
}
