package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-auth/tollgate/authguard"
)

// TracerName is the instrumentation scope of the spans this package starts.
const TracerName = "github.com/tollgate-auth/tollgate/api"

// traceContext reads the caller's W3C traceparent (and tracestate).
var traceContext = propagation.TraceContext{}

// The span attributes beyond OpenTelemetry's HTTP semantic conventions.
const (
	attrFlow    = attribute.Key("tollgate.flow")
	attrAction  = attribute.Key("tollgate.action")
	attrReasons = attribute.Key("tollgate.reasons")
	attrSource  = attribute.Key("tollgate.source")
	attrProblem = attribute.Key("tollgate.problem.type")
)

// traced starts a server span per request, a child of the caller's trace
// when it sends a traceparent header, named after the method and route
// ("POST /v1/check") once routing has found it. The span holds the method,
// the route, the status, and for a verdict the flow, action, reasons and
// where the state came from (Source); for a problem its type. It never
// holds an account, address, token, fingerprint or destination, nor
// anything else the caller wrote (no path, query, header or request id):
// those are personal data, and a trace backend is not where they belong.
// It runs after instrument, whose response writer reports the status, and
// is in the chain only when Config.Tracer is set.
func (a *API) traced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		method := spanMethod(r.Method)
		ctx, span := a.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
		r = r.WithContext(ctx)
		defer func() {
			if span.IsRecording() {
				endServerSpan(span, w, r, method)
			}
			span.End()
		}()
		next.ServeHTTP(w, r)
	})
}

// endServerSpan names span after the route and sets its attributes.
func endServerSpan(span trace.Span, w http.ResponseWriter, r *http.Request, method string) {
	status := http.StatusOK
	if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
		status = ww.Status()
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String("http.request.method", method), attribute.Int("http.response.status_code", status))
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route := rc.RoutePattern()
		attrs = append(attrs, attribute.String("http.route", route))
		if method != "_OTHER" {
			span.SetName(method + " " + route)
		}
	}
	if st := stateOf(r.Context()); st != nil {
		if st.flow != "" {
			reasons := make([]string, len(st.reasons))
			for i, rs := range st.reasons {
				reasons[i] = rs.String()
			}
			attrs = append(attrs, attrFlow.String(st.flow), attrAction.String(st.action), attrReasons.StringSlice(reasons))
		}
		if st.problem != nil {
			attrs = append(attrs, attrProblem.String(st.problem.uri()))
		}
		if status >= 500 {
			slug := "internal"
			if st.problem != nil {
				slug = st.problem.slug
			}
			attrs = append(attrs, attribute.String("error.type", slug))
			span.SetStatus(codes.Error, slug)
		}
	}
	span.SetAttributes(attrs...)
}

// spanMethod is the method as OpenTelemetry's HTTP conventions name it:
// "_OTHER" for one this package does not know.
func spanMethod(m string) string {
	if l := methodLabel(m); l != "OTHER" {
		return l
	}
	return "_OTHER"
}

// EngineTrace returns the hooks that trace the engine's work as children
// of the API's server spans (authguard.Config.Trace): a span for the
// store's round trip, the fallback's and an admission wait, and the
// decided call's Source as the server span's tollgate.source. A span
// fails with the kind of its error only ("timeout", "unavailable",
// "overloaded"), never the error's text. Work outside a sampled request's
// span is not traced. tp nil gives the zero Trace, which calls nothing.
func EngineTrace(tp trace.TracerProvider) authguard.Trace {
	if tp == nil {
		return authguard.Trace{}
	}
	tracer := tp.Tracer(TracerName)
	return authguard.Trace{
		Span: func(ctx context.Context, name string) func(error) {
			if !trace.SpanFromContext(ctx).IsRecording() {
				return endNothing
			}
			_, span := tracer.Start(ctx, name)
			return func(err error) {
				if err != nil {
					kind := "overloaded"
					if !errors.Is(err, authguard.ErrOverloaded) {
						kind = authguard.StoreErrorKind(err)
					}
					span.SetAttributes(attribute.String("error.type", kind))
					span.SetStatus(codes.Error, kind)
				}
				span.End()
			}
		},
		Decided: func(ctx context.Context, ev authguard.Event) {
			// The server span's: the engine's spans are not put in ctx.
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.SetAttributes(attrSource.String(ev.Source.String()))
			}
		},
	}
}

func endNothing(error) {}
