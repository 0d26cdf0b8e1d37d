package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// Tracing is off unless the standard variables ask for it, and a setting
// tollgate would not honour is refused at start rather than silently
// exporting nothing.
func TestTracing_OffUnlessTheOTELVariablesAskForIt(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr string
	}{
		{"nothing set", nil, false, ""},
		{"a sampler alone", map[string]string{"OTEL_TRACES_SAMPLER": "always_on", "OTEL_SERVICE_NAME": "x"}, false, ""},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{"the otlp exporter", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"an endpoint, the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"an endpoint, exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"another exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin"`},
		{"the grpc protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTLP/HTTP only"},
		{"http/json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, true, ""},
		{"an unknown sampler", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, false, `OTEL_TRACES_SAMPLER="jaeger_remote"`},
		{"a ratio above 1", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "10"}, false, "a ratio from 0 to 1"},
		{"a ratio", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			on, err := tracesWanted(getenv)
			if on != tt.on || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("tracesWanted = %t, %v; want %t and an error with %q", on, err, tt.on, tt.wantErr)
			}
		})
	}

	off, err := startTracing(context.Background(), func(string) string { return "" }, "v0", slog.New(slog.DiscardHandler))
	if off != nil || err != nil {
		t.Fatalf("startTracing with no variable = %v, %v; want nil: off", off, err)
	}
	if tp := off.tracerProvider(); tp != nil {
		t.Errorf("tracing off, the API's tracer is %v, want nil (no middleware)", tp)
	}
	if hooks := off.engineTrace(); hooks.Span != nil || hooks.Decided != nil {
		t.Errorf("tracing off, the engine's hooks are %+v, want none", hooks)
	}
	off.shutdown(slog.New(slog.DiscardHandler)) // nothing to flush, no panic
}

// A server with an OTLP endpoint exports its spans there, under the
// caller's trace and as service "tollgate" of this build, and exports the
// spans still queued when it stops (the batch delay is an hour here), with
// no identifier anywhere in what it sends.
func TestTracing_AServerExportsItsSpansAndFlushesThemAtExit(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("the collector got %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_BSP_SCHEDULE_DELAY": "3600000",
		"OTEL_SERVICE_NAME": "", "OTEL_RESOURCE_ATTRIBUTES": "", "OTEL_TRACES_EXPORTER": "", "OTEL_SDK_DISABLED": "",
		"OTEL_TRACES_SAMPLER": "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "", "OTEL_EXPORTER_OTLP_PROTOCOL": "",
	} {
		t.Setenv(k, v)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testkit.SyncBuffer
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, testConfig(), &logs, func(a net.Addr) { addrs <- a }, nil) }()
	var addr string
	select {
	case a := <-addrs:
		addr = a.String()
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	const account, ip = "traced.person@example.com", "198.51.100.23"
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/check",
		strings.NewReader(`{"flow":"login","account":"`+account+`","ip":"`+ip+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	verdict, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("check: %d %s", res.StatusCode, verdict)
	}
	mu.Lock()
	early := len(bodies)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("%d exports before the server stopped; the test needs the batch held until exit", early)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return")
	}
	if !strings.Contains(logs.String(), `"msg":"exporting traces over OTLP/HTTP"`) {
		t.Errorf("no start-up line says traces are exported:\n%s", logs.String())
	}

	mu.Lock()
	defer mu.Unlock()
	resource := map[string]string{}
	spans := map[string]string{} // name → trace id
	for _, b := range bodies {
		for _, secret := range []string{account, ip} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("an export carries %q", secret)
			}
		}
		var export collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &export); err != nil {
			t.Fatalf("an export that is not OTLP: %v", err)
		}
		for _, rs := range export.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				resource[kv.Key] = kv.Value.GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] = hex.EncodeToString(s.TraceId)
				}
			}
		}
	}
	if resource["service.name"] != "tollgate" || resource["service.version"] != readBuildInfo().Version {
		t.Errorf("resource %v, want service.name tollgate and service.version %q", resource, readBuildInfo().Version)
	}
	for _, name := range []string{"POST /v1/check", authguard.SpanStore} {
		if got, ok := spans[name]; !ok || got != traceID {
			t.Errorf("span %q: trace %q (exported: %t), want the caller's %s; all: %v", name, got, ok, traceID, spans)
		}
	}
}
