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

// heldOn is an engine with the held-subjects index on, on a Redis store.
func heldOn(t *testing.T, c redis.UniversalClient, heldBytes int64) (*authguard.Engine, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC))
	s, err := redisstore.New(redisstore.Config{Client: c, Now: clock.Now, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policyfile.LoadPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: s, Secret: []byte("0123456789abcdef0123456789abcdef"), Now: clock.Now, HeldBytes: heldBytes})
	if err != nil {
		t.Fatal(err)
	}
	return e, clock
}

// failUntilHeld sends wrong passwords for account from ip until a check
// is held back.
func failUntilHeld(t *testing.T, e *authguard.Engine, account, ip string) {
	t.Helper()
	ctx := context.Background()
	for range 50 {
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip, CaptchaSolved: true})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Proceed {
			return
		}
		if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("50 failures did not hold %s back", account)
}

func heldAction(t *testing.T, e *authguard.Engine, account, ip string) authguard.Action {
	t.Helper()
	v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: account, IP: ip, CaptchaSolved: true})
	if err != nil {
		t.Fatal(err)
	}
	return v.Action
}

var heldAccounts = []string{"Alice.Held@Example.COM", "Bob.Held@Example.COM", "Carol.Held@Example.COM"}

func heldIP(i int) string { return fmt.Sprintf("198.51.100.%d", 11+i) }

func listHeld(t *testing.T, e *authguard.Engine, req authguard.HeldListRequest) []string {
	t.Helper()
	if err := e.FlushHeld(context.Background()); err != nil {
		t.Fatal(err)
	}
	page, err := e.ListHeld(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range page.Subjects {
		out = append(out, x.Subject)
	}
	slices.Sort(out)
	return out
}

func operatorListsAndUnlocks(t *testing.T, c redis.UniversalClient) {
	e, _ := heldOn(t, c, authguard.DefaultHeldBytes)
	for i, a := range heldAccounts {
		failUntilHeld(t, e, a, heldIP(i))
	}
	want := []string{"alice.held@example.com", "bob.held@example.com", "carol.held@example.com"}
	if got := listHeld(t, e, authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount}); !slices.Equal(got, want) {
		t.Fatalf("held accounts in login = %q, want %q", got, want)
	}
	res, err := e.ResetHeld(context.Background(), authguard.HeldResetRequest{Flow: "login", Kind: authguard.HeldAccount, Reason: "ticket 7"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reset != 3 {
		t.Errorf("reset = %+v, want 3 reset", res)
	}
	for i, a := range heldAccounts {
		if got := heldAction(t, e, a, heldIP(i)); got != authguard.Proceed {
			t.Errorf("after the bulk unlock %s gets %v, want proceed", a, got)
		}
	}
	if got := listHeld(t, e, authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount}); len(got) != 0 {
		t.Errorf("after the unlock the index lists %q", got)
	}
}

func TestHeld_TheOperatorListsTheAccountsHeldInLogin_Redis(t *testing.T) {
	operatorListsAndUnlocks(t, singleClient(t))
}

func TestHeld_TheOperatorListsTheAccountsHeldInLogin_Cluster(t *testing.T) {
	operatorListsAndUnlocks(t, clusterClient(t))
}

// dump is every key and every value of every key of the nodes, as text.
func dump(t *testing.T, nodes []*redis.Client) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, n := range nodes {
		keys, err := n.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			b.WriteString(k + "\n")
			typ, err := n.Type(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			var v any
			switch typ {
			case "string":
				v, err = n.Get(ctx, k).Result()
			case "hash":
				v, err = n.HGetAll(ctx, k).Result()
			case "zset":
				v, err = n.ZRangeWithScores(ctx, k, 0, -1).Result()
			case "set":
				v, err = n.SMembers(ctx, k).Result()
			case "list":
				v, err = n.LRange(ctx, k, 0, -1).Result()
			case "stream":
				v, err = n.XRange(ctx, k, "-", "+").Result()
			default:
				t.Fatalf("key %s of type %s is not dumped", k, typ)
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%v\n", v)
			raw, err := n.Dump(ctx, k).Result() // the serialized value, whatever it is
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(raw + "\n")
		}
	}
	return b.String()
}

func TestHeld_ARedisDumpHoldsNoRawIdentifier(t *testing.T) {
	single := singleClient(t)
	cl := clusterClient(t)
	var masters []*redis.Client // every node of the test Cluster, each a master
	for _, addr := range cluster.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { n.Close() })
		masters = append(masters, n)
	}
	for _, tt := range []struct {
		name  string
		c     redis.UniversalClient
		nodes []*redis.Client
	}{{"redis", single, []*redis.Client{single}}, {"cluster", cl, masters}} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := heldOn(t, tt.c, authguard.DefaultHeldBytes)
			for i, a := range heldAccounts {
				failUntilHeld(t, e, a, heldIP(i))
			}
			// An address sprays accounts until it is held too.
			const sprayer = "203.0.113.99"
			for i := range 200 {
				v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("sprayed%d@example.net", i), IP: sprayer})
				if err != nil {
					t.Fatal(err)
				}
				if v.Action != authguard.Proceed {
					break
				}
				e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: fmt.Sprintf("sprayed%d@example.net", i), IP: sprayer, Outcome: authguard.Failure, Attempt: v.Attempt})
			}
			held := listHeld(t, e, authguard.HeldListRequest{Flow: "login"})
			if len(held) < 4 || !slices.Contains(held, sprayer) {
				t.Fatalf("the index lists %q: want the three accounts and the sprayer, or the test proves nothing", held)
			}
			d := dump(t, tt.nodes)
			if !strings.Contains(d, ":held:{") {
				t.Fatal("the dump holds no index key: the test proves nothing")
			}
			raws := []string{sprayer, "198.51.100.11", "198.51.100.12", "198.51.100.13"}
			for _, a := range heldAccounts {
				raws = append(raws, a, strings.ToLower(a), strings.Split(strings.ToLower(a), "@")[0])
			}
			for _, raw := range raws {
				if strings.Contains(d, raw) || strings.Contains(strings.ToLower(d), strings.ToLower(raw)) {
					t.Errorf("the dump of Redis holds %q", raw)
				}
			}
		})
	}
}

func TestHeld_AFloodOfHeldAttackersDoesNotGrowTheIndexPastItsBound_Redis(t *testing.T) {
	floodPastTheBound(t, singleClient(t))
}

func TestHeld_AFloodOfHeldAttackersDoesNotGrowTheIndexPastItsBound_Cluster(t *testing.T) {
	floodPastTheBound(t, clusterClient(t))
}

func floodPastTheBound(t *testing.T, c redis.UniversalClient) {
	const bound = 4 << 10
	e, _ := heldOn(t, c, bound)
	const n = 80
	for i := range n {
		failUntilHeld(t, e, fmt.Sprintf("victim%d@example.com", i), fmt.Sprintf("10.9.%d.1", i))
	}
	held := listHeld(t, e, authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount, Limit: authguard.MaxHeldPage})
	if len(held) == 0 || len(held) >= n {
		t.Fatalf("index holds %d of %d held accounts under a %d-byte bound, want some but not all", len(held), n, bound)
	}
	ctx := context.Background()
	bytes, err := c.Get(ctx, "tg:held:{default}:b").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if bytes > bound {
		t.Errorf("the index counts %d bytes, past its %d-byte bound", bytes, bound)
	}
	var size int64
	fields, _ := c.HGetAll(ctx, "tg:held:{default}:e").Result()
	for f, v := range fields {
		size += int64(len(f) + len(v) + 16)
	}
	if size != bytes || size > bound {
		t.Errorf("the index's hash holds %d bytes as counted, its counter says %d, the bound %d", size, bytes, bound)
	}
	if s := e.HeldStats(); s.Dropped == 0 {
		t.Errorf("stats = %+v: what the bound dropped is not counted", s)
	}
	for i := range n {
		if got := heldAction(t, e, fmt.Sprintf("victim%d@example.com", i), fmt.Sprintf("10.9.%d.1", i)); got == authguard.Proceed {
			t.Fatalf("victim%d proceeds: dropping its index entry freed it", i)
		}
	}
}

// BenchmarkHeld_Redis: on a real redis-server, index off and on side by
// side, a check that holds nobody (no extra round trip: nothing is
// written) and a failure report that holds an account (the write goes
// behind the call, on the index's own queue).
func BenchmarkHeld_Redis(b *testing.B) {
	for _, tt := range []struct {
		name  string
		bytes int64
	}{{"off", 0}, {"on", authguard.DefaultHeldBytes}} {
		for _, call := range []string{"check-holds-nobody", "failure-holds-account"} {
			b.Run(call+"/"+tt.name, func(b *testing.B) {
				needRedis(b)
				c := redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
				c.FlushAll(context.Background())
				defer c.Close()
				s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				p, _ := policyfile.LoadPolicy(nil)
				e, err := authguard.New(authguard.Config{Policy: p, Store: s, Secret: []byte("0123456789abcdef0123456789abcdef"), HeldBytes: tt.bytes})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					a, ip := fmt.Sprintf("u%d@example.com", i), fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
					if call == "check-holds-nobody" {
						if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: a, IP: ip}); err != nil {
							b.Fatal(err)
						}
						continue
					}
					b.StopTimer()
					for range 4 {
						e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: authguard.Failure})
					}
					b.StartTimer()
					if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: authguard.Failure}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				e.FlushHeld(ctx)
			})
		}
	}
}

// A password change clears the account's password counters without the
// operator's Reset, and takes it out of the index on Redis too.
func aPasswordChangeTakesTheAccountOut(t *testing.T, c redis.UniversalClient) {
	e, _ := heldOn(t, c, authguard.DefaultHeldBytes)
	for i, a := range heldAccounts {
		failUntilHeld(t, e, a, heldIP(i))
	}
	if got := listHeld(t, e, authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount}); len(got) != 3 {
		t.Fatalf("the index lists %q, want the three", got)
	}
	if _, err := e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: heldAccounts[1], IP: "203.0.113.9", Outcome: authguard.PasswordChanged}); err != nil {
		t.Fatal(err)
	}
	if got, want := listHeld(t, e, authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount}), []string{"alice.held@example.com", "carol.held@example.com"}; !slices.Equal(got, want) {
		t.Errorf("after bob's password change the index lists %q, want %q", got, want)
	}
}

func TestHeld_APasswordChangeTakesTheAccountOutOfTheIndex_Redis(t *testing.T) {
	aPasswordChangeTakesTheAccountOut(t, singleClient(t))
}

func TestHeld_APasswordChangeTakesTheAccountOutOfTheIndex_Cluster(t *testing.T) {
	aPasswordChangeTakesTheAccountOut(t, clusterClient(t))
}
