package challenge

import (
	"context"
	"errors"
	"net/http"
)

// PageOptions shape one challenge page.
type PageOptions struct {
	// Handle is the held submission's handle (from Hold) the page posts
	// back with the solution. Required.
	Handle string
	// Action is where the page posts. The default is Config.SolutionPath.
	Action string
	// Status is the page's HTTP status. The default is 200.
	Status int
}

// PageData is what the page template is executed with.
type PageData struct {
	Challenge Challenge
	// Kind is the challenge's kind as its wire word ("pow", "turnstile"...).
	Kind string
	// Handle, Action: see PageOptions.
	Handle string
	Action string
	// Nonce is the CSP nonce of the page's script and style elements.
	Nonce string
	// Script is the solver's JavaScript, for an inline script element.
	Script string
}

// ServePage writes the challenge page for ch (issued with its Handle) to w:
// HTML with a strict Content-Security-Policy that runs the solver (or the
// provider's widget) and then POSTs the solution, the token and the handle
// to Action as a form. It sets no cookie and is never cached.
func (c *Challenger) ServePage(w http.ResponseWriter, r *http.Request, ch Challenge, o PageOptions) {
}

// Redemption is the outcome of a solution post.
type Redemption struct {
	// Result is the verdict on the solution.
	Result
	// Submission is the held submission, given out once: only when Solved.
	Submission Submission
	// Handle is the handle the post named, when it is well-formed: the
	// caller may serve a fresh page for it (the submission is still held)
	// when the solution failed. It is "" for a post that names none.
	Handle string
}

// Redeem reads a solution post (a form from the page, at most 16 KiB),
// verifies its solution for tenant and the handle it names, and returns the
// held submission, once. When the Result is not Solved, or the error is
// not nil, the Submission is empty and the held one is left as it was (a
// wrong handle reveals nothing and spends nothing). A bad form is a
// Result with ReasonMalformed, not an error.
func (c *Challenger) Redeem(ctx context.Context, tenant string, r *http.Request) (Redemption, error) {
	return Redemption{Result: Result{Reason: ReasonMalformed}}, errors.New("challenge: not built yet")
}

// Solver is the solver script: self-contained JavaScript that finds a
// proof-of-work nonce with crypto.subtle.digest. On a page it solves the
// form marked data-tollgate-challenge and submits it; it also defines
// window.tollgateSolve(token, difficulty) → Promise of the nonce, for a
// plug-in's own page.
func Solver() []byte { return nil }
