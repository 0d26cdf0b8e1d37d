package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// fallbackEntries caps the local store that fail-open flows answer from
// while the main store fails: a bounded safety net per instance.
const fallbackEntries = 100_000

// serve runs the service until ctx is cancelled, then stops accepting
// connections, lets in-flight requests finish (within
// cfg.Timeouts.Shutdown) and closes the store. ready, when set, is called
// with the address once the listener is open. Logs go to logOut as JSON.
func serve(ctx context.Context, cfg *config.Config, logOut io.Writer, ready func(net.Addr)) error {
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err := config.CheckLoopback(cfg.Listen); err != nil {
		return err
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
	fallback := memstore.New(memstore.Config{MaxEntries: fallbackEntries})
	defer fallback.Close()
	defer store.Close()

	metrics := api.NewMetrics(cfg.Policy)
	watch := &storeWatch{log: log}
	engine, err := authguard.New(authguard.Config{
		Policy:    cfg.Policy,
		Store:     store,
		Fallback:  fallback,
		Secret:    secret,
		KeyPrefix: cfg.KeyPrefix,
		Observe:   func(ev authguard.Event) { metrics.Observe(ev); watch.observe(ev) },
	})
	if err != nil {
		return err
	}
	handler, err := api.New(api.Config{Engine: engine, Store: store, Metrics: metrics, Logger: log})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.Timeouts.ReadHeader,
		ReadTimeout:       cfg.Timeouts.Read,
		WriteTimeout:      cfg.Timeouts.Write,
		IdleTimeout:       cfg.Timeouts.Idle,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening",
		slog.String("addr", ln.Addr().String()),
		slog.String("version", versionString()),
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
		return memstore.New(memstore.Config{}), "memory", nil
	}
	r := cfg.Redis
	redisstore.SetLogger(log)
	client, err := redisstore.NewClient(*r)
	if err != nil {
		return nil, "", err
	}
	store, err := redisstore.New(redisstore.Config{Client: client, Timeout: r.Timeout})
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

// storeWatch logs when the store starts failing and when it answers again:
// one line per change, not one per call (the metrics count the calls).
type storeWatch struct {
	log     *slog.Logger
	failing atomic.Bool
}

func (w *storeWatch) observe(ev authguard.Event) {
	switch {
	case ev.StoreErr != nil:
		if !w.failing.Swap(true) {
			w.log.Warn("store failing: flows answer by their fail mode (open: from this instance's local fallback store; closed: delay)",
				slog.String("kind", authguard.StoreErrorKind(ev.StoreErr)),
				slog.String("error", ev.StoreErr.Error()))
		}
	case ev.Source == authguard.SourceStore:
		if w.failing.Swap(false) {
			w.log.Info("store answering again")
		}
	}
}
