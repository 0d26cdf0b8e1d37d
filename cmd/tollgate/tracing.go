package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
)

// tracesShutdown bounds the export of the spans still queued at exit.
const tracesShutdown = 5 * time.Second

// tracing is the OpenTelemetry trace pipeline: spans batched and exported
// over OTLP/HTTP. A nil *tracing is tracing off, and its methods then give
// the API and the engine nothing to call.
type tracing struct {
	provider *sdktrace.TracerProvider
}

// startTracing starts tracing when the standard OTEL_* variables ask for
// it, and returns nil (off: no provider, no middleware, no hook) when they
// do not. It is on when OTEL_TRACES_EXPORTER is otlp, or when it is unset
// and OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turns it off.
// The exporter reads the rest of OTEL_EXPORTER_OTLP_* (headers, timeout,
// certificates, compression), the provider OTEL_TRACES_SAMPLER(_ARG) and
// OTEL_BSP_*, the resource OTEL_SERVICE_NAME (default "tollgate") and
// OTEL_RESOURCE_ATTRIBUTES. A value tollgate cannot honour (another
// exporter, the grpc protocol, an unknown sampler) is an error at start,
// not traces silently lost.
func startTracing(ctx context.Context, getenv func(string) string, version string, log *slog.Logger) (*tracing, error) {
	on, err := tracesWanted(getenv)
	if !on || err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "tollgate"), attribute.String("service.version", version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("traces: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("traces could not be exported", slog.String("error", err.Error()))
	}))
	t := &tracing{provider: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}
	sampler := getenv("OTEL_TRACES_SAMPLER")
	if sampler == "" {
		sampler = "parentbased_always_on"
	}
	log.Info("exporting traces over OTLP/HTTP", slog.String("endpoint", tracesEndpoint(getenv)), slog.String("sampler", sampler))
	return t, nil
}

// tracesWanted reads whether tracing is asked for, and refuses settings
// tollgate would not honour.
func tracesWanted(lookup func(string) string) (bool, error) {
	getenv := func(k string) string { return strings.TrimSpace(lookup(k)) }
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	on := false
	switch exp := getenv("OTEL_TRACES_EXPORTER"); exp {
	case "none":
		return false, nil
	case "otlp":
		on = true
	case "":
		on = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: tollgate exports traces over OTLP/HTTP only (otlp, or none)", exp)
	}
	if !on {
		return false, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(k); p != "" && p != "http/protobuf" && p != "http/json" {
			return false, fmt.Errorf("%s=%q: tollgate exports traces over OTLP/HTTP only (http/protobuf or http/json)", k, p)
		}
	}
	ratio := false
	switch s := strings.ToLower(getenv("OTEL_TRACES_SAMPLER")); s {
	case "", "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
	case "traceidratio", "parentbased_traceidratio":
		ratio = true
	default:
		return false, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: not a sampler tollgate knows (always_on, always_off, traceidratio and their parentbased_ forms)", s)
	}
	if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); ratio && arg != "" {
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			return false, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: a ratio from 0 to 1", arg)
		}
	}
	return true, nil
}

// tracesEndpoint is where spans go, for the start-up line, without any
// user name or password the URL holds.
func tracesEndpoint(getenv func(string) string) string {
	if e := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); e != "" {
		return redactURL(e)
	}
	if e := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		return redactURL(strings.TrimSuffix(e, "/") + "/v1/traces")
	}
	return "https://localhost:4318/v1/traces"
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// tracerProvider is the API's Config.Tracer: nil when tracing is off.
func (t *tracing) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// engineTrace is the engine's Config.Trace: the zero Trace when off.
func (t *tracing) engineTrace() authguard.Trace { return api.EngineTrace(t.tracerProvider()) }

// shutdown exports the spans still queued, within tracesShutdown, and
// stops the exporter.
func (t *tracing) shutdown(log *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracesShutdown)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		log.Warn("the last traces could not be exported", slog.String("error", err.Error()))
	}
}
