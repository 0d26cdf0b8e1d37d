package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/tollgate-auth/tollgate/breached"
)

// GET /v1/breached/{prefix} answers a breached-password range, HIBP's
// k-anonymity format, so that a caller can learn whether the password its
// user typed is a known breached one without sending it, or its hash:
// only the first 5 hex digits of the SHA-1 arrive, and nothing in the
// call names an account. The answer's size is the same for every prefix
// (package breached), and the prefix is neither logged nor kept: the
// request log names the route pattern, not the path.

// Breached answers ranges: a *breached.Live, swapped on reload.
type Breached interface {
	// Range returns the padded range body for prefix, or an error wrapping
	// breached.ErrBadPrefix, breached.ErrOff or breached.ErrUnavailable.
	Range(ctx context.Context, prefix string) ([]byte, error)
}

var (
	kindBreachedOff         = &kind{"breached-off", "Breached-password ranges off", http.StatusNotFound}
	kindBreachedUnavailable = &kind{"breached-unavailable", "Breached-password ranges unavailable", http.StatusServiceUnavailable}
)

// breachedRange serves GET /v1/breached/{prefix}.
func (a *API) breachedRange(w http.ResponseWriter, r *http.Request) {
	if a.breached == nil {
		a.writeError(w, r, newProblem(kindBreachedOff, "", "this server has no breached-password corpus and no upstream range API"))
		return
	}
	body, err := a.breached.Range(r.Context(), chi.URLParam(r, "prefix"))
	switch {
	case err == nil:
	case errors.Is(err, breached.ErrBadPrefix):
		a.writeError(w, r, newProblem(kindInvalidField, "prefix", "must be exactly 5 hex digits: the start of the password's SHA-1"))
		return
	case errors.Is(err, breached.ErrOff):
		a.writeError(w, r, newProblem(kindBreachedOff, "", "this server has no breached-password corpus and no upstream range API"))
		return
	case errors.Is(err, breached.ErrUnavailable):
		a.writeError(w, r, newProblem(kindBreachedUnavailable, "", "the upstream range API did not answer; treat the password as not known to be breached"))
		return
	default:
		a.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
