package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/redistest"
)

// secretChecks builds an engine keyed by secret and returns its checks.
func secretChecks(t *testing.T, secret string, tenants map[string][]byte) []authguard.SecretCheck {
	t.Helper()
	mem := memstore.New(memstore.Config{})
	t.Cleanup(func() { mem.Close() })
	e, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: mem, Secret: []byte(secret), TenantSecrets: tenants})
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
