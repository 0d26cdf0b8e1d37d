package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-auth/tollgate"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/challenge"
)

// Pinger is what /readyz asks: the store. authguard.Store satisfies it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config configures the API.
type Config struct {
	// Engine decides verdicts and answers the administrators' calls: an
	// *authguard.Engine, or a test's wrapper around one. It is required.
	Engine Engine
	// Store is pinged by /readyz. The default is nil: always ready.
	Store Pinger
	// Metrics records HTTP metrics and is served at /metrics; the engine's
	// Observe hook should be its Observe method. The default is
	// NewMetrics(Engine.Policy()), which then sees no engine events.
	Metrics *Metrics
	// Logger receives one JSON-friendly line per request (and panics). It
	// never receives an account, IP, token or fingerprint. Metrics that have
	// no logger yet write theirs to it: at most one line a minute per flow
	// about reports without a valid attempt token. The default discards
	// everything.
	Logger *slog.Logger
	// OpenAPI is served at /openapi.yaml. The default is tollgate.OpenAPI.
	OpenAPI []byte
	// ReadyTimeout bounds the store ping of /readyz. The default is 1s.
	ReadyTimeout time.Duration
	// StoreHealth, when set, is asked by /readyz once the store has
	// answered its ping: an error means the store answers but cannot serve,
	// and /readyz answers 503. An error wrapping authguard.ErrStoreFull (a
	// Redis at maxmemory, which still answers PING) is answered with the
	// store-full problem type, one wrapping authguard.ErrSecretMismatch with
	// the secret-mismatch type, one wrapping authguard.ErrStoreEvicts with
	// the store-evicts type, one wrapping authguard.ErrStoreUnpersisted
	// with the store-unpersisted type and one wrapping
	// authguard.ErrStoreUnauthenticated with the store-unauthenticated
	// type. The default is nil: a store that answers a ping is ready.
	StoreHealth func() error
	// StoreWarnings, when set, is asked by /readyz when it answers 200:
	// what it returns is the answer's warnings (say, a Redis whose
	// maxmemory-policy may evict keys, that keeps no persistence, or that
	// answers without a password), written by tollgate and holding no
	// secret, address or identifier. The default is nil: no warnings.
	StoreWarnings func() []string
	// Verifier, when set, requires every /v1 call to carry a bearer token
	// it accepts, with the verdicts scope; the token's tenant is the
	// call's. The default is nil: no authentication, every call in the
	// default tenant (the server then listens on loopback only).
	Verifier *auth.Verifier
	// Reload, when set, serves POST /v1/admin/reload: it re-reads the
	// configuration and swaps the running policy, or returns an error and
	// keeps it (a *ConfigError is the file's fault and is answered 409 with
	// its reason, which names the line). The default is nil: the route
	// answers 409, there being no configuration to re-read.
	Reload func() (wire.ReloadResult, error)
	// Tracer, when set, gives every request a server span (see traced),
	// a child of the caller's trace when it sends a W3C traceparent
	// header; pass EngineTrace of the same provider as the engine's
	// authguard.Config.Trace for the store's and admission's child spans
	// and the span's tollgate.source. The default is nil: no span, and no
	// tracing middleware in the chain.
	Tracer trace.TracerProvider
	// Webhooks, when set, serves the dead-letter routes of the server's
	// event delivery: GET /v1/admin/webhooks/dead-letters and POST
	// /v1/admin/webhooks/replay. The default is nil: both answer 404
	// not-found.
	Webhooks Webhooks
	// Challenger, when set, serves POST /v1/challenge and POST
	// /v1/challenge/verify (challenge.go), with the verdicts scope and in
	// the caller's tenant. The default is nil: both answer 404 not-found.
	Challenger *challenge.Challenger
	// Breached, when set, serves GET /v1/breached/{prefix} (breached.go),
	// with the verdicts scope. The default is nil: it answers 404
	// breached-off.
	Breached Breached
}

// API is tollgate's HTTP handler.
type API struct {
	verdicts Verdicts
	admin    Admin
	store    Pinger
	metrics  *Metrics
	log      *slog.Logger
	openapi  []byte
	ready    time.Duration
	health   func() error
	warnings func() []string
	verifier *auth.Verifier
	reload   func() (wire.ReloadResult, error)
	webhooks Webhooks
	tracer   trace.Tracer // nil without Config.Tracer
	mux      *chi.Mux
	shed     shedLog

	// challenger issues and verifies the plug-ins' challenges; nil without
	// Config.Challenger.
	challenger *challenge.Challenger
	// breached answers breached-password ranges; nil without
	// Config.Breached.
	breached Breached
}

// New returns the API, ready to serve.
func New(cfg Config) (*API, error) {
	if cfg.Engine == nil {
		return nil, errors.New("api: an engine is required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(cfg.Engine.Policy())
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Metrics.useLogger(cfg.Logger)
	if cfg.OpenAPI == nil {
		cfg.OpenAPI = tollgate.OpenAPI
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = time.Second
	}
	a := &API{
		verdicts: cfg.Engine,
		admin:    cfg.Engine,
		store:    cfg.Store,
		metrics:  cfg.Metrics,
		log:      cfg.Logger,
		openapi:  cfg.OpenAPI,
		ready:    cfg.ReadyTimeout,
		health:   cfg.StoreHealth,
		warnings: cfg.StoreWarnings,
		verifier: cfg.Verifier,
		reload:   cfg.Reload,
		webhooks: cfg.Webhooks,
	}
	a.challenger = cfg.Challenger
	a.breached = cfg.Breached
	if cfg.Tracer != nil {
		a.tracer = cfg.Tracer.Tracer(TracerName)
	}
	a.mux = a.routes()
	return a, nil
}

// ServeHTTP serves one request. It gives the request one context carrying
// both chi's routing context and the request's state (requestContext), so
// that neither chi nor instrument copies the request to add its own: chi
// uses a routing context it finds, and instrument the state. A request that
// already has a routing context (the API mounted in another chi router) is
// left to chi as it is.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parent := r.Context()
	if parent.Value(chi.RouteCtxKey) != nil {
		a.mux.ServeHTTP(w, r)
		return
	}
	rctx := routeContexts.Get().(*chi.Context)
	rctx.Reset()
	rctx.Routes = a.mux
	a.mux.ServeHTTP(w, r.WithContext(&requestContext{Context: parent, route: rctx}))
	routeContexts.Put(rctx)
}

// routeContexts are chi's routing contexts, reused as chi's Mux reuses its
// own.
var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// requestContext is a request's context below ServeHTTP: its parent, with
// chi's routing context and the request's state as values. One allocation
// where chi's and instrument's context.WithValue and r.WithContext made
// five, on every request.
type requestContext struct {
	context.Context
	route *chi.Context
	state requestState
}

// Value returns the routing context, the request state, or the parent's
// value for key.
func (c *requestContext) Value(key any) any {
	switch key {
	case chi.RouteCtxKey:
		return c.route
	case stateKey:
		return &c.state
	}
	return c.Context.Value(key)
}

// Router returns the chi router, for tests that walk its routes.
func (a *API) Router() chi.Routes { return a.mux }

func (a *API) routes() *chi.Mux {
	r := chi.NewRouter()
	// GetHead serves HEAD on a GET route with its GET handler; net/http
	// sends the headers and drops the body.
	r.Use(a.instrument)
	if a.tracer != nil {
		r.Use(a.traced)
	}
	r.Use(a.recoverer, middleware.GetHead)
	r.NotFound(a.notFound)
	r.MethodNotAllowed(a.methodNotAllowed)

	r.Group(func(r chi.Router) {
		r.Use(a.authenticate(auth.ScopeVerdicts))
		r.Post("/v1/check", a.check)
		r.Post("/v1/report", a.report)
		r.Post("/v1/otp/send", a.send)
		r.Post("/v1/challenge", a.issueChallenge)
		r.Post("/v1/challenge/verify", a.verifyChallenge)
		r.Get("/v1/breached/{prefix}", a.breachedRange)
	})
	r.Group(func(r chi.Router) {
		r.Use(a.authenticate(auth.ScopeAdminRead))
		r.Post("/v1/admin/explain", a.explain)
		r.Get("/v1/admin/entries", a.entries)
		r.Get("/v1/admin/held", a.held)
		r.Get("/v1/admin/webhooks/dead-letters", a.deadLetters)
	})
	r.Group(func(r chi.Router) {
		r.Use(a.authenticate(auth.ScopeAdminWrite))
		r.Post("/v1/admin/reset", a.reset)
		r.Post("/v1/admin/reset-held", a.resetHeld)
		r.Post("/v1/admin/allow", a.allow)
		r.Post("/v1/admin/deny", a.deny)
		r.Post("/v1/admin/remove", a.remove)
		r.Post("/v1/admin/reload", a.reloadConfig)
		r.Post("/v1/admin/webhooks/replay", a.replayWebhook)
	})
	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.readyz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{
		ErrorLog:          NewErrorLog(a.log.Handler(), slog.LevelError),
		EnableOpenMetrics: true,
	}))
	r.Get("/openapi.yaml", a.openAPI)
	r.Get(solverPath, a.solver)
	return r
}

// notFound answers 404.
func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	a.writeError(w, r, newProblem(kindNotFound, "", "there is no such route; see /openapi.yaml"))
}

// methodNotAllowed answers 405 with the Allow header chi's default handler
// would set (a custom handler does not get the list, so it asks the router),
// HEAD included wherever GET is, as middleware.GetHead serves it. chi calls
// it for any method it does not know (FOO, PROPFIND), whatever the path: a
// path no method matches is answered 404, as for the methods chi knows.
func (a *API) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if a.mux.Match(chi.NewRouteContext(), m, r.URL.Path) {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) == 0 {
		a.notFound(w, r)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	a.writeError(w, r, newProblem(kindMethodNotAllowed, "", "this route does not accept the method; see the Allow header"))
}

// check serves POST /v1/check.
func (a *API) check(w http.ResponseWriter, r *http.Request) {
	var body checkBody
	if err := decode(w, r, checkFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	req := checkRequest(&body)
	req.Tenant = tenantOf(r.Context())
	v, err := a.verdicts.Check(r.Context(), req)
	if err != nil {
		a.engineError(w, r, "check", err)
		return
	}
	a.writeVerdict(w, r, req.Flow, v)
}

// report serves POST /v1/report.
func (a *API) report(w http.ResponseWriter, r *http.Request) {
	var body reportBody
	if err := decode(w, r, reportFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	req, err := reportRequest(&body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	req.Tenant = tenantOf(r.Context())
	v, err := a.verdicts.Report(r.Context(), req)
	if err != nil {
		a.engineError(w, r, "report", err)
		return
	}
	a.writeVerdict(w, r, req.Flow, v)
}

// send serves POST /v1/otp/send.
func (a *API) send(w http.ResponseWriter, r *http.Request) {
	var body sendBody
	if err := decode(w, r, sendFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	req := sendRequest(&body)
	req.Tenant = tenantOf(r.Context())
	v, err := a.verdicts.Send(r.Context(), req)
	if err != nil {
		a.engineError(w, r, "send", err)
		return
	}
	if req.Flow == "" {
		req.Flow = authguard.DefaultSendFlow
	}
	a.writeVerdict(w, r, req.Flow, v)
}

// engineError answers an engine error: invalid input is the caller's 400,
// anything else is a counted 500.
func (a *API) engineError(w http.ResponseWriter, r *http.Request, call string, err error) {
	if !errors.Is(err, authguard.ErrInvalidInput) {
		a.metrics.engineError(call)
	}
	a.writeError(w, r, err)
}

var verdictPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeVerdict writes the uniform verdict JSON. flow has been accepted by
// the engine, so it is a configured name and safe to log.
func (a *API) writeVerdict(w http.ResponseWriter, r *http.Request, flow string, v authguard.Verdict) {
	if st := stateOf(r.Context()); st != nil {
		st.flow, st.action, st.reasons = flow, v.Action.String(), v.Reasons
	}
	if len(v.Reasons) == 1 && v.Reasons[0] == authguard.ReasonOverloaded {
		a.noteShed(r) // a shed check or send: one line a second says so
	}
	bp := verdictPool.Get().(*[]byte)
	b := append(appendVerdict((*bp)[:0], v), '\n')
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	*bp = b
	verdictPool.Put(bp)
}

var (
	statusOK    = []byte(`{"status":"ok"}` + "\n")
	statusReady = []byte(`{"status":"ready"}` + "\n")
)

// healthz answers 200 while the process serves HTTP.
func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(statusOK)
}

// readyz answers 200 when the store answers a ping in time and
// StoreHealth reports nothing, else 503.
func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	if a.store != nil {
		ctx, cancel := context.WithTimeout(r.Context(), a.ready)
		err := a.store.Ping(ctx)
		cancel()
		if err != nil {
			if st := stateOf(r.Context()); st != nil {
				st.err = err
			}
			a.writeError(w, r, newProblem(kindStoreUnavailable, "", "the store does not answer"))
			return
		}
	}
	if a.health != nil {
		if err := a.health(); err != nil {
			if st := stateOf(r.Context()); st != nil {
				st.err = err
			}
			p := newProblem(kindStoreUnavailable, "", "the store answers a ping but fails calls")
			switch {
			case errors.Is(err, authguard.ErrSecretMismatch):
				p = newProblem(kindSecretMismatch, "", "the store holds another secret's check value: "+
					"an instance with another TOLLGATE_SECRET (or tenant secret) shares it and counts apart from this one")
			case errors.Is(err, authguard.ErrStoreFull):
				p = newProblem(kindStoreFull, "", "the store answers but is out of memory and refuses writes")
			case errors.Is(err, authguard.ErrStoreEvicts):
				p = newProblem(kindStoreEvicts, "", "the store may evict keys when full (a Redis maxmemory-policy other than noeviction) and -strict-store is set")
			case errors.Is(err, authguard.ErrStoreUnpersisted):
				p = newProblem(kindStoreUnpersisted, "", "the store keeps no persistence (a Redis without an append-only file or snapshots), so a restart resets every counter, and -strict-store is set")
			case errors.Is(err, authguard.ErrStoreUnauthenticated):
				p = newProblem(kindStoreOpen, "", "the store answers without a password on an address that is not loopback, and -strict-store is set")
			}
			a.writeError(w, r, p)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if a.warnings != nil {
		if warnings := a.warnings(); len(warnings) > 0 {
			_ = json.NewEncoder(w).Encode(struct {
				Status   string   `json:"status"`
				Warnings []string `json:"warnings"`
			}{"ready", warnings})
			return
		}
	}
	_, _ = w.Write(statusReady)
}

// openAPI serves the OpenAPI document.
func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(a.openapi)
}
