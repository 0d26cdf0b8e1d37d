package api_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// testSecret keys every test engine.
var testSecret = []byte("tollgate-api-tests-secret-32-bytes-long")

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
// describe it, and returns the request's own validation error. The
// document's side is api/contract's apicheck (apicheck_test.go), in a
// module of its own so that the OpenAPI validator stays out of the
// service's go.mod.
func validate(tb testing.TB, req *http.Request, body string, res *response) error {
	tb.Helper()
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
	r := checkContract(tb, exchange{
		Method: req.Method, URL: req.URL.RequestURI(), Header: req.Header, Body: []byte(body),
		Status: res.status, ResponseHeader: res.header, ResponseBody: res.body,
	})
	if r.Fatal != "" {
		tb.Fatalf("%s", r.Fatal)
	}
	for _, e := range r.Errors {
		tb.Errorf("%s", e)
	}
	if r.RequestError != "" {
		return errors.New(r.RequestError)
	}
	return nil
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
