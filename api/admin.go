package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

// explainBody is the wire form of POST /v1/admin/explain, shared with the
// Go client.
type explainBody = wire.ExplainRequest

var explainFields = fields{
	{"flow", "a string", true}, {"account", "a string", false}, {"ip", "a string", false},
	{"destination", "a string", false}, {"channel", "a string", false},
}

// explain serves POST /v1/admin/explain: every rule's state for a subject
// and the verdict a check would get now, counting nothing. The identifiers
// come in the body, never in the URL, and are not logged.
func (a *API) explain(w http.ResponseWriter, r *http.Request) {
	var body explainBody
	present, err := decodePresent(w, r, explainFields, &body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// The engine takes "" for a part left out; an empty account or ip sent
	// is refused as a check refuses it (openapi.yaml: minLength 1).
	for _, f := range []struct{ name, value string }{{"account", body.Account}, {"ip", body.IP}} {
		if present&(1<<explainFields.index(f.name)) != 0 && f.value == "" {
			a.writeError(w, r, &authguard.InputError{Field: f.name, Detail: "is empty: give one or leave the key out", Missing: true})
			return
		}
	}
	x, err := a.admin.Explain(r.Context(), authguard.ExplainRequest{
		Tenant: tenantOf(r.Context()), Flow: body.Flow, Account: body.Account, IP: body.IP,
		Destination: body.Destination, Channel: body.Channel,
	})
	if errors.Is(err, authguard.ErrStoreNotAnswering) {
		a.writeError(w, r, newProblem(kindStoreUnavailable, "", "the store does not answer: nothing to explain from"))
		return
	}
	if err != nil {
		a.engineError(w, r, "explain", err)
		return
	}
	v := x.Verdict
	out := wire.Explanation{Flow: x.Flow, Rules: make([]wire.RuleState, len(x.Rules)), Entries: make([]wire.Entry, len(x.Entries)),
		Verdict: wire.Verdict{Action: v.Action.String(), DelayMS: v.Delay.Milliseconds(), RetryAfter: v.RetryAfter(), Reasons: make([]string, len(v.Reasons))}}
	for i, r := range v.Reasons {
		out.Verdict.Reasons[i] = r.String()
	}
	for i := range x.Entries {
		out.Entries[i] = entryJSON(&x.Entries[i])
	}
	for i, rs := range x.Rules {
		out.Rules[i] = wire.RuleState{
			Rule: rs.Rule, Reason: rs.Reason.String(), Subject: rs.Subject, Algorithm: rs.Algorithm.String(), Facet: rs.Facet.String(),
			Count: rs.Count, Remaining: rs.Remaining, WaitMS: rs.Wait.Milliseconds(), Over: rs.Over, ResetMS: rs.Reset.Milliseconds(),
		}
	}
	a.writeJSON(w, r, http.StatusOK, out)
}

// resetBody is the wire form of POST /v1/admin/reset, shared with the Go
// client.
type resetBody = wire.ResetRequest

var resetFields = fields{
	{"flow", "a string", true}, {"account", "a string", false}, {"ip", "a string", false},
	{"destination", "a string", false}, {"channel", "a string", false}, {"reason", "a string", true},
	{"ref", "a string", false},
}

// reset serves POST /v1/admin/reset: it clears one subject's state in a
// flow and writes an audit line (who, tenant, flow, which kind of subject,
// reason, keys deleted, outcome; never the identifier). A reset that fails
// once the engine has called a store is audited too, as failed, with the
// keys the store reports deleted before it failed: part of the state, and
// the fallback store's, may be gone.
func (a *API) reset(w http.ResponseWriter, r *http.Request) {
	var body resetBody
	if err := decode(w, r, resetFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	n, err := a.admin.Reset(r.Context(), authguard.ResetRequest{
		Tenant: tenantOf(r.Context()), Flow: body.Flow, Account: body.Account, IP: body.IP,
		Destination: body.Destination, Channel: body.Channel, Reason: body.Reason, Ref: body.Ref,
	})
	if refusedBeforeStore(err) {
		a.engineError(w, r, "reset", err)
		return
	}
	subject := "account"
	switch {
	case body.IP != "":
		subject = "ip"
	case body.Destination != "":
		subject = "destination"
	}
	a.audit(r, "admin reset", body.Flow, err, slog.String("subject", subject),
		slog.String("reason", body.Reason), slog.Int("deleted", n))
	if err != nil {
		a.engineError(w, r, "reset", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"deleted\":%d}\n", n)
}

// refusedBeforeStore reports whether err refused an admin write before the
// engine called a store (invalid input, no slot to run it in, a store that
// keeps no entries): nothing can have changed, so no audit line is due. Any
// other error may come after the write took effect, in whole or in part.
func refusedBeforeStore(err error) bool {
	return err != nil && (errors.Is(err, authguard.ErrInvalidInput) ||
		errors.Is(err, authguard.ErrOverloaded) || errors.Is(err, authguard.ErrNoEntryStore))
}

var (
	allowFields = fields{
		{"flow", "a string", false}, {"ip_range", "a string", false}, {"destination_prefix", "a string", false},
		{"country", "a string", false}, {"expires_in", "a string", true}, {"reason", "a string", true},
	}
	denyFields   = append(fields{{"action", "a string", false}}, allowFields...)
	removeFields = fields{{"id", "a string", true}, {"reason", "a string", true}}
)

// parseExpiresIn parses a duration as the policy file writes them: Go's
// (90m, 12h) or whole days (7d), unsigned: strconv.Atoi and
// time.ParseDuration would take "+1d" and "+1h".
func parseExpiresIn(s string) (time.Duration, error) {
	bad := &authguard.InputError{Field: "expires_in", Detail: `must be a duration such as "90m", "12h" or "7d"`}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, bad
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if days == "" || len(days) > 4 || strings.Trim(days, "0123456789") != "" {
			return 0, bad
		}
		n, _ := strconv.Atoi(days) // at most four digits
		if n > 3650 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, bad
	}
	return d, nil
}

// allow serves POST /v1/admin/allow.
func (a *API) allow(w http.ResponseWriter, r *http.Request) { a.addEntry(w, r, allowFields) }

// deny serves POST /v1/admin/deny.
func (a *API) deny(w http.ResponseWriter, r *http.Request) { a.addEntry(w, r, denyFields) }

// addEntry adds an allow entry (fs is allowFields) or a block or captcha
// entry, writes an audit line (who, tenant, flow, kind, subject and its
// length, reason, expiry, outcome; never the range or prefix) and answers
// 201 with the entry. A store's failure after the entry may have been kept is
// audited too, as failed.
func (a *API) addEntry(w http.ResponseWriter, r *http.Request, fs fields) {
	var body wire.EntryRequest
	if err := decode(w, r, fs, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	kind := authguard.EntryAllow
	if len(fs) == len(denyFields) {
		kind = authguard.EntryBlock
		if body.Action != "" && body.Action != "block" {
			if body.Action != "captcha" {
				a.writeError(w, r, &authguard.InputError{Field: "action", Detail: `must be "block" or "captcha"`})
				return
			}
			kind = authguard.EntryCaptcha
		}
	}
	ttl, err := parseExpiresIn(body.ExpiresIn)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	x, err := a.admin.AddEntry(r.Context(), authguard.EntryRequest{
		Tenant: tenantOf(r.Context()), Flow: body.Flow, Kind: kind, IPRange: body.IPRange,
		DestinationPrefix: body.DestinationPrefix, Country: body.Country, TTL: ttl,
		Reason: body.Reason, By: callerOf(r.Context()),
	})
	if refusedBeforeStore(err) {
		a.engineError(w, r, "entry", err)
		return
	}
	// A store's failure may come after it kept the entry: the engine
	// returns the entry it tried to keep, and the line names it as the
	// success's would, with the expiry asked for.
	line := []slog.Attr{slog.String("id", x.ID), slog.String("subject", x.Scope.String()),
		slog.Int("length", x.Length), slog.String("country", x.Country), slog.String("reason", x.Reason)}
	if err != nil {
		a.audit(r, "admin "+kind.String(), x.Flow, err, append(line, slog.String("expires_in", body.ExpiresIn))...)
		a.engineError(w, r, "entry", err)
		return
	}
	a.audit(r, "admin "+kind.String(), x.Flow, nil, append(line, slog.Time("expires", x.Expires.UTC()))...)
	a.writeJSON(w, r, http.StatusCreated, entryJSON(&x))
}

// audit writes an admin write's audit line at warn, with who, the tenant
// and the outcome: "ok", or "failed" with the problem's kind when err (a
// store's failure after the write may have taken effect) is not nil. Only
// writes that succeeded are counted in tollgate_admin_writes_total.
func (a *API) audit(r *http.Request, msg, flow string, err error, attrs ...slog.Attr) {
	tenant := tenantOrDefault(r.Context())
	outcome := []slog.Attr{slog.String("outcome", "ok")}
	if err != nil {
		outcome = []slog.Attr{slog.String("outcome", "failed"), slog.String("problem", toProblem(err).kind.slug)}
	} else {
		a.metrics.adminWrite(strings.TrimPrefix(msg, "admin "))
	}
	a.log.LogAttrs(r.Context(), slog.LevelWarn, msg, slices.Concat([]slog.Attr{
		slog.String("request_id", RequestID(r.Context())), slog.String("by", callerOf(r.Context())),
		slog.String("tenant", tenant), slog.String("flow", flow),
	}, attrs, outcome)...)
}

// entries serves GET /v1/admin/entries[?flow=F]: the tenant's unexpired
// entries, oldest first. The query is as strict as a body: r.URL.Query
// would drop a pair it cannot parse and take the first of two flows.
func (a *API) entries(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		a.writeError(w, r, newProblem(kindInvalidField, "", "the query does not parse (a bad %-escape, or ';' where '&' separates parameters); only flow is a parameter"))
		return
	}
	for k := range q {
		if k != "flow" {
			a.writeError(w, r, unknownKey(k, "is not a parameter of this route; only flow is", "the query has a parameter that this route does not take; only flow is"))
			return
		}
	}
	if len(q["flow"]) > 1 {
		a.writeError(w, r, newProblem(kindDuplicateField, "flow", "appears more than once"))
		return
	}
	l, err := a.admin.ListEntries(r.Context(), tenantOf(r.Context()), q.Get("flow"))
	if err != nil {
		a.engineError(w, r, "entries", err)
		return
	}
	out := wire.Entries{Entries: make([]wire.Entry, len(l))}
	for i := range l {
		out.Entries[i] = entryJSON(&l[i])
	}
	a.writeJSON(w, r, http.StatusOK, out)
}

// remove serves POST /v1/admin/remove: it deletes an entry by id and writes
// an audit line, also when the store fails after it may have removed it.
func (a *API) remove(w http.ResponseWriter, r *http.Request) {
	var body wire.RemoveRequest
	if err := decode(w, r, removeFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	if body.Reason == "" || len(body.Reason) > authguard.MaxReasonBytes {
		a.writeError(w, r, &authguard.InputError{Field: "reason", Detail: "is required: at most 200 bytes saying why, with no identifier", Missing: body.Reason == ""})
		return
	}
	ok, err := a.admin.RemoveEntry(r.Context(), tenantOf(r.Context()), body.ID)
	if refusedBeforeStore(err) {
		a.engineError(w, r, "remove", err)
		return
	}
	if err != nil {
		// The store may have removed the entry before it failed.
		a.audit(r, "admin remove", "", err, slog.String("id", body.ID), slog.String("reason", body.Reason))
		a.engineError(w, r, "remove", err)
		return
	}
	a.audit(r, "admin remove", "", nil, slog.String("id", body.ID), slog.Bool("removed", ok), slog.String("reason", body.Reason))
	a.writeJSON(w, r, http.StatusOK, wire.Removed{Removed: ok})
}

func entryJSON(x *authguard.Entry) wire.Entry {
	out := wire.Entry{
		ID: x.ID, Kind: x.Kind.String(), Flow: x.Flow, Subject: x.Scope.String(), Length: x.Length, Country: x.Country,
		Reason: x.Reason, By: x.By,
		CreatedAt: x.Created.UTC().Format(time.RFC3339Nano), ExpiresAt: x.Expires.UTC().Format(time.RFC3339Nano),
	}
	if x.Scope == authguard.ScopeIPRange {
		out.Family = "ipv4"
		if x.IPv6 {
			out.Family = "ipv6"
		}
	}
	return out
}

// writeJSON writes v as the JSON answer with status.
func (a *API) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.engineError(w, r, "admin", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
