package authguard_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// busyAddress has ip ask for codes to 60 numbers within the hour (each
// verified, so that no conversion rule holds the country): the next send
// from it of an unknown client needs a CAPTCHA (ip_destinations), while a
// known device's goes ahead.
func busyAddress(h *harness, ip string) {
	h.t.Helper()
	for i := range 60 {
		h.clock.Advance(time.Second) // otp_verify's ip_rate
		number := fmt.Sprintf("+44 7400 %06d", i*1000+i)
		if v := h.send(authguard.SendRequest{Destination: number, Channel: "sms", IP: ip}); v.Action != authguard.Proceed {
			h.t.Fatalf("code %d: %v %v", i, v.Action, v.Reasons)
		}
		h.verify(number, ip, number, "sms")
	}
}

// heldByTheAddress reports whether v is what an unknown client gets from a
// busy address (busyAddress): a CAPTCHA for ip_destinations.
func heldByTheAddress(v authguard.Verdict) bool {
	return v.Action == authguard.Captcha && len(v.Reasons) > 0 && v.Reasons[0] == "ip_destinations"
}

// ownersNumber is the n-th number the owner asks a code for: a fresh one
// each time, so that the destination's own rules (which count every
// client) never speak.
func ownersNumber(n int) string { return fmt.Sprintf("+44 7400 9%05d", n) }

// Attack: a thief copied the owner's device token (a cookie). otp_send
// trusts login's tokens to skip its address rules, so from an address
// busy with codes (a bomber's, or a NAT he shares) the thief's sends with
// the token go ahead where an unknown client's need a CAPTCHA. The owner
// changes her password on a login that revokes device tokens: the stolen
// token is then no token for the sends either, and the thief's sends from
// the busy address meet the address rules as an unknown client's.
func TestSend_ARevokedDeviceTokenNoLongerExemptsSendsFromTheAddressRules(t *testing.T) {
	h := newHarness(t, revokingLogin("90d"))
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	stolen := h.attempt(owner, home, authguard.Success, "").DeviceToken
	if stolen == "" {
		t.Fatal("no device token from a login success")
	}
	busyAddress(h, nat)
	thief := func(n int) authguard.SendRequest {
		return authguard.SendRequest{Destination: ownersNumber(n), Channel: "sms", IP: nat, Account: owner, DeviceToken: stolen}
	}
	if v := h.send(thief(1)); v.Action != authguard.Proceed {
		t.Fatalf("before the change the stolen token's send got %v %v, want proceed (a known device skips the address rules)", v.Action, v.Reasons)
	}
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	if v := h.send(thief(2)); !heldByTheAddress(v) {
		t.Errorf("the stolen token's send after the change got %v %v, want a CAPTCHA by ip_destinations as an unknown client's", v.Action, v.Reasons)
	}
	// Again: the refused send took nothing of the device's that would
	// make it known again, and its verdict is the unknown client's still.
	if v := h.send(thief(3)); !heldByTheAddress(v) {
		t.Errorf("the stolen token's send again: %v %v, want a CAPTCHA by ip_destinations", v.Action, v.Reasons)
	}
	// And what the token's batch counted went back: the number it named
	// has sent no code, so a code to it from elsewhere goes at once
	// (destination_backoff lets the first one through, not a second).
	if v := h.send(authguard.SendRequest{Destination: ownersNumber(2), Channel: "sms", IP: home}); v.Action != authguard.Proceed {
		t.Errorf("a code to the number the refused send named: %v %v, want proceed (the refused send counted nothing)", v.Action, v.Reasons)
	}
	// Without an account the token counts for nothing, before the change
	// or after it: the send is an unknown client's as it always was.
	req := thief(4)
	req.Account = ""
	if v := h.send(req); !heldByTheAddress(v) {
		t.Errorf("the stolen token without the account: %v %v, want a CAPTCHA by ip_destinations", v.Action, v.Reasons)
	}
}

// The owner signs in again after her change: the token that sign-in
// issues carries the new generation, and her sends with it from the busy
// address go ahead as a known device's, while the old token's are held.
func TestSend_ADeviceTokenIssuedAfterThePasswordChangeStillExemptsSends(t *testing.T) {
	h := newHarness(t, revokingLogin("90d"))
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	old := h.attempt(owner, home, authguard.Success, "").DeviceToken
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	fresh := h.attempt(owner, home, authguard.Success, old).DeviceToken
	if fresh == "" || fresh == old {
		t.Fatalf("the sign-in after the change issued %q, want a new device token", fresh)
	}
	busyAddress(h, nat)
	send := func(n int, token string) authguard.Verdict {
		return h.send(authguard.SendRequest{Destination: ownersNumber(n), Channel: "sms", IP: nat, Account: owner, DeviceToken: token})
	}
	if v := send(1, fresh); v.Action != authguard.Proceed {
		t.Errorf("the token issued after the change got %v %v, want proceed", v.Action, v.Reasons)
	}
	if v := send(2, old); !heldByTheAddress(v) {
		t.Errorf("the token issued before the change got %v %v, want a CAPTCHA by ip_destinations", v.Action, v.Reasons)
	}
	if v := send(3, fresh); v.Action != authguard.Proceed {
		t.Errorf("the new token after the old one was refused got %v %v, want proceed", v.Action, v.Reasons)
	}
}

// Without the setting (the default) a send with a token from before a
// password change still skips the address rules, as it always did.
func TestSend_WithoutRevokingADeviceTokenOutlivesThePasswordChange(t *testing.T) {
	h := newHarness(t, "")
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	token := h.attempt(owner, home, authguard.Success, "").DeviceToken
	h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	busyAddress(h, nat)
	v := h.send(authguard.SendRequest{Destination: ownersNumber(1), Channel: "sms", IP: nat, Account: owner, DeviceToken: token})
	if v.Action != authguard.Proceed {
		t.Errorf("the owner's device after the change got %v %v, want proceed", v.Action, v.Reasons)
	}
}

// The send's read of the generation is in its own batch: one store call
// per send as before, one op more on every send of a revoking group that
// names an account, token or not (so that the ops tell nothing of
// whether a client holds one), and none on a send that names none.
func TestSend_TheGenerationReadIsInTheSendsOwnBatch(t *testing.T) {
	const owner, home, ip = "owner@example.com", "203.0.113.9", "198.51.100.40"
	cost := func(policy string) (calls, ops [3]int64) {
		h := newHarness(t, policy)
		token := h.attempt(owner, home, authguard.Success, "").DeviceToken
		for i, req := range []authguard.SendRequest{
			{Account: owner, DeviceToken: token},
			{Account: owner},
			{},
		} {
			req.Destination, req.Channel, req.IP = ownersNumber(i), "sms", ip
			c, o := h.store.calls.Load(), h.store.ops.Load()
			if v := h.send(req); v.Action != authguard.Proceed {
				t.Fatalf("send %d: %v %v", i, v.Action, v.Reasons)
			}
			calls[i], ops[i] = h.store.calls.Load()-c, h.store.ops.Load()-o
		}
		return calls, ops
	}
	plainCalls, plainOps := cost("")
	calls, ops := cost(revokingLogin("90d"))
	for i, name := range []string{"a send with the token", "a send naming the account without one", "a send naming no account"} {
		want := plainOps[i] + 1
		if i == 2 {
			want = plainOps[i]
		}
		if calls[i] != 1 || plainCalls[i] != 1 {
			t.Errorf("%s: %d store calls (%d without revoking), want 1", name, calls[i], plainCalls[i])
		}
		if ops[i] != want {
			t.Errorf("%s: %d ops, want %d (%d without revoking)", name, ops[i], want, plainOps[i])
		}
	}
}

// A send flow follows its trust group: it may not state the setting
// itself (TestPasswordChange_RevokeDevicesIsCheckedWhereItMeansSomething),
// and a send flow of another group is untouched by login's.
func TestSend_ASendFlowOfAnotherTrustGroupReadsNoGeneration(t *testing.T) {
	const owner, ip = "owner@example.com", "198.51.100.40"
	ops := func(policy string) int64 {
		h := newHarness(t, policy)
		o := h.store.ops.Load()
		h.send(authguard.SendRequest{Destination: ownersNumber(1), Channel: "sms", IP: ip, Account: owner})
		return h.store.ops.Load() - o
	}
	other := "  otp_send:\n    device_trust: otp_verify\n"
	if plain, revoking := ops("flows:\n"+other), ops(revokingLogin("90d")+other); revoking != plain {
		t.Errorf("a send flow trusting otp_verify's tokens sent %d ops with login revoking, %d without: want the same", revoking, plain)
	}
}

// requestCounting is revokingLogin with rules a policy author may write,
// each counting every request from every client whatever its verdict: on
// otp_send, the requests for a code to a destination, denied past limit a
// day; on login, the checks from an address, delayed past limit a day.
func requestCounting(limit int) string {
	return revokingLogin("90d") + fmt.Sprintf("    rules:\n"+
		"      - {name: ip_requests, clients: all, subject: ip, algorithm: fixed_window, counts: check, window: 24h, limit: %d}\n"+
		"  otp_send:\n    rules:\n"+
		"      - {name: destination_requests, clients: all, subject: destination, algorithm: fixed_window, counts: check, window: 24h, limit: %d, past: deny}\n", limit, limit)
}

// heldBy reports whether v names reason.
func heldBy(v authguard.Verdict, reason authguard.Reason) bool {
	return slices.Contains(v.Reasons, reason)
}

// Attack: a thief with a revoked copy of the owner's device token asks
// for codes to a victim's number. A send with a revoked token is made
// twice, once as the token's (the batch that reads the generation) and
// again as an unknown client's; a rule that counts requests (not sends)
// kept what the first batch took, so each of the thief's requests counted
// two, and the victim's number was denied codes after half the requests
// the rule allows: the thief locks the number out at twice the rate an
// unknown client could. N requests must count N, whether the token's
// batch went ahead (the first request) or was refused (the later ones,
// held by destination_backoff), as N requests without a token do.
func TestSend_ARevokedTokenDoesNotChargeTheDestinationTwice(t *testing.T) {
	const limit = 6
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	for _, tt := range []struct {
		name    string
		revoked bool
	}{{"a revoked token", true}, {"no token", false}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, requestCounting(limit))
			token := ""
			if tt.revoked {
				token = h.attempt(owner, home, authguard.Success, "").DeviceToken
				h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
			}
			req := authguard.SendRequest{Destination: victim, Channel: "sms", IP: nat, Account: owner, DeviceToken: token}
			for i := range limit {
				if v := h.send(req); heldBy(v, "destination_requests") {
					t.Fatalf("request %d of %d: %v %v, want each counted once (the limit is %d)", i+1, limit, v.Action, v.Reasons, limit)
				}
			}
			if v := h.send(req); v.Action != authguard.Deny || !heldBy(v, "destination_requests") {
				t.Errorf("request %d: %v %v, want deny by destination_requests (the limit is %d)", limit+1, v.Action, v.Reasons, limit)
			}
		})
	}
}

// Attack: the same thief signs in with the revoked token from an address
// others share. A check with a revoked token is made twice too, and a
// login rule that counts checks from every client charged the address
// twice per guess: the thief's guesses held everyone behind the address
// at half the checks the rule allows. N checks must count N, whether the
// token's batch went ahead (the first check) or was refused (the later
// ones, held by the account's delay), as N checks without a token do.
func TestCheck_ARevokedTokenDoesNotChargeTheAddressTwice(t *testing.T) {
	const limit = 6
	const owner, home, nat = "owner@example.com", "203.0.113.9", "198.51.100.30"
	for _, tt := range []struct {
		name    string
		revoked bool
	}{{"a revoked token", true}, {"no token", false}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, requestCounting(limit))
			token := ""
			if tt.revoked {
				token = h.attempt(owner, home, authguard.Success, "").DeviceToken
				h.report(authguard.ReportRequest{Account: owner, IP: home, Outcome: authguard.PasswordChanged})
			}
			for i := range limit {
				if v := tokenCheck(h, owner, nat, token); heldBy(v, "ip_requests") {
					t.Fatalf("check %d of %d: %v %v, want each counted once (the limit is %d)", i+1, limit, v.Action, v.Reasons, limit)
				}
			}
			if v := tokenCheck(h, owner, nat, token); v.Action != authguard.Delay || !heldBy(v, "ip_requests") {
				t.Errorf("check %d: %v %v, want a delay by ip_requests (the limit is %d)", limit+1, v.Action, v.Reasons, limit)
			}
		})
	}
}

// Policy.DeviceRevocation says what -print and -json show of each flow: a
// flow with a device rule states its own setting; a send flow follows the
// flows of its trust group that have one, named by the flow named as the
// group, or else by the first of them; a flow that trusts no tokens (no
// device rule, or a send flow whose group issues none) names none.
func TestPolicy_DeviceRevocationSaysWhatASendFlowFollows(t *testing.T) {
	tests := []struct {
		name, policy, flow string
		on                 bool
		from               string
	}{
		{"login revokes, its send flow follows", revokingLogin("90d"), "otp_send", true, "login"},
		{"the built-in send flow", "", "otp_send", false, "login"},
		{"login states its own", revokingLogin("90d"), "login", true, "login"},
		{"a flow without a device rule", revokingLogin("90d"), "passkey", false, ""},
		{"a send flow trusting a group without a device rule", revokingLogin("90d") + "  otp_send:\n    device_trust: passkey\n", "otp_send", false, ""},
		{"a group without a flow of its name", "flows:\n  login:\n    device_trust: web\n    revoke_devices_on_password_change: true\n  otp_send:\n    device_trust: web\n", "otp_send", true, "login"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policyfile.LoadPolicy([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			if on, from := p.DeviceRevocation(p.Flow(tt.flow)); on != tt.on || from != tt.from {
				t.Errorf("DeviceRevocation(%s) = %v, %q; want %v, %q", tt.flow, on, from, tt.on, tt.from)
			}
		})
	}
}
