package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// otherSecret is a second deployment secret, not secret32.
const otherSecret = "fedcba9876543210fedcba9876543210-odd"

// redisConfig is testConfig on the Redis at addr, keyed by secret.
func redisConfig(addr, secret string) *config.Config {
	cfg := testConfig()
	cfg.Secret = []byte(secret)
	cfg.Redis = &config.RedisConfig{URL: "redis://" + addr, Timeout: 2 * time.Second}
	return cfg
}

// client is an e2eClient on a serve's address.
func client(t *testing.T, addr string) *e2eClient {
	return &e2eClient{t: t, base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
}

// readyz returns /readyz's status, its problem type or status field, and
// its warnings.
func readyz(t *testing.T, c *e2eClient) (int, string, []string) {
	t.Helper()
	code, body := c.get("/readyz")
	var doc struct {
		Type     string
		Status   any // "ready", or a problem's 503
		Warnings []string
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/readyz %d: %q: %v", code, body, err)
	}
	if doc.Type != "" {
		return code, strings.TrimPrefix(doc.Type, "https://tollgate.dev/problems/"), doc.Warnings
	}
	status, _ := doc.Status.(string)
	return code, status, doc.Warnings
}

// logHas reports whether a log has a line at level whose message contains msg.
func logHas(logs *testkit.SyncBuffer, level, msg string) bool {
	for line := range strings.Lines(logs.String()) {
		var l struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Level == level && strings.Contains(l.Msg, msg) {
			return true
		}
	}
	return false
}

// TestSecretCheck_InstancesWithDifferentSecretsOnOneRedisAreNotReady: issue
// 26 found that an instance with another TOLLGATE_SECRET on a shared Redis
// counted apart from the others (it proceeded while they delayed) without
// a word. Now the odd one logs an error, says so in a metric, and is not
// ready; instances with the first secret stay ready, and nothing shows a
// secret or the check value.
func TestSecretCheck_InstancesWithDifferentSecretsOnOneRedisAreNotReady(t *testing.T) {
	rd := redistest.Server(t, "--maxmemory-policy", "noeviction")
	first, firstLogs := startServe(t, redisConfig(rd.Addr, secret32))
	same, _ := startServe(t, redisConfig(rd.Addr, secret32))
	odd, oddLogs := startServe(t, redisConfig(rd.Addr, otherSecret))

	tests := []struct {
		name         string
		addr         string
		wantCode     int
		wantStatus   string
		wantMismatch int
	}{
		{"the first instance", first, 200, "ready", 0},
		{"another with the same secret", same, 200, "ready", 0},
		{"the one with another secret", odd, 503, "secret-mismatch", 1},
	}
	for _, tt := range tests {
		c := client(t, tt.addr)
		if code, status, _ := readyz(t, c); code != tt.wantCode || status != tt.wantStatus {
			t.Errorf("%s: /readyz = %d %s, want %d %s", tt.name, code, status, tt.wantCode, tt.wantStatus)
		}
		_, metrics := c.get("/metrics")
		if got := metricValue(t, metrics, "tollgate_secret_mismatch"); got != tt.wantMismatch {
			t.Errorf("%s: tollgate_secret_mismatch = %d, want %d", tt.name, got, tt.wantMismatch)
		}
	}
	if !logHas(oddLogs, "ERROR", "different secret") {
		t.Errorf("the odd instance's log has no error about the secret:\n%s", oddLogs)
	}
	if logHas(firstLogs, "ERROR", "different secret") {
		t.Errorf("the first instance logged a mismatch:\n%s", firstLogs)
	}
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rc.Close()
	held := rc.Get(context.Background(), "tg:_admin:secretcheck").Val()
	if held == "" {
		t.Fatal("Redis holds no check value")
	}
	for _, s := range []string{secret32, otherSecret, held} {
		if strings.Contains(oddLogs.String(), s) || strings.Contains(firstLogs.String(), s) {
			t.Errorf("a log shows a secret or the check value %q", s)
		}
	}
}

// newStoreCheck is a storeCheck on the Redis at addr for an engine keyed
// by secret and tenant secrets, as serve starts it, with its log.
func newStoreCheck(t *testing.T, addr, secret string, tenants map[string][]byte, strict bool) (*storeCheck, *testkit.SyncBuffer, *api.Metrics, error) {
	t.Helper()
	return newStoreCheckOn(t, redis.NewClient(&redis.Options{Addr: addr}), secret, tenants, strict)
}

// newStoreCheckOn is newStoreCheck on the Redis client rc.
func newStoreCheckOn(t *testing.T, rc *redis.Client, secret string, tenants map[string][]byte, strict bool) (*storeCheck, *testkit.SyncBuffer, *api.Metrics, error) {
	t.Helper()
	store, err := redisstore.New(redisstore.Config{Client: rc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	mem := memstore.New(memstore.Config{})
	t.Cleanup(func() { mem.Close() })
	engine, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: store, Secret: []byte(secret), TenantSecrets: tenants})
	if err != nil {
		t.Fatal(err)
	}
	logs := new(testkit.SyncBuffer)
	metrics := api.NewMetrics(nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := startStoreCheck(ctx, store, engine, metrics, slog.New(slog.NewJSONHandler(logs, nil)), strict)
	return c, logs, metrics, err
}

// TestSecretCheck_ARunningInstanceSeesAnotherSecretAtItsNextCheck: the
// check key gone and rewritten by an instance with another secret (all
// instances restarted, the odd one first) is seen at the next check, and
// one line says when it is over; a tenant's own secret is checked on a key
// of its own.
func TestSecretCheck_ARunningInstanceSeesAnotherSecretAtItsNextCheck(t *testing.T) {
	rd := redistest.Server(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rc.Close()
	acme := map[string][]byte{"acme": []byte("acme-tenant-secret-at-least-32-bytes!!")}
	running, logs, _, err := newStoreCheck(t, rd.Addr, secret32, acme, false)
	if err != nil {
		t.Fatal(err)
	}
	health := running.health(func() error { return nil })
	steps := []struct {
		name     string
		do       func()
		wantErr  bool
		wantLine string // a part of the error or info line it logs
	}{
		{"t=0: alone on the store", func() {}, false, ""},
		{"the key is replaced by another secret's", func() {
			rc.Del(ctx, "tg:_admin:secretcheck")
			if odd, _, _, _ := newStoreCheck(t, rd.Addr, otherSecret, acme, false); odd.health(func() error { return nil })() != nil {
				t.Error("the instance that wrote first is not ready")
			}
		}, true, "different secret"},
		{"the key is gone: this instance writes its own", func() { rc.Del(ctx, "tg:_admin:secretcheck") }, false, "matches this instance's secret again"},
		{"tenant acme's secret differs on another instance", func() {
			if odd, _, _, _ := newStoreCheck(t, rd.Addr, secret32, map[string][]byte{"acme": []byte("acme-secret-on-another-instance-32-bytes")}, false); !errors.Is(odd.health(func() error { return nil })(), authguard.ErrSecretMismatch) {
				t.Error("the instance with acme's other secret is ready")
			}
		}, false, ""},
	}
	for _, st := range steps {
		st.do()
		running.checkSecrets(ctx)
		if err := health(); errors.Is(err, authguard.ErrSecretMismatch) != st.wantErr {
			t.Errorf("%s: health = %v, want a mismatch: %v", st.name, err, st.wantErr)
		}
		if st.wantLine != "" && !strings.Contains(logs.String(), st.wantLine) {
			t.Errorf("%s: the log does not say %q:\n%s", st.name, st.wantLine, logs)
		}
	}
	if n := strings.Count(logs.String(), "different secret"); n != 1 {
		t.Errorf("%d lines about the mismatch, want one for the episode", n)
	}
}

// TestEvictionCheck_AnAllkeysLRURedisIsWarnedAbout: issue 26 found that a
// Redis that evicts (README: the daily bounds need noeviction) got no word
// at start. Now an evicting policy is a warning line, a metric and a
// /readyz warning, and the instance stays ready.
func TestEvictionCheck_AnAllkeysLRURedisIsWarnedAbout(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-ttl", "noeviction"} {
		t.Run(policy, func(t *testing.T) {
			rd := redistest.Server(t, "--maxmemory-policy", policy, "--appendonly", "yes")
			addr, logs := startServe(t, redisConfig(rd.Addr, secret32))
			c := client(t, addr)
			evicts := policy != "noeviction"
			code, status, warnings := readyz(t, c)
			if code != 200 || status != "ready" || (len(warnings) == 1 && strings.Contains(warnings[0], policy)) != evicts || (!evicts && len(warnings) > 0) {
				t.Errorf("/readyz = %d %s %q, want ready, warning about %s: %v", code, status, warnings, policy, evicts)
			}
			if evicts && strings.Contains(warnings[0], rd.Addr) {
				t.Errorf("/readyz's warning %q names the Redis address (/readyz is unauthenticated)", warnings[0])
			}
			_, metrics := c.get("/metrics")
			if got, want := metricValue(t, metrics, "tollgate_store_evicting"), map[bool]int{true: 1}[evicts]; got != want {
				t.Errorf("tollgate_store_evicting = %d, want %d", got, want)
			}
			if got := logHas(logs, "WARN", "may evict"); got != evicts {
				t.Errorf("warning line about eviction: %v, want %v:\n%s", got, evicts, logs)
			}
		})
	}
}

// TestEvictionCheck_StrictStoreRefusesAnEvictingRedis: with -strict-store
// an evicting Redis is a refusal to start, and a policy changed to one
// while running fails /readyz with store-evicts.
func TestEvictionCheck_StrictStoreRefusesAnEvictingRedis(t *testing.T) {
	rd := redistest.Server(t, "--maxmemory-policy", "allkeys-lru", "--appendonly", "yes")
	cfg := redisConfig(rd.Addr, secret32)
	cfg.StrictStore = true
	err := serve(context.Background(), cfg, new(testkit.SyncBuffer), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "-strict-store") || !strings.Contains(err.Error(), "allkeys-lru") {
		t.Fatalf("serve -strict-store on allkeys-lru = %v, want a refusal naming the policy", err)
	}

	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rc.Close()
	rc.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	addr, _ := startServe(t, cfg)
	c := client(t, addr)
	if code, status, _ := readyz(t, c); code != 200 || status != "ready" {
		t.Errorf("strict on noeviction: /readyz = %d %s", code, status)
	}
	// While running: serve's own check runs every few minutes; this one
	// is the same code, driven now.
	check, _, _, err := newStoreCheck(t, rd.Addr, secret32, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	rc.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu")
	if err := check.checkEviction(ctx); err == nil || !errors.Is(check.health(func() error { return nil })(), authguard.ErrStoreEvicts) {
		t.Errorf("strict, the policy changed to allkeys-lfu: check %v, health %v", err, check.health(func() error { return nil })())
	}
	if w := check.warnings(); len(w) > 0 {
		t.Errorf("strict answers 503, not warnings: %q", w)
	}
}

// TestEvictionCheck_ARedisRefusingCONFIGIsNotAnError: a managed Redis may
// refuse CONFIG. tollgate says once, at info, that the policy could not be
// checked, and serves, -strict-store or not.
func TestEvictionCheck_ARedisRefusingCONFIGIsNotAnError(t *testing.T) {
	rd := redistest.Server(t, "--rename-command", "CONFIG", "")
	for _, strict := range []bool{false, true} {
		cfg := redisConfig(rd.Addr, secret32)
		cfg.StrictStore = strict
		addr, logs := startServe(t, cfg)
		c := client(t, addr)
		if code, status, warnings := readyz(t, c); code != 200 || status != "ready" || len(warnings) > 0 {
			t.Errorf("strict %v: /readyz = %d %s %q, want ready without warnings", strict, code, status, warnings)
		}
		_, metrics := c.get("/metrics")
		if got := metricValue(t, metrics, "tollgate_store_evicting"); got != 0 {
			t.Errorf("strict %v: tollgate_store_evicting = %d", strict, got)
		}
		if !logHas(logs, "INFO", "cannot be checked") || strings.Contains(logs.String(), `"level":"WARN"`) || strings.Contains(logs.String(), `"level":"ERROR"`) {
			t.Errorf("strict %v: want one info line that the policy cannot be checked, and no warning or error:\n%s", strict, logs)
		}
	}
}

// TestPersistenceCheck_ARedisThatForgetsIsWarnedAbout: a Redis without an
// append-only file or snapshots comes back from a restart empty, and every
// attacker then has fresh counters; it ran without a word. Now it is a
// warning line, tollgate_store_unpersisted 1 and a /readyz warning, and
// the instance stays ready. One with an append-only file is not flagged;
// one whose persistence neither CONFIG (refused) nor INFO tells is said to
// be unknown, at info and as -1, not as ok.
func TestPersistenceCheck_ARedisThatForgetsIsWarnedAbout(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantMetric int
		wantWarn   bool
		wantInfo   string // a part of an info line, or ""
	}{
		{"no AOF, no snapshots", []string{"--save", "", "--appendonly", "no"}, 1, true, ""},
		{"an append-only file", []string{"--save", "", "--appendonly", "yes"}, 0, false, ""},
		{"CONFIG refused, nothing in INFO tells", []string{"--save", "", "--appendonly", "no", "--rename-command", "CONFIG", ""}, -1, false, "persistence is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := redistest.Server(t, append([]string{"--maxmemory-policy", "noeviction"}, tt.args...)...)
			addr, logs := startServe(t, redisConfig(rd.Addr, secret32))
			c := client(t, addr)
			code, status, warnings := readyz(t, c)
			if code != 200 || status != "ready" || (len(warnings) == 1 && strings.Contains(warnings[0], "append-only file")) != tt.wantWarn || (!tt.wantWarn && len(warnings) > 0) {
				t.Errorf("/readyz = %d %s %q, want ready, a warning about persistence: %v", code, status, warnings, tt.wantWarn)
			}
			if len(warnings) > 0 && strings.Contains(warnings[0], rd.Addr) {
				t.Errorf("/readyz's warning %q names the Redis address (/readyz is unauthenticated)", warnings[0])
			}
			_, metrics := c.get("/metrics")
			if got := metricValue(t, metrics, "tollgate_store_unpersisted"); got != tt.wantMetric {
				t.Errorf("tollgate_store_unpersisted = %d, want %d", got, tt.wantMetric)
			}
			if got := logHas(logs, "WARN", "neither an append-only file nor snapshots"); got != tt.wantWarn {
				t.Errorf("warning line about persistence: %v, want %v:\n%s", got, tt.wantWarn, logs)
			}
			if tt.wantInfo != "" && !logHas(logs, "INFO", tt.wantInfo) {
				t.Errorf("no info line saying %q:\n%s", tt.wantInfo, logs)
			}
		})
	}
}

// TestPersistenceCheck_StrictStoreRefusesARedisThatForgets: with
// -strict-store a Redis without persistence is a refusal to start, and
// one that turns its append-only file off while running fails /readyz with
// store-unpersisted.
func TestPersistenceCheck_StrictStoreRefusesARedisThatForgets(t *testing.T) {
	rd := redistest.Server(t, "--maxmemory-policy", "noeviction", "--save", "", "--appendonly", "no")
	cfg := redisConfig(rd.Addr, secret32)
	cfg.StrictStore = true
	// Should serve start listening instead, it is stopped there.
	listening, stop := context.WithCancel(context.Background())
	defer stop()
	err := serve(listening, cfg, new(testkit.SyncBuffer), func(net.Addr) { stop() }, nil)
	if err == nil || !strings.Contains(err.Error(), "-strict-store") || !strings.Contains(err.Error(), "no persistence") || !strings.Contains(err.Error(), "none on "+rd.Addr) {
		t.Fatalf("serve -strict-store on a Redis without persistence = %v, want a refusal naming it and the master", err)
	}

	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rc.Close()
	if err := rc.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, cfg)
	c := client(t, addr)
	if code, status, _ := readyz(t, c); code != 200 || status != "ready" {
		t.Errorf("strict with an append-only file: /readyz = %d %s", code, status)
	}
	// While running: serve's own check runs every few minutes; this one
	// is the same code, driven now.
	check, _, _, err := newStoreCheck(t, rd.Addr, secret32, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := check.checkPersistence(ctx); err == nil || !errors.Is(check.health(func() error { return nil })(), authguard.ErrStoreUnpersisted) {
		t.Errorf("strict, the append-only file turned off: check %v, health %v", err, check.health(func() error { return nil })())
	}
	if w := check.warnings(); len(w) > 0 {
		t.Errorf("strict answers 503, not warnings: %q", w)
	}
}

// gauge reads a gauge of m by name.
func gauge(t *testing.T, m *api.Metrics, name string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// dialedAt is a client for the Redis at real that believes it is at addr:
// the check sees addr, the connection reaches real (the tests' servers
// listen on loopback only).
func dialedAt(addr, real string, o redis.Options) *redis.Client {
	o.Addr = addr
	o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, real)
	}
	return redis.NewClient(&o)
}

// TestAuthCheck_ARedisWithoutAPasswordOffLoopbackIsWarnedAbout: a Redis
// that answers without a password on an address others reach lets any of
// them FLUSHALL the counters; it ran without a word. Now it is a warning
// line naming the address, tollgate_store_unauthenticated 1 and a /readyz
// warning without the address; with -strict-store a refusal to start and
// /readyz 503 store-unauthenticated. The same Redis on loopback, or one
// that requires the password tollgate gives, is not flagged.
func TestAuthCheck_ARedisWithoutAPasswordOffLoopbackIsWarnedAbout(t *testing.T) {
	open := redistest.Server(t, "--maxmemory-policy", "noeviction", "--appendonly", "yes")
	guarded := redistest.Server(t, "--maxmemory-policy", "noeviction", "--appendonly", "yes")
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: guarded.Addr})
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "requirepass", "a-redis-password").Err(); err != nil { // once it runs: redistest waits for a PING without one
		t.Fatal(err)
	}
	const remote = "10.20.30.40:6379"
	tests := []struct {
		name     string
		client   func() *redis.Client
		wantOpen bool
	}{
		{"no password, on loopback", func() *redis.Client { return redis.NewClient(&redis.Options{Addr: open.Addr}) }, false},
		{"no password, off loopback", func() *redis.Client { return dialedAt(remote, open.Addr, redis.Options{}) }, true},
		{"a password it requires, off loopback", func() *redis.Client {
			return dialedAt(remote, guarded.Addr, redis.Options{Password: "a-redis-password"})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check, logs, metrics, err := newStoreCheckOn(t, tt.client(), secret32, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := gauge(t, metrics, "tollgate_store_unauthenticated"); got != map[bool]float64{true: 1}[tt.wantOpen] {
				t.Errorf("tollgate_store_unauthenticated = %v, want open %v", got, tt.wantOpen)
			}
			if got := logHas(logs, "WARN", "without a password") && strings.Contains(logs.String(), remote); got != tt.wantOpen {
				t.Errorf("a warning line naming %s: %v, want %v:\n%s", remote, got, tt.wantOpen, logs)
			}
			w := check.warnings()
			if got := len(w) == 1 && strings.Contains(w[0], "without a password"); got != tt.wantOpen || (!tt.wantOpen && len(w) > 0) {
				t.Errorf("warnings %q, want one about the password: %v", w, tt.wantOpen)
			}
			if len(w) > 0 && strings.Contains(w[0], remote) {
				t.Errorf("/readyz's warning %q names the Redis address (/readyz is unauthenticated)", w[0])
			}
			if err := check.health(func() error { return nil })(); err != nil {
				t.Errorf("not strict: health %v, want ready", err)
			}

			strict, _, _, err := newStoreCheckOn(t, tt.client(), secret32, nil, true)
			if refused := err != nil && strings.Contains(err.Error(), "-strict-store") && strings.Contains(err.Error(), remote); refused != tt.wantOpen {
				t.Errorf("strict: startStoreCheck = %v, want a refusal naming %s: %v", err, remote, tt.wantOpen)
			}
			if strict != nil && tt.wantOpen {
				t.Errorf("strict: a check was started on an open Redis")
			}
		})
	}
	// While running, strict: the password removed from Redis is a 503.
	check, _, _, err := newStoreCheckOn(t, dialedAt(remote, guarded.Addr, redis.Options{Password: "a-redis-password"}), secret32, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	if err := check.checkAuth(ctx); err == nil || !errors.Is(check.health(func() error { return nil })(), authguard.ErrStoreUnauthenticated) {
		t.Errorf("strict, the password removed: check %v, health %v", err, check.health(func() error { return nil })())
	}
}

// The records an instance remembers for store faults and floods (known
// networks, verified destinations) are counted in
// tollgate_recall_records: none at start, one after a success that
// settled a check (the owner's network is known), and none again after an
// administrator's reset of the account.
func TestMetrics_RecallRecordsCountsTheKnownNetworksRemembered(t *testing.T) {
	rd := redistest.Server(t, "--maxmemory-policy", "noeviction")
	addr, _ := startServe(t, redisConfig(rd.Addr, secret32))
	c := client(t, addr)
	records := func() int {
		_, metrics := c.get("/metrics")
		return metricValue(t, metrics, "tollgate_recall_records")
	}
	if n := records(); n != 0 {
		t.Fatalf("at start: tollgate_recall_records %d, want 0", n)
	}
	login := map[string]any{"flow": "login", "account": "yan@example.com", "ip": "192.0.2.4"}
	v := c.post("/v1/check", login)
	c.post("/v1/report", map[string]any{"flow": "login", "account": "yan@example.com", "ip": "192.0.2.4", "outcome": "success", "attempt": v.Attempt})
	if n := records(); n != 1 {
		t.Errorf("after a tokened success: tollgate_recall_records %d, want 1", n)
	}
	res, err := c.http.Post(c.base+"/v1/admin/reset", "application/json", strings.NewReader(`{"flow":"login","account":"yan@example.com","reason":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if n := records(); n != 0 {
		t.Errorf("after the account's reset: tollgate_recall_records %d, want 0", n)
	}
}
