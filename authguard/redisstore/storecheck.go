package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

// secretCheckScript keeps a secret's check value (authguard.SecretCheck):
// it writes ARGV[1] under KEYS[1] with an expiry of ARGV[2] ms when the key
// holds nothing, renews the expiry when it holds ARGV[1], and returns what
// it holds. One key, so one node of a Cluster.
var secretCheckScript = redis.NewScript(`
local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
if held == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return held`)

// SecretCheckTTL is how long a secret's check value stays in Redis after
// the last instance with that secret checked it.
const SecretCheckTTL = 10 * time.Minute

// SecretCheck writes c.Value under c.Key unless the key holds a value
// already, and reports whether the value held is c.Value: false means that
// an instance keyed by another secret wrote it first, and keeps counts
// apart from this one's. A match renews the key's expiry (SecretCheckTTL),
// so that the value stays while any instance with that secret runs. One
// round trip; it does not count against the circuit breaker.
func (s *Store) SecretCheck(ctx context.Context, c authguard.SecretCheck) (match bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	held, err := secretCheckScript.Run(ctx, s.client, []string{c.Key}, c.Value, SecretCheckTTL.Milliseconds()).Text()
	if err != nil {
		return false, fmt.Errorf("redisstore: secret check: %w: %w", authguard.ErrStoreUnavailable, err)
	}
	return held == c.Value, nil
}

// ErrConfigRefused is returned by MaxmemoryPolicies when Redis answers
// CONFIG GET with an error: managed services (ElastiCache, Memorystore,
// Azure Cache) and ACLs may refuse or rename the command. The policy then
// cannot be checked from tollgate.
var ErrConfigRefused = errors.New("redisstore: Redis refuses CONFIG GET")

// MaxmemoryPolicy is one master's maxmemory-policy.
type MaxmemoryPolicy struct {
	// Addr is the master's address.
	Addr string
	// Policy is its maxmemory-policy, e.g. "noeviction" or "allkeys-lru".
	Policy string
}

// Evicts reports whether Redis may evict tollgate's keys under the
// policy: any policy but noeviction, since every key tollgate writes has
// an expiry (so volatile-* policies reach them too). An evicted counter is
// a reset counter, which voids the daily bounds.
func (p MaxmemoryPolicy) Evicts() bool { return p.Policy != "noeviction" }

// MaxmemoryPolicies reads the maxmemory-policy of every master: the one
// node, the Sentinel's master, or each master of a Cluster, by address. It
// returns an error wrapping ErrConfigRefused when a master answers CONFIG
// GET with an error, and one wrapping authguard.ErrStoreUnavailable when
// one does not answer.
func (s *Store) MaxmemoryPolicies(ctx context.Context) ([]MaxmemoryPolicy, error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	read := func(ctx context.Context, c *redis.Client) (MaxmemoryPolicy, error) {
		got, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr):
			return MaxmemoryPolicy{}, fmt.Errorf("%w: %s", ErrConfigRefused, c.Options().Addr)
		case err != nil:
			return MaxmemoryPolicy{}, fmt.Errorf("redisstore: CONFIG GET on %s: %w: %w", c.Options().Addr, authguard.ErrStoreUnavailable, err)
		}
		policy, ok := got["maxmemory-policy"]
		if !ok { // a proxy that answers CONFIG GET with nothing
			return MaxmemoryPolicy{}, fmt.Errorf("%w: %s answered without a maxmemory-policy", ErrConfigRefused, c.Options().Addr)
		}
		return MaxmemoryPolicy{Addr: c.Options().Addr, Policy: policy}, nil
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		var policies []MaxmemoryPolicy
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			p, err := read(ctx, n)
			if err != nil {
				return err
			}
			mu.Lock()
			policies = append(policies, p)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, err
		}
		return policies, nil
	case *redis.Client:
		p, err := read(ctx, c)
		if err != nil {
			return nil, err
		}
		return []MaxmemoryPolicy{p}, nil
	}
	return nil, fmt.Errorf("%w: a %T cannot be asked node by node", ErrConfigRefused, s.client)
}
