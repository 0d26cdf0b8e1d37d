package api

import (
	"encoding/json"
	"errors"
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
