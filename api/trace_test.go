package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// The caller's trace: every server span must be its child.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
	traceparent   = "00-" + callerTraceID + "-" + callerSpanID + "-01"
)

// spanAttributes are the only attribute keys a span may carry: a new one
// must be added here, by someone who made sure it identifies nobody.
var spanAttributes = []string{
	"http.request.method", "http.route", "http.response.status_code", "error.type",
	"tollgate.flow", "tollgate.action", "tollgate.reasons", "tollgate.source", "tollgate.problem.type",
}

// postTraced posts body as JSON with the caller's traceparent.
func (h *harness) postTraced(tb testing.TB, path string, body map[string]any) *response {
	tb.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	return h.do(tb, http.MethodPost, path, "application/json", string(b), "traceparent", traceparent)
}

// A trace backend is read by more people, and kept longer, than the
// service's own state: a span naming an account, address, token,
// fingerprint or destination (even hashed: a keyed hash still tells one
// person's calls from another's across traces) would leak what tollgate
// keeps out of its logs. Real check, report and send calls carrying every
// kind of identifier are traced: the server spans continue the caller's
// trace, the store's round trip is a child span, the verdict is in the
// attributes, and no span name or attribute value holds any identifier;
// spans carry no attribute outside a fixed list and no event.
func TestTraces_CarryNoIdentifier(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	h := newHarness(t, withTracer(tp))

	const (
		account, ip, fp  = "Secret.Person@example.com", "203.0.113.77", "fp-9f86d081884c7d65"
		phone, phoneE164 = "+44 7400 123456", "+447400123456"
		inbox            = "Hidden.Inbox@Example.org"
	)
	verdictOf := func(path string, body map[string]any) verdict {
		t.Helper()
		return h.postTraced(t, path, body).verdict(t)
	}
	body := testkit.With(login(account, ip), "password_fingerprint", fp)
	v1 := verdictOf("/v1/check", body)
	ok := verdictOf("/v1/report", testkit.With(body, "outcome", "success", "attempt", v1.Attempt))
	device := testkit.With(body, "device_token", ok.DeviceToken)
	v2 := verdictOf("/v1/check", device)
	verdictOf("/v1/report", testkit.With(device, "outcome", "failure", "attempt", v2.Attempt))
	verdictOf("/v1/otp/send", map[string]any{"destination": phone, "channel": "sms", "ip": ip, "account": account, "device_token": ok.DeviceToken})
	verdictOf("/v1/otp/send", map[string]any{"destination": inbox, "channel": "email", "ip": ip})
	verify := map[string]any{"flow": "otp_verify", "account": account, "ip": ip, "destination": phone, "channel": "sms"}
	v3 := verdictOf("/v1/check", verify)
	verdictOf("/v1/report", testkit.With(verify, "outcome", "success", "attempt", v3.Attempt))
	// Refused calls: the problem's type is traced, not what was refused.
	if r := h.postTraced(t, "/v1/check", map[string]any{"flow": "login", "account": account, "ip": ip, account: 1}); r.status != http.StatusBadRequest {
		t.Fatalf("a check with an unknown key: %d, want 400", r.status)
	}
	if r := h.postTraced(t, "/v1/check", login(account, "not-an-ip-"+ip)); r.status != http.StatusBadRequest {
		t.Fatalf("a check with a bad address: %d, want 400", r.status)
	}
	if v1.Attempt == "" || v2.Attempt == "" || v3.Attempt == "" || ok.DeviceToken == "" {
		t.Fatalf("the calls did not proceed: %+v %+v %+v %+v", v1, v2, v3, ok)
	}

	spans := exp.GetSpans()
	servers := map[trace.SpanID]tracetest.SpanStub{}
	var names []string
	var inOrder []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			servers[s.SpanContext.SpanID()] = s
			names = append(names, s.Name)
			inOrder = append(inOrder, s)
		}
	}
	wantNames := []string{"POST /v1/check", "POST /v1/report", "POST /v1/check", "POST /v1/report",
		"POST /v1/otp/send", "POST /v1/otp/send", "POST /v1/check", "POST /v1/report", "POST /v1/check", "POST /v1/check"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("server spans %q, want %q", names, wantNames)
	}
	stores := 0
	for _, s := range spans {
		if got := s.SpanContext.TraceID().String(); got != callerTraceID {
			t.Errorf("span %q is in trace %s, not the caller's %s", s.Name, got, callerTraceID)
		}
		switch s.SpanKind {
		case trace.SpanKindServer:
			if s.Parent.SpanID().String() != callerSpanID || !s.Parent.IsRemote() {
				t.Errorf("server span %q has parent %s (remote %t), want the caller's %s", s.Name, s.Parent.SpanID(), s.Parent.IsRemote(), callerSpanID)
			}
		default:
			if _, ok := servers[s.Parent.SpanID()]; !ok {
				t.Errorf("span %q is not a child of a server span", s.Name)
			}
			if s.Name == authguard.SpanStore {
				stores++
			}
		}
	}
	// One under each of the 8 verdicts, and a login success's second: its
	// known network is written once the success is not stepped up.
	if stores != 9 {
		t.Errorf("%d store spans, want one under each of the 8 verdicts and the success's known network", stores)
	}

	first := attrs(inOrder[0].Attributes)
	for k, want := range map[string]string{
		"http.request.method": "POST", "http.route": "/v1/check", "http.response.status_code": "200",
		"tollgate.flow": "login", "tollgate.action": "proceed", "tollgate.reasons": "[]", "tollgate.source": "store",
	} {
		if got := first[k]; got != want {
			t.Errorf("the first check's span: %s = %q, want %q (all: %v)", k, got, want, first)
		}
	}
	last := attrs(inOrder[len(inOrder)-1].Attributes)
	if last["tollgate.problem.type"] != "https://tollgate.dev/problems/invalid-field" || last["http.response.status_code"] != "400" {
		t.Errorf("a refused check's span: %v, want its problem type and 400", last)
	}

	secrets := []string{account, strings.ToLower(account), "secret.person", ip, fp, phone, phoneE164, "7400123456",
		inbox, strings.ToLower(inbox), "hidden.inbox", v1.Attempt, v2.Attempt, v3.Attempt, ok.DeviceToken}
	for _, s := range spans {
		texts := []string{s.Name, s.Status.Description}
		for _, kv := range s.Attributes {
			if !slices.Contains(spanAttributes, string(kv.Key)) {
				t.Errorf("span %q carries %s, which is not in the list of attributes known to identify nobody", s.Name, kv.Key)
			}
			texts = append(texts, kv.Value.String())
		}
		if len(s.Events) > 0 || len(s.Links) > 0 {
			t.Errorf("span %q carries events %v or links %v", s.Name, s.Events, s.Links)
		}
		for _, kv := range s.Resource.Attributes() {
			texts = append(texts, kv.Value.String())
		}
		for _, text := range texts {
			for _, secret := range secrets {
				if strings.Contains(strings.ToLower(text), strings.ToLower(secret)) {
					t.Errorf("span %q carries %q", s.Name, secret)
				}
			}
		}
	}
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// Tracing off must cost nothing: no tracing middleware in the router's
// chain, and engine hooks that are nil (the engine then only checks them).
func TestTraces_OffAddsNoMiddlewareAndNoHook(t *testing.T) {
	middlewares := func(h *harness) []string {
		var names []string
		for _, mw := range h.api.Router().(*chi.Mux).Middlewares() {
			names = append(names, runtime.FuncForPC(reflect.ValueOf(mw).Pointer()).Name())
		}
		return names
	}
	traced := func(names []string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "traced") })
	}
	if off := middlewares(newHarness(t)); traced(off) {
		t.Errorf("tracing off, the router's middleware is %q", off)
	}
	if hooks := api.EngineTrace(nil); hooks.Span != nil || hooks.Decided != nil {
		t.Errorf("EngineTrace(nil) = %+v, want the zero Trace", hooks)
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(t.Context())
	if on := middlewares(newHarness(t, withTracer(tp))); !traced(on) {
		t.Errorf("tracing on, the router's middleware %q has no tracing", on)
	}
}
