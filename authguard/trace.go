package authguard

import "context"

// Trace is what the engine tells a tracer about a call, always with the
// call's context, where a tracer keeps its span: authguard imports no
// tracing library (api.EngineTrace fills it with OpenTelemetry). Nothing it
// is told identifies anyone: span names are the constants below, an error
// is the engine's or the store's, and an Event holds no identifier. Either
// func may be nil, and the zero Trace calls nothing.
type Trace struct {
	// Span, when set, is called as work that can take time begins: the
	// store's round trip (SpanStore), the fallback's (SpanFallback) and a
	// wait for a call slot (SpanAdmission, only when a call has to wait).
	// The engine calls the end it returns once, when the work is over,
	// with its error (nil when it succeeded). It must not block.
	Span func(ctx context.Context, name string) (end func(err error))
	// Decided, when set, is called once a Check, Report or Send is
	// decided, with the Event that Config.Observe is given. It must not
	// block.
	Decided func(ctx context.Context, ev Event)
}

// The names Trace.Span is called with.
const (
	SpanStore     = "tollgate.store"
	SpanFallback  = "tollgate.fallback"
	SpanAdmission = "tollgate.admission"
)

// span starts a traced piece of work; the end it returns is never nil.
func (e *Engine) span(ctx context.Context, name string) (end func(error)) {
	if e.trace.Span == nil {
		return noEnd
	}
	if end = e.trace.Span(ctx, name); end == nil {
		return noEnd
	}
	return end
}

func noEnd(error) {}

// decided tells Observe, and the tracer, what a call decided.
func (e *Engine) decided(ctx context.Context, ev Event) {
	e.observe(ev)
	if e.trace.Decided != nil {
		e.trace.Decided(ctx, ev)
	}
}
