package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
	"github.com/tollgate-auth/tollgate/webhook"
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
func serve(ctx context.Context, cfg *config.Config, logOut io.Writer, ready func(net.Addr), load func() (*config.Config, error)) error {
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err := cfg.CheckListen(); err != nil {
		return err
	}
	var verifier *auth.Verifier
	if cfg.Auth != nil {
		v, err := auth.New(*cfg.Auth)
		if err != nil {
			return err // auth's errors say "auth:"
		}
		verifier = v
		go v.Run(ctx, func(err error) {
			log.Warn("the JWKS could not be fetched; the keys fetched before stay trusted", slog.String("error", err.Error()))
		})
	} else {
		log.Info("callers are not authenticated (no auth in the config): listening on loopback only, every call in the default tenant")
	}
	secret := cfg.Secret
	if len(secret) == 0 && cfg.Redis != nil {
		return errors.New("TOLLGATE_SECRET must be set with Redis: every instance must hash identifiers and sign tokens alike")
	}
	if len(secret) == 0 {
		secret = []byte(rand.Text() + rand.Text())
		log.Warn("TOLLGATE_SECRET is not set: using a random secret for this process only; " +
			"counters and device tokens will not survive a restart and cannot be shared between instances")
	} else if cfg.SecretInFile {
		log.Warn("the secret is set in the config file; prefer the TOLLGATE_SECRET environment variable, and keep the file private")
	}

	store, storeName, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	fallback := memstore.New(memstore.Config{MaxEntries: fallbackEntries, MemoryLimit: fallbackMemoryLimit})
	defer fallback.Close()
	defer store.Close()

	metrics := api.NewMetrics(cfg.Policy)
	build := readBuildInfo()
	metrics.AddBuildInfo(build.Version, build.Revision, build.Go)
	tracing, err := startTracing(ctx, os.Getenv, build.Version, log) // tracing.go: off unless OTEL_* ask for it
	if err != nil {
		return err
	}
	defer tracing.shutdown(log)
	if mem, ok := store.(*memstore.Store); ok {
		metrics.AddMemoryStore("main", mem)
	}
	metrics.AddMemoryStore("fallback", fallback)
	watch := &storeWatch{log: log}
	observe := func(ev authguard.Event) { metrics.Observe(ev); watch.observe(ev) }
	if cfg.DecisionLog != "" {
		out := io.Writer(os.Stdout)
		if cfg.DecisionLog != "stdout" {
			f, err := os.OpenFile(cfg.DecisionLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return fmt.Errorf("decision_log: %w", err)
			}
			defer f.Close()
			out = f
		}
		dlog := decisionlog.NewWriter(out, nil)
		defer func() {
			if err := dlog.Close(); err != nil {
				log.Error("the decision log could not be written", slog.String("error", err.Error()))
			}
		}()
		metrics.AddDecisionLog(dlog.Dropped)
		observe = func(ev authguard.Event) { metrics.Observe(ev); watch.observe(ev); dlog.Observe(ev) }
		log.Info("writing the decision log", slog.String("to", cfg.DecisionLog))
	}
	// On Redis, at most as many calls run as the pool has connections per
	// node, and a call waits for one as long as a store call may take; the
	// memory store has no deadline to miss.
	// The recall is for a store that can fail or be slow: the memory store
	// does neither.
	hooks, err := startWebhooks(cfg, secret, metrics.Registry(), log) // webhooks.go
	if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	defer hooks.close()
	chal, err := startChallenger(cfg, secret, log) // challenge.go
	if err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	defer chal.close()
	var notifier authguard.Notifier
	var hooksAdmin api.Webhooks
	if hooks != nil {
		notifier, hooksAdmin = webhook.Notifier{D: hooks.d}, hooks
	}
	maxInFlight, queueWait, recall := 0, time.Duration(0), int64(-1)
	if rs, ok := store.(*redisstore.Store); ok {
		maxInFlight, queueWait, recall = rs.PoolSize(), cfg.Redis.Timeout, authguard.DefaultRecallBytes
	}
	engine, err := authguard.New(authguard.Config{
		Policy:         cfg.Policy,
		Store:          store,
		Fallback:       fallback,
		Secret:         secret,
		KeyPrefix:      cfg.KeyPrefix,
		MaxInFlight:    maxInFlight,
		QueueWait:      queueWait,
		RecallBytes:    recall,
		TenantSecrets:  cfg.TenantSecrets,
		TenantPolicies: cfg.TenantPolicies,
		Tenants:        tenantNames(cfg.Auth),
		Observe:        observe,
		RecordSubjects: cfg.DecisionLog != "",
		Trace:          tracing.engineTrace(),
		Notifier:       notifier,
	})
	if err != nil {
		return err
	}
	metrics.AddEngine(engine)
	// The administrators' entries: read once now, then every
	// entries_refresh, so that one added on another instance applies here.
	ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := engine.RefreshEntries(ectx); err != nil {
		log.Warn("the allow and deny entries could not be read at start-up; retrying every entries_refresh", slog.String("error", err.Error()))
	}
	cancel()
	go engine.RunEntries(ctx, cfg.EntriesRefresh, func(err error) {
		log.Warn("the allow and deny entries could not be refreshed; the ones read before still apply until they expire", slog.String("error", err.Error()))
	})
	checks, err := startStoreCheck(ctx, store, engine, metrics, log, cfg.StrictStore) // storecheck.go
	if err != nil {
		return err
	}
	reload := &reloader{load: load, engine: engine, metrics: metrics, log: log, running: cfg}
	var reloadRoute func() (wire.ReloadResult, error)
	if load != nil {
		reloadRoute = func() (wire.ReloadResult, error) { return reload.reload("POST /v1/admin/reload") }
	}
	handler, err := api.New(api.Config{Engine: engine, Store: store, Metrics: metrics, Logger: log,
		StoreHealth: checks.health(watch.health), StoreWarnings: checks.warnings, Verifier: verifier, Reload: reloadRoute,
		Tracer: tracing.tracerProvider(), Webhooks: hooksAdmin, Challenger: chal.c})
	if err != nil {
		return err
	}
	pxy, err := startProxy(ctx, cfg, engine, secret, chal.c, metrics.Registry(), log) // proxy.go: nil without a proxy section
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer pxy.stop()
	reload.proxy = pxy

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	scheme := "http"
	var certs *certReloader
	if cfg.TLS != nil {
		certs, err = newCertReloader(cfg.TLS.CertFile, cfg.TLS.KeyFile, func(err error) {
			log.Warn("the TLS certificate changed but does not load; serving the previous one", slog.String("error", err.Error()))
		})
		if err != nil {
			ln.Close()
			return err
		}
		ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.getCertificate})
		scheme = "https"
	}
	// SIGHUP reloads: the TLS certificate, and the configuration's policy.
	// Handled always, so that a SIGHUP (what systemctl reload and
	// configuration tools send) never ends the process with its default
	// action, which on the memory store would lose every counter.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				if err := pxy.reloadCert(); err != nil {
					log.Warn("SIGHUP: the proxy's TLS certificate does not load; serving the previous one", slog.String("error", err.Error()))
				}
				if certs != nil {
					if err := certs.reload(); err != nil {
						log.Warn("SIGHUP: the TLS certificate does not load; serving the previous one", slog.String("error", err.Error()))
					} else {
						log.Info("SIGHUP: TLS certificate reloaded")
					}
				}
				if load != nil {
					reload.reload("SIGHUP") // it logs what it did
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.Timeouts.ReadHeader,
		ReadTimeout:       cfg.Timeouts.Read,
		WriteTimeout:      cfg.Timeouts.Write,
		IdleTimeout:       cfg.Timeouts.Idle,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          api.NewErrorLog(log.Handler(), slog.LevelWarn),
		// OPTIONS * goes to the router (a 404 problem), not net/http's bare 200.
		DisableGeneralOptionsHandler: true,
	}
	log.Info("listening",
		slog.String("addr", ln.Addr().String()),
		slog.String("scheme", scheme),
		slog.String("version", build.Version),
		slog.String("revision", build.Revision),
		slog.Bool("modified", build.Modified),
		slog.String("store", storeName),
		slog.Any("flows", cfg.Policy.FlowNames()))
	if ready != nil {
		ready(ln.Addr())
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}

	log.Info("shutting down: finishing in-flight requests", slog.String("timeout", cfg.Timeouts.Shutdown.String()))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Timeouts.Shutdown)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: in-flight requests did not finish within %v: %w", cfg.Timeouts.Shutdown, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("stopped", slog.String("drained_in", time.Since(start).Round(time.Millisecond).String()))
	return nil
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
	store, err := redisstore.New(redisstore.Config{Client: client, Timeout: r.Timeout, SharedRoundTrips: !r.DisableSharedRoundTrips})
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
