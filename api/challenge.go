package api

import (
	"errors"
	"net/http"
	"net/netip"
	"time"

	"github.com/tollgate-auth/tollgate/challenge"
)

// The challenge routes serve the built-in proof of work (and tollgate's
// verification of a provider CAPTCHA) to the framework plug-ins, which
// then need no crypto of their own: POST /v1/challenge issues one, the
// plug-in's page runs GET /v1/challenge/solver.js on it, and POST
// /v1/challenge/verify checks the solution, once.

// solverPath is where the solver script is served.
const solverPath = "/v1/challenge/solver.js"

// issueChallengeBody is the wire form of POST /v1/challenge.
type issueChallengeBody struct {
	Kind string `json:"kind"`
}

var issueChallengeFields = fields{{"kind", "a string", false}}

// challengeJSON is an issued challenge on the wire.
type challengeJSON struct {
	Token      string `json:"token"`
	Kind       string `json:"kind"`
	Difficulty int    `json:"difficulty"`
	ExpiresAt  string `json:"expires_at"`
	SolverURL  string `json:"solver_url"`
	SiteKey    string `json:"site_key,omitempty"`
}

// verifyChallengeBody is the wire form of POST /v1/challenge/verify.
type verifyChallengeBody struct {
	Token    string `json:"token"`
	Nonce    string `json:"nonce"`
	Provider string `json:"provider"`
	Response string `json:"response"`
	RemoteIP string `json:"remote_ip"`
}

var verifyChallengeFields = fields{
	{"token", "a string", false}, {"nonce", "a string", false}, {"provider", "a string", false},
	{"response", "a string", false}, {"remote_ip", "a string", false},
}

// verifiedJSON is a verification's answer.
type verifiedJSON struct {
	Solved bool   `json:"solved"`
	Reason string `json:"reason"`
}

// noChallenges answers the challenge routes of a server without a
// Challenger.
func noChallenges() error {
	return newProblem(kindNotFound, "", "this server issues no challenges")
}

// issueChallenge serves POST /v1/challenge: a fresh challenge for the
// caller's tenant, proof of work unless the body names a configured
// provider.
func (a *API) issueChallenge(w http.ResponseWriter, r *http.Request) {
	var body issueChallengeBody
	if err := decode(w, r, issueChallengeFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	kind := challenge.ProofOfWork
	if body.Kind != "" {
		k, ok := challenge.ParseKind(body.Kind)
		if !ok {
			a.writeError(w, r, newProblem(kindInvalidField, "kind", "must be pow, turnstile, hcaptcha or recaptcha"))
			return
		}
		kind = k
	}
	if a.challenger == nil {
		a.writeError(w, r, noChallenges())
		return
	}
	if kind != challenge.ProofOfWork && !a.challenger.Provider(kind) {
		a.writeError(w, r, newProblem(kindInvalidField, "kind", "names a provider this server is not configured with"))
		return
	}
	ch, err := a.challenger.Issue(r.Context(), challenge.IssueOptions{Tenant: tenantOf(r.Context()), Kind: kind})
	if err != nil {
		a.engineError(w, r, "challenge", err)
		return
	}
	a.writeJSON(w, r, http.StatusOK, challengeJSON{
		Token: ch.Token, Kind: ch.Kind.String(), Difficulty: ch.Difficulty,
		ExpiresAt: ch.Expires.UTC().Format(time.RFC3339Nano), SolverURL: solverPath, SiteKey: ch.SiteKey,
	})
}

// verifyChallenge serves POST /v1/challenge/verify: a proof-of-work token
// and its nonce, or a provider's response (with the token, if the plug-in
// issued one), checked for the caller's tenant and spent. A solution that
// does not hold is a 200 with solved false and the reason; a body that is
// not a solution's shape is a 400.
func (a *API) verifyChallenge(w http.ResponseWriter, r *http.Request) {
	var body verifyChallengeBody
	if err := decode(w, r, verifyChallengeFields, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err := challengeSolution(&body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if a.challenger == nil {
		a.writeError(w, r, noChallenges())
		return
	}
	if s.Provider != 0 && !a.challenger.Provider(s.Provider) {
		a.writeError(w, r, newProblem(kindInvalidField, "provider", "names a provider this server is not configured with"))
		return
	}
	res, err := a.challenger.Verify(r.Context(), tenantOf(r.Context()), "", s)
	if err != nil {
		a.challengeStoreError(w, r, err)
		return
	}
	a.writeJSON(w, r, http.StatusOK, verifiedJSON{Solved: res.Solved, Reason: string(res.Reason)})
}

// challengeSolution checks a verify body's shape: a well-formed token and
// a decimal nonce, or a known provider and a response (remote_ip, if any,
// an address). What the shape cannot tell (a signature, an expiry, the
// work) is the Challenger's.
func challengeSolution(b *verifyChallengeBody) (challenge.Solution, error) {
	var s challenge.Solution
	if b.Token != "" && !challenge.WellFormedToken(b.Token) {
		return s, newProblem(kindInvalidField, "token", "is not a token POST /v1/challenge issued")
	}
	s.Token = b.Token
	if b.RemoteIP != "" {
		ip, err := netip.ParseAddr(b.RemoteIP)
		if err != nil || ip.Zone() != "" {
			return s, newProblem(kindInvalidField, "remote_ip", "must be an IPv4 or IPv6 address, without zone, port or prefix length")
		}
		s.RemoteIP = ip
	}
	if b.Provider == "" {
		if b.Response != "" {
			return s, newProblem(kindMissingField, "provider", "is required with response: whose response it is")
		}
		if b.Token == "" {
			return s, newProblem(kindMissingField, "token", "is required: a proof-of-work token and its nonce, or a provider and its response")
		}
		if _, ok := challenge.ParseNonce(b.Nonce); !ok {
			return s, &problemError{kind: missingOrInvalid(b.Nonce), field: "nonce", detail: "is required with a proof-of-work token: a decimal number below 2^64, no sign or leading zero"}
		}
		s.Nonce = b.Nonce
		return s, nil
	}
	k, ok := challenge.ParseKind(b.Provider)
	if !ok || k == challenge.ProofOfWork {
		return s, newProblem(kindInvalidField, "provider", "must be turnstile, hcaptcha or recaptcha")
	}
	if b.Nonce != "" {
		return s, newProblem(kindInvalidField, "nonce", "goes with a proof-of-work token, not with a provider's response")
	}
	if !challenge.WellFormedResponse(b.Response) {
		return s, &problemError{kind: missingOrInvalid(b.Response), field: "response", detail: "is required with provider: the widget's response, 1 to 8192 printable ASCII characters"}
	}
	s.Provider, s.Response = k, b.Response
	return s, nil
}

// missingOrInvalid is the kind of a problem with a required string: missing
// when it is empty.
func missingOrInvalid(s string) *kind {
	if s == "" {
		return kindMissingField
	}
	return kindInvalidField
}

// challengeStoreError answers a Challenger's infrastructure error: 503 when
// the store does not answer or is full (no solution was accepted), else a
// counted 500.
func (a *API) challengeStoreError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, challenge.ErrStoreUnavailable):
		a.writeError(w, r, newProblem(kindStoreUnavailable, "", "the store does not answer; nothing was verified; try again"))
	case errors.Is(err, challenge.ErrStoreFull):
		a.writeError(w, r, newProblem(kindStoreFull, "", "the store holds as many spent challenges as it may; nothing was verified"))
	default:
		a.engineError(w, r, "challenge verify", err)
	}
}

// solver serves GET /v1/challenge/solver.js: the self-contained Web Crypto
// solver, for a plug-in to serve from its own origin.
func (a *API) solver(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(challenge.Solver())
}
