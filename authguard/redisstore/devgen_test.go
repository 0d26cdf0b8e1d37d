package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// revokingPolicy is the built-in policy with login revoking its device
// tokens on a password change.
func revokingPolicy(t testing.TB, on bool) *authguard.Policy {
	t.Helper()
	p, err := policyfile.LoadPolicy(fmt.Appendf(nil, "flows:\n  login:\n    revoke_devices_on_password_change: %t\n    device_token_ttl: 400d\n", on))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Attack: a thief with a copy of the victim's device token, and a change
// of her password on a flow that revokes device tokens; on Redis (one
// node, the generic script, a Cluster) as on the memory store. Each engine
// answers the same: the stolen token's check goes ahead before the change
// (a known device is not held by the account's delay), is held as an
// unknown client's after it, and stays so for as long as the token is
// valid; a token issued after the change is a known device's.
func TestPasswordChange_RedisRevokesAStolenDeviceTokenAsTheMemoryStore(t *testing.T) {
	for _, kind := range []string{"single", "generic", "cluster", "subject", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, revokingPolicy(t, true), clock)
			generic(kind, rs)
			var got [2][]string
			for i, e := range engines {
				got[i] = stolenTokenRun(t, e, clock, fmt.Sprintf("victim%d@example.com", i))
			}
			want := []string{"proceed", "delay [account_backoff]", "delay [account_backoff]", "proceed"}
			for i, name := range []string{"memory store", "Redis"} {
				if !slices.Equal(got[i], want) {
					t.Errorf("%s: the stolen token's checks %q, want %q", name, got[i], want)
				}
			}
		})
	}
}

// stolenTokenRun is the attack of
// TestPasswordChange_RedisRevokesAStolenDeviceTokenAsTheMemoryStore on e:
// the verdicts of the stolen token before the change, after it, 398 days
// later, and of a token issued after the change. The clock is where it
// started when it returns.
func stolenTokenRun(t *testing.T, e *authguard.Engine, clock *testclock.Clock, victim string) []string {
	t.Helper()
	ctx := context.Background()
	const home, thief, others = "203.0.113.9", "198.51.100.7", "192.0.2.77"
	start := clock.Now()
	defer clock.Set(start)
	check := func(ip, token string) authguard.Verdict {
		t.Helper()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip, DeviceToken: token})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	report := func(req authguard.ReportRequest) authguard.Verdict {
		t.Helper()
		req.Flow, req.Account = "login", victim
		v, err := e.Report(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	held := func() {
		for range 12 {
			report(authguard.ReportRequest{IP: others, Outcome: authguard.Failure})
		}
	}
	say := func(v authguard.Verdict) string {
		if len(v.Reasons) == 0 {
			return v.Action.String()
		}
		return fmt.Sprintf("%v %v", v.Action, v.Reasons)
	}
	signIn := func(token string) string {
		t.Helper()
		v := check(home, token)
		if v.Action != authguard.Proceed {
			t.Fatalf("the owner's sign-in: %v %v", v.Action, v.Reasons)
		}
		return report(authguard.ReportRequest{IP: home, Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: token}).DeviceToken
	}
	stolen := signIn("")
	held()
	var out []string
	out = append(out, say(check(thief, stolen)))
	report(authguard.ReportRequest{IP: home, Outcome: authguard.PasswordChanged})
	fresh := signIn(stolen) // the owner's device, signed out by her change, signs in again
	held()
	out = append(out, say(check(thief, stolen)))
	clock.Advance(398 * 24 * time.Hour)
	held()
	out = append(out, say(check(thief, stolen)))
	out = append(out, say(check(thief, fresh)))
	return out
}

// The account's generation is kept, on Redis, at least as long as the
// longest device token lives: a revoked token cannot come back by the key
// expiring first. And its key, like every key, names the account by its
// keyed hash only.
func TestPasswordChange_TheGenerationKeyOutlivesEveryDeviceToken(t *testing.T) {
	c := singleClient(t)
	// On Redis's own clock: a store on a test clock sets no PEXPIRE.
	e, err := authguard.New(authguard.Config{Policy: revokingPolicy(t, true), Store: newStore(t, c, nil), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const victim = "victim@example.com"
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: "203.0.113.9", Outcome: authguard.PasswordChanged}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*trust.gen*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("generation keys %q, want one", keys)
	}
	ttl, err := c.PTTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < authguard.MaxDeviceTokenTTL {
		t.Errorf("the generation key expires in %v, before a device token issued now (up to %v)", ttl, authguard.MaxDeviceTokenTTL)
	}
	if k := keys[0]; strings.Contains(k, "victim") {
		t.Errorf("the generation key %q names the account", k)
	}
}

// What the generation read costs a fresh login check (subjects never
// seen), with the setting off and on: the script calls Redis runs (every
// master of a Cluster, where each key is a slot of its own and so a call
// of its own) and the round trips. One node: one call either way, the
// read inside the check's script. A Cluster: one call more, in the same
// round trip (a pipeline per master, sent at once); with subject hash tags
// ("subject"), none: the generation's key is in the account's slot, so its
// read is in the account's call.
func TestPasswordChange_TheGenerationReadIsInTheChecksOwnRoundTrip(t *testing.T) {
	for _, kind := range []string{"single", "cluster", "subject"} {
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
				check := func(n int) {
					v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("user%d@example.com", n),
						IP: fmt.Sprintf("10.0.%d.%d", n>>8&255, n&255), PasswordFingerprint: fmt.Sprint("fp", n)})
					if err != nil || v.Action != authguard.Proceed {
						t.Fatalf("check %d: %+v, %v; want a proceed", n, v, err)
					}
				}
				for n := range 20 { // the scripts loaded, the slot map known
					check(1000 + n)
				}
				resetAll(t, c)
				// A round trip is a pipeline, or a command sent alone (one
				// node's check script).
				trip0 := counter.pipelines.Load() + counter.commands.Load()
				const n = 20
				for j := range n {
					check(j)
				}
				trips[i] = float64(counter.pipelines.Load()+counter.commands.Load()-trip0) / n
				stats := commandStats(t, c)
				calls[i] = (stats["evalsha"]["calls"] + stats["eval"]["calls"]) / n
			}
			t.Logf("%s: script calls per fresh check %.1f off, %.1f on; round trips %.1f off, %.1f on", kind, calls[0], calls[1], trips[0], trips[1])
			wantCalls := calls[0]
			if kind == "cluster" {
				wantCalls++
			}
			if calls[1] != wantCalls || trips[1] != trips[0] {
				t.Errorf("with the setting on a fresh check made %.1f calls in %.1f round trips; want %.1f calls in %.1f", calls[1], trips[1], wantCalls, trips[0])
			}
		})
	}
}

// resetAll resets INFO commandstats on every master of c.
func resetAll(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error { return n.ConfigResetStat(ctx).Err() })
	} else {
		err = c.ConfigResetStat(context.Background()).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A login check of a flow that revokes device tokens holds its generation
// read in the check's one script, whose shape holds the counter's policy
// (its 401 days among them): the call sends one op's varying arguments
// more, at most two, and every such check shares the shape.
func TestShapes_TheGenerationReadSendsOnlyWhatVaries(t *testing.T) {
	c := singleClient(t)
	hook := &evalArgs{}
	c.AddHook(hook)
	s := newStore(t, c, nil)
	e, err := authguard.New(authguard.Config{Policy: revokingPolicy(t, true), Store: s, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		v, err := e.Check(context.Background(), authguard.CheckRequest{
			Flow: "login", Account: fmt.Sprintf("user%d@example.com", i), IP: fmt.Sprintf("192.0.2.%d", i+1),
			PasswordFingerprint: fmt.Sprintf("%032x", i),
		})
		if err != nil || v.Action != authguard.Proceed {
			t.Fatalf("check %d: %+v, %v; want a proceed", i, v, err)
		}
	}
	args := hook.last(t)
	t.Logf("a revoking login check sends %d arguments", len(args))
	// TestShapes_ACheckSendsOnlyWhatVaries's seven ops and the read.
	if len(args) > 20 {
		t.Errorf("a login check sent %d arguments %q; want at most 20 (4, and one or two per op)", len(args), args)
	}
	forget := fmt.Sprint(authguard.DeviceGenTTL.Milliseconds())
	for _, a := range args {
		if a == forget || a == "peek" {
			t.Errorf("a login check sent the generation's %q; the shape should hold it: %q", a, args)
		}
	}
	if n := redisstore.Shapes(s); n < 1 || n > 3 {
		t.Errorf("20 login checks of one kind made %d shapes; want one or two (deferred spares and not)", n)
	}
}
