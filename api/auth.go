package api

import (
	"context"
	"net/http"

	"github.com/tollgate-auth/tollgate/auth"
)

// callerKey is the context key of the verified caller.
type callerKey struct{}

// tenantOf is the tenant of the request's verified caller: "" (the default
// tenant) when the API authenticates nobody.
func tenantOf(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(auth.Caller); ok {
		return c.Tenant
	}
	return ""
}

// callerOf is who the request's verified caller is, for audit lines: the
// token's subject, or "unauthenticated (loopback)" without a verifier.
func callerOf(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(auth.Caller); ok {
		return c.Subject
	}
	return "unauthenticated (loopback)"
}

// authenticate lets a request through only with a bearer token that allows
// need, and passes its caller on. Without a Verifier it lets everything
// through: the server then listens on loopback only. A refusal is a 401
// (with WWW-Authenticate) or 403 problem whose detail says nothing about
// what was wrong with the token; the reason goes to a metric and the log.
func (a *API) authenticate(need auth.Scope) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if a.verifier == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := a.verifier.Verify(r.Header.Get("Authorization"), need)
			if err != nil {
				reason, k, detail := "malformed", kindUnauthenticated, "a valid bearer token is required"
				if ae, ok := err.(*auth.Error); ok {
					reason = ae.Reason
					if ae.Status == http.StatusForbidden {
						k, detail = kindForbidden, "the token does not allow this call"
					}
				}
				a.metrics.authFailure(reason)
				if st := stateOf(r.Context()); st != nil {
					st.authReason = reason
				}
				a.writeError(w, r, newProblem(k, "", detail))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		})
	}
}
