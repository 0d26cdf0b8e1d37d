package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
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
	return eachMaster(ctx, s.client, func(ctx context.Context, c *redis.Client) (MaxmemoryPolicy, error) {
		addr := masterAddr(ctx, c)
		got, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr):
			return MaxmemoryPolicy{}, fmt.Errorf("%w: %s", ErrConfigRefused, addr)
		case err != nil:
			return MaxmemoryPolicy{}, fmt.Errorf("redisstore: CONFIG GET on %s: %w: %w", addr, authguard.ErrStoreUnavailable, err)
		}
		policy, ok := got["maxmemory-policy"]
		if !ok { // a proxy that answers CONFIG GET with nothing
			return MaxmemoryPolicy{}, fmt.Errorf("%w: %s answered without a maxmemory-policy", ErrConfigRefused, addr)
		}
		return MaxmemoryPolicy{Addr: addr, Policy: policy}, nil
	})
}

// PersistenceMode is what one master keeps on disk, so that it comes back
// from a restart with tollgate's counters.
type PersistenceMode struct {
	// Addr is the master's address.
	Addr string
	// AOF is whether it keeps an append-only file (appendonly yes).
	AOF bool
	// Snapshots is whether it writes RDB snapshots: a save schedule (CONFIG
	// GET save), or, read from INFO, a snapshot being written.
	Snapshots bool
	// Source is where it was read: "config" (CONFIG GET appendonly and
	// save), "info" (INFO persistence, when Redis refuses CONFIG), or ""
	// when neither told: then AOF and Snapshots say nothing.
	Source string
}

// Forgets reports whether the master is known to keep neither an
// append-only file nor snapshots: a restart brings it back empty, every
// counter reset, and an attacker who can cause one (or waits for one) gets
// fresh budgets on every account.
func (p PersistenceMode) Forgets() bool { return p.Source != "" && !p.AOF && !p.Snapshots }

// Unknown reports whether the master's persistence could not be read.
func (p PersistenceMode) Unknown() bool { return p.Source == "" }

// String is "aof", "rdb", "aof+rdb", "none" or "unknown".
func (p PersistenceMode) String() string {
	switch {
	case p.Unknown():
		return "unknown"
	case p.AOF && p.Snapshots:
		return "aof+rdb"
	case p.AOF:
		return "aof"
	case p.Snapshots:
		return "rdb"
	}
	return "none"
}

// PersistenceModes reads the persistence of every master, as
// MaxmemoryPolicies reads its policy: CONFIG GET appendonly and save, or,
// from a master that refuses CONFIG (a managed Redis, an ACL), INFO
// persistence and TIME (see persistenceFromInfo). A master that answers
// neither is Unknown, not an error; one that does not answer is an error
// wrapping authguard.ErrStoreUnavailable.
func (s *Store) PersistenceModes(ctx context.Context) ([]PersistenceMode, error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	return eachMaster(ctx, s.client, func(ctx context.Context, c *redis.Client) (PersistenceMode, error) {
		addr := masterAddr(ctx, c)
		var aof, save *redis.MapStringStringCmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			aof, save = p.ConfigGet(ctx, "appendonly"), p.ConfigGet(ctx, "save")
			return nil
		})
		var rerr redis.Error
		if err != nil && !errors.As(err, &rerr) {
			return PersistenceMode{}, fmt.Errorf("redisstore: CONFIG GET on %s: %w: %w", addr, authguard.ErrStoreUnavailable, err)
		}
		appendonly, okA := aof.Val()["appendonly"]
		schedule, okS := save.Val()["save"]
		if err == nil && okA && okS {
			return PersistenceMode{Addr: addr, AOF: appendonly == "yes", Snapshots: strings.TrimSpace(schedule) != "", Source: "config"}, nil
		}
		// CONFIG refused, or answered without the parameters (a proxy).
		var info *redis.StringCmd
		var now *redis.TimeCmd
		_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			info, now = p.Info(ctx, "persistence"), p.Time(ctx)
			return nil
		})
		switch {
		case errors.As(err, &rerr):
			return PersistenceMode{Addr: addr}, nil
		case err != nil:
			return PersistenceMode{}, fmt.Errorf("redisstore: INFO persistence on %s: %w: %w", addr, authguard.ErrStoreUnavailable, err)
		}
		p := persistenceFromInfo(info.Val(), now.Val())
		p.Addr = addr
		return p, nil
	})
}

// unsavedFor is how long changes may wait unsaved on a Redis that keeps
// snapshots without an append-only file: Redis's default save schedule
// ("3600 1 300 100 60 10000") writes one at the latest an hour after a
// change. Changes older than that, with no snapshot being written, mean
// no schedule of the defaults' kind is saving them.
const unsavedFor = time.Hour

// persistenceFromInfo reads INFO persistence's fields, at the server's
// time now. INFO does not show the save schedule, so it tells less than
// CONFIG: aof_enabled:1 is an append-only file; a snapshot in progress
// (rdb_bgsave_in_progress:1) is snapshots; changes unsaved for longer than
// unsavedFor (rdb_changes_since_last_save above 0, rdb_last_save_time, the
// time of the last snapshot or of the start, that long ago) without either
// is none, since a restart now loses them. Anything else (no changes
// waiting, or not yet for long, or fields missing) is unknown: a schedule
// not yet due looks the same as none.
func persistenceFromInfo(info string, now time.Time) PersistenceMode {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch {
	case fields["aof_enabled"] == "1":
		return PersistenceMode{AOF: true, Snapshots: fields["rdb_bgsave_in_progress"] == "1", Source: "info"}
	case fields["rdb_bgsave_in_progress"] == "1":
		return PersistenceMode{Snapshots: true, Source: "info"}
	case fields["aof_enabled"] != "0" || fields["rdb_bgsave_in_progress"] != "0":
		return PersistenceMode{}
	}
	changes, err1 := strconv.ParseInt(fields["rdb_changes_since_last_save"], 10, 64)
	saved, err2 := strconv.ParseInt(fields["rdb_last_save_time"], 10, 64)
	if err1 != nil || err2 != nil || changes <= 0 || now.IsZero() || now.Sub(time.Unix(saved, 0)) <= unsavedFor {
		return PersistenceMode{}
	}
	return PersistenceMode{Source: "info"}
}

// AuthMode is whether a master answers a connection that gives no
// password, on an address others can reach.
type AuthMode struct {
	// Addr is the master's address.
	Addr string
	// Unauthenticated is whether it answered PING on a connection that
	// gave no password or ACL user: tollgate's own, when it is configured
	// with none, or one opened for the check without them.
	Unauthenticated bool
	// Loopback is whether Addr is a loopback address (127.0.0.0/8, ::1,
	// localhost) or a unix socket, which only this host reaches.
	Loopback bool
}

// Open reports whether anyone who reaches the master's address can read,
// reset or flush tollgate's counters: it answers without a password, and
// not on loopback only.
func (a AuthMode) Open() bool { return a.Unauthenticated && !a.Loopback }

// AuthModes tells, for every master as MaxmemoryPolicies reads them,
// whether it answers without a password. A client that authenticates (a
// password, an ACL user, a credentials provider) opens a connection of its
// own without them for the check, since a Redis whose default user has
// nopass accepts any password; a client certificate counts as
// authentication. It returns an error wrapping
// authguard.ErrStoreUnavailable when a master does not answer.
func (s *Store) AuthModes(ctx context.Context) ([]AuthMode, error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	return eachMaster(ctx, s.client, func(ctx context.Context, c *redis.Client) (AuthMode, error) {
		addr := masterAddr(ctx, c)
		a := AuthMode{Addr: addr, Loopback: loopback(c.Options().Network, addr)}
		o := *c.Options()
		if t := o.TLSConfig; t != nil && (len(t.Certificates) > 0 || t.GetClientCertificate != nil) {
			return a, nil
		}
		probe := c
		if o.Username != "" || o.Password != "" || o.CredentialsProvider != nil || o.CredentialsProviderContext != nil || o.StreamingCredentialsProvider != nil {
			o.Username, o.Password = "", ""
			o.CredentialsProvider, o.CredentialsProviderContext, o.StreamingCredentialsProvider = nil, nil, nil
			o.DB, o.ClientName, o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 0, "", 1, 0, 0
			o.OnConnect = nil
			probe = redis.NewClient(&o)
			defer probe.Close()
		}
		err := probe.Ping(ctx).Err()
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr): // NOAUTH: a password is required
			return a, nil
		case err != nil:
			return AuthMode{}, fmt.Errorf("redisstore: PING on %s: %w: %w", addr, authguard.ErrStoreUnavailable, err)
		}
		a.Unauthenticated = true
		return a, nil
	})
}

// eachMaster calls read on every master: the one node, the Sentinel's
// master, or each master of a Cluster (ForEachMaster, concurrently), and
// returns what it read; the first error stops it.
func eachMaster[T any](ctx context.Context, client redis.UniversalClient, read func(context.Context, *redis.Client) (T, error)) ([]T, error) {
	switch c := client.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		var got []T
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			v, err := read(ctx, n)
			if err != nil {
				return err
			}
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, err
		}
		return got, nil
	case *redis.Client:
		v, err := read(ctx, c)
		if err != nil {
			return nil, err
		}
		return []T{v}, nil
	}
	return nil, fmt.Errorf("%w: a %T cannot be asked node by node", ErrConfigRefused, client)
}

// failoverAddr is the address go-redis gives a Sentinel client, whose
// master moves.
const failoverAddr = "FailoverClient"

// masterAddr is c's address; for a Sentinel's client, the master's as the
// master sees this connection (CLIENT INFO's laddr), or failoverAddr when
// it does not say (Redis before 6.2).
func masterAddr(ctx context.Context, c *redis.Client) string {
	addr := c.Options().Addr
	if addr != failoverAddr {
		return addr
	}
	if info, err := c.ClientInfo(ctx).Result(); err == nil && info.LAddr != "" {
		return info.LAddr
	}
	return addr
}

// loopback reports whether a client dials addr on this host only: a unix
// socket, or a host that is localhost or a loopback IP. A name is not
// looked up: only localhost counts.
func loopback(network, addr string) bool {
	if network == "unix" || strings.HasPrefix(addr, "/") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
