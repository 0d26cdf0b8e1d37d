package redisstore_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// secretChecks builds an engine keyed by secret and returns its checks.
func secretChecks(t *testing.T, secret string, tenants map[string][]byte) []authguard.SecretCheck {
	t.Helper()
	mem := memstore.New(memstore.Config{})
	t.Cleanup(func() { mem.Close() })
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: mem, Secret: []byte(secret), TenantSecrets: tenants})
	if err != nil {
		t.Fatal(err)
	}
	return e.SecretChecks()
}

// TestSecretCheck_InstancesWithDifferentSecretsOnOneRedisSeeIt: the first
// instance writes its check value; one keyed by the same secret matches it
// (and renews it), one keyed by another does not; Redis holds neither
// secret, and the key expires once no instance renews it.
func TestSecretCheck_InstancesWithDifferentSecretsOnOneRedisSeeIt(t *testing.T) {
	rd := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer c.Close()
	s, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const secretA, secretB = "the-first-deployments-secret-32-bytes!", "an-odd-instances-other-secret-32-bytes"
	a, b := secretChecks(t, secretA, nil)[0], secretChecks(t, secretB, nil)[0]
	if a.Key != b.Key || a.Key != "tg:_admin:secretcheck" {
		t.Fatalf("check keys %q and %q, want both tg:_admin:secretcheck", a.Key, b.Key)
	}
	tests := []struct {
		name  string
		check authguard.SecretCheck
		want  bool
	}{
		{"the first instance writes its value", a, true},
		{"another instance with the same secret matches", a, true},
		{"an instance with another secret does not", b, false},
		{"and does not overwrite the first's", a, true},
	}
	for _, tt := range tests {
		if got, err := s.SecretCheck(ctx, tt.check); err != nil || got != tt.want {
			t.Errorf("%s: SecretCheck = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	held, err := c.Get(ctx, a.Key).Result()
	if err != nil || held != a.Value {
		t.Fatalf("Redis holds %q (%v), want the first instance's value", held, err)
	}
	if strings.Contains(held, secretA) || strings.Contains(held, secretB) {
		t.Errorf("the check value %q holds a secret", held)
	}
	if ttl := c.PTTL(ctx, a.Key).Val(); ttl <= 0 || ttl > redisstore.SecretCheckTTL {
		t.Errorf("the check key's PTTL = %v, want within (0, %v]", ttl, redisstore.SecretCheckTTL)
	}
}

// TestEvictionCheck_EveryClusterMasterIsRead: an evicting policy on one
// master of three is found, named by its address.
func TestEvictionCheck_EveryClusterMasterIsRead(t *testing.T) {
	cl := redistest.Cluster(t)
	uc, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: cl.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	s, err := redisstore.New(redisstore.Config{Client: uc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	odd := cl.Addrs()[1]
	node := redis.NewClient(&redis.Options{Addr: odd})
	defer node.Close()
	if err := node.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	policies, err := s.MaxmemoryPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(policies) != len(cl.Addrs()) {
		t.Fatalf("MaxmemoryPolicies = %v, want one per master (%d)", policies, len(cl.Addrs()))
	}
	for _, p := range policies {
		if want := p.Addr == odd; p.Evicts() != want || (want && p.Policy != "allkeys-lru") {
			t.Errorf("%s: %s (evicts %v)", p.Addr, p.Policy, p.Evicts())
		}
	}
}

// TestEvictionCheck_ARedisRefusingCONFIGIsNotAnOutage: a managed Redis
// that refuses CONFIG answers ErrConfigRefused, not a store outage.
func TestEvictionCheck_ARedisRefusingCONFIGIsNotAnOutage(t *testing.T) {
	rd := redistest.Server(t, "--rename-command", "CONFIG", "")
	c := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer c.Close()
	s, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.MaxmemoryPolicies(context.Background())
	if !errors.Is(err, redisstore.ErrConfigRefused) || errors.Is(err, authguard.ErrStoreUnavailable) {
		t.Errorf("MaxmemoryPolicies = %v, want ErrConfigRefused and no outage", err)
	}
}

// storeOnClient is a Store on c, closed with the test.
func storeOnClient(t *testing.T, c redis.UniversalClient) *redisstore.Store {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPersistenceCheck_ARedisThatForgetsIsFlagged: a Redis started with
// an empty save schedule and appendonly no comes back from a restart
// empty, every counter reset, and is flagged; one with an append-only file or a save schedule
// is not. A Redis refusing CONFIG is read from INFO persistence: AOF there
// is seen, and what INFO cannot tell (a save schedule not yet due looks
// like none) is unknown, never "none" or persisted.
func TestPersistenceCheck_ARedisThatForgetsIsFlagged(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		wantMode    string
		wantForgets bool
	}{
		{"no AOF, no snapshots", []string{"--save", "", "--appendonly", "no"}, "none", true},
		{"an append-only file", []string{"--save", "", "--appendonly", "yes"}, "aof", false},
		{"a save schedule", []string{"--save", "3600 1", "--appendonly", "no"}, "rdb", false},
		{"both", []string{"--save", "3600 1", "--appendonly", "yes"}, "aof+rdb", false},
		{"CONFIG refused, AOF in INFO", []string{"--appendonly", "yes", "--rename-command", "CONFIG", ""}, "aof", false},
		{"CONFIG refused, nothing in INFO tells", []string{"--save", "", "--appendonly", "no", "--rename-command", "CONFIG", ""}, "unknown", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := redistest.Server(t, tt.args...)
			s := storeOnClient(t, redis.NewClient(&redis.Options{Addr: rd.Addr}))
			modes, err := s.PersistenceModes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(modes) != 1 || modes[0].String() != tt.wantMode || modes[0].Forgets() != tt.wantForgets || modes[0].Addr != rd.Addr {
				t.Errorf("PersistenceModes = %+v (%v), want %s on %s, forgets %v", modes, modes, tt.wantMode, rd.Addr, tt.wantForgets)
			}
		})
	}
}

// TestPersistenceCheck_EveryClusterMasterIsRead: one master of three that
// keeps no append-only file is found, by its address.
func TestPersistenceCheck_EveryClusterMasterIsRead(t *testing.T) {
	cl := redistest.Cluster(t)
	uc, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: cl.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	s := storeOnClient(t, uc)
	ctx := context.Background()
	odd := cl.Addrs()[2]
	for _, a := range cl.Addrs() {
		if a == odd {
			continue
		}
		node := redis.NewClient(&redis.Options{Addr: a})
		defer node.Close()
		if err := node.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	modes, err := s.PersistenceModes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(modes) != len(cl.Addrs()) {
		t.Fatalf("PersistenceModes = %v, want one per master (%d)", modes, len(cl.Addrs()))
	}
	for _, m := range modes {
		if m.Forgets() != (m.Addr == odd) {
			t.Errorf("%s: %s (forgets %v)", m.Addr, m, m.Forgets())
		}
	}
}

// TestPersistenceCheck_ASentinelsMasterIsNamedByItsAddress: a Sentinel's
// client has no address of its own (go-redis calls it FailoverClient);
// the check names the master it reached.
func TestPersistenceCheck_ASentinelsMasterIsNamedByItsAddress(t *testing.T) {
	master := redistest.Server(t)
	sentinel := redistest.Sentinel(t, master)
	uc, err := redisstore.NewClient(redisstore.ClientConfig{SentinelAddrs: []string{sentinel.Addr}, SentinelMaster: "tollgate", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := storeOnClient(t, uc)
	modes, err := s.PersistenceModes(context.Background())
	if err != nil || len(modes) != 1 || modes[0].Addr != master.Addr || !modes[0].Forgets() {
		t.Errorf("PersistenceModes = %+v, %v; want the master %s, keeping nothing", modes, err, master.Addr)
	}
	access, err := s.AuthModes(context.Background())
	if err != nil || len(access) != 1 || access[0].Addr != master.Addr || !access[0].Loopback || access[0].Open() {
		t.Errorf("AuthModes = %+v, %v; want the master %s on loopback", access, err, master.Addr)
	}
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

// TestAuthCheck_ARedisAnsweringWithoutAPasswordOffLoopbackIsOpen: a Redis
// that answers a connection without a password is open to anyone who
// reaches its address, unless that address is loopback. A client that
// gives a password is checked with a connection that gives none, since a
// default user with nopass accepts any password; a Redis that requires
// one is not open.
func TestAuthCheck_ARedisAnsweringWithoutAPasswordOffLoopbackIsOpen(t *testing.T) {
	open, guarded, acl := redistest.Server(t), redistest.Server(t), redistest.Server(t)
	ctx := context.Background()
	for _, set := range []struct {
		addr string
		cmd  []any
	}{
		// Set once the server runs: redistest waits for a PING without one.
		{guarded.Addr, []any{"CONFIG", "SET", "requirepass", "a-redis-password"}},
		{acl.Addr, []any{"ACL", "SETUSER", "tollgate", "on", ">tollgates-password", "~*", "&*", "+@all"}},
	} {
		admin := redis.NewClient(&redis.Options{Addr: set.addr})
		defer admin.Close()
		if err := admin.Do(ctx, set.cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	const remote = "10.20.30.40:6379"
	tests := []struct {
		name     string
		client   *redis.Client
		wantOpen bool
	}{
		{"no password, on loopback", redis.NewClient(&redis.Options{Addr: open.Addr}), false},
		{"no password, on localhost", dialedAt("localhost:6379", open.Addr, redis.Options{}), false},
		{"no password, off loopback", dialedAt(remote, open.Addr, redis.Options{}), true},
		{"a password Redis requires, off loopback", dialedAt(remote, guarded.Addr, redis.Options{Password: "a-redis-password"}), false},
		{"an ACL user, the default user without a password, off loopback", dialedAt(remote, acl.Addr, redis.Options{Username: "tollgate", Password: "tollgates-password"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storeOnClient(t, tt.client)
			access, err := s.AuthModes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(access) != 1 || access[0].Open() != tt.wantOpen || access[0].Addr != tt.client.Options().Addr {
				t.Errorf("AuthModes = %+v, want open %v at %s", access, tt.wantOpen, tt.client.Options().Addr)
			}
		})
	}
}
