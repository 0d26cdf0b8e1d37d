package proxy

import (
	"bytes"
	"context"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/breached/hibp"
)

// BreachedRanges answers breached-password ranges in the format of Have I
// Been Pwned's range API: the server's *breached.Live (its local corpus, or
// the range API it forwards to, swapped on a reload). Range returns every
// breached hash whose SHA-1 starts with prefix (5 upper-case hex digits),
// as SUFFIX:COUNT lines; any error means "not known to be breached".
type BreachedRanges interface {
	Range(ctx context.Context, prefix string) ([]byte, error)
}

// rangesHolder holds the BreachedRanges in an atomic pointer.
type rangesHolder struct{ r BreachedRanges }

// SetBreached sets the breached-password ranges the routes' passwords are
// looked up in, as Config.Breached: for a server that opens them after the
// proxy. nil turns the lookup off. Requests already inspected finish with
// the ranges they started with.
func (p *Proxy) SetBreached(r BreachedRanges) {
	if r == nil {
		p.breached.Store(nil)
		return
	}
	p.breached.Store(&rangesHolder{r})
}

// breachedPassword reports whether password is in a breach: its SHA-1 is
// computed and its suffix found in the range in the process (hibp). The
// password, its hash and its suffix live on this call's stack only: the
// report carries a boolean, never the hash or a part of it, and nothing of
// them is logged. A range that cannot be had is not a breach: no login
// fails for it.
func (p *Proxy) breachedPassword(ctx context.Context, password string) bool {
	h := p.breached.Load()
	if h == nil {
		return false
	}
	prefix, suffix := hibp.Hash(password)
	body, err := h.r.Range(ctx, prefix)
	if err != nil {
		p.metrics.breachedErr()
		return false
	}
	return hibp.Count(body, suffix) > 0
}

// stepsUp reports whether v, a success report's verdict, asks for a second
// factor before the end user is signed in.
func stepsUp(v authguard.Verdict) bool { return v.Action == authguard.StepUp }

// passes reports whether the route lets a step_up verdict through: every
// one of its reasons is in the route's StepUpPass.
func passes(c *compiled, v authguard.Verdict) bool {
	if len(c.StepUpPass) == 0 || len(v.Reasons) == 0 {
		return false
	}
	for _, r := range v.Reasons {
		if !slices.Contains(c.StepUpPass, r) {
			return false
		}
	}
	return true
}

// StepUpPageData is what a route's StepUpPage is executed with.
type StepUpPageData struct {
	// Breached says the password the end user typed is in a breached-
	// password corpus (the verdict's reason breached_password): the page
	// may ask her to reset it. False for the other reasons (the account or
	// the address under attack), which the page should not name.
	Breached bool
}

// builtinStepUpPage is the step-up page without a route's StepUpPage.
var builtinStepUpPage = template.Must(template.New("step-up").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign-in not completed</title></head>
<body>
<h1>Sign-in not completed</h1>
{{if .Breached -}}
<p>We could not sign you in: your password appears in a known data breach. Reset it, then sign in again.</p>
{{- else -}}
<p>We could not sign you in: this sign-in needs a further check that cannot be made here. Try again later, or contact the site's support.</p>
{{- end}}
</body>
</html>
`))

// ProblemStepUp (403): a JSON route's success that the engine answered
// step_up; the upstream's answer, and the session in it, were held back.
const ProblemStepUp = wire.ProblemBase + "step-up"

var problemStepUp = &problemKind{ProblemStepUp, "Sign-in not completed", http.StatusForbidden}

// stepUpStatus is the status of a held-back answer: 403, since the
// sign-in was refused, and no status a client would retry (429) or follow
// (3xx) into the upstream's signed-in pages.
const stepUpStatus = http.StatusForbidden

// holdBack replaces the upstream's answer to a success that the engine
// answered step_up with the route's step-up page (a problem document on a
// JSON route): nothing of the upstream's answer reaches the end user — not
// its Set-Cookie, its Location or its body — so the session the upstream
// started is never delivered. The upstream still holds that session until
// it expires there: the proxy cannot end it, but nobody holds its key.
func (p *Proxy) holdBack(resp *http.Response, c *compiled, v authguard.Verdict) {
	// The one reason the page names: the only one that tells the end user
	// what to do (change the password). The others (the account or the
	// address under attack) would tell a stuffer which accounts are
	// watched.
	breached := slices.Contains(v.Reasons, authguard.ReasonBreachedPassword)
	resp.Body.Close()
	var b bytes.Buffer
	h := http.Header{}
	if c.Body == JSON {
		detail := "this sign-in needs a further check that cannot be made here; try again later"
		if breached {
			detail = "the password appears in a known data breach; reset it, then sign in again"
		}
		rec := &headerRecorder{h: h}
		writeProblem(rec, problemStepUp, detail)
		b.Write(rec.body.Bytes())
	} else {
		t := c.StepUpPage
		if t == nil {
			t = builtinStepUpPage
		}
		if err := t.Execute(&b, StepUpPageData{Breached: breached}); err != nil {
			p.log.Error("proxy: the step-up page does not execute; serving the built-in one", "route", c.Name, "error", err.Error())
			b.Reset()
			_ = builtinStepUpPage.Execute(&b, StepUpPageData{Breached: breached})
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
	}
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	resp.StatusCode, resp.Status = stepUpStatus, strconv.Itoa(stepUpStatus)+" "+http.StatusText(stepUpStatus)
	resp.Header = h
	resp.Trailer = nil
	resp.TransferEncoding = nil
	resp.ContentLength = int64(b.Len())
	resp.Body = io.NopCloser(bytes.NewReader(b.Bytes()))
	c.m.answer(answerSteppedUp)
}

// headerRecorder is an http.ResponseWriter that keeps what writeProblem
// writes, to be sent as a held-back answer's replacement.
type headerRecorder struct {
	h    http.Header
	body bytes.Buffer
}

func (r *headerRecorder) Header() http.Header         { return r.h }
func (r *headerRecorder) WriteHeader(int)             {}
func (r *headerRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// maxLogoutBody bounds what is read of the logout's answer before the
// connection is let go.
const maxLogoutBody = 64 << 10

// logOut asks the upstream to end the session a held-back answer started:
// a GET of the route's StepUpLogout with out's cookies (out is the request
// the upstream answered), the held answer's Set-Cookie values (held)
// replacing those of the same name, and out's Host and forwarding
// headers. It waits for the answer (within the upstream timeout) so that
// the session is over before the end user sees the step-up page.
func (p *Proxy) logOut(out *http.Request, c *compiled, held []string) {
	set := map[string]string{}
	var order []string
	for _, ck := range out.Cookies() {
		if _, ok := set[ck.Name]; !ok {
			order = append(order, ck.Name)
		}
		set[ck.Name] = ck.Value
	}
	for _, line := range held {
		ck, err := http.ParseSetCookie(line)
		if err != nil || ck.Value == "" || ck.MaxAge < 0 {
			continue
		}
		if _, ok := set[ck.Name]; !ok {
			order = append(order, ck.Name)
		}
		set[ck.Name] = ck.Value
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(out.Context()), p.timeout)
	defer cancel()
	u := *out.URL
	u.Path, u.RawPath, u.RawQuery = singleJoin(p.upstream.Path, c.StepUpLogout), "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		p.log.Warn("proxy: the held session's logout could not be made", slog.String("route", c.Name), slog.String("error", err.Error()))
		return
	}
	req.Host = out.Host
	for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "User-Agent"} {
		if v := out.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	for _, name := range order {
		req.AddCookie(&http.Cookie{Name: name, Value: set[name]})
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		p.log.Warn("proxy: the held session's logout failed; the upstream keeps it, undelivered, until it expires",
			slog.String("route", c.Name), slog.String("error", err.Error()))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxLogoutBody))
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		p.log.Warn("proxy: the upstream refused the held session's logout; it keeps the session, undelivered, until it expires",
			slog.String("route", c.Name), slog.Int("status", resp.StatusCode))
	}
}

// singleJoin joins the upstream's base path and a path with one slash
// between them, as the ReverseProxy joins a request's.
func singleJoin(base, path string) string {
	switch a, b := strings.HasSuffix(base, "/"), strings.HasPrefix(path, "/"); {
	case a && b:
		return base + path[1:]
	case !a && !b:
		return base + "/" + path
	}
	return base + path
}
