package redisstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// TestMemoryPerSubject measures what one tracked subject costs: Redis's
// MEMORY USAGE per key for each signal after an attack, and the memory
// store's heap per subject. Run with -v to see the figures (BENCHMARKS.md).
// The bounds are loose; they catch a state that grows without limit.
func TestMemoryPerSubject(t *testing.T) {
	c := singleClient(t)
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: newStore(t, c, nil), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A sprayer that solves CAPTCHAs fills its IP's logs to their caps; each
	// account gets a few failures with fingerprints and a device counter.
	var device string
	for i := range 300 {
		acct := fmt.Sprintf("user%d@example.com", i%100)
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "203.0.113.9", CaptchaSolved: true, PasswordFingerprint: fmt.Sprint("pw", i%3)})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "203.0.113.9", Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: fmt.Sprint("pw", i%3)})
	}
	r, _ := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "owner@example.com", IP: "198.51.100.1", Outcome: authguard.Success})
	device = r.DeviceToken
	for range 3 {
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "owner@example.com", IP: "198.51.100.1", Outcome: authguard.Failure, DeviceToken: device})
	}

	keys, _ := c.Keys(ctx, "*").Result()
	largest := map[string]int64{}
	count := map[string]int{}
	for _, k := range keys {
		signal := strings.Split(k, ":")[3]
		n, err := c.MemoryUsage(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		count[signal]++
		largest[signal] = max(largest[signal], n)
	}
	// The backoff counters hold up to 8 fingerprints and 8 pending attempts.
	bounds := map[string]int64{
		"acct": 768, "dev.dev": 1024, "dev.slots": 1024, "dev": 768,
		"iprate": 128, "ipspray": 4096, "ipfail": 4096, "pwspray": 4096,
	}
	for _, signal := range []string{"acct", "dev.dev", "dev.slots", "dev", "iprate", "ipspray", "ipfail", "pwspray"} {
		t.Logf("redis %-20s keys %4d, largest MEMORY USAGE %6d bytes", signal, count[signal], largest[signal])
		if count[signal] == 0 {
			t.Errorf("no %s key after the scenario", signal)
		}
		if largest[signal] > bounds[signal] {
			t.Errorf("%s key uses %d bytes, bound %d", signal, largest[signal], bounds[signal])
		}
	}

	// The memory store: heap per tracked account (one failure each, from a
	// few addresses so the IP logs are a small share).
	const n = 100_000
	mem := memstore.New(memstore.Config{MaxEntries: 2 * n})
	me, _ := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: mem, Secret: secret})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		me.Report(ctx, authguard.ReportRequest{Flow: "login", Account: fmt.Sprint("u", i), IP: fmt.Sprintf("198.18.0.%d", i%200), Outcome: authguard.Failure})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("memory store: %d bytes of heap per tracked account (%d entries)", per, mem.Stats().Entries)
	if per > 1024 {
		t.Errorf("memory store uses %d bytes per account, bound 1024", per)
	}
	runtime.KeepAlive(me)
}

// TestMemoryPerIPv6Aggregate measures the ip_spray_56 and ip_spray_48 logs (keys
// ipspray56, ipspray48) of a /48
// sprayed to their caps by a CAPTCHA-solving attacker on fresh /64s.
func TestMemoryPerIPv6Aggregate(t *testing.T) {
	c := singleClient(t)
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: newStore(t, c, nil), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 300 {
		acct, ip := fmt.Sprintf("user%d@example.com", i), fmt.Sprintf("2001:db8:42:%x::1", i) // 256 /64s of one /56
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: ip, CaptchaSolved: true})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
	}
	keys, _ := c.Keys(ctx, "*:ipspray[0-9]*:*").Result()
	var sizes []int64
	for _, k := range keys {
		n, err := c.MemoryUsage(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if card := c.ZCard(ctx, k).Val(); card > 1 {
			t.Logf("%s key with %d members: MEMORY USAGE %d bytes", strings.Split(k, ":")[3], card, n)
			sizes = append(sizes, n)
		}
	}
	if len(sizes) == 0 {
		t.Fatal("no aggregate key filled")
	}
	for _, n := range sizes {
		if n > 32<<10 {
			t.Errorf("an aggregate key uses %d bytes, bound 32 KiB", n)
		}
	}
}

// A counter written by the hash format of earlier versions is read, not
// refused, and rewritten as a string: a rolling upgrade keeps every account's
// failures.
func TestBackoff_ReadsTheHashFormatOfEarlierVersions(t *testing.T) {
	c := singleClient(t)
	ctx := context.Background()
	s := newStore(t, c, nil)
	k := "tg:default:login:acct:upgraded"
	now := time.Now().UnixMilli()
	c.HSet(ctx, k, "n", 7, "l", now, "p", now-1000, "s", "", "a", "")
	c.PExpire(ctx, k, time.Hour)
	res, err := s.Do(ctx, []authguard.Op{&authguard.BackoffOp{Key: k, Action: authguard.BackoffPeek, Policy: builtinpolicy.Policy().Flow("login").Rule("account_backoff").Backoff}})
	if err != nil || res[0].Count != 7 || res[0].Wait == 0 {
		t.Fatalf("peek of an old hash counter: %+v, %v; want its 7 failures and a wait", res, err)
	}
	res, err = s.Do(ctx, []authguard.Op{&authguard.BackoffOp{Key: k, Action: authguard.BackoffFail, Policy: builtinpolicy.Policy().Flow("login").Rule("account_backoff").Backoff}})
	if err != nil || res[0].Count != 8 {
		t.Fatalf("a failure on an old hash counter: %+v, %v; want 8", res, err)
	}
	if typ := c.Type(ctx, k).Val(); typ != "string" {
		t.Errorf("the counter is a %s after a write, want a string", typ)
	}
}
