package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientConfig says how to reach Redis. Exactly one of URL, ClusterAddrs and
// SentinelAddrs is set.
type ClientConfig struct {
	// URL reaches one node: redis://[user:password@]host:port[/db], or
	// rediss:// for TLS.
	URL string
	// ClusterAddrs are seed addresses (host:port) of a Redis Cluster.
	ClusterAddrs []string
	// SentinelAddrs are Redis Sentinel addresses (host:port); the client
	// follows the master named SentinelMaster through failovers.
	SentinelAddrs []string
	// SentinelMaster is the name of the master the Sentinels monitor.
	SentinelMaster string
	// SentinelPassword authenticates to the Sentinels themselves, when they
	// require it.
	SentinelPassword string
	// Username and Password authenticate (ACL user, or the default user
	// when Username is empty). They override those in URL.
	Username, Password string
	// TLS turns TLS on for ClusterAddrs and SentinelAddrs (URL says it with
	// rediss://).
	TLS bool
	// TLSServerName overrides the name checked in the server's certificate.
	TLSServerName string
	// PoolSize is the number of connections per node. The default is 10 per
	// CPU, go-redis's own default.
	PoolSize int
	// Timeout bounds dialing, reading and writing. The default is 50ms.
	Timeout time.Duration
	// DisableSharedRoundTrips sends every check in a round trip of its
	// own (on a Cluster, of its own on each master), even when many are in
	// flight (Config.SharedRoundTrips, which tollgate serve turns on unless
	// this is set). The default is false.
	DisableSharedRoundTrips bool
	// ClusterKeyLayout is how a Cluster's keys are named: "" (today's
	// names) or "subject", every key of a subject under its hash tag
	// (Config.SubjectTags): a check is a call per subject instead of a
	// call per key. Switching a running Cluster renames every key:
	// MigrateKeyLayout before and after the switch (migrate.go). Only with
	// ClusterAddrs.
	ClusterKeyLayout string
}

// SubjectTags reports whether cfg asks for subject hash tags
// (Config.SubjectTags).
func (cfg ClientConfig) SubjectTags() bool { return cfg.ClusterKeyLayout == "subject" }

// NewClient returns a client for cfg. Retries are off: a failing call is
// answered by the flow's fail mode at once rather than retried past its
// deadline. On a Cluster go-redis still follows MOVED and ASK redirects (up
// to 8 a call, below), and does it at once, without its backoff between attempts.
// go-redis waits out that backoff before each further attempt of a
// pipeline, the ones that only follow a redirect too (a single command
// follows them at once): with its default of 10 ms, every batch that met
// ASK or MOVED while a slot was being resharded took 10–30 ms instead of
// one more round trip. And waiting out a backoff for a dead master's ops
// only spends the batch's deadline (a refused connection is refused again
// at once); when the deadline runs out during that wait go-redis marks
// every op of the pipeline failed, those the healthy masters had answered
// too.
func NewClient(cfg ClientConfig) (redis.UniversalClient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &redis.UniversalOptions{
		Addrs:            cfg.ClusterAddrs,
		IsClusterMode:    len(cfg.ClusterAddrs) > 0, // a Cluster from one seed address too
		MasterName:       cfg.SentinelMaster,
		SentinelPassword: cfg.SentinelPassword,
	}
	if len(cfg.SentinelAddrs) > 0 {
		o.Addrs = cfg.SentinelAddrs
	}
	if cfg.TLS {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.URL != "" {
		u, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		fromURL(o, u)
	}
	// The settings every kind of client shares, in this one place.
	if cfg.Username != "" {
		o.Username = cfg.Username
	}
	if cfg.Password != "" {
		o.Password = cfg.Password
	}
	if o.TLSConfig != nil && cfg.TLSServerName != "" {
		o.TLSConfig.ServerName = cfg.TLSServerName
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 50 * time.Millisecond
	}
	o.PoolSize = cfg.PoolSize // per node; 0 is go-redis's default
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.DialerRetries = 1                           // one dial attempt: a dead Redis must fail fast
	o.MinRetryBackoff, o.MaxRetryBackoff = -1, -1 // no wait between a Cluster pipeline's attempts, redirects included
	// A call follows up to 8 MOVED or ASK redirects (go-redis's default is
	// 3): while a slot migrates, its state can change between the attempts
	// of one call (ASK to the target, then the source again), and one call
	// in 1,257 of a reshard ran out of 3 redirects and failed with ASK
	// (TestClusterReshard_RedirectsStayWellInsideTheStoreDeadline). Each is
	// one more round trip, within the call's deadline.
	o.MaxRedirects = 8
	return redis.NewUniversalClient(o), nil
}

// fromURL puts into o what a one-node URL says: the address, database,
// credentials and TLS, and any other go-redis option its query sets (those
// NewClient sets itself, the pool size, timeouts and retries, it then
// overrides).
func fromURL(o *redis.UniversalOptions, u *redis.Options) {
	o.Addrs = []string{u.Addr} // a unix socket's path too: go-redis dials a path starting with / as one
	o.DB, o.Protocol, o.ClientName = u.DB, u.Protocol, u.ClientName
	o.Username, o.Password, o.TLSConfig = u.Username, u.Password, u.TLSConfig
	o.PoolFIFO, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns, o.MaxConcurrentDials =
		u.PoolFIFO, u.MinIdleConns, u.MaxIdleConns, u.MaxActiveConns, u.MaxConcurrentDials
	o.PipelinePoolSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize =
		u.PipelinePoolSize, u.PipelineReadBufferSize, u.PipelineWriteBufferSize
	o.ConnMaxIdleTime, o.ConnMaxLifetime, o.ConnMaxLifetimeJitter = u.ConnMaxIdleTime, u.ConnMaxLifetime, u.ConnMaxLifetimeJitter
}

// Validate reports whether cfg names exactly one way to reach Redis, with
// well-formed addresses and limits in range.
func (cfg ClientConfig) Validate() error {
	set := 0
	for _, b := range []bool{cfg.URL != "", len(cfg.ClusterAddrs) > 0, len(cfg.SentinelAddrs) > 0} {
		if b {
			set++
		}
	}
	if set != 1 {
		return errors.New("redisstore: set exactly one of url (one node), cluster_addrs (a Redis Cluster) and sentinel_addrs (Redis Sentinel)")
	}
	for _, a := range append(append([]string(nil), cfg.ClusterAddrs...), cfg.SentinelAddrs...) {
		if a = strings.TrimSpace(a); a == "" || !strings.Contains(a, ":") {
			return fmt.Errorf("redisstore: address %q is not host:port", a)
		}
	}
	if len(cfg.SentinelAddrs) > 0 && cfg.SentinelMaster == "" {
		return errors.New("redisstore: sentinel_addrs need sentinel_master, the name of the monitored master")
	}
	if cfg.Timeout < 0 || cfg.Timeout > 10*time.Second {
		return errors.New("redisstore: timeout must be between 0 (the default, 50ms) and 10s")
	}
	switch {
	case cfg.ClusterKeyLayout != "" && cfg.ClusterKeyLayout != "subject":
		return errors.New(`redisstore: cluster_key_layout must be "subject" or left out (today's names)`)
	case cfg.ClusterKeyLayout != "" && len(cfg.ClusterAddrs) == 0:
		return errors.New("redisstore: cluster_key_layout is for a Redis Cluster (cluster_addrs)")
	}
	if cfg.PoolSize < 0 || cfg.PoolSize > 10_000 {
		return errors.New("redisstore: pool_size must be between 0 (the default) and 10000")
	}
	return nil
}

// SetLogger sends go-redis's own messages (a failed dial, a reconnect) to
// log at debug level instead of plain text on stderr: the server already
// logs when the store starts failing and when it answers again, in JSON.
// go-redis keeps one logger per process, so this affects every client.
func SetLogger(log *slog.Logger) { redis.SetLogger(goRedisLogger{log}) }

type goRedisLogger struct{ log *slog.Logger }

func (l goRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
