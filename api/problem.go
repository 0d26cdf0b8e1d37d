package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strconv"

	"github.com/tollgate-auth/tollgate/authguard"
)

// problemBase prefixes every problem type URI.
const problemBase = "https://tollgate.dev/problems/"

// kind is one stable kind of problem: its type URI slug, title and status.
type kind struct {
	slug   string
	title  string
	status int
}

// The kinds of problem. Their URIs, titles and statuses are part of the API
// (openapi.yaml lists them): never change one, only add.
var (
	kindMalformedJSON    = &kind{"malformed-json", "Malformed JSON", http.StatusBadRequest}
	kindMissingField     = &kind{"missing-field", "Missing field", http.StatusBadRequest}
	kindInvalidField     = &kind{"invalid-field", "Invalid field", http.StatusBadRequest}
	kindUnknownField     = &kind{"unknown-field", "Unknown field", http.StatusBadRequest}
	kindDuplicateField   = &kind{"duplicate-field", "Duplicate field", http.StatusBadRequest}
	kindNotFound         = &kind{"not-found", "Not found", http.StatusNotFound}
	kindMethodNotAllowed = &kind{"method-not-allowed", "Method not allowed", http.StatusMethodNotAllowed}
	kindBodyTooLarge     = &kind{"body-too-large", "Body too large", http.StatusRequestEntityTooLarge}
	kindUnsupportedType  = &kind{"unsupported-media-type", "Unsupported media type", http.StatusUnsupportedMediaType}
	kindInternal         = &kind{"internal", "Internal error", http.StatusInternalServerError}
	kindStoreUnavailable = &kind{"store-unavailable", "Store unavailable", http.StatusServiceUnavailable}
	kindStoreFull        = &kind{"store-full", "Store full", http.StatusServiceUnavailable}
	kindOverloaded       = &kind{"overloaded", "Overloaded", http.StatusServiceUnavailable}
	kindUnauthenticated  = &kind{"unauthenticated", "Unauthenticated", http.StatusUnauthorized}
	kindForbidden        = &kind{"forbidden", "Forbidden", http.StatusForbidden}
	kindTooManyEntries   = &kind{"too-many-entries", "Too many entries", http.StatusConflict}
	kindConfigInvalid    = &kind{"config-invalid", "Configuration invalid", http.StatusConflict}
	kindSecretMismatch   = &kind{"secret-mismatch", "Secret mismatch", http.StatusServiceUnavailable}
	kindStoreEvicts      = &kind{"store-evicts", "Store evicts", http.StatusServiceUnavailable}
	kindStoreUnpersisted = &kind{"store-unpersisted", "Store unpersisted", http.StatusServiceUnavailable}
	kindStoreOpen        = &kind{"store-unauthenticated", "Store unauthenticated", http.StatusServiceUnavailable}
)

// kinds lists every kind, for metrics.
var kinds = []*kind{
	kindMalformedJSON, kindMissingField, kindInvalidField, kindUnknownField,
	kindDuplicateField, kindNotFound, kindMethodNotAllowed, kindBodyTooLarge,
	kindUnsupportedType, kindInternal, kindStoreUnavailable, kindStoreFull, kindOverloaded,
	kindUnauthenticated, kindForbidden, kindTooManyEntries, kindConfigInvalid, kindSecretMismatch,
	kindStoreEvicts, kindStoreUnpersisted, kindStoreOpen, kindBreachedOff, kindBreachedUnavailable,
}

func (k *kind) uri() string { return problemBase + k.slug }

// problemError is an error the API answers with a problem of its kind. Its
// detail is written by this package and never repeats a submitted value.
type problemError struct {
	kind   *kind
	field  string
	detail string
}

func (e *problemError) Error() string {
	if e.field != "" {
		return "api: " + e.kind.slug + ": " + e.field + " " + e.detail
	}
	return "api: " + e.kind.slug + ": " + e.detail
}

func newProblem(k *kind, field, detail string) *problemError {
	return &problemError{kind: k, field: field, detail: detail}
}

// problem is the RFC 9457 document. The field order is the wire order.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// toProblem turns any error into a problem. Only *problemError and
// *authguard.InputError carry text meant for clients; anything else is an
// internal error whose text stays in the log.
func toProblem(err error) *problemError {
	var pe *problemError
	if errors.As(err, &pe) {
		return pe
	}
	var ie *authguard.InputError
	if errors.As(err, &ie) {
		if ie.Missing {
			return newProblem(kindMissingField, ie.Field, ie.Detail)
		}
		return newProblem(kindInvalidField, ie.Field, ie.Detail)
	}
	if errors.Is(err, authguard.ErrOverloaded) {
		return newProblem(kindOverloaded, "", "tollgate has more calls in flight than its store connections carry; retry after Retry-After")
	}
	if errors.Is(err, authguard.ErrTooManyEntries) {
		return newProblem(kindTooManyEntries, "", "the tenant holds as many entries as it may; remove one or let one expire")
	}
	if errors.Is(err, authguard.ErrStoreFull) {
		return newProblem(kindStoreFull, "", "the store answers but is out of memory and refuses writes")
	}
	if errors.Is(err, authguard.ErrStoreUnavailable) {
		return newProblem(kindStoreUnavailable, "", "the store does not answer; try again")
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return newProblem(kindBodyTooLarge, "", "the body must be at most "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
	}
	return newProblem(kindInternal, "", "tollgate failed to answer; the error is logged with this request id")
}

// writeError answers r with the problem err stands for. It is the only
// function that writes errors to clients.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	pe := toProblem(err)
	st := stateOf(r.Context())
	if st != nil {
		st.problem = pe.kind
		if pe.kind == kindInternal {
			st.err = err
		}
	}
	a.metrics.problem(pe.kind)
	detail := pe.detail
	if pe.field != "" {
		detail = pe.field + " " + pe.detail
	}
	body, merr := json.Marshal(problem{
		Type:      pe.kind.uri(),
		Title:     pe.kind.title,
		Status:    pe.kind.status,
		Detail:    detail,
		Field:     pe.field,
		RequestID: RequestID(r.Context()),
	})
	if merr != nil { // only strings and an int: cannot fail
		panic("api: encoding a problem: " + merr.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	if pe.kind == kindOverloaded {
		h.Set("Retry-After", "1") // shedding lasts as long as the flood; a second is the shortest the header says
		a.noteShed(r)
	}
	if pe.kind == kindUnauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="tollgate", error="invalid_token"`)
	}
	w.WriteHeader(pe.kind.status)
	_, _ = w.Write(append(body, '\n'))
}

// panicText describes a recovered panic value for the log without repeating
// data it may carry: a runtime error's message is safe, anything else is
// logged by type only.
func panicText(v any) string {
	if re, ok := v.(runtime.Error); ok {
		return re.Error()
	}
	return "panic of type " + typeName(v)
}
