package client

import (
	"context"
	"io"
	"net/http"
	"time"
)

// The kinds of challenge tollgate issues: its built-in proof of work, or a
// provider CAPTCHA that tollgate verifies with the provider's secret (which
// stays in tollgate's configuration, never in the caller's).
const (
	ChallengePoW       = "pow"
	ChallengeTurnstile = "turnstile"
	ChallengeHCaptcha  = "hcaptcha"
	ChallengeReCAPTCHA = "recaptcha"
)

// Challenge is a challenge tollgate issued (POST /v1/challenge).
type Challenge struct {
	// Token is the signed challenge, opaque: send it back with the
	// solution. It is single-use and expires at ExpiresAt.
	Token string `json:"token"`
	// Kind is ChallengePoW or a provider's kind.
	Kind string `json:"kind"`
	// Difficulty is the leading zero bits a proof-of-work solution needs:
	// SHA-256 of Token's characters followed by the nonce as 8 bytes
	// big-endian. 0 for a provider.
	Difficulty int `json:"difficulty"`
	// ExpiresAt is when the token stops being accepted.
	ExpiresAt time.Time `json:"expires_at"`
	// SolverURL is the path of tollgate's solver script.
	SolverURL string `json:"solver_url"`
	// SiteKey is a provider's site key for its widget; "" for proof of work.
	SiteKey string `json:"site_key,omitempty"`
}

// ChallengeSolution is a solution to verify (POST /v1/challenge/verify): a
// proof-of-work Token and its Nonce, or a provider's widget Response (with
// Provider, the Token if one was issued, and the end user's RemoteIP if
// known).
type ChallengeSolution struct {
	Token    string `json:"token,omitempty"`
	Nonce    string `json:"nonce,omitempty"`
	Provider string `json:"provider,omitempty"`
	Response string `json:"response,omitempty"`
	RemoteIP string `json:"remote_ip,omitempty"`
}

// ChallengeResult is tollgate's verdict on a solution.
type ChallengeResult struct {
	// Solved is true at most once per token (or provider response), on
	// every tollgate instance sharing the store: the solution is spent.
	Solved bool `json:"solved"`
	// Reason is "solved", or why not: "invalid", "expired", "replayed",
	// "insufficient_work", "malformed", "not_configured",
	// "provider_rejected" or "provider_unavailable" (tollgate fails closed).
	Reason string `json:"reason"`
}

// maxSolverBytes caps the solver script read; tollgate's is under 4 KiB.
const maxSolverBytes = 256 << 10

// IssueChallenge asks tollgate for a challenge of kind (ChallengePoW when
// ""): for a page that answers a captcha verdict. A server that issues no
// challenges answers an *Error of status 404; a provider it is not
// configured with, an *Error of type wire.ProblemInvalidField for "kind".
func (c *Client) IssueChallenge(ctx context.Context, kind string) (Challenge, error) {
	var ch Challenge
	body := struct {
		Kind string `json:"kind,omitempty"`
	}{kind}
	if err := c.call(ctx, "challenge", "/v1/challenge", body, &ch); err != nil {
		return Challenge{}, err
	}
	return ch, nil
}

// VerifyChallenge asks tollgate whether s solves its challenge, and spends
// it: Solved is true at most once for a token. Send captcha_solved with the
// next check only when it is.
func (c *Client) VerifyChallenge(ctx context.Context, s ChallengeSolution) (ChallengeResult, error) {
	var r ChallengeResult
	if err := c.call(ctx, "challenge-verify", "/v1/challenge/verify", s, &r); err != nil {
		return ChallengeResult{}, err
	}
	return r, nil
}

// ChallengeSolver fetches tollgate's proof-of-work solver script (GET
// /v1/challenge/solver.js), self-contained JavaScript for a page to run
// under its own Content-Security-Policy. It is the same for every call of
// one tollgate version: fetch it once.
func (c *Client) ChallengeSolver(ctx context.Context) ([]byte, error) {
	const op = "challenge-solver"
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	token := c.token
	if c.source != nil {
		var err error
		if token, err = c.source(ctx); err != nil {
			return nil, transportError(ctx, op, "no bearer token from the token source", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/challenge/solver.js", nil)
	if err != nil { // the base URL was checked by New
		return nil, err
	}
	req.Header.Set("Accept", "text/javascript")
	req.Header.Set("User-Agent", c.agent)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(ctx, op, "tollgate does not answer", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, problemError(op, res)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxSolverBytes+1))
	if err != nil {
		return nil, transportError(ctx, op, "reading the answer", err)
	}
	if len(b) > maxSolverBytes || len(b) == 0 {
		return nil, &callError{op: op, kind: ErrUnavailable, msg: "the answer is not a solver script"}
	}
	return b, nil
}
