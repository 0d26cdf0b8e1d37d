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

// server is the running service, in the shape of the Main type of Ben
// Johnson's WTF Dial (cmd/wtfd): Open builds and starts its pieces in
// order and, when one fails, closes those it opened; Run serves until its
// context ends; Close stops the pieces in reverse order. Each piece is a
// small type or function with its own open and close: the auth verifier,
// the stores, tracing (tracing.go), the decision log, webhooks
// (webhooks.go), the challenge service (challenge.go), the engine, the
// store checks (storecheck.go), the reloader (reload.go), the proxy
// (proxy.go), the API listener and SIGHUP.
//
// A piece that a reload hands the next configuration implements
// reloadable and is listed by reloadables; one that SIGHUP alone reloads
// (a certificate) is called by onHangup.
type server struct {
	cfg  *config.Config
	log  *slog.Logger
	load func() (*config.Config, error) // re-reads the configuration for a reload; nil: none

	// ctx is the pieces' lifetime: the JWKS refresh, the entries refresh,
	// the store checks, the proxy and SIGHUP run until Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	build     buildInfo
	verifier  *auth.Verifier // nil without auth
	secret    []byte
	store     authguard.Store
	storeName string
	fallback  *memstore.Store
	metrics   *api.Metrics
	tracing   *tracing // nil: off
	watch     *storeWatch
	dlog      *decisionLog // nil without a decision log
	hooks     *webhooks    // nil without webhooks
	chal      *challenger
	engine    *authguard.Engine
	checks    *storeCheck // nil on the memory store
	proxy     *proxyServer
	breached  *breachedRanges
	reload    *reloader
	api       *apiServer
	hup       *hangup
}

// newServer returns a server for cfg that logs to logOut as JSON; load,
// when set, re-reads the configuration for a reload (SIGHUP, POST
// /v1/admin/reload); nil leaves the policy as it started.
func newServer(cfg *config.Config, logOut io.Writer, load func() (*config.Config, error)) *server {
	return &server{
		cfg:  cfg,
		log:  slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel})),
		load: load,
	}
}

// Open builds the pieces in order and starts them; the API's listener is
// open when it returns, so that a port taken is a start-up error. ctx
// bounds the start-up's calls (Redis, the entries); the pieces run until
// Close. On an error, what was opened is closed again.
func (s *server) Open(ctx context.Context) (err error) {
	cfg, log := s.cfg, s.log
	if err := cfg.CheckListen(); err != nil {
		return err
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.verifier, err = openVerifier(s.ctx, cfg.Auth, log); err != nil {
		return err // auth's errors say "auth:"
	}
	if s.secret, err = serverSecret(cfg, log); err != nil {
		return err
	}
	if s.store, s.storeName, err = openStore(ctx, cfg, log); err != nil {
		return err
	}
	s.fallback = memstore.New(memstore.Config{MaxEntries: fallbackEntries, MemoryLimit: fallbackMemoryLimit})

	s.metrics = api.NewMetrics(cfg.Policy)
	s.build = readBuildInfo()
	s.metrics.AddBuildInfo(s.build.Version, s.build.Revision, s.build.Go)
	if s.tracing, err = startTracing(ctx, os.Getenv, s.build.Version, log); err != nil { // off unless OTEL_* ask for it
		return err
	}
	if mem, ok := s.store.(*memstore.Store); ok {
		s.metrics.AddMemoryStore("main", mem)
	}
	s.metrics.AddMemoryStore("fallback", s.fallback)
	s.watch = &storeWatch{log: log}
	if s.dlog, err = openDecisionLog(cfg.DecisionLog, log); err != nil {
		return err
	}
	if s.dlog != nil {
		s.metrics.AddDecisionLog(s.dlog.w.Dropped)
	}
	if s.hooks, err = startWebhooks(cfg, s.secret, s.metrics.Registry(), log); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	if s.chal, err = startChallenger(cfg, s.secret, log); err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	if s.engine, err = s.openEngine(ctx); err != nil {
		return err
	}
	if s.checks, err = startStoreCheck(s.ctx, s.store, s.engine, s.metrics, log, cfg.StrictStore); err != nil {
		return err
	}
	if s.breached, err = openBreached(cfg, s.metrics.Registry(), log); err != nil { // off without a breached section
		return err // its errors say "breached:"
	}
	handler, err := s.apiHandler()
	if err != nil {
		return err
	}
	if s.proxy, err = startProxy(s.ctx, cfg, s.engine, s.secret, s.chal.c, s.metrics.Registry(), log); err != nil { // nil without a proxy section
		return fmt.Errorf("proxy: %w", err)
	}
	if cfg.Breached != nil { // the proxy looks its routes' passwords up in the same ranges
		s.proxy.setBreached(&s.breached.live)
	}
	// Every piece a reload changes is open: the reloader can hand them the
	// next configuration.
	s.reload = &reloader{load: s.load, engine: s.engine, metrics: s.metrics, log: log, running: cfg, pieces: s.reloadables()}
	if s.api, err = listenAPI(cfg, handler, log); err != nil {
		return err
	}
	s.hup = watchHangup(s.ctx, s.onHangup)
	log.Info("listening",
		slog.String("addr", s.api.ln.Addr().String()),
		slog.String("scheme", s.api.scheme),
		slog.String("version", s.build.Version),
		slog.String("revision", s.build.Revision),
		slog.Bool("modified", s.build.Modified),
		slog.String("store", s.storeName),
		slog.Any("flows", cfg.Policy.FlowNames()))
	return nil
}

// reloadables are the pieces a reload hands the next configuration: each
// checks it before the engine's policy is swapped (any refusal changes
// nothing) and applies it after, in this order. A piece loaded at start and
// again on each reload is opened in Open before the reloader, closed in
// Close, and listed here.
func (s *server) reloadables() []reloadable {
	var out []reloadable
	if s.proxy != nil {
		out = append(out, s.proxy) // its routes
	}
	out = append(out, s.breached) // its corpus, read again
	return out
}

// Addr is the API's address; nil before Open.
func (s *server) Addr() net.Addr {
	if s.api == nil {
		return nil
	}
	return s.api.ln.Addr()
}

// Run serves the API until ctx ends (nil) or serving fails.
func (s *server) Run(ctx context.Context) error {
	return s.api.run(ctx)
}

// Close stops the pieces in reverse order: the background loops end and
// the proxy starts draining, the API finishes its in-flight requests
// within the shutdown timeout, then the proxy, the challenge service,
// webhooks, the decision log, tracing and the stores are closed. Its error
// is the API's: requests that did not finish in time.
func (s *server) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	err := s.api.close()
	s.hup.close()
	s.proxy.stop()
	s.chal.close()
	s.hooks.close()
	s.dlog.close()
	s.tracing.shutdown(s.log)
	if s.store != nil {
		s.store.Close()
	}
	if s.fallback != nil {
		s.fallback.Close()
	}
	return err
}

// onHangup is what SIGHUP reloads: the TLS certificates, and the
// configuration with every reloadable piece. It logs what it did.
func (s *server) onHangup() {
	if err := s.proxy.reloadCert(); err != nil {
		s.log.Warn("SIGHUP: the proxy's TLS certificate does not load; serving the previous one", slog.String("error", err.Error()))
	}
	s.api.reloadCert()
	if s.load != nil {
		s.reload.reload("SIGHUP") // it logs what it did
	}
}

// openVerifier builds the verifier of callers' tokens and refreshes its
// JWKS until ctx ends; nil without an auth section.
func openVerifier(ctx context.Context, ac *auth.Config, log *slog.Logger) (*auth.Verifier, error) {
	if ac == nil {
		log.Info("callers are not authenticated (no auth in the config): listening on loopback only, every call in the default tenant")
		return nil, nil
	}
	v, err := auth.New(*ac)
	if err != nil {
		return nil, err
	}
	go v.Run(ctx, func(err error) {
		log.Warn("the JWKS could not be fetched; the keys fetched before stay trusted", slog.String("error", err.Error()))
	})
	return v, nil
}

// serverSecret is the secret that identifiers are hashed and tokens
// signed with: the configured one, or, on the memory store only, a random
// one for this process.
func serverSecret(cfg *config.Config, log *slog.Logger) ([]byte, error) {
	secret := cfg.Secret
	if len(secret) == 0 && cfg.Redis != nil {
		return nil, errors.New("TOLLGATE_SECRET must be set with Redis: every instance must hash identifiers and sign tokens alike")
	}
	if len(secret) == 0 {
		log.Warn("TOLLGATE_SECRET is not set: using a random secret for this process only; " +
			"counters and device tokens will not survive a restart and cannot be shared between instances")
		return []byte(rand.Text() + rand.Text()), nil
	}
	if cfg.SecretInFile {
		log.Warn("the secret is set in the config file; prefer the TOLLGATE_SECRET environment variable, and keep the file private")
	}
	return secret, nil
}

// openEngine builds the engine on the stores, reads the administrators'
// entries once, and then refreshes them every entries_refresh until the
// server's context ends, so that one added on another instance applies
// here.
func (s *server) openEngine(ctx context.Context) (*authguard.Engine, error) {
	cfg, log := s.cfg, s.log
	observe := func(ev authguard.Event) { s.metrics.Observe(ev); s.watch.observe(ev) }
	if s.dlog != nil {
		observe = func(ev authguard.Event) { s.metrics.Observe(ev); s.watch.observe(ev); s.dlog.w.Observe(ev) }
	}
	var notifier authguard.Notifier
	if s.hooks != nil {
		notifier = webhook.Notifier{D: s.hooks.d}
	}
	// On Redis, at most as many calls run as the pool has connections per
	// node, and a call waits for one as long as a store call may take; the
	// memory store has no deadline to miss.
	// The recall is for a store that can fail or be slow: the memory store
	// does neither.
	maxInFlight, queueWait, recall := 0, time.Duration(0), int64(-1)
	if rs, ok := s.store.(*redisstore.Store); ok {
		maxInFlight, queueWait, recall = rs.PoolSize(), cfg.Redis.Timeout, authguard.DefaultRecallBytes
	}
	engine, err := authguard.New(authguard.Config{
		Policy:         cfg.Policy,
		Store:          s.store,
		Fallback:       s.fallback,
		Secret:         s.secret,
		KeyPrefix:      cfg.KeyPrefix,
		MaxInFlight:    maxInFlight,
		QueueWait:      queueWait,
		RecallBytes:    recall,
		TenantSecrets:  cfg.TenantSecrets,
		TenantPolicies: cfg.TenantPolicies,
		Tenants:        tenantNames(cfg.Auth),
		Observe:        observe,
		RecordSubjects: cfg.DecisionLog != "",
		Trace:          s.tracing.engineTrace(),
		Notifier:       notifier,
		HeldBytes:      cfg.HeldIndexBytes,
	})
	if err != nil {
		return nil, err
	}
	s.metrics.AddEngine(engine)
	ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := engine.RefreshEntries(ectx); err != nil {
		log.Warn("the allow and deny entries could not be read at start-up; retrying every entries_refresh", slog.String("error", err.Error()))
	}
	cancel()
	go engine.RunEntries(s.ctx, cfg.EntriesRefresh, func(err error) {
		log.Warn("the allow and deny entries could not be refreshed; the ones read before still apply until they expire", slog.String("error", err.Error()))
	})
	return engine, nil
}

// apiHandler is the API on the server's pieces. Its reload route calls
// the reloader, which Open builds once every piece a reload changes is
// open, before any request is served.
func (s *server) apiHandler() (http.Handler, error) {
	var reloadRoute func() (wire.ReloadResult, error)
	if s.load != nil {
		reloadRoute = func() (wire.ReloadResult, error) { return s.reload.reload("POST /v1/admin/reload") }
	}
	var hooksAdmin api.Webhooks
	if s.hooks != nil {
		hooksAdmin = s.hooks
	}
	return api.New(api.Config{Engine: s.engine, Store: s.store, Metrics: s.metrics, Logger: s.log,
		StoreHealth: s.checks.health(s.watch.health), StoreWarnings: s.checks.warnings, Verifier: s.verifier, Reload: reloadRoute,
		Tracer: s.tracing.tracerProvider(), Webhooks: hooksAdmin, Challenger: s.chal.c,
		Breached: s.breached})
}

// decisionLog is the decision log (config's decision_log): one JSON line
// per verdict, to stdout or appended to a file.
type decisionLog struct {
	w   *decisionlog.Writer
	f   *os.File // nil on stdout
	log *slog.Logger
}

// openDecisionLog opens the decision log to "stdout" or a file; nil when
// to is empty (no decision log).
func openDecisionLog(to string, log *slog.Logger) (*decisionLog, error) {
	if to == "" {
		return nil, nil
	}
	d := &decisionLog{log: log}
	out := io.Writer(os.Stdout)
	if to != "stdout" {
		f, err := os.OpenFile(to, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("decision_log: %w", err)
		}
		d.f, out = f, f
	}
	d.w = decisionlog.NewWriter(out, nil)
	log.Info("writing the decision log", slog.String("to", to))
	return d, nil
}

// close writes the lines still queued and closes the file.
func (d *decisionLog) close() {
	if d == nil {
		return
	}
	if err := d.w.Close(); err != nil {
		d.log.Error("the decision log could not be written", slog.String("error", err.Error()))
	}
	if d.f != nil {
		d.f.Close()
	}
}

// apiServer is the API's listener (TLS when configured) and its HTTP
// server.
type apiServer struct {
	srv     *http.Server
	ln      net.Listener
	certs   *certReloader // nil without TLS
	scheme  string
	timeout time.Duration // the shutdown's bound
	log     *slog.Logger

	served   chan error // Serve's end; nil until run
	serveErr error      // serving failed: nothing to drain
}

// listenAPI opens the API's listener for handler.
func listenAPI(cfg *config.Config, handler http.Handler, log *slog.Logger) (*apiServer, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	a := &apiServer{ln: ln, scheme: "http", timeout: cfg.Timeouts.Shutdown, log: log}
	if cfg.TLS != nil {
		a.certs, err = newCertReloader(cfg.TLS.CertFile, cfg.TLS.KeyFile, func(err error) {
			log.Warn("the TLS certificate changed but does not load; serving the previous one", slog.String("error", err.Error()))
		})
		if err != nil {
			ln.Close()
			return nil, err
		}
		a.ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: a.certs.getCertificate})
		a.scheme = "https"
	}
	a.srv = &http.Server{
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
	return a, nil
}

// run serves until ctx ends (nil) or serving fails.
func (a *apiServer) run(ctx context.Context) error {
	a.served = make(chan error, 1)
	go func() { a.served <- a.srv.Serve(a.ln) }()
	select {
	case err := <-a.served:
		a.serveErr = err
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
		return nil
	}
}

// reloadCert reloads the TLS certificate (SIGHUP).
func (a *apiServer) reloadCert() {
	if a == nil || a.certs == nil {
		return
	}
	if err := a.certs.reload(); err != nil {
		a.log.Warn("SIGHUP: the TLS certificate does not load; serving the previous one", slog.String("error", err.Error()))
	} else {
		a.log.Info("SIGHUP: TLS certificate reloaded")
	}
}

// close stops accepting connections and lets the requests in flight
// finish within the shutdown timeout, after run; before it, it closes the
// listener.
func (a *apiServer) close() error {
	switch {
	case a == nil:
		return nil
	case a.served == nil:
		return a.ln.Close()
	case a.serveErr != nil:
		a.srv.Close()
		return nil
	}
	a.log.Info("shutting down: finishing in-flight requests", slog.String("timeout", a.timeout.String()))
	sctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	start := time.Now()
	if err := a.srv.Shutdown(sctx); err != nil {
		a.srv.Close()
		return fmt.Errorf("shutdown: in-flight requests did not finish within %v: %w", a.timeout, err)
	}
	if err := <-a.served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	a.log.Info("stopped", slog.String("drained_in", time.Since(start).Round(time.Millisecond).String()))
	return nil
}

// hangup calls on at each SIGHUP until ctx ends. SIGHUP is handled always,
// so that it (what systemctl reload and configuration tools send) never
// ends the process with its default action, which on the memory store
// would lose every counter.
type hangup struct{ c chan os.Signal }

func watchHangup(ctx context.Context, on func()) *hangup {
	h := &hangup{c: make(chan os.Signal, 1)}
	signal.Notify(h.c, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-h.c:
				on()
			case <-ctx.Done():
				return
			}
		}
	}()
	return h
}

// close stops the handling of SIGHUP.
func (h *hangup) close() {
	if h != nil {
		signal.Stop(h.c)
	}
}
