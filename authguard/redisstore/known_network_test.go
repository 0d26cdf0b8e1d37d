package redisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// On one Redis node a check is first sent without its known network's
// spare allowances, and again with them only when they could exempt it
// (check.lua); on a Cluster the first pipeline leaves them out, and a
// second one peeks them only then (reserveDeferred), unless a hint sends
// the check as peeks ("-nohints" turns the hints off, so that every check
// takes that path). Attack: the owner's account held in its delay by an
// attacker elsewhere, and someone behind her address guessing token-less.
// Redis must answer as the memory store, which always sends them: the
// owner's network gets exactly the device rule's 5 failures through the
// delay, then waits (a spare left out that is never spent would let it
// through for ever), and the attacker elsewhere waits throughout.
func TestKnownNetwork_RedisSpendsTheSparesAsTheMemoryStore(t *testing.T) {
	for _, kind := range []string{"single", "cluster", "subject", "subject-shared", "cluster-nohints", "subject-nohints", "subject-shared-nohints"} {
		t.Run(kind, func(t *testing.T) { spendsTheSparesAsTheMemoryStore(t, kind) })
	}
}

func spendsTheSparesAsTheMemoryStore(t *testing.T, kind string) {
	base, noHints := strings.CutSuffix(kind, "-nohints")
	c := clientOf(t, base)
	clock := testclock.New(time.Time{})
	engines, rs := memoryAndRedis(t, c, builtinpolicy.Policy(), clock)
	if noHints {
		rs.WithoutHints()
	}
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

// On a Cluster the spare allowances of a known network are sent only when
// they could exempt the check (reserveDeferred): a fresh login from a
// network the account does not know sends neither of them, as one node's
// check.lua runs neither, and the owner's check from her network while her
// account waits sends both, and spends the allowance. Sent for nothing they
// cost every login two ops on the account's master.
func TestKnownNetwork_AClusterSendsTheSparesOnlyWhenTheyCanExempt(t *testing.T) {
	for _, kind := range []string{"cluster", "subject"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind).(*redis.ClusterClient)
			keys := &keyRecorder{}
			c.AddHook(seeCmds(keys.record))
			clock := testclock.New(time.Time{})
			rs := newStore(t, c, clock.Now)
			// every check Reserve's (not a hint's peeks), no NOSCRIPT
			// resends to count
			rs.WithoutHints()
			if err := rs.Preload(context.Background()); err != nil {
				t.Fatal(err)
			}
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: rs, Secret: secret, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			const victim, owner, attacker = "victim@example.com", "198.51.100.23", "203.0.113.9"
			// login returns the check's verdict and its ops on spares
			login := func(ip string, outcome authguard.Outcome) (authguard.Verdict, int) {
				t.Helper()
				keys.reset()
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: ip})
				if err != nil {
					t.Fatal(err)
				}
				spares := keys.spares()
				if v.Action == authguard.Proceed {
					if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: ip, Outcome: outcome, Attempt: v.Attempt}); err != nil {
						t.Fatal(err)
					}
				}
				return v, spares
			}
			v, got := login(owner, authguard.Success)
			if v.Action != authguard.Proceed {
				t.Fatalf("the owner's first login: %v", v.Action)
			}
			if got != 0 {
				t.Errorf("a login from a network the account does not know sent %d spare ops, want 0", got)
			}
			// the attacker elsewhere puts the account in its delay
			for i := 0; ; i++ {
				if v, _ := login(attacker, authguard.Failure); v.Action == authguard.Delay {
					break
				}
				if i == 20 {
					t.Fatal("the attacker's failures never put the account in its delay")
				}
			}
			v, got = login(owner, authguard.Failure)
			if v.Action != authguard.Proceed {
				t.Fatalf("the owner's network while her account waits: %v, want proceed (exempt)", v.Action)
			}
			// each spare's peek, then the allowance and the slot spent
			if got != 4 {
				t.Errorf("the owner's check from her network sent %d spare ops, want 4: each peeked, then spent", got)
			}
		})
	}
}

// keyRecorder counts the ops on a known network's spare allowances (its
// device allowance and slot) in the scripts a client sends.
type keyRecorder struct {
	mu sync.Mutex
	n  int
}

func (k *keyRecorder) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n = 0
}

func (k *keyRecorder) spares() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

func (k *keyRecorder) record(cmd redis.Cmder) {
	args := cmd.Args()
	if name := cmd.Name(); (name != "evalsha" && name != "eval") || len(args) < 3 {
		return
	}
	n, _ := args[2].(int)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, a := range args[3:min(3+n, len(args))] {
		if key, _ := a.(string); strings.Contains(key, ":dev.dev:") || strings.Contains(key, ":dev.slots:") {
			k.n++
		}
	}
}
