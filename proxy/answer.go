package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/challenge"
)

// The problem types the proxy answers with besides the API's (wire's):
// stable, as the API's are.
const (
	// ProblemUnreadableRequest (400): a route's request whose fields
	// cannot be read as the route reads them (a field given twice, a body
	// that does not parse), or that the engine will not count.
	ProblemUnreadableRequest = wire.ProblemBase + "unreadable-request"
	// ProblemUnavailable (503): the engine or the challenge store could
	// not decide; nothing was forwarded.
	ProblemUnavailable = wire.ProblemBase + "unavailable"
	// ProblemUpstreamUnavailable (502): the upstream could not be reached
	// or failed before answering.
	ProblemUpstreamUnavailable = wire.ProblemBase + "upstream-unavailable"
	// ProblemUpstreamTimeout (504): the upstream sent no response headers
	// within Config.UpstreamTimeout.
	ProblemUpstreamTimeout = wire.ProblemBase + "upstream-timeout"
	// ProblemChallenge (429): a JSON route's captcha verdict; the problem
	// carries the challenge, to be sent back solved in ChallengeHeader.
	ProblemChallenge = wire.ProblemBase + "challenge"
)

// problemKind is one kind of problem the proxy answers.
type problemKind struct {
	typ, title string
	status     int
}

var (
	problemUnreadable          = &problemKind{ProblemUnreadableRequest, "Unreadable request", http.StatusBadRequest}
	problemBodyTooLarge        = &problemKind{wire.ProblemBodyTooLarge, "Body too large", http.StatusRequestEntityTooLarge}
	problemUnsupportedType     = &problemKind{wire.ProblemUnsupportedMediaType, "Unsupported media type", http.StatusUnsupportedMediaType}
	problemOverloaded          = &problemKind{wire.ProblemOverloaded, "Overloaded", http.StatusServiceUnavailable}
	problemUnavailable         = &problemKind{ProblemUnavailable, "Unavailable", http.StatusServiceUnavailable}
	problemUpstreamUnavailable = &problemKind{ProblemUpstreamUnavailable, "Upstream unavailable", http.StatusBadGateway}
	problemUpstreamTimeout     = &problemKind{ProblemUpstreamTimeout, "Upstream timeout", http.StatusGatewayTimeout}
	problemChallenge           = &problemKind{ProblemChallenge, "Challenge", http.StatusTooManyRequests}
)

// writeProblem writes an RFC 9457 problem document of kind k. detail is
// the proxy's own text, never a submitted value.
func writeProblem(w http.ResponseWriter, k *problemKind, detail string) {
	writeProblemWith(w, k, detail, nil)
}

// writeProblemWith writes a problem with extra members after the standard
// ones.
func writeProblemWith(w http.ResponseWriter, k *problemKind, detail string, extra map[string]any) {
	var b bytes.Buffer
	b.Grow(256)
	enc := json.NewEncoder(&b)
	if extra == nil {
		_ = enc.Encode(wire.Problem{Type: k.typ, Title: k.title, Status: k.status, Detail: detail})
	} else {
		_ = enc.Encode(struct {
			wire.Problem
			Challenge any `json:"challenge"`
		}{wire.Problem{Type: k.typ, Title: k.title, Status: k.status, Detail: detail}, extra["challenge"]})
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(k.status)
	_, _ = w.Write(b.Bytes())
}

// wireVerdict is v as client.Responder reads it.
func wireVerdict(v authguard.Verdict) wire.Verdict {
	return wire.Verdict{Action: v.Action.String(), DelayMS: v.Delay.Milliseconds(), RetryAfter: v.RetryAfter()}
}

// builtinDelayPage is the delay page without Config.DelayPage.
var builtinDelayPage = template.Must(template.New("delay").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Too many attempts</title></head>
<body>
<h1>Too many attempts</h1>
<p>Please wait {{.Seconds}} {{if eq .Seconds 1}}second{{else}}seconds{{end}}, then try again.</p>
</body>
</html>
`))

// writeDelayPage is a form route's client.ResponderConfig.Delay: the page
// of a delay, which depends on the wait alone. Respond has set
// Retry-After, RateLimit and Cache-Control.
func (p *Proxy) writeDelayPage(w http.ResponseWriter, _ *http.Request, seconds int) {
	var b bytes.Buffer
	t := p.delayPage
	if t == nil {
		t = builtinDelayPage
	}
	if err := t.Execute(&b, DelayPageData{Seconds: seconds}); err != nil {
		p.log.Error("proxy: the delay page does not execute; serving the built-in one", "error", err.Error())
		b.Reset()
		_ = builtinDelayPage.Execute(&b, DelayPageData{Seconds: seconds})
	}
	writePage(w, http.StatusTooManyRequests, b.Bytes())
}

// acceptedPage is a form route's answer to a send flow's deny.
var acceptedPage = []byte(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Code requested</title></head>
<body>
<h1>Code requested</h1>
<p>If this address can receive codes, one is on its way.</p>
</body>
</html>
`)

// accepted answers a send flow's deny as a code sent: 202, with a page on
// a form route and no body on a JSON one. Only the upstream can write
// its own "code sent" answer, so an end user can tell this one from it;
// it never depends on the destination.
func (p *Proxy) accepted(w http.ResponseWriter, c *compiled) {
	if c.Body == Form {
		w.Header().Set("Cache-Control", "no-store")
		writePage(w, http.StatusAccepted, acceptedPage)
		return
	}
	c.respond.Accept(w, nil)
}

// writePage writes an HTML page.
func writePage(w http.ResponseWriter, status int, page []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(page)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// challenge answers a captcha verdict: on a form route, the challenge page
// with the submission held (sealed) for when it is solved; on a JSON
// route, a problem carrying the challenge.
func (p *Proxy) challenge(w http.ResponseWriter, r *http.Request, c *compiled, body []byte, v authguard.Verdict) {
	if p.challenger == nil {
		c.m.answer(answerChallenged)
		c.respond.Respond(w, r, wireVerdict(v))
		return
	}
	ctx := r.Context()
	if c.Body == JSON {
		ch, err := p.challenger.Issue(ctx, challenge.IssueOptions{Tenant: p.tenant, Kind: p.challenger.PageKind()})
		if err != nil {
			p.challengeError(w, c, err)
			return
		}
		c.m.answer(answerChallenged)
		writeProblemWith(w, problemChallenge, "solve the challenge, then send the request again with its solution in the "+ChallengeHeader+" header",
			map[string]any{"challenge": challengeJSON(ch)})
		return
	}
	handle, err := p.challenger.Hold(ctx, p.tenant, challenge.Submission{
		Method: r.Method, Path: r.URL.RequestURI(), ContentType: r.Header.Get("Content-Type"), Body: body})
	if err != nil {
		p.challengeError(w, c, err)
		return
	}
	p.servePage(w, r, c.m, handle)
}

// servePage issues a challenge bound to handle and serves its page.
func (p *Proxy) servePage(w http.ResponseWriter, r *http.Request, m routeMetrics, handle string) {
	ch, err := p.challenger.Issue(r.Context(), challenge.IssueOptions{Tenant: p.tenant, Kind: p.challenger.PageKind(), Handle: handle})
	if err != nil {
		m.answer(answerUnavailable)
		p.log.Warn("proxy: no challenge could be issued", "route", m.name, "error", err.Error())
		w.Header().Set("Retry-After", "5")
		writeProblem(w, problemUnavailable, "no challenge could be issued; try again")
		return
	}
	m.answer(answerChallenged)
	p.challenger.ServePage(w, r, ch, challenge.PageOptions{Handle: handle, Action: p.solution, Status: http.StatusTooManyRequests})
}

// challengeError answers a challenge the challenger could not make: the
// request is not forwarded.
func (p *Proxy) challengeError(w http.ResponseWriter, c *compiled, err error) {
	p.log.Warn("proxy: no challenge could be issued", "route", c.Name, "error", err.Error())
	p.unavailable(w, c, "no challenge could be issued; try again")
}

// challengeJSON is a challenge as a JSON route's problem carries it.
func challengeJSON(ch challenge.Challenge) any {
	return struct {
		Token      string `json:"token"`
		Kind       string `json:"kind"`
		Difficulty int    `json:"difficulty,omitempty"`
		SiteKey    string `json:"site_key,omitempty"`
		Expires    string `json:"expires"`
	}{ch.Token, ch.Kind.String(), ch.Difficulty, ch.SiteKey, ch.Expires.UTC().Format(time.RFC3339)}
}

// solutionRoute is the route label of solution posts that solve nothing.
const solutionRoute = "_challenge"

// serveSolution serves a challenge page's post: a solved challenge gives
// back the held submission, which then goes on as its route's request
// with the challenge solved; an unsolved one gets a fresh page.
func (p *Proxy) serveSolution(w http.ResponseWriter, r *http.Request) {
	m := p.metrics.route(solutionRoute)
	red, err := p.challenger.Redeem(r.Context(), p.tenant, r, p.clientAddr(r))
	if err != nil {
		m.answer(answerUnavailable)
		p.log.Warn("proxy: a challenge solution could not be redeemed", "error", err.Error())
		w.Header().Set("Retry-After", "5")
		writeProblem(w, problemUnavailable, "the solution could not be checked; try again")
		return
	}
	if !red.Solved {
		if red.Handle != "" {
			p.servePage(w, r, m, red.Handle) // the submission is still held
			return
		}
		m.answer(answerRefused)
		writeProblem(w, problemUnreadable, "the challenge's solution cannot be read")
		return
	}
	held, err := p.restore(r, red.Submission)
	if err != nil {
		m.answer(answerRefused)
		writeProblem(w, problemUnreadable, "the held request cannot be sent on")
		return
	}
	c := p.match(held)
	if c == nil {
		// The routes changed while the challenge was solved: the held
		// request is no route's, and is not forwarded unchecked.
		m.answer(answerRefused)
		writeProblem(w, problemUnreadable, "the held request matches no route any more; send it again")
		return
	}
	c.m.answer(answerSolved)
	p.serveRoute(w, held, c, true)
}

// maxSolutionHeader bounds ChallengeHeader's value.
const maxSolutionHeader = 4 << 10

// parseSolution reads ChallengeHeader's value: form-encoded token and
// nonce, or provider, response and optionally token, each at most once
// and nothing else. false when it is none of these.
func parseSolution(h string) (challenge.Solution, bool) {
	var s challenge.Solution
	if h == "" || len(h) > maxSolutionHeader {
		return s, false
	}
	vals, err := url.ParseQuery(h)
	if err != nil {
		return s, false
	}
	for k, vs := range vals {
		if len(vs) != 1 {
			return s, false
		}
		switch v := vs[0]; k {
		case "token":
			s.Token = v
		case "nonce":
			s.Nonce = v
		case "response":
			s.Response = v
		case "provider":
			kind, ok := challenge.ParseKind(v)
			if !ok || kind == challenge.ProofOfWork {
				return s, false
			}
			s.Provider = kind
		default:
			return s, false
		}
	}
	switch {
	case s.Provider == 0 && (s.Token == "" || s.Nonce == "" || s.Response != ""):
		return s, false
	case s.Provider != 0 && (s.Response == "" || s.Nonce != ""):
		return s, false
	}
	return s, true
}

// verifyHeader verifies ChallengeHeader's solution for the proxy's tenant;
// a header that does not parse solves nothing.
func (p *Proxy) verifyHeader(ctx context.Context, h string, ip netip.Addr) (challenge.Result, error) {
	s, ok := parseSolution(h)
	if !ok {
		return challenge.Result{Reason: challenge.ReasonMalformed}, nil
	}
	s.RemoteIP = ip
	return p.challenger.Verify(ctx, p.tenant, "", s)
}
