package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

// Webhooks is the server's event delivery, as the admin routes reach it:
// its dead letters, by tenant.
type Webhooks interface {
	// DeadLetters returns at most limit of tenant's dead letters, newest
	// first.
	DeadLetters(ctx context.Context, tenant string, limit int) ([]wire.DeadLetter, error)
	// Replay puts tenant's dead letter id back for delivery, with the same
	// webhook-id; false when tenant has none by that id.
	Replay(ctx context.Context, tenant, id string) (bool, error)
}

// maxDeadLetters bounds one listing.
const maxDeadLetters = 1000

var replayFields = fields{{"id", "a string", true}, {"reason", "a string", true}}

// noWebhooks answers the webhook routes of a server that sends none.
func noWebhooks() error {
	return newProblem(kindNotFound, "", "this server sends no webhooks (its configuration has no webhooks section)")
}

// deadLetters serves GET /v1/admin/webhooks/dead-letters[?limit=N]: the
// caller's tenant's dead letters, newest first (100 by default, at most
// 1000).
func (a *API) deadLetters(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		a.writeError(w, r, newProblem(kindInvalidField, "", "the query does not parse (a bad %-escape, or ';' where '&' separates parameters); only limit is a parameter"))
		return
	}
	for k := range q {
		if k != "limit" {
			a.writeError(w, r, unknownKey(k, "is not a parameter of this route; only limit is", "the query has a parameter that this route does not take; only limit is"))
			return
		}
	}
	if len(q["limit"]) > 1 {
		a.writeError(w, r, newProblem(kindDuplicateField, "limit", "appears more than once"))
		return
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxDeadLetters || s[0] == '+' {
			a.writeError(w, r, &authguard.InputError{Field: "limit", Detail: "must be a whole number from 1 to 1000"})
			return
		}
		limit = n
	}
	if a.webhooks == nil {
		a.writeError(w, r, noWebhooks())
		return
	}
	l, err := a.webhooks.DeadLetters(r.Context(), tenantOrDefault(r.Context()), limit)
	if err != nil {
		a.engineError(w, r, "dead letters", err)
		return
	}
	if l == nil {
		l = []wire.DeadLetter{}
	}
	a.writeJSON(w, r, http.StatusOK, wire.DeadLetters{DeadLetters: l})
}

// replayWebhook serves POST /v1/admin/webhooks/replay: it puts a dead
// letter of the caller's tenant back for delivery and writes an audit line.
func (a *API) replayWebhook(w http.ResponseWriter, r *http.Request) {
	var body wire.ReplayRequest
	if err := decode(w, r, replayFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	if body.ID == "" || len(body.ID) > 128 {
		a.writeError(w, r, &authguard.InputError{Field: "id", Detail: "is required: a dead letter's id, at most 128 bytes", Missing: body.ID == ""})
		return
	}
	if body.Reason == "" || len(body.Reason) > authguard.MaxReasonBytes {
		a.writeError(w, r, &authguard.InputError{Field: "reason", Detail: "is required: at most 200 bytes saying why, with no identifier", Missing: body.Reason == ""})
		return
	}
	if a.webhooks == nil {
		a.writeError(w, r, noWebhooks())
		return
	}
	ok, err := a.webhooks.Replay(r.Context(), tenantOrDefault(r.Context()), body.ID)
	a.audit(r, "admin webhook replay", "", err, slog.String("id", body.ID), slog.Bool("replayed", ok), slog.String("reason", body.Reason))
	if err != nil {
		a.engineError(w, r, "replay", err)
		return
	}
	a.writeJSON(w, r, http.StatusOK, wire.Replayed{Replayed: ok})
}

// tenantOrDefault is the call's tenant, the default tenant when the server
// authenticates no one.
func tenantOrDefault(ctx context.Context) string {
	if t := tenantOf(ctx); t != "" {
		return t
	}
	return authguard.DefaultTenant
}
