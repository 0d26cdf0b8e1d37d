package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-auth/tollgate"
	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testclock"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// testSecret keys every test engine.
var testSecret = []byte("tollgate-api-tests-secret-32-bytes-long")

// spec is openapi.yaml, loaded and validated once.
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	// kin-openapi decodes text/plain but not OpenMetrics, which /metrics
	// serves to scrapers that ask for it.
	openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
	// GET /openapi.yaml's body is YAML text (type: string); kin-openapi
	// would decode application/yaml into an object before validating it.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(tollgate.OpenAPI)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return doc, nil
})

// fallbackResponses are what openapi.yaml's x-tollgate-fallback-responses
// describes, keyed by status: the answers to a request that matches no
// operation (404 and 405). No operation lists them, so kin-openapi keeps the
// extension as plain data; they are decoded as response objects and their
// $refs resolved against the document's components, as kin does for the
// document's own responses.
var fallbackResponses = sync.OnceValues(func() (openapi3.ResponseBodies, error) {
	doc, err := spec()
	if err != nil {
		return nil, err
	}
	raw, ok := doc.Extensions["x-tollgate-fallback-responses"]
	if !ok {
		return nil, errors.New("no x-tollgate-fallback-responses")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var rs openapi3.ResponseBodies
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("x-tollgate-fallback-responses: %w", err)
	}
	// A document of the spec's components with these as its responses:
	// loading it resolves their $refs, validating it checks them.
	d := &openapi3.T{
		OpenAPI: doc.OpenAPI,
		Info:    doc.Info,
		Paths:   openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:   doc.Components.Schemas,
			Headers:   doc.Components.Headers,
			Responses: rs,
		},
	}
	if err := openapi3.NewLoader().ResolveRefsIn(d, nil); err != nil {
		return nil, fmt.Errorf("x-tollgate-fallback-responses: %w", err)
	}
	if err := d.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("x-tollgate-fallback-responses: %w", err)
	}
	return rs, nil
})

var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := spec()
	if err != nil {
		return nil, err
	}
	// Requests in tests go to httptest's example.com, not to the
	// documented server: match on paths and methods only.
	d := *doc
	d.Servers = nil
	return legacy.NewRouter(&d)
})

// harness is an API on a memory store and a manual clock, whose responses
// are all checked against openapi.yaml.
type harness struct {
	api     *api.API
	store   *memstore.Store
	clock   *testclock.Clock
	engine  *authguard.Engine
	metrics *api.Metrics
	logs    *testkit.SyncBuffer
}

// harnessConfig is what options change: the engine's config and the
// API's verifier.
type harnessConfig struct {
	engine   authguard.Config
	verifier *auth.Verifier
	reload   func() (wire.ReloadResult, error)
	tracer   trace.TracerProvider
	webhooks api.Webhooks
}

type harnessOption func(*harnessConfig)

func withPolicy(yaml string) harnessOption {
	return func(c *harnessConfig) {
		p, err := config.LoadPolicy([]byte(yaml))
		if err != nil {
			panic(err)
		}
		c.engine.Policy = p
	}
}

func withVerifier(v *auth.Verifier) harnessOption {
	return func(c *harnessConfig) { c.verifier = v }
}

func withWebhooks(w api.Webhooks) harnessOption {
	return func(c *harnessConfig) { c.webhooks = w }
}

func withReload(f func() (wire.ReloadResult, error)) harnessOption {
	return func(c *harnessConfig) { c.reload = f }
}

// withTracer traces the API and the engine under tp.
// withNotifier has the engine tell n its notices.
func withNotifier(n authguard.Notifier) harnessOption {
	return func(c *harnessConfig) { c.engine.Notifier = n }
}

func withTracer(tp trace.TracerProvider) harnessOption {
	return func(c *harnessConfig) { c.tracer, c.engine.Trace = tp, api.EngineTrace(tp) }
}

func newHarness(tb testing.TB, opts ...harnessOption) *harness {
	tb.Helper()
	clock := testclock.New(testclock.Epoch)
	h := &harness{
		store: memstore.New(memstore.Config{Now: clock.Now}),
		clock: clock,
		logs:  &testkit.SyncBuffer{},
	}
	hc := harnessConfig{engine: authguard.Config{
		Store:    h.store,
		Fallback: memstore.New(memstore.Config{MaxEntries: 1000, Now: clock.Now}),
		Secret:   testSecret,
		Now:      clock.Now,
	}}
	for _, o := range opts {
		o(&hc)
	}
	cfg := hc.engine
	if cfg.Policy == nil {
		cfg.Policy = config.DefaultPolicy()
	}
	h.metrics = api.NewMetrics(cfg.Policy)
	cfg.Observe = h.metrics.Observe
	eng, err := authguard.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h.engine = eng
	h.api, err = api.New(api.Config{
		Engine:   eng,
		Store:    h.store,
		Metrics:  h.metrics,
		Logger:   slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Verifier: hc.verifier,
		Reload:   hc.reload,
		Tracer:   hc.tracer,
		Webhooks: hc.webhooks,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// response is a served request.
type response struct {
	status int
	header http.Header
	body   []byte
	// specErr is the request's validation against openapi.yaml: nil when
	// the spec accepts the request.
	specErr error
}

func (r *response) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("response body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// verdict decodes a verdict response, failing the test unless it is 200.
func (r *response) verdict(tb testing.TB) verdict {
	tb.Helper()
	if r.status != http.StatusOK {
		tb.Fatalf("status = %d, want 200; body %s", r.status, r.body)
	}
	var v verdict
	if err := json.Unmarshal(r.body, &v); err != nil {
		tb.Fatalf("verdict %q: %v", r.body, err)
	}
	return v
}

type verdict struct {
	Action      string   `json:"action"`
	DelayMS     int64    `json:"delay_ms"`
	RetryAfter  int64    `json:"retry_after"`
	Reasons     []string `json:"reasons"`
	Attempt     string   `json:"attempt"`
	DeviceToken string   `json:"device_token"`
}

// do serves one request and checks the response against openapi.yaml: a
// response the spec does not describe fails the test.
func (h *harness) do(tb testing.TB, method, path, contentType, body string, header ...string) *response {
	tb.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	return h.serve(tb, req, body)
}

// doChunked is do with a body of unknown length, as a chunked upload has.
func (h *harness) doChunked(tb testing.TB, method, path, contentType, body string) *response {
	tb.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = -1
	req.Header.Set("Content-Type", contentType)
	return h.serve(tb, req, body)
}

func (h *harness) serve(tb testing.TB, req *http.Request, body string) *response {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.api.ServeHTTP(rec, req)
	res := &response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	res.specErr = validate(tb, req, body, res)
	return res
}

// post sends a JSON body.
func (h *harness) post(tb testing.TB, path string, body any) *response {
	tb.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	return h.do(tb, http.MethodPost, path, "application/json", string(b))
}

func (h *harness) check(tb testing.TB, body map[string]any) verdict {
	tb.Helper()
	r := h.post(tb, "/v1/check", body)
	if r.specErr != nil {
		tb.Fatalf("openapi.yaml rejects a check the server answered: %v", r.specErr)
	}
	return r.verdict(tb)
}

func (h *harness) report(tb testing.TB, body map[string]any) verdict {
	tb.Helper()
	r := h.post(tb, "/v1/report", body)
	if r.specErr != nil {
		tb.Fatalf("openapi.yaml rejects a report the server answered: %v", r.specErr)
	}
	return r.verdict(tb)
}

// validate checks res against the spec, failing tb when the spec does not
// describe it, and returns the request's own validation error.
func validate(tb testing.TB, req *http.Request, body string, res *response) error {
	tb.Helper()
	ctx := context.Background()
	router, err := specRouter()
	if err != nil {
		tb.Fatalf("openapi.yaml router: %v", err)
	}
	// Headers every response carries.
	if got := res.header.Get("Cache-Control"); got != "no-store" {
		tb.Errorf("%s %s: Cache-Control = %q, want no-store", req.Method, req.URL.Path, got)
	}
	if id := res.header.Get("X-Request-Id"); id == "" {
		tb.Errorf("%s %s: no X-Request-Id", req.Method, req.URL.Path)
	}
	if res.status >= 400 {
		if ct := res.header.Get("Content-Type"); ct != "application/problem+json" {
			tb.Errorf("%s %s: status %d with Content-Type %q, want application/problem+json", req.Method, req.URL.Path, res.status, ct)
		}
	}

	vreq := req.Clone(ctx)
	vreq.Body = io.NopCloser(strings.NewReader(body))
	route, params, ferr := router.FindRoute(vreq)
	if res.status == http.StatusNotFound || res.status == http.StatusMethodNotAllowed {
		// Not a documented operation (kin's router is laxer than chi about
		// trailing slashes): a 404 or 405 problem, as openapi.yaml's
		// x-tollgate-fallback-responses describes.
		fallback, err := fallbackResponses()
		if err != nil {
			tb.Fatalf("openapi.yaml: %v", err)
		}
		status := strconv.Itoa(res.status)
		want := fallback[status]
		if want == nil || want.Value == nil {
			tb.Fatalf("openapi.yaml's x-tollgate-fallback-responses has no %s", status)
		}
		for name, h := range want.Value.Headers {
			got := res.header.Values(name)
			if len(got) == 0 {
				if h.Value.Required {
					tb.Errorf("%d without %s", res.status, name)
				}
				continue
			}
			if err := h.Value.Schema.Value.VisitJSON(got[0], openapi3.EnableJSONSchema2020()); err != nil {
				tb.Errorf("%d header %s: %q does not match openapi.yaml's x-tollgate-fallback-responses %s: %v", res.status, name, got[0], status, err)
			}
		}
		mt := want.Value.Content.Get("application/problem+json")
		if mt == nil {
			tb.Fatalf("openapi.yaml's x-tollgate-fallback-responses %s has no application/problem+json", status)
		}
		var v any
		if err := json.Unmarshal(res.body, &v); err != nil {
			tb.Fatalf("%d body %q: %v", res.status, res.body, err)
		}
		if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			tb.Errorf("%d body %s does not match openapi.yaml's x-tollgate-fallback-responses %s: %v", res.status, res.body, status, err)
		}
		if ferr == nil {
			ferr = errors.New("no such operation")
		}
		return ferr
	}
	if ferr != nil {
		tb.Fatalf("%s %s is not in openapi.yaml (%v) but answered %d", req.Method, req.URL.Path, ferr, res.status)
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    vreq,
		PathParams: params,
		Route:      route,
		// The server checks bearer tokens itself (TestAuth_*); the spec's
		// security requirement is documentation here.
		Options: &openapi3filter.Options{MultiError: false, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 res.status,
		Header:                 res.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(res.body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		tb.Errorf("%s %s → %d %s\ndoes not match openapi.yaml: %v", req.Method, req.URL.Path, res.status, truncate(res.body), err)
	}
	return reqErr
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// keys returns the store's live keys, sorted.
func (h *harness) keys() []string {
	k := h.store.Keys()
	slices.Sort(k)
	return k
}
