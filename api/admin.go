package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/tollgate-auth/tollgate/authguard"
)

// explainBody is the wire form of POST /v1/admin/explain.
type explainBody struct {
	Flow        string `json:"flow"`
	Account     string `json:"account"`
	IP          string `json:"ip"`
	Destination string `json:"destination"`
	Channel     string `json:"channel"`
}

var explainFields = fields{
	{"flow", "a string", true}, {"account", "a string", false}, {"ip", "a string", false},
	{"destination", "a string", false}, {"channel", "a string", false},
}

// ruleStateJSON is one rule of an explanation on the wire.
type ruleStateJSON struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	Subject   string `json:"subject"`
	Algorithm string `json:"algorithm"`
	Count     int    `json:"count"`
	Remaining int    `json:"remaining"`
	WaitMS    int64  `json:"wait_ms"`
	Over      bool   `json:"over"`
	ResetMS   int64  `json:"reset_ms"`
}

// explainJSON is an explanation on the wire. It holds no identifier.
type explainJSON struct {
	Flow    string            `json:"flow"`
	Verdict authguard.Verdict `json:"verdict"`
	Rules   []ruleStateJSON   `json:"rules"`
}

// explain serves POST /v1/admin/explain: every rule's state for a subject
// and the verdict a check would get now, counting nothing. The identifiers
// come in the body, never in the URL, and are not logged.
func (a *API) explain(w http.ResponseWriter, r *http.Request) {
	var body explainBody
	if err := decode(w, r, explainFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	x, err := a.engine.Explain(r.Context(), authguard.ExplainRequest{
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
	out := explainJSON{Flow: x.Flow, Verdict: x.Verdict, Rules: make([]ruleStateJSON, len(x.Rules))}
	for i, rs := range x.Rules {
		out.Rules[i] = ruleStateJSON{
			Rule: rs.Rule, Reason: rs.Reason.String(), Subject: rs.Subject, Algorithm: rs.Algorithm.String(),
			Count: rs.Count, Remaining: rs.Remaining, WaitMS: rs.Wait.Milliseconds(), Over: rs.Over, ResetMS: rs.Reset.Milliseconds(),
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		a.engineError(w, r, "explain", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// resetBody is the wire form of POST /v1/admin/reset.
type resetBody struct {
	Flow        string `json:"flow"`
	Account     string `json:"account"`
	IP          string `json:"ip"`
	Destination string `json:"destination"`
	Channel     string `json:"channel"`
	Reason      string `json:"reason"`
}

var resetFields = fields{
	{"flow", "a string", true}, {"account", "a string", false}, {"ip", "a string", false},
	{"destination", "a string", false}, {"channel", "a string", false}, {"reason", "a string", true},
}

// reset serves POST /v1/admin/reset: it clears one subject's state in a
// flow and writes an audit line (who, tenant, flow, which kind of subject,
// reason, keys deleted; never the identifier).
func (a *API) reset(w http.ResponseWriter, r *http.Request) {
	var body resetBody
	if err := decode(w, r, resetFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	tenant := tenantOf(r.Context())
	n, err := a.engine.Reset(r.Context(), authguard.ResetRequest{
		Tenant: tenant, Flow: body.Flow, Account: body.Account, IP: body.IP,
		Destination: body.Destination, Channel: body.Channel, Reason: body.Reason,
	})
	if err != nil {
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
	if tenant == "" {
		tenant = authguard.DefaultTenant
	}
	a.metrics.adminWrite("reset")
	a.log.LogAttrs(r.Context(), slog.LevelWarn, "admin reset",
		slog.String("request_id", RequestID(r.Context())), slog.String("by", callerOf(r.Context())),
		slog.String("tenant", tenant), slog.String("flow", body.Flow), slog.String("subject", subject),
		slog.String("reason", body.Reason), slog.Int("deleted", n))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"deleted\":%d}\n", n)
}
