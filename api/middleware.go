package api

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/tollgate-auth/tollgate/authguard"
)

// ctxKey is the type of this package's context keys.
type ctxKey struct{ name string }

var stateKey = &ctxKey{"request state"}

// requestState is what the handlers tell the log and metrics middleware
// about a request. It never holds an identifier, IP or token.
type requestState struct {
	id string
	// idHeader is the X-Request-Id header's value, id: a slice of it
	// costs no allocation of its own.
	idHeader [1]string
	flow     string // set only once the engine accepted the flow
	action   string
	reasons  []authguard.Reason
	problem  *kind
	err      error // an internal error, for the log only
	// authReason is why the caller was refused (auth.Error.Reason), for
	// the log; empty when it was not.
	authReason string
}

func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey).(*requestState)
	return st
}

// RequestID returns the id of the request ctx belongs to, as sent in its
// X-Request-Id response header, or "" outside a request served by this
// package.
func RequestID(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

// requestIDRE is what a caller's X-Request-Id must look like to be kept.
var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestID returns the caller's X-Request-Id when it is well-formed, or a
// fresh random one (26 characters of base32).
func requestID(r *http.Request) string {
	if v := r.Header.Values("X-Request-Id"); len(v) == 1 && requestIDRE.MatchString(v[0]) {
		return v[0]
	}
	return rand.Text()
}

// instrument gives every request an id, sets X-Request-Id and
// Cache-Control: no-store on every response, and logs and measures the
// request when it is done. It runs outside routing, so 404s and 405s get the
// same treatment.
func (a *API) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var st *requestState
		if c, ok := r.Context().(*requestContext); ok { // from ServeHTTP
			st = &c.state
		} else { // the router served by itself
			st = &requestState{}
			r = r.WithContext(context.WithValue(r.Context(), stateKey, st))
		}
		st.id = requestID(r)
		h := w.Header()
		st.idHeader[0] = st.id
		h["X-Request-Id"] = st.idHeader[:] // Set would allocate the slice
		h["Cache-Control"] = noStore
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		defer func() {
			elapsed := time.Since(start)
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			a.metrics.request(r.Method, route, status, elapsed)
			a.logRequest(r, st, route, status, elapsed)
		}()
		next.ServeHTTP(ww, r)
	})
}

// noStore and contentTypeJSON are header values the hot paths assign
// instead of calling Header.Set, which allocates a slice per call. They are
// shared: nothing in this package or net/http writes into a header's value
// slice (Set and Add replace or grow it), so no response can change them.
var (
	noStore         = []string{"no-store"}
	contentTypeJSON = []string{"application/json"}
)

func (a *API) logRequest(r *http.Request, st *requestState, route string, status int, elapsed time.Duration) {
	// A line per answered call costs a sixth of the throughput at info and
	// repeats what the verdict metrics count, so answered calls are logged
	// at debug; problems at info (errors at error).
	level := slog.LevelDebug
	switch {
	case st.problem == kindOverloaded: // one line a second says it instead (noteShed)
	case status >= 500:
		level = slog.LevelError
	case status >= 400:
		level = slog.LevelInfo
	}
	ctx := r.Context()
	if !a.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("request_id", st.id),
		slog.String("method", methodLabel(r.Method)),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("latency_ms", float64(elapsed.Microseconds())/1000),
	)
	if st.flow != "" {
		reasons := make([]string, len(st.reasons))
		for i, rs := range st.reasons {
			reasons[i] = rs.String()
		}
		attrs = append(attrs, slog.String("flow", st.flow), slog.String("action", st.action), slog.Any("reasons", reasons))
	}
	if st.problem != nil {
		attrs = append(attrs, slog.String("problem", st.problem.slug))
	}
	if st.authReason != "" {
		attrs = append(attrs, slog.String("auth", st.authReason))
	}
	if st.err != nil {
		attrs = append(attrs, slog.String("error", st.err.Error()))
	}
	a.log.LogAttrs(ctx, level, "request", attrs...)
}

// methodLabel bounds the methods that reach logs and metric labels.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodHead, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// recoverer turns a panic in a handler into a logged 500 problem, so that a
// bug answers one request badly instead of killing the connection silently.
// http.ErrAbortHandler is passed on: it is how a handler aborts on purpose.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			text := panicText(v)
			a.log.LogAttrs(r.Context(), slog.LevelError, "panic",
				slog.String("request_id", RequestID(r.Context())),
				slog.String("panic", text),
				slog.String("stack", string(debug.Stack())))
			if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
				// The response has begun; all that is left is to cut it short.
				panic(http.ErrAbortHandler)
			}
			a.writeError(w, r, errors.New("api: panic: "+text))
		}()
		next.ServeHTTP(w, r)
	})
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// shedLog counts calls shed as overloaded between two log lines.
type shedLog struct {
	last  atomic.Int64 // when the last line was written, Unix ns
	count atomic.Int64 // calls shed since
}

// noteShed counts a shed call and writes at most one warning a second while
// calls are shed, instead of an error line per call: a flood must not also
// flood the log.
func (a *API) noteShed(r *http.Request) {
	a.shed.count.Add(1)
	now, last := time.Now().UnixNano(), a.shed.last.Load()
	if now-last < int64(time.Second) || !a.shed.last.CompareAndSwap(last, now) {
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelWarn, "shedding calls: more in flight than the store's connections carry",
		slog.Int64("shed", a.shed.count.Swap(0)))
}
