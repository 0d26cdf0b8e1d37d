package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// fallbackEntries caps the local store that fail-open flows answer from
// while the main store fails: a bounded safety net per instance. As in the
// main memory store, a counter that restricts its subject is evicted only
// after every ordinary key of its shard (see package memstore).
const fallbackEntries = 100_000

// fallbackMemoryLimit bounds the fallback's bytes as the main store's
// memory_limit does: 100,000 keys of about 320 bytes.
const fallbackMemoryLimit = 32 << 20

// serve runs the service until ctx is cancelled, then stops accepting
// connections, lets in-flight requests finish (within
// cfg.Timeouts.Shutdown) and closes the store. ready, when set, is called
// with the address once the listener is open. Logs go to logOut as JSON.
// load, when set, re-reads the configuration for a reload (SIGHUP, POST
// /v1/admin/reload; see reloader); nil leaves the policy as it started.
// The pieces are the server type's (server.go).
func serve(ctx context.Context, cfg *config.Config, logOut io.Writer, ready func(net.Addr), load func() (*config.Config, error)) error {
	s := newServer(cfg, logOut, load)
	if err := s.Open(ctx); err != nil {
		return err
	}
	if ready != nil {
		ready(s.Addr())
	}
	err := s.Run(ctx)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// openStore opens the configured store: Redis or a Redis Cluster when
// configured, else the embedded memory store. A Redis that is down at
// start-up is not an error: the flows' fail modes answer until it is back,
// and /readyz says so.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (authguard.Store, string, error) {
	if cfg.Redis == nil {
		return memstore.New(memstore.Config{MemoryLimit: cfg.MemoryLimit}), "memory", nil
	}
	r := cfg.Redis
	redisstore.SetLogger(log)
	client, err := redisstore.NewClient(*r)
	if err != nil {
		return nil, "", err
	}
	store, err := redisstore.New(redisstore.Config{Client: client, Timeout: r.Timeout, SharedRoundTrips: !r.DisableSharedRoundTrips, SubjectTags: r.SubjectTags()})
	if err != nil {
		return nil, "", err
	}
	name := "redis"
	switch {
	case len(r.ClusterAddrs) > 0:
		name = "redis-cluster"
	case len(r.SentinelAddrs) > 0:
		name = "redis-sentinel"
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := store.Preload(pctx); err != nil {
		log.Warn("redis is not reachable at start-up; flows answer by their fail mode until it is", slog.String("error", err.Error()))
	}
	return store, name, nil
}

// storeSettle is how long the store must answer every call, without a
// failure, before an episode of failures is over. Redis at maxmemory fails
// writes but not reads, and the circuit breaker lets a call through every
// second, so a full or flapping store mixes successes into its failures for
// as long as it lasts: a shorter settle would end and start episodes over
// and over (one OOM episode printed 42 lines with one line per change).
const storeSettle = 5 * time.Second

// storeWatch turns the store's failures into one log line per episode: a
// warning when the store starts failing (with the kind of the first
// failure), and, once it has answered for storeSettle without a failure, a
// line saying how many calls failed in the episode, by kind, and for how
// long (from the first failure to the first success of the settled run).
// Failures and successes within an episode print nothing; the metrics count
// every call. The end line comes with the first call after the settling
// period, so a store with no traffic ends no episode.
//
// It also tells /readyz (health) whether the store is full.
type storeWatch struct {
	log *slog.Logger
	// now is the clock. The default is time.Now.
	now func() time.Time

	failing atomic.Bool // an episode is in progress; read without mu on every call

	mu       sync.Mutex
	start    time.Time      // the episode's first failure
	okSince  time.Time      // first success since the last failure; zero after a failure
	lastFull time.Time      // the last failure of kind "full"; zero when none
	failures map[string]int // failed calls in the episode, by kind
}

func (w *storeWatch) clock() time.Time {
	if w.now == nil {
		return time.Now()
	}
	return w.now()
}

func (w *storeWatch) observe(ev authguard.Event) {
	switch {
	case ev.StoreErr != nil:
		w.failed(ev.StoreErr)
	case ev.Source == authguard.SourceStore && w.failing.Load():
		w.answered()
	}
}

func (w *storeWatch) failed(err error) {
	kind := authguard.StoreErrorKind(err)
	now := w.clock()
	w.mu.Lock()
	first := !w.failing.Load()
	if first {
		w.failing.Store(true)
		w.start, w.lastFull, w.failures = now, time.Time{}, map[string]int{}
	}
	w.failures[kind]++
	w.okSince = time.Time{}
	if kind == "full" {
		w.lastFull = now
	}
	w.mu.Unlock()
	if first {
		w.log.Warn("store failing: flows answer by their fail mode (open: from this instance's local fallback store; closed: delay)",
			slog.String("kind", kind),
			slog.String("error", err.Error()))
	}
}

func (w *storeWatch) answered() {
	now := w.clock()
	w.mu.Lock()
	switch {
	case !w.failing.Load():
		w.mu.Unlock()
		return
	case w.okSince.IsZero():
		w.okSince = now
		w.mu.Unlock()
		return
	case now.Sub(w.okSince) < storeSettle:
		w.mu.Unlock()
		return
	}
	w.failing.Store(false)
	lasted := w.okSince.Sub(w.start)
	failures := w.failures
	w.mu.Unlock()

	total := 0
	byKind := make([]any, 0, len(failures))
	for _, kind := range authguard.StoreErrorKinds() {
		if n := failures[kind]; n > 0 {
			byKind = append(byKind, slog.Int(kind, n))
			total += n
		}
	}
	w.log.Info("store answering again",
		slog.Int("failed_calls", total),
		slog.Group("failed_calls_by_kind", byKind...),
		slog.String("lasted", lasted.Round(time.Millisecond).String()),
		slog.String("settled_for", now.Sub(w.okSince).Round(time.Millisecond).String()))
}

// health is api.Config.StoreHealth: an error wrapping
// authguard.ErrStoreFull while the store has answered "full" within the
// last storeSettle. A full store fails every write while it is full, at
// least once a cooldown with traffic (the circuit breaker's, 100 ms), so
// with traffic /readyz stays 503 for the whole episode. Without traffic it
// is ready again after storeSettle, so an instance that its own 503 took
// out of rotation comes back and tries the store again instead of waiting
// for calls it no longer gets.
func (w *storeWatch) health() error {
	if !w.failing.Load() {
		return nil
	}
	now := w.clock()
	w.mu.Lock()
	last := w.lastFull
	w.mu.Unlock()
	if last.IsZero() || now.Sub(last) >= storeSettle {
		return nil
	}
	return fmt.Errorf("the store answered full %v ago: %w", now.Sub(last).Round(time.Millisecond), authguard.ErrStoreFull)
}

// tenantNames are the tenants the auth config names; without auth, none
// (the engine always keeps the default tenant).
func tenantNames(a *auth.Config) []string {
	if a == nil {
		return nil
	}
	names := make([]string, 0, len(a.Tenants))
	for _, t := range a.Tenants {
		names = append(names, t.Name)
	}
	return names
}
