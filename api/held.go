package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

// HeldAdmin is what the held-subjects routes call: an *authguard.Engine.
// An Admin that is not one answers them 404, as an engine whose index is
// off does.
type HeldAdmin interface {
	ListHeld(ctx context.Context, req authguard.HeldListRequest) (authguard.HeldPage, error)
	ResetHeld(ctx context.Context, req authguard.HeldResetRequest) (authguard.HeldResetResult, error)
}

var heldResetFields = fields{
	{"flow", "a string", true}, {"kind", "a string", false}, {"subjects", "an array of strings", false},
	{"reason", "a string", true}, {"dry_run", "a boolean", false},
}

// heldResetBody is wire.HeldResetRequest as the strict decoder takes it:
// the decoder reads strings and booleans only, so subjects is read raw and
// then as an array of strings.
type heldResetBody struct {
	Flow     string         `json:"flow"`
	Kind     string         `json:"kind"`
	Subjects jsontext.Value `json:"subjects"`
	Reason   string         `json:"reason"`
	DryRun   bool           `json:"dry_run"`
}

// heldParams are the parameters GET /v1/admin/held takes.
var heldParams = []string{"flow", "kind", "cursor", "limit"}

// heldOff is the answer of the held routes while the index is off.
func heldOff() *problemError {
	return newProblem(kindNotFound, "", "the held-subjects index is off on this server: set held_index_bytes to turn it on")
}

func (a *API) heldAdmin() (HeldAdmin, bool) {
	h, ok := a.admin.(HeldAdmin)
	return h, ok
}

// held serves GET /v1/admin/held?flow=F&kind=K&cursor=C&limit=N: a page of
// the subjects held back now, their identifiers decrypted for this answer
// alone. It is audited (who, tenant, flow, kind, how many listed; never an
// identifier): a list of accounts under attack is worth knowing who read.
// The query is as strict as a body.
func (a *API) held(w http.ResponseWriter, r *http.Request) {
	h, ok := a.heldAdmin()
	if !ok {
		a.writeError(w, r, heldOff())
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		a.writeError(w, r, newProblem(kindInvalidField, "", "the query does not parse (a bad %-escape, or ';' where '&' separates parameters); the parameters are flow, kind, cursor and limit"))
		return
	}
	for k, vs := range q {
		known := false
		for _, p := range heldParams {
			known = known || k == p
		}
		if !known {
			a.writeError(w, r, unknownKey(k, "is not a parameter of this route; the parameters are flow, kind, cursor and limit", "the query has a parameter that this route does not take; the parameters are flow, kind, cursor and limit"))
			return
		}
		if len(vs) > 1 {
			a.writeError(w, r, newProblem(kindDuplicateField, k, "appears more than once"))
			return
		}
	}
	kind, ok := authguard.ParseHeldKind(q.Get("kind"))
	if !ok {
		a.writeError(w, r, newProblem(kindInvalidField, "kind", `must be "account" or "ip", or left out for both`))
		return
	}
	limit := 0
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > authguard.MaxHeldPage {
			a.writeError(w, r, newProblem(kindInvalidField, "limit", "must be an integer from 1 to 1000"))
			return
		}
	}
	req := authguard.HeldListRequest{Tenant: tenantOf(r.Context()), Flow: q.Get("flow"), Kind: kind, Cursor: q.Get("cursor"), Limit: limit}
	page, err := h.ListHeld(r.Context(), req)
	if errors.Is(err, authguard.ErrHeldOff) {
		a.writeError(w, r, heldOff())
		return
	}
	if err != nil {
		a.engineError(w, r, "held", err)
		return
	}
	a.auditRead(r, "admin held list", req.Flow, slog.String("kind", q.Get("kind")), slog.Int("listed", len(page.Subjects)))
	out := wire.HeldList{Subjects: make([]wire.HeldSubject, len(page.Subjects)), Next: page.Next, Counts: page.Counts}
	for i, x := range page.Subjects {
		out.Subjects[i] = wire.HeldSubject{
			Subject: x.Subject, Flow: x.Flow, Kind: x.Kind.String(), Rule: x.Rule, Reason: x.Reason.String(),
			WaitMS: x.Wait.Milliseconds(), Over: x.Over,
			Since: x.Since.UTC().Format(time.RFC3339), ExpiresInMS: x.ExpiresIn.Milliseconds(),
		}
	}
	a.writeJSON(w, r, http.StatusOK, out)
}

// resetHeld serves POST /v1/admin/reset-held: it frees, through the
// one-subject reset, the held subjects of a flow named in the body or all
// the index lists, and writes an audit line (who, tenant, flow, kind, how
// many named, matched and reset, reason, dry run; never an identifier). A
// dry run counts and changes nothing, and is audited as one.
func (a *API) resetHeld(w http.ResponseWriter, r *http.Request) {
	h, ok := a.heldAdmin()
	if !ok {
		a.writeError(w, r, heldOff())
		return
	}
	var body heldResetBody
	if err := decode(w, r, heldResetFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	var subjects []string
	if len(body.Subjects) > 0 && body.Subjects.Kind() != 'n' {
		if body.Subjects.Kind() != '[' || json.Unmarshal(body.Subjects, &subjects, strictOptions) != nil {
			a.writeError(w, r, newProblem(kindInvalidField, "subjects", "must be an array of strings"))
			return
		}
	}
	kind, ok := authguard.ParseHeldKind(body.Kind)
	if !ok {
		a.writeError(w, r, newProblem(kindInvalidField, "kind", `must be "account" or "ip", or left out for both`))
		return
	}
	res, err := h.ResetHeld(r.Context(), authguard.HeldResetRequest{
		Tenant: tenantOf(r.Context()), Flow: body.Flow, Kind: kind, Subjects: subjects, Reason: body.Reason, DryRun: body.DryRun,
	})
	if errors.Is(err, authguard.ErrHeldOff) {
		a.writeError(w, r, heldOff())
		return
	}
	if refusedBeforeStore(err) {
		a.engineError(w, r, "reset-held", err)
		return
	}
	attrs := []slog.Attr{slog.String("kind", body.Kind), slog.Int("named", len(subjects)),
		slog.Int("matched", res.Matched), slog.Int("reset", res.Reset), slog.Int("deleted", res.Keys),
		slog.Bool("dry_run", body.DryRun), slog.String("reason", body.Reason)}
	if body.DryRun && err == nil {
		a.auditRead(r, "admin reset-held", body.Flow, attrs...) // it wrote nothing
	} else {
		a.audit(r, "admin reset-held", body.Flow, err, attrs...)
	}
	if err != nil {
		a.engineError(w, r, "reset-held", err)
		return
	}
	a.writeJSON(w, r, http.StatusOK, wire.HeldReset{Matched: res.Matched, Reset: res.Reset, Deleted: res.Keys, DryRun: body.DryRun})
}

// auditRead writes an admin read's audit line at warn, as audit does a
// write's, without counting it in tollgate_admin_writes_total.
func (a *API) auditRead(r *http.Request, msg, flow string, attrs ...slog.Attr) {
	a.log.LogAttrs(r.Context(), slog.LevelWarn, msg, append([]slog.Attr{
		slog.String("request_id", RequestID(r.Context())), slog.String("by", callerOf(r.Context())),
		slog.String("tenant", tenantOrDefault(r.Context())), slog.String("flow", flow),
	}, append(attrs, slog.String("outcome", "ok"))...)...)
}

// HeldCounter is what AddHeld reads: an *authguard.Engine.
type HeldCounter interface {
	HeldCounts(ctx context.Context) ([]authguard.HeldCount, error)
	HeldStats() authguard.HeldStats
}

// AddHeld exports the held-subjects index: tollgate_held_subjects{flow,kind}
// (counts only, read from the index at every scrape, over the tenants; a
// scrape the store does not answer in a second leaves it out) and
// tollgate_held_index_dropped_total. AddEngine calls it for an engine that
// has them (an *authguard.Engine): with the index off they are empty and 0.
func (m *Metrics) AddHeld(e HeldCounter) {
	m.reg.MustRegister(&heldCollector{e: e,
		desc: prometheus.NewDesc("tollgate_held_subjects",
			"Subjects the held-subjects index lists as held back now, by flow and kind (account, ip). A view: past the index's bound it lists fewer than the counters hold.",
			[]string{"flow", "kind"}, nil),
		dropped: prometheus.NewDesc("tollgate_held_index_dropped_total",
			"Held-subjects index entries dropped: past a tenant's bound (the first to expire), a full write-behind queue or a store error. The counters still hold those subjects back.",
			nil, nil),
	})
}

type heldCollector struct {
	e             HeldCounter
	desc, dropped *prometheus.Desc
}

func (c *heldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.dropped }

func (c *heldCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(c.e.HeldStats().Dropped))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	counts, err := c.e.HeldCounts(ctx)
	if err != nil {
		return
	}
	for _, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n.Count), n.Flow, n.Kind)
	}
}
