package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// fillRedis writes junk until Redis refuses writes with OOM (maxmemory with
// noeviction), as a flood of fresh subjects or a trickle of 24-hour keys
// would. At the edge Redis flaps (freeing a refused write's buffer brings
// it back under), so it then sets maxmemory just under what is used, which
// keeps it full for the rest of the test.
func fillRedis(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	junk := strings.Repeat("x", 16<<10)
	for i := range 100_000 {
		err := c.Set(ctx, fmt.Sprintf("junk:%d", i), junk, 0).Err()
		if redis.HasErrorPrefix(err, "OOM") {
			used, err := c.MemoryUsage(ctx, "junk:0").Result()
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.InfoMap(ctx, "memory").Result()
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			fmt.Sscan(info["Memory"]["used_memory"], &total)
			if err := c.ConfigSet(ctx, "maxmemory", fmt.Sprint(total-64*used)).Err(); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("Redis never answered OOM; is maxmemory set?")
}

// An attacker fills Redis (maxmemory, noeviction) so that every write fails,
// hoping the victim's counter, in backoff, is answered from an empty local
// fallback with fresh free attempts. The full store is its own error kind,
// and what Redis still holds keeps the victim delayed, in fail-open and
// fail-closed flows alike.
func TestFullRedis_CannotResetAVictimInBackoff(t *testing.T) {
	// Long delays, so that the wall clock Redis scripts read cannot run
	// them out during the test.
	h := newOutageHarness(t, `flows:
  login:
    rules:
      - {name: account_backoff, free: 2, base: 1h, factor: 2, max: 2h, forget_after: 24h}
  otp_verify:
    rules:
      - {name: account_backoff, free: 2, base: 1h, factor: 2, max: 2h, forget_after: 24h}
`, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	c, e, last := h.client, h.e, h.last
	ctx := context.Background()
	var checked authguard.Event // the last check's event
	guess := func(flow, account string) authguard.Verdict {
		t.Helper()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: flow, Account: account, IP: "192.0.2.9"})
		if err != nil {
			t.Fatal(err)
		}
		checked = last()
		if v.Action == authguard.Proceed {
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: flow, Account: account, IP: "192.0.2.9", Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
				t.Fatal(err)
			}
		}
		return v
	}
	for _, flow := range []string{"login", "otp_verify"} {
		for range 2 {
			guess(flow, "victim@example.com")
		}
		if v := guess(flow, "victim@example.com"); v.Action != authguard.Delay {
			t.Fatalf("%s: victim after 2 failures: %v, want delay", flow, v.Action)
		}
	}

	fillRedis(t, c)

	for _, flow := range []string{"login", "otp_verify"} {
		for i := range 5 {
			v := guess(flow, "victim@example.com")
			if kind := authguard.StoreErrorKind(checked.StoreErr); kind != "full" {
				t.Fatalf("%s: store error kind %q (%v), want full", flow, kind, checked.StoreErr)
			}
			if v.Action != authguard.Delay || v.Delay < 59*time.Minute {
				t.Fatalf("%s: victim's check %d while Redis is full: %v %v %v, want its own delay of about 1h", flow, i, v.Action, v.Delay, v.Reasons)
			}
		}
	}
	// Accounts Redis knows nothing about are answered by the fail mode: from
	// the local fallback (open), or with the short fail-closed delay.
	if v := guess("login", "fresh@example.com"); v.Action != authguard.Proceed || checked.Source != authguard.SourceFallback {
		t.Errorf("login, fresh account, Redis full: %v from %v, want proceed from the fallback", v.Action, checked.Source)
	}
	if v := guess("otp_verify", "fresh@example.com"); v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonUnavailable {
		t.Errorf("otp_verify, fresh account, Redis full: %v %v, want delay unavailable", v.Action, v.Reasons)
	}
}

// TestFullRedis_AFloodOfRefusedWritesCannotOpenTheBreaker: Redis is full and
// an attacker floods checks on made-up accounts, whose writes Redis refuses,
// to open the circuit breaker: an open breaker fails calls before they reach
// Redis, so the engine could no longer read the victim's counter in backoff
// and would answer from the empty fallback. Refusals are answers, not
// failures: the breaker stays closed, every victim check is answered full,
// and none proceeds.
func TestFullRedis_AFloodOfRefusedWritesCannotOpenTheBreaker(t *testing.T) {
	needRedis(t)
	in := redistest.Server(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	c := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: 50 * time.Millisecond})
	// The default breaker (5 failures, a 100 ms cooldown), with a deadline
	// a loaded machine cannot miss: what this test holds is that refused
	// writes do not count as failures, and a timeout would (CI once saw 2
	// calls of 50 ms time out under load, and the breaker open with them).
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policyfile.LoadPolicy([]byte(`flows:
  login:
    rules:
      - {name: account_backoff, free: 2, base: 1h, factor: 2, max: 2h, forget_after: 24h}
`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	kinds := map[string]int{} // the victim's checks' store error kinds
	// Without the recall, which would answer most of the victim's checks
	// from what Redis last said whenever the flood holds every call slot:
	// here every one must reach Redis, full, through a closed breaker.
	e, err := authguard.New(authguard.Config{Policy: p, Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
		MaxInFlight: s.PoolSize(), RecallBytes: -1,
		// 16 flooding callers and the victim are more than the 15
		// ordinary slots of a pool of 20: the victim may wait for one,
		// and this test is about what Redis answers it, not about how
		// long a starved CI machine makes it wait (at the default 50 ms
		// one check in 500 was once shed as overloaded, never reaching
		// Redis).
		QueueWait: 10 * time.Second,
		Observe: func(ev authguard.Event) {
			if ev.Call == "check" && ev.Flow == "login" && ev.StoreErr != nil { // the victim's; the flood's are otp_verify's
				mu.Lock()
				kinds[authguard.StoreErrorKind(ev.StoreErr)]++
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	guess := victimGuess(t, e)
	for range 2 {
		guess()
	}
	if v := guess(); v.Action != authguard.Delay {
		t.Fatalf("victim after 2 failures: %v, want delay", v.Action)
	}
	fillRedis(t, c)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e.Check(ctx, authguard.CheckRequest{Flow: "otp_verify", Account: fmt.Sprintf("junk%d-%d@example.com", g, i), IP: "198.51.100.7"})
			}
		})
	}
	proceeded := 0
	for range 500 {
		if guess().Action == authguard.Proceed {
			proceeded++
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the victim's checks' store errors: %v", kinds)
	if proceeded > 0 || kinds["full"] != 500 || len(kinds) != 1 || s.Open() {
		t.Errorf("%d of 500 victim checks proceeded, store errors %v, breaker open %v: want none, every one full, closed", proceeded, kinds, s.Open())
	}
}

// TestFullRedis_ACounterInBackoffKeepsClimbingOnTheFallback: Redis is full
// and the victim's counter in backoff cannot count any more. Once its delay
// runs out the attacker bursts guesses: each instance's fallback, counting
// from nothing, would hand out its free attempts again. It counts on from
// the failures Redis holds instead, so the burst gets one guess, as on a
// healthy Redis, and then the next delay.
func TestFullRedis_ACounterInBackoffKeepsClimbingOnTheFallback(t *testing.T) {
	needRedis(t)
	in := redistest.Server(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	c := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: 50 * time.Millisecond})
	// One clock for the scripts, the fallback and the engine: the delays
	// run out when the test says, not in real time.
	clock := testclock.New(time.Time{})
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policyfile.LoadPolicy([]byte(`flows:
  login:
    rules:
      - {name: account_backoff, free: 3, base: 1s, factor: 2, max: 1s, forget_after: 24h}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: s, Fallback: memstore.New(memstore.Config{Now: clock.Now}), Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	guess := victimGuess(t, e)
	for failures := 0; failures < 4; { // 3 free, then one after its 1 s delay
		if v := guess(); v.Action == authguard.Proceed {
			failures++
		} else {
			clock.Advance(v.Delay + 50*time.Millisecond)
		}
	}
	fillRedis(t, c)
	for round := range 2 {
		clock.Advance(1100 * time.Millisecond) // the delay runs out
		went := 0
		for range 10 {
			if guess().Action == authguard.Proceed {
				went++
			}
		}
		if went != 1 {
			t.Errorf("burst %d while Redis is full: %d of 10 guesses went ahead, want 1 (the fallback starting again gives 3)", round, went)
		}
	}
}

// victimGuess returns one guess at victim@example.com's password on login
// from 192.0.2.9: a check, and when it proceeds, the failure's report.
func victimGuess(t *testing.T, e *authguard.Engine) func() authguard.Verdict {
	return func() authguard.Verdict {
		t.Helper()
		ctx := context.Background()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.9"})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action == authguard.Proceed {
			e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.9", Outcome: authguard.Failure, Attempt: v.Attempt})
		}
		return v
	}
}
