package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// Attack: a thief with a copy of the owner's device token asks for codes
// from an address busy with codes, where otp_send's address rules ask an
// unknown client for a CAPTCHA and a known device goes ahead; the owner
// then changes her password on a login that revokes device tokens. On
// Redis (one node, the generic script, a Cluster, one with subject hash
// tags) as on the memory store:
// the stolen token's send goes ahead before the change, needs the
// CAPTCHA after it (twice: the refused send made nothing known), and a
// token issued after the change goes ahead.
func TestSend_RedisRevokesAStolenDeviceTokenAsTheMemoryStore(t *testing.T) {
	for _, kind := range []string{"single", "generic", "cluster", "subject", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, revokingPolicy(t, true), clock)
			generic(kind, rs)
			var got [2][]string
			for i, e := range engines {
				got[i] = stolenTokenSendRun(t, e, clock, fmt.Sprintf("owner%d@example.com", i))
			}
			want := []string{"proceed", "captcha [ip_destinations]", "captcha [ip_destinations]", "proceed"}
			for i, name := range []string{"memory store", "Redis"} {
				if !slices.Equal(got[i], want) {
					t.Errorf("%s: the sends %q, want %q", name, got[i], want)
				}
			}
		})
	}
}

// stolenTokenSendRun is the attack of
// TestSend_RedisRevokesAStolenDeviceTokenAsTheMemoryStore on e: the
// verdicts of the stolen token's sends from the busy address before the
// change, twice after it, and of a send with a token issued after it. The
// clock is where it started when it returns.
func stolenTokenSendRun(t *testing.T, e *authguard.Engine, clock *testclock.Clock, owner string) []string {
	t.Helper()
	ctx := context.Background()
	const home, nat = "203.0.113.9", "198.51.100.30"
	start := clock.Now()
	defer clock.Set(start)
	check := func(req authguard.CheckRequest) authguard.Verdict {
		t.Helper()
		v, err := e.Check(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	report := func(req authguard.ReportRequest) authguard.Verdict {
		t.Helper()
		v, err := e.Report(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	send := func(req authguard.SendRequest) authguard.Verdict {
		t.Helper()
		v, err := e.Send(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	say := func(v authguard.Verdict) string {
		if len(v.Reasons) == 0 {
			return v.Action.String()
		}
		return fmt.Sprintf("%v %v", v.Action, v.Reasons)
	}
	signIn := func(token string) string {
		t.Helper()
		v := check(authguard.CheckRequest{Flow: "login", Account: owner, IP: home, DeviceToken: token})
		if v.Action != authguard.Proceed {
			t.Fatalf("the owner's sign-in: %v %v", v.Action, v.Reasons)
		}
		return report(authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: token}).DeviceToken
	}
	// The address asks for codes to 60 numbers within the hour, each
	// verified (no conversion rule speaks): ip_destinations is full.
	for i := range 60 {
		clock.Advance(time.Second)
		number := fmt.Sprintf("+44 7400 %06d", i*1000+i)
		if v := send(authguard.SendRequest{Destination: number, Channel: "sms", IP: nat}); v.Action != authguard.Proceed {
			t.Fatalf("code %d: %v %v", i, v.Action, v.Reasons)
		}
		v := check(authguard.CheckRequest{Flow: "otp_verify", Account: number, IP: nat})
		if v.Action != authguard.Proceed {
			t.Fatalf("verify %d: %v %v", i, v.Action, v.Reasons)
		}
		report(authguard.ReportRequest{Flow: "otp_verify", Account: number, IP: nat, Outcome: authguard.Success, Attempt: v.Attempt, Destination: number, Channel: "sms"})
	}
	code := func(n int, token string) string {
		return say(send(authguard.SendRequest{Destination: fmt.Sprintf("+44 7400 9%05d", n), Channel: "sms", IP: nat, Account: owner, DeviceToken: token}))
	}
	stolen := signIn("")
	out := []string{code(1, stolen)}
	report(authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.PasswordChanged})
	out = append(out, code(2, stolen), code(3, stolen))
	fresh := signIn(stolen) // the owner's device, signed out by her change, signs in again
	return append(out, code(4, fresh))
}

// What the generation read costs a send naming an account (subjects never
// seen) on a trust group that revokes, beside one that does not: one node,
// one script call either way, the read inside the send's script; a
// Cluster, one call more (the generation's key is a slot of its own), in
// the same round trip.
func TestSend_TheGenerationReadIsInTheSendsOwnRoundTrip(t *testing.T) {
	for _, kind := range []string{"single", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			var calls, trips [2]float64
			for i, on := range []bool{false, true} {
				c := clientOf(t, kind)
				counter := &pipelineCounter{}
				c.AddHook(counter)
				e, err := authguard.New(authguard.Config{Policy: revokingPolicy(t, on), Store: newStore(t, c, nil), Secret: secret})
				if err != nil {
					t.Fatal(err)
				}
				send := func(n int) {
					v, err := e.Send(context.Background(), authguard.SendRequest{Account: fmt.Sprintf("user%d@example.com", n),
						Destination: fmt.Sprintf("+44 7400 %06d", n*1000), Channel: "sms", IP: fmt.Sprintf("10.0.%d.%d", n>>8&255, n&255)})
					if err != nil || v.Action != authguard.Proceed {
						t.Fatalf("send %d: %+v, %v; want a proceed", n, v, err)
					}
				}
				for n := range 20 { // the scripts loaded, the slot map known
					send(500 + n)
				}
				resetAll(t, c)
				trip0 := counter.pipelines.Load() + counter.commands.Load()
				const n = 20
				for j := range n {
					send(j)
				}
				trips[i] = float64(counter.pipelines.Load()+counter.commands.Load()-trip0) / n
				stats := commandStats(t, c)
				calls[i] = (stats["evalsha"]["calls"] + stats["eval"]["calls"]) / n
			}
			t.Logf("%s: script calls per fresh send %.1f off, %.1f on; round trips %.1f off, %.1f on", kind, calls[0], calls[1], trips[0], trips[1])
			wantCalls := calls[0]
			if kind == "cluster" {
				wantCalls++
			}
			if calls[1] != wantCalls || trips[1] != trips[0] {
				t.Errorf("with the setting on a fresh send made %.1f calls in %.1f round trips; want %.1f calls in %.1f", calls[1], trips[1], wantCalls, trips[0])
			}
		})
	}
}

// A send of a revoking trust group holds its generation read in the send's
// one script, whose shape holds the counter's policy (its 401 days among
// them), as a check's does: a send sends the read's varying arguments
// only (one or two more than with the setting off), never the policy.
func TestShapes_ASendsGenerationReadSendsOnlyWhatVaries(t *testing.T) {
	forget := fmt.Sprint(authguard.DeviceGenTTL.Milliseconds())
	var n [2]int
	for k, on := range []bool{false, true} {
		c := singleClient(t)
		hook := &evalArgs{}
		c.AddHook(hook)
		e, err := authguard.New(authguard.Config{Policy: revokingPolicy(t, on), Store: newStore(t, c, nil), Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			v, err := e.Send(context.Background(), authguard.SendRequest{Account: fmt.Sprintf("user%d@example.com", i),
				Destination: fmt.Sprintf("+44 7400 %06d", i*1000), Channel: "sms", IP: fmt.Sprintf("192.0.2.%d", i+1)})
			if err != nil || v.Action != authguard.Proceed {
				t.Fatalf("send %d: %+v, %v; want a proceed", i, v, err)
			}
			args := hook.last(t)
			for _, a := range args {
				if a == forget || a == "peek" {
					t.Fatalf("send %d sent the generation's %q; the shape should hold it: %q", i, a, args)
				}
			}
			n[k] = len(args)
		}
	}
	t.Logf("a send sends %d arguments, %d in a revoking group", n[0], n[1])
	if d := n[1] - n[0]; d < 1 || d > 2 {
		t.Errorf("a send of a revoking group sent %d arguments, %d without: want one or two more (the read's key and what varies)", n[1], n[0])
	}
}

// Attack: a thief with a revoked copy of the owner's device token asks for
// codes to a victim's number, and signs in from an address others share,
// where the policy's rules count every request (on otp_send, per
// destination, denied past 6 a day; on login, per address, delayed past 6
// a day). A call with a revoked token is made twice, as the token's and
// again as an unknown client's: on Redis (one node, the generic script, a
// Cluster, one with subject hash tags) as on the memory store, each of the
// thief's requests counts once, so the 7th is the first held by the rule,
// not the 4th.
func TestSend_RedisChargesARevokedTokensRequestOnceAsTheMemoryStore(t *testing.T) {
	p, err := policyfile.LoadPolicy([]byte(`
flows:
  login:
    revoke_devices_on_password_change: true
    device_token_ttl: 400d
    rules:
      - {name: ip_requests, clients: all, subject: ip, algorithm: fixed_window, counts: check, window: 24h, limit: 6}
  otp_send:
    rules:
      - {name: destination_requests, clients: all, subject: destination, algorithm: fixed_window, counts: check, window: 24h, limit: 6, past: deny}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"single", "generic", "cluster", "subject", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, p, clock)
			generic(kind, rs)
			var got [2][]int
			for i, e := range engines {
				got[i] = revokedRequestsRun(t, e, fmt.Sprintf("owner%d@example.com", i))
			}
			want := []int{7, 7}
			for i, name := range []string{"memory store", "Redis"} {
				if !slices.Equal(got[i], want) {
					t.Errorf("%s: the first send and check held by the request rules were %v, want %v (each request counted once)", name, got[i], want)
				}
			}
		})
	}
}

// revokedRequestsRun is the attack of
// TestSend_RedisChargesARevokedTokensRequestOnceAsTheMemoryStore on e: the
// owner signs in and changes her password, then the thief sends with her
// revoked token until destination_requests denies a code and checks with
// it until ip_requests delays one. It returns which send and which check
// that was (1-based; 0 for none within 12).
func revokedRequestsRun(t *testing.T, e *authguard.Engine, owner string) []int {
	t.Helper()
	ctx := context.Background()
	const home, nat, number = "203.0.113.9", "198.51.100.30", "+44 7400 123456"
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: owner, IP: home})
	if err != nil || v.Action != authguard.Proceed {
		t.Fatalf("the owner's sign-in: %v %v, %v", v.Action, v.Reasons, err)
	}
	r, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.Success, Attempt: v.Attempt})
	if err != nil || r.DeviceToken == "" {
		t.Fatalf("the owner's sign-in issued no device token: %v", err)
	}
	stolen := r.DeviceToken
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: owner, IP: home, Outcome: authguard.PasswordChanged}); err != nil {
		t.Fatal(err)
	}
	firstHeld := func(call func() (authguard.Verdict, error), reason authguard.Reason) int {
		for n := 1; n <= 12; n++ {
			v, err := call()
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(v.Reasons, reason) {
				return n
			}
		}
		return 0
	}
	send := firstHeld(func() (authguard.Verdict, error) {
		return e.Send(ctx, authguard.SendRequest{Destination: number, Channel: "sms", IP: nat, Account: owner, DeviceToken: stolen})
	}, "destination_requests")
	check := firstHeld(func() (authguard.Verdict, error) {
		return e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: owner, IP: nat, DeviceToken: stolen})
	}, "ip_requests")
	return []int{send, check}
}
