package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// revokingLogin is the built-in policy with login revoking its device
// tokens on a password change, its tokens living ttl.
func revokingLogin(ttl string) string {
	return "flows:\n  login:\n    revoke_devices_on_password_change: true\n    device_token_ttl: " + ttl + "\n"
}

// heldByOthers drives the account into its delay with failures from an
// address that is neither the owner's nor the thief's, each counted on its
// own: a known device is not held by them, an unknown client is.
func heldByOthers(h *harness, account string) {
	h.t.Helper()
	fail(h, "login", account, "192.0.2.77", 12)
}

// tokenCheck is the check of a client with a device token from ip.
func tokenCheck(h *harness, account, ip, token string) authguard.Verdict {
	h.t.Helper()
	return h.check(authguard.CheckRequest{Account: account, IP: ip, DeviceToken: token})
}

// isUnknownClients reports whether v is what a client without a device
// token gets from the account's delay: a delay for account_backoff.
func heldAsUnknown(v authguard.Verdict) bool {
	for _, r := range v.Reasons {
		if r == "account_backoff" {
			return v.Action == authguard.Delay
		}
	}
	return false
}

// Attack: a thief copied the victim's device token (a cookie) and signs in
// with it, skipping what holds unknown clients: the account's delay and
// the address rules. The victim, warned, changes her password on a flow
// that revokes device tokens: the stolen token is then no token, and the
// thief's next check meets the account's delay that others' failures set,
// where a trusted device would go ahead.
func TestPasswordChange_AStolenDeviceTokenIsRevokedWhenTheOwnerChangesThePassword(t *testing.T) {
	h := newHarness(t, revokingLogin("90d"))
	const victim, home, thief = "victim@example.com", "203.0.113.9", "198.51.100.7"
	stolen := h.attempt(victim, home, authguard.Success, "").DeviceToken
	if stolen == "" {
		t.Fatal("no device token from a success")
	}
	heldByOthers(h, victim)
	if v := tokenCheck(h, victim, thief, stolen); v.Action != authguard.Proceed {
		t.Fatalf("before the change the token's check got %v %v, want proceed (a known device is not held)", v.Action, v.Reasons)
	}
	h.report(authguard.ReportRequest{Account: victim, IP: home, Outcome: authguard.PasswordChanged})
	heldByOthers(h, victim) // the change cleared the account: held again
	if v := tokenCheck(h, victim, thief, stolen); !heldAsUnknown(v) {
		t.Errorf("the stolen token after the change got %v %v, want delay [account_backoff] as an unknown client", v.Action, v.Reasons)
	}
	// And it took nothing of the device's: its own allowance is as the
	// check left it, not spent by a check that was given back.
	if v := tokenCheck(h, victim, thief, stolen); !heldAsUnknown(v) {
		t.Errorf("the stolen token again: %v %v, want delay [account_backoff]", v.Action, v.Reasons)
	}
}

// Without the setting (the default) the token outlives the change, as it
// always did: a routine rotation signs no device out.
func TestPasswordChange_WithoutTheSettingTheDeviceTokenStillWorks(t *testing.T) {
	h := newHarness(t, "")
	const owner, home = "owner@example.com", "203.0.113.9"
	token := h.attempt(owner, home, authguard.Success, "").DeviceToken
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	heldByOthers(h, owner)
	if v := tokenCheck(h, owner, "198.51.100.7", token); v.Action != authguard.Proceed {
		t.Errorf("the owner's device after the change got %v %v, want proceed", v.Action, v.Reasons)
	}
}

// The owner's device, signed out by her own change, signs in again: its
// check goes ahead as an unknown client's while the account is not held,
// its success issues a token of the new generation, and that token is a
// known device's again: held by nothing others do.
func TestPasswordChange_ATokenIssuedAfterTheChangeWorks(t *testing.T) {
	h := newHarness(t, revokingLogin("90d"))
	const owner, home = "owner@example.com", "203.0.113.9"
	old := h.attempt(owner, home, authguard.Success, "").DeviceToken
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	fresh := h.attempt(owner, home, authguard.Success, old).DeviceToken
	if fresh == "" || fresh == old {
		t.Fatalf("the sign-in after the change issued %q, want a new device token", fresh)
	}
	heldByOthers(h, owner)
	if v := tokenCheck(h, owner, "198.51.100.7", fresh); v.Action != authguard.Proceed {
		t.Errorf("the token issued after the change got %v %v, want proceed", v.Action, v.Reasons)
	}
	if v := tokenCheck(h, owner, "198.51.100.7", old); !heldAsUnknown(v) {
		t.Errorf("the token issued before the change got %v %v, want delay [account_backoff]", v.Action, v.Reasons)
	}
}

// Attack: the thief keeps the revoked token and waits for the account's
// generation to be forgotten, hoping the token is good again. The
// generation lives longer than any token (DeviceGenTTL past its last
// change), so a token revoked is dead until it expires; and a success
// that issues a token keeps it as long again, so that a generation
// forgotten after a quiet year never counts the next change as one a
// token of the year before carries.
func TestPasswordChange_ARevokedTokenStaysRevokedAfterTheGenerationKeyWouldExpire(t *testing.T) {
	h := newHarness(t, revokingLogin("400d"))
	const victim, home, thief = "victim@example.com", "203.0.113.9", "198.51.100.7"
	stolen := h.attempt(victim, home, authguard.Success, "").DeviceToken
	h.clock.Advance(24 * time.Hour)
	h.report(authguard.ReportRequest{Account: victim, IP: home, Outcome: authguard.PasswordChanged})

	// Days 2 to 399: the token is valid all along, and revoked all along.
	for _, day := range []int{30, 200, 398} {
		h.clock.Set(testclock.Epoch.Add(time.Duration(day) * 24 * time.Hour))
		heldByOthers(h, victim)
		if v := tokenCheck(h, victim, thief, stolen); !heldAsUnknown(v) {
			t.Errorf("day %d: the revoked token got %v %v, want delay [account_backoff]", day, v.Action, v.Reasons)
		}
	}

	// The owner signs in on day 398 (a token of generation 1: the account
	// under attack, through a step-up, whose pass issues it), the thief
	// copies that one too; the next change comes on day 500, more than
	// DeviceGenTTL after the first one but not after that sign-in.
	v := h.passStepUp(victim, home, h.attempt(victim, home, authguard.Success, ""))
	second := v.DeviceToken
	if second == "" {
		t.Fatalf("no device token on day 398: %v %v", v.Action, v.Reasons)
	}
	if v := tokenCheck(h, victim, thief, second); v.Action != authguard.Proceed {
		t.Fatalf("day 398: the token the step-up issued got %v %v, want proceed (it carries the generation)", v.Action, v.Reasons)
	}
	h.clock.Set(testclock.Epoch.Add(500 * 24 * time.Hour))
	h.report(authguard.ReportRequest{Account: victim, IP: home, Outcome: authguard.PasswordChanged})
	heldByOthers(h, victim)
	if v := tokenCheck(h, victim, thief, second); !heldAsUnknown(v) {
		t.Errorf("day 500: the token of day 398 after the second change got %v %v, want delay [account_backoff]", v.Action, v.Reasons)
	}
}

// The setting is for a flow that trusts device tokens in its checks, and
// the flows trusting one group's tokens agree on it.
func TestPasswordChange_RevokeDevicesIsCheckedWhereItMeansSomething(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"a step-up flow", "flows:\n  step_up:\n    revoke_devices_on_password_change: true\n", "revoke_devices_on_password_change"},
		{"a send flow", "flows:\n  otp_send:\n    revoke_devices_on_password_change: true\n", "revoke_devices_on_password_change"},
		{"two flows of one trust group that differ", `
flows:
  login:
    revoke_devices_on_password_change: true
  app_login:
    template: login
    device_trust: login
`, "revoke_devices_on_password_change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policyfile.LoadPolicy([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadPolicy: %v, want an error naming %s", err, tt.want)
			}
		})
	}
	if _, err := policyfile.LoadPolicy([]byte(revokingLogin("90d"))); err != nil {
		t.Errorf("login with the setting: %v", err)
	}
	_, err := authguard.NewPolicy(&authguard.Flow{Name: "api", Kind: authguard.Attempts, RevokeDevicesOnPasswordChange: true,
		Rules: []authguard.Rule{{Name: "per_ip", Subject: authguard.Subject{Parts: authguard.PartIP}, Algorithm: authguard.TokenBucket,
			Rate: authguard.RateLimit{Algorithm: authguard.TokenBucket, Limit: 10, Interval: time.Second}}}})
	var fe *authguard.FieldError
	if !errors.As(err, &fe) || fe.Field != "RevokeDevicesOnPasswordChange" {
		t.Errorf("a flow without a device rule: %v, want a *FieldError on RevokeDevicesOnPasswordChange", err)
	}
}

// Attack: after a leak the operator has every user change the password,
// so the generations are the biggest group of keys in a bounded memory
// store; the thief of a revoked token then floods it with checks on fresh
// accounts from fresh addresses, hoping it evicts the victim's generation
// and, with it, the revocation. A generation above 0 restricts
// (authguard.Restricting), so the store evicts the flood's ordinary keys
// instead, and the token stays revoked.
func TestPasswordChange_AFloodOfFreshSubjectsDoesNotEvictTheRevocation(t *testing.T) {
	clock := testclock.New(time.Time{})
	mem := memstore.New(memstore.Config{Now: clock.Now, MaxEntries: 400, Shards: 1})
	p, err := policyfile.LoadPolicy([]byte(revokingLogin("90d")))
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: mem, Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: e, clock: clock, mem: mem}
	const victim, home, thief = "victim@example.com", "203.0.113.9", "198.51.100.7"
	stolen := h.attempt(victim, home, authguard.Success, "").DeviceToken
	h.report(authguard.ReportRequest{Account: victim, IP: home, Outcome: authguard.PasswordChanged})
	for i := range 300 {
		h.report(authguard.ReportRequest{Account: fmt.Sprintf("user%d@example.com", i), IP: home, Outcome: authguard.PasswordChanged})
	}
	for i := range 2000 {
		h.check(authguard.CheckRequest{Account: fmt.Sprintf("flood%d@example.com", i), IP: fmt.Sprintf("10.%d.%d.1", i>>8, i&255)})
	}
	if st := mem.Stats(); st.Evicted == 0 {
		t.Fatalf("the flood evicted nothing (%+v): make it bigger", st)
	}
	heldByOthers(h, victim)
	if v := tokenCheck(h, victim, thief, stolen); !heldAsUnknown(v) {
		t.Errorf("the revoked token after the flood got %v %v, want delay [account_backoff]", v.Action, v.Reasons)
	}
}

// An administrator's reset of the account forgets its counters, not its
// revocations: a stolen token revoked before it stays revoked after it.
func TestPasswordChange_AnAccountResetDoesNotBringARevokedTokenBack(t *testing.T) {
	h := newHarness(t, revokingLogin("90d"))
	const victim, home, thief = "victim@example.com", "203.0.113.9", "198.51.100.7"
	stolen := h.attempt(victim, home, authguard.Success, "").DeviceToken
	h.report(authguard.ReportRequest{Account: victim, IP: home, Outcome: authguard.PasswordChanged})
	if _, err := h.e.Reset(context.Background(), authguard.ResetRequest{Flow: "login", Account: victim, Reason: "support ticket"}); err != nil {
		t.Fatal(err)
	}
	heldByOthers(h, victim)
	if v := tokenCheck(h, victim, thief, stolen); !heldAsUnknown(v) {
		t.Errorf("the revoked token after an account reset got %v %v, want delay [account_backoff]", v.Action, v.Reasons)
	}
}
