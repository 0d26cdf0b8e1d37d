package challenge

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"html/template"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
)

//go:embed solver.js
var solverJS []byte

//go:embed page.html
var pageHTML string

var builtinPage = template.Must(template.New("challenge").Parse(pageHTML))

// PageOptions shape one challenge page.
type PageOptions struct {
	// Handle is the held submission's handle (from Hold) the page posts
	// back with the solution; the challenge must have been issued with it.
	// Required.
	Handle string
	// Action is where the page posts. The default is Config.SolutionPath.
	Action string
	// Status is the page's HTTP status. The default is 200.
	Status int
}

// PageData is what the page template is executed with.
type PageData struct {
	// Challenge is the challenge the page solves.
	Challenge Challenge
	// Kind is the challenge's kind as its wire word ("pow", "turnstile"...).
	Kind string
	// Handle and Action: see PageOptions.
	Handle string
	Action string
	// Nonce is the CSP nonce of the page's script and style elements.
	Nonce string
	// Script is the solver's JavaScript, for an inline script element
	// carrying Nonce.
	Script template.JS
	// WidgetScript is the provider's widget script URL, and WidgetClass the
	// class of the element it renders into; both "" for proof of work.
	WidgetScript string
	WidgetClass  string
}

// widget is what a provider's page loads, and what its CSP must allow.
type widget struct {
	script, class, field string
	// origins are the sources its scripts, frames, styles and calls come
	// from, as the providers document them for a CSP.
	origins string
}

var widgets = map[Kind]widget{
	Turnstile: {"https://challenges.cloudflare.com/turnstile/v0/api.js", "cf-turnstile", "cf-turnstile-response",
		"https://challenges.cloudflare.com"},
	HCaptcha: {"https://js.hcaptcha.com/1/api.js", "h-captcha", "h-captcha-response",
		"https://hcaptcha.com https://*.hcaptcha.com"},
	ReCAPTCHA: {"https://www.google.com/recaptcha/api.js", "g-recaptcha", "g-recaptcha-response",
		"https://www.google.com/recaptcha/ https://www.gstatic.com/recaptcha/ https://recaptcha.google.com/recaptcha/"},
}

// csp is the page's Content-Security-Policy: nothing loads or runs but the
// page's own nonce-carrying script and style (and, for a provider, its
// widget's origins), the page cannot be framed, and no base element can
// move its links. It has no form-action: a browser applies it to the
// redirects that follow the post, and the login the post resumes may
// redirect to any origin.
func csp(nonce string, k Kind) string {
	var extra, frames string
	if w, ok := widgets[k]; ok {
		extra, frames = " "+w.origins, "; frame-src "+w.origins+"; connect-src "+w.origins
	}
	return "default-src 'none'; script-src 'nonce-" + nonce + "'" + extra +
		"; style-src 'nonce-" + nonce + "'" + extra + frames +
		"; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// ServePage writes the challenge page for ch (issued with o.Handle) to w:
// HTML with a strict Content-Security-Policy that runs the solver (or the
// provider's widget) and then POSTs the solution, the token and the handle
// to Action as a form. It sets no cookie and is never cached. The page
// holds the handle and the challenge, never the held submission.
func (c *Challenger) ServePage(w http.ResponseWriter, r *http.Request, ch Challenge, o PageOptions) {
	if o.Action == "" {
		o.Action = c.cfg.SolutionPath
	}
	if o.Status == 0 {
		o.Status = http.StatusOK
	}
	var n [16]byte
	rand.Read(n[:])
	nonce := base64.RawStdEncoding.EncodeToString(n[:])
	data := PageData{Challenge: ch, Kind: ch.Kind.String(), Handle: o.Handle, Action: o.Action,
		Nonce: nonce, Script: template.JS(solverJS)}
	if wd, ok := widgets[ch.Kind]; ok {
		data.WidgetScript, data.WidgetClass = wd.script, wd.class
	}
	var buf bytes.Buffer
	if err := c.page.Execute(&buf, data); err != nil {
		http.Error(w, "the challenge page failed to render", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp(nonce, ch.Kind))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(o.Status)
	_, _ = w.Write(buf.Bytes())
}

// MaxSolutionBytes bounds a solution post's body.
const MaxSolutionBytes = 16 << 10

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

// Redeem reads a solution post (a form from the page, at most
// MaxSolutionBytes), verifies its solution for tenant and the handle it
// names, and returns the held submission, once. remote, when valid, is
// passed to a provider as remoteip (the caller's idea of the client's
// address; tollgate reads no header for it). When the Result is not
// Solved, or the error is not nil, the Submission is empty and the held
// one is left as it was (a wrong handle reveals nothing and spends
// nothing). A bad form is a Result with ReasonMalformed, not an error.
func (c *Challenger) Redeem(ctx context.Context, tenant string, r *http.Request, remote netip.Addr) (Redemption, error) {
	p, ok := readSolutionPost(r)
	if !ok {
		return Redemption{Result: Result{Reason: ReasonMalformed}}, nil
	}
	red := Redemption{Handle: p.handle}
	s := Solution{Token: p.token, Nonce: p.nonce, RemoteIP: remote}
	if t, _, ok := parseToken(p.token); ok && t.kind != ProofOfWork {
		s.Provider, s.Nonce, s.Response = t.kind, "", p.responses[t.kind]
	}
	res, err := c.Verify(ctx, tenant, p.handle, s)
	if err != nil || !res.Solved {
		red.Result = res
		return red, err
	}
	sub, ok, err := c.take(ctx, tenant, p.handle)
	if err != nil {
		red.Result = Result{Reason: ReasonUnavailable}
		return red, err
	}
	if !ok {
		red.Result = Result{Reason: ReasonNoSubmission}
		return red, nil
	}
	red.Result, red.Submission = res, sub
	return red, nil
}

// solutionPost is a parsed solution post.
type solutionPost struct {
	handle, token, nonce string
	responses            map[Kind]string
}

// readSolutionPost reads r as a solution post: a POST of
// application/x-www-form-urlencoded, at most MaxSolutionBytes, with one
// well-formed tollgate_handle, one tollgate_token, and a tollgate_nonce or
// a provider's response (tollgate_response, or the field its widget
// fills). Other fields are ignored: the widgets add their own.
func readSolutionPost(r *http.Request) (solutionPost, bool) {
	var p solutionPost
	if r.Method != http.MethodPost {
		return p, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return p, false
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, MaxSolutionBytes)); err != nil {
		return p, false
	}
	return parseSolutionForm(buf.String())
}

// parseSolutionForm parses a solution post's body; see readSolutionPost.
func parseSolutionForm(body string) (solutionPost, bool) {
	var p solutionPost
	q, err := url.ParseQuery(body)
	if err != nil {
		return p, false
	}
	one := func(name string) (string, bool) {
		v := q[name]
		if len(v) > 1 {
			return "", false
		}
		if len(v) == 0 {
			return "", true
		}
		return v[0], true
	}
	var ok1, ok2, ok3, ok4 bool
	p.handle, ok1 = one("tollgate_handle")
	p.token, ok2 = one("tollgate_token")
	p.nonce, ok3 = one("tollgate_nonce")
	response, ok4 := one("tollgate_response")
	if !ok1 || !ok2 || !ok3 || !ok4 || !validHandle(p.handle) || p.token == "" {
		return solutionPost{}, false
	}
	p.responses = map[Kind]string{}
	for k, w := range widgets {
		v, ok := one(w.field)
		if !ok {
			return solutionPost{}, false
		}
		if response != "" {
			v = response
		}
		p.responses[k] = v
	}
	return p, true
}

// Solver is the solver script: self-contained JavaScript that finds a
// proof-of-work nonce with crypto.subtle.digest. On a page it solves the
// form marked data-tollgate-challenge (data-kind="pow", data-token,
// data-difficulty, an input named tollgate_nonce) and submits it; it also
// defines window.tollgateSolve(token, difficulty) → Promise of the nonce,
// for a plug-in's own page.
func Solver() []byte { return solverJS }
