package redisstore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/internal/testkit/storetest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// One server and one cluster serve the whole package; each test flushes them.
var (
	server  *redistest.Instance
	cluster *redistest.ClusterInstances
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // needRedis skips: real Redis runs in the full make test
		// Only miniredis runs, over a live heap of tens of MB: collecting a
		// quarter as often, as internal/testkit/lessgc does, spends a fifth
		// less CPU (0.51 -> 0.41 CPU-s, 76 MB resident rather than 42).
		// The package does not import lessgc: the full run's floods peak at
		// 2.8 GB at the default. GOGC set in the environment still wins.
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(400)
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tollgate-redisstore-")
	if err != nil {
		panic(err)
	}
	if server, err = redistest.Start(dir); err != nil && !errors.Is(err, redistest.ErrNotInstalled) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if server != nil {
		if cluster, err = redistest.StartCluster(dir, 3); err != nil {
			fmt.Fprintln(os.Stderr, err)
			server.Stop()
			os.Exit(1)
		}
	}
	code := m.Run()
	if server != nil {
		server.Stop()
		cluster.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func needRedis(t testing.TB) {
	t.Helper()
	redistest.Require(t)
	if server == nil {
		t.Fatal("redis-server is installed but was not started")
	}
}

func singleClient(t testing.TB) *redis.Client {
	t.Helper()
	needRedis(t)
	c := redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	needRedis(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// storeOn is a Store on a client NewClient makes from cfg, as tollgate
// serve makes it, closed when the test ends.
func storeOn(t testing.TB, cfg redisstore.ClientConfig) *redisstore.Store {
	t.Helper()
	c, err := redisstore.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB, c redis.UniversalClient, now func() time.Time) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(storeConfig(c, now, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	shareAlways(c, s)
	return s
}

func TestConformance_Redis(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		return newStore(t, singleClient(t), clock.Now)
	})
}

func TestConformance_Cluster(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		return newStore(t, clusterClient(t), clock.Now)
	})
}

func TestConformance_Miniredis(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		m := miniredis.RunT(t)
		return newStore(t, redis.NewClient(&redis.Options{Addr: m.Addr()}), clock.Now)
	})
}

// The default path: scripts read Redis TIME and set PEXPIRE. miniredis's
// clock (SetTime) and key expiry (FastForward) follow the test clock.
func TestConformance_MiniredisTimeAndExpiry(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		m := miniredis.RunT(t)
		s := newStore(t, redis.NewClient(&redis.Options{Addr: m.Addr()}), nil)
		return &followClock{Store: s, m: m, clock: clock, last: clock.Now()}
	})
}

type followClock struct {
	*redisstore.Store
	m     *miniredis.Miniredis
	clock *testclock.Clock
	mu    sync.Mutex
	last  time.Time
}

func (f *followClock) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	f.follow()
	return f.Store.Do(ctx, ops)
}

// follow moves miniredis's clock and its key expiry to the test clock.
func (f *followClock) follow() {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if d := now.Sub(f.last); d > 0 {
		f.m.FastForward(d)
	}
	f.last = now
	f.m.SetTime(now)
}

func (f *followClock) PutEntry(ctx context.Context, key, id, value string, ttl time.Duration, max int) error {
	f.follow()
	return f.Store.PutEntry(ctx, key, id, value, ttl, max)
}

func (f *followClock) Entries(ctx context.Context, key string) ([]string, error) {
	f.follow()
	return f.Store.Entries(ctx, key)
}

func (f *followClock) RemoveEntry(ctx context.Context, key, id string) (bool, error) {
	f.follow()
	return f.Store.RemoveEntry(ctx, key, id)
}

// Long random sequences at random times give identical results on the
// memory store and on a real Redis.
func TestProperty_MemoryAndRedisAgree(t *testing.T) {
	c := singleClient(t)
	for seq := range 10 {
		c.FlushAll(context.Background())
		clock := testclock.New(time.Time{})
		mem := memstore.New(memstore.Config{Now: clock.Now})
		red := newStore(t, c, clock.Now)
		rng := rand.New(rand.NewPCG(uint64(seq), 7))
		for i := 0; i < 500; {
			clock.Advance(storetest.RandomStep(rng))
			batch := storetest.RandomOps(rng, 1+rng.IntN(5))
			i += len(batch)
			want, err := mem.Do(context.Background(), batch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := red.Do(context.Background(), batch)
			if err != nil {
				t.Fatal(err)
			}
			for j := range batch {
				if got[j] != want[j] {
					t.Fatalf("seq %d op %d %T%+v: redis %+v, memory %+v", seq, i, batch[j], batch[j], got[j], want[j])
				}
			}
		}
	}
}

// pipelineCounter counts round trips: pipelines and single commands.
type pipelineCounter struct {
	pipelines, commands atomic.Int64
}

func (p *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// pipelineCounter counts the round trips that carry tollgate's scripts;
// a new connection's set-up (HELLO, CLIENT SETINFO) is not one.
func (p *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" {
			p.commands.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (p *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() != "client" {
			p.pipelines.Add(1)
		}
		return next(ctx, cmds)
	}
}

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestEngine_OneRoundTripPerCall(t *testing.T) {
	c := singleClient(t)
	counter := &pipelineCounter{}
	c.AddHook(counter)
	s := newStore(t, c, nil)
	ctx := context.Background()
	// Start-up: scripts loaded, and one call to open the pool's connection
	// (HELLO and CLIENT SETINFO happen once per connection, not per call).
	// No shape is on the server (other tests leave theirs): the first call
	// of each shape is one round trip too.
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "warm", IP: "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	for range 5 { // an account in backoff: its checks are refused
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "held@example.com", IP: "192.0.2.9", Outcome: authguard.Failure})
	}
	// One round trip: a check is one script call on one node, whatever its
	// verdict (a refused check undoes its reservations in the same script);
	// so is a report (its ops in the same script, with no gates).
	type call struct {
		do                  func() error
		pipelines, commands int64
	}
	calls := []call{
		{func() error {
			v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "rt@example.com", IP: "192.0.2.1", PasswordFingerprint: "fp"})
			if err == nil && v.Action != authguard.Proceed {
				err = fmt.Errorf("check: %v, want proceed", v.Action)
			}
			return err
		}, 0, 1},
		{func() error {
			v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "held@example.com", IP: "192.0.2.1"})
			if err == nil && v.Action != authguard.Delay {
				err = fmt.Errorf("check in backoff: %v, want delay", v.Action)
			}
			return err
		}, 0, 1},
		{func() error {
			_, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "rt@example.com", IP: "192.0.2.1", Outcome: authguard.Failure})
			return err
		}, 0, 1},
		{func() error {
			_, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "rt@example.com", IP: "192.0.2.1", Outcome: authguard.Success})
			return err
		}, 0, 1},
	}
	for i, c := range calls {
		p0, c0 := counter.pipelines.Load(), counter.commands.Load()
		if err := c.do(); err != nil {
			t.Fatal(err)
		}
		if p, cmds := counter.pipelines.Load()-p0, counter.commands.Load()-c0; p != c.pipelines || cmds != c.commands {
			t.Errorf("call %d: %d pipelines and %d single commands, want %d and %d", i, p, cmds, c.pipelines, c.commands)
		}
	}
}

func charge(key string) authguard.Op {
	return &authguard.BackoffOp{Key: key, Action: authguard.BackoffCharge, Policy: storetest.Backoff, SeenWindow: storetest.Seen}
}

func TestNoscript_RecoveredWithoutError(t *testing.T) {
	for _, name := range []string{"single", "cluster"} {
		t.Run(name, func(t *testing.T) {
			var c redis.UniversalClient
			if name == "single" {
				c = singleClient(t)
			} else {
				c = clusterClient(t)
			}
			s := newStore(t, c, nil)
			ctx := context.Background()
			ops := []authguard.Op{charge("tg:t:login:acct:a"), charge("tg:t:login:acct:b"), charge("tg:t:login:acct:c")}
			if _, err := s.Do(ctx, ops); err != nil {
				t.Fatal(err)
			}
			flush := func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() }
			if cc, ok := c.(*redis.ClusterClient); ok {
				cc.ForEachMaster(ctx, flush)
			} else {
				flush(ctx, c.(*redis.Client))
			}
			res, err := s.Do(ctx, ops)
			if err != nil {
				t.Fatalf("after SCRIPT FLUSH: %v", err)
			}
			if res[0].Count != 2 {
				t.Errorf("after SCRIPT FLUSH: count %d, want 2", res[0].Count)
			}
		})
	}
}

func TestRestart_ScriptsReloadedAndStateGone(t *testing.T) {
	needRedis(t)
	in := redistest.Server(t)
	c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + in.Addr, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, c, nil)
	ctx := context.Background()
	for range 4 { // several pooled connections
		if _, err := s.Do(ctx, []authguard.Op{charge("k")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	// The pool's connections to the old process are dead; the first call
	// after the restart must still succeed (and reload the scripts).
	res, err := s.Do(ctx, []authguard.Op{charge("k")})
	if err != nil {
		t.Fatalf("first call after restart: %v", err)
	}
	if !res[0].Charged || res[0].Count != 1 {
		t.Errorf("after restart: %+v, want a first charge", res[0])
	}
}

func TestOutage_ErrorsAreUnavailableAndTheBreakerOpens(t *testing.T) {
	needRedis(t)
	in := redistest.Server(t)
	clock := testclock.New(time.Time{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: 50 * time.Millisecond})
	s, err := redisstore.New(redisstore.Config{Client: c, Clock: clock.Now, BreakAfter: 3, Cooldown: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in.Stop()
	for i := range 3 {
		_, err := s.Do(ctx, []authguard.Op{charge("k")})
		if !errors.Is(err, authguard.ErrStoreUnavailable) || errors.Is(err, redisstore.ErrCircuitOpen) {
			t.Fatalf("failure %d: %v, want unavailable from Redis itself", i, err)
		}
	}
	if _, err := s.Do(ctx, []authguard.Op{charge("k")}); !errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("after 3 failures: %v, want the circuit open", err)
	}
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping succeeded with Redis stopped")
	}
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, []authguard.Op{charge("k")}); !errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("during cooldown: %v, want the circuit still open", err)
	}
	clock.Advance(time.Second)
	var res []authguard.Result
	for range 3 {
		if res, err = s.Do(ctx, []authguard.Op{charge("k")}); err == nil {
			break
		}
	}
	if err != nil || !res[0].Charged {
		t.Fatalf("after cooldown with Redis back: %+v, %v", res, err)
	}
	if s.Open() {
		t.Error("breaker still open after a success")
	}
}

func TestStall_TimeoutBoundsTheCall(t *testing.T) {
	c := singleClient(t)
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Do(ctx, []authguard.Op{charge("k")}); err != nil { // warm the pool and script cache
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer admin.Close()
	for _, stall := range []func() error{
		func() error { return admin.Do(ctx, "CLIENT", "PAUSE", "400", "ALL").Err() },
		func() error {
			go admin.Do(ctx, "DEBUG", "SLEEP", "0.4")
			if !testkit.Eventually(5*time.Second, server.Sleeping) {
				return errors.New("no DEBUG SLEEP began within 5 s")
			}
			return nil
		},
	} {
		if err := stall(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Do(ctx, []authguard.Op{charge("k")})
		if !errors.Is(err, authguard.ErrStoreUnavailable) {
			t.Errorf("stalled Redis: %v, want unavailable (deadline)", err)
		}
		// Redis answers once the stall has ended, before the next one.
		if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Every key expires exactly when its state stops mattering.
func TestExpiry_PTTLMatchesTheState(t *testing.T) {
	c := singleClient(t)
	s := newStore(t, c, nil)
	ctx := context.Background()
	ops := []authguard.Op{
		charge("tg:t:login:acct:e"),
		&authguard.LogOp{Key: "tg:t:login:ipspray:e", Action: authguard.LogAdmit, Member: "m", Windows: storetest.Windows},
		&authguard.RateOp{Key: "tg:t:login:iprate:e", Action: authguard.RateTake, Rate: storetest.Rates[3], Cost: 1},
	}
	if _, err := s.Do(ctx, ops); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{storetest.Backoff.ForgetAfter, storetest.Windows.Longest(), storetest.Rates[3].Interval}
	for i, op := range ops {
		got, err := c.PTTL(ctx, op.StoreKey()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got > want[i] || got < want[i]-500*time.Millisecond {
			t.Errorf("%s: PTTL %v, want just under %v", op.StoreKey(), got, want[i])
		}
	}
	clear := &authguard.BackoffOp{Key: "tg:t:login:acct:e", Action: authguard.BackoffClear, Policy: storetest.Backoff}
	s.Do(ctx, []authguard.Op{clear})
	if n, _ := c.Exists(ctx, "tg:t:login:acct:e").Result(); n != 0 {
		t.Error("cleared counter still exists")
	}
}

func TestEngine_StoreHoldsNoRawIdentifier(t *testing.T) {
	c := singleClient(t)
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: newStore(t, c, nil), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	raws := []string{"secret-alice@example.com", "secret-bob", "203.0.113.61", "2001:db8:77::5", "secret-fingerprint"}
	for _, a := range raws[:2] {
		for _, ip := range raws[2:4] {
			v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: a, IP: ip, PasswordFingerprint: raws[4]})
			e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: raws[4]})
		}
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys: %v %v", keys, err)
	}
	for _, k := range keys {
		dump := k
		switch typ := c.Type(ctx, k).Val(); typ {
		case "hash":
			dump += fmt.Sprint(c.HGetAll(ctx, k).Val())
		case "zset":
			dump += fmt.Sprint(c.ZRangeWithScores(ctx, k, 0, -1).Val())
		default:
			dump += c.Get(ctx, k).Val()
		}
		for _, raw := range append(raws, "secret", "203.0.113", "2001:db8") {
			if strings.Contains(dump, raw) {
				t.Errorf("key %s holds %q: %s", k, raw, dump)
			}
		}
		if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %s has no expiry (PTTL %v)", k, ttl)
		}
	}
}

// With Redis gone, a fail-open flow answers from the local fallback store,
// and goes back to Redis by itself when Redis returns.
func TestEngine_FailOpenFallsBackAndRecovers(t *testing.T) {
	h := newOutageHarness(t, "")
	in, clock, check, last := h.in, h.clock, h.check, h.last
	check()
	if last().Source != authguard.SourceStore {
		t.Fatalf("source %v, want store", last().Source)
	}
	in.Stop()
	for range 7 {
		check()
		if last().Source != authguard.SourceFallback {
			t.Fatalf("Redis down: source %v, want fallback", last().Source)
		}
	}
	if v := check(); v.Action != authguard.Delay {
		t.Errorf("the fallback counts too: %v after 8 checks, want delay", v.Action)
	}
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // breaker cooldown
	for range 3 {
		if check(); last().Source == authguard.SourceStore {
			return
		}
	}
	t.Errorf("Redis back: source %v, want store", last().Source)
}

// A fail-closed flow answers delay "unavailable" while Redis is down, in
// bounded time, and proceeds again once it is back.
func TestEngine_FailClosedWhileRedisIsDown(t *testing.T) {
	h := newOutageHarness(t, "flows:\n  login:\n    fail_mode: closed\n")
	in, clock, check := h.in, h.clock, h.check
	if v := check(); v.Action != authguard.Proceed {
		t.Fatalf("Redis up: %v", v.Action)
	}
	in.Stop()
	for range 8 { // through the breaker opening
		if v := check(); v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonUnavailable || v.Delay != 2*time.Second {
			t.Fatalf("Redis down: %+v, want delay 2s unavailable", v)
		}
	}
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	for range 3 {
		if check().Action == authguard.Proceed {
			return
		}
	}
	t.Error("Redis back: still not proceeding")
}

// The same store through Redis Sentinel: the client asks the Sentinel for
// the master, then behaves as on a single node.
func TestConformance_Sentinel(t *testing.T) {
	needRedis(t)
	master := redistest.Server(t)
	sentinel := redistest.Sentinel(t, master)
	storetest.Run(t, func(t *testing.T, clock *testclock.Clock) authguard.Store {
		c, err := redisstore.NewClient(redisstore.ClientConfig{SentinelAddrs: []string{sentinel.Addr}, SentinelMaster: "tollgate", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return newStore(t, c, clock.Now)
	})
}

// outageHarness is an engine on a Redis the test can stop and restart, with
// the breaker on a test clock and the memory fallback of a real server.
type outageHarness struct {
	in     *redistest.Instance
	client *redis.Client
	clock  *testclock.Clock
	e      *authguard.Engine
	check  func() authguard.Verdict // a login check on one account
	last   func() authguard.Event   // the engine's last event
}

// newOutageHarness starts a redis-server of its own (with serverArgs) for
// an engine with policyYAML.
func newOutageHarness(t *testing.T, policyYAML string, serverArgs ...string) *outageHarness {
	t.Helper()
	needRedis(t)
	h := &outageHarness{in: redistest.Server(t, serverArgs...), clock: testclock.New(time.Time{})}
	c := redis.NewClient(&redis.Options{Addr: h.in.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: 50 * time.Millisecond})
	h.client = c
	s, err := redisstore.New(redisstore.Config{Client: c, Clock: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policyfile.LoadPolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	var last authguard.Event
	e, err := authguard.New(authguard.Config{
		Policy: p, Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
		Observe: func(ev authguard.Event) { last = ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	h.last = func() authguard.Event { return last }
	h.check = func() authguard.Verdict {
		v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: "outage@example.com", IP: "192.0.2.9"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return h
}

// TestHotAccount_RefusedChecksWriteNothingButTheirRate: an attacker who
// hammers an account in backoff from fresh addresses and passwords gets
// delay answers, and those checks write nothing to the per-IP and
// per-password logs, not even a reservation undone in the same script (they
// run as peeks once the account's delay has decided them): the only write is
// ip_rate's, which counts every check. Redis counts the commands its scripts
// call in INFO commandstats.
func TestHotAccount_RefusedChecksWriteNothingButTheirRate(t *testing.T) {
	c := singleClient(t)
	s := newStore(t, c, nil)
	ctx := context.Background()
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.9", Outcome: authguard.Failure}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const checks = 20
	for i := range checks {
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com",
			IP: fmt.Sprintf("198.51.100.%d", i+1), PasswordFingerprint: fmt.Sprint("guess", i)})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Delay {
			t.Fatalf("check %d: %v, want delay", i, v.Action)
		}
	}
	checkOnlyRateWrites(t, c, checks)
}
