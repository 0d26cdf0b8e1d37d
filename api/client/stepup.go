package client

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// DefaultStepUpFlow is the flow second-factor tries are checked and
// reported on unless GuardConfig.StepUpFlow or StepUpReport.Flow says
// otherwise: tollgate's built-in step_up, whose counters are its own, so
// that wrong codes never lock the password.
const DefaultStepUpFlow = "step_up"

// DefaultStepUpTTL is how long a Guard keeps a login waiting for its second
// factor unless GuardConfig.StepUpTTL says otherwise: the built-in policy's
// step-up ticket lives as long, and a code sent by e-mail may take minutes.
const DefaultStepUpTTL = 10 * time.Minute

// StepUpField is the form field (or top-level JSON member) a second-factor
// try is posted in, to the URL of the login it completes.
const StepUpField = "tollgate_code"

// StepUpCookieName is the cookie that names a browser's pending step-up: a
// random 256-bit handle, HttpOnly, which unseals the login it names and
// nothing else.
const StepUpCookieName = "__Host-tollgate-step-up"

// maxStepUpTries is how many wrong tries one pending step-up takes before
// it is dropped and the end user signs in again (for a fresh code): on top
// of the step-up flow's own counters, it keeps one code from being guessed
// at for its whole life.
const maxStepUpTries = 5

// StepUpReport is how a second factor that a step_up verdict asked for
// ended, for Client.ReportStepUp.
type StepUpReport struct {
	// Flow is the step-up flow. The default is DefaultStepUpFlow.
	Flow string
	// Account is the account as the login checked and reported it.
	Account string
	// IP is the address the try comes from.
	IP string
	// Ticket is the step_up verdict's Attempt (the step-up ticket),
	// unchanged. It is required.
	Ticket string
	// Attempt is the attempt token of this try's own check on the step-up
	// flow (that check's proceed carried it), if any: the report then
	// settles the failure the check charged, so a wrong code counts once
	// and a pass is not counted. Without it the report is counted on its
	// own: a wrong code counts on top of its check's charge.
	Attempt string
	// DeviceToken is the device token the login's check carried, if any.
	DeviceToken string
	// Passed is true when the end user passed the second factor.
	Passed bool
}

// stepUpAttemptSeparator joins a step-up report's ticket and its try's
// attempt token in the report's attempt, as tollgate reads it.
const stepUpAttemptSeparator = ","

// ReportStepUp reports a second factor's outcome, step_up_passed or
// step_up_failed, on the step-up flow. A pass answers proceed with the
// device token of the login flow the ticket names (keep it in the device
// cookie): sign the end user in then, and not before. A failure is counted
// on the step-up flow's own counters, never the login's, and answers the
// verdict of the next try; the ticket stays usable until it expires.
//
// A ticket that is expired, forged, or another account's is an *Error of
// type wire.ProblemInvalidField for the field "attempt": have the end user
// sign in again. As for Report, the Verdict is always usable and mode
// answers when tollgate does not; FailOpen's fallback proceeds (with no
// device token), so with it a verified second factor signs in while
// tollgate is down.
func (c *Client) ReportStepUp(ctx context.Context, s StepUpReport, mode FailMode) (Verdict, error) {
	flow := s.Flow
	if flow == "" {
		flow = DefaultStepUpFlow
	}
	outcome := wire.OutcomeStepUpFailed
	if s.Passed {
		outcome = wire.OutcomeStepUpPassed
	}
	attempt := s.Ticket
	if s.Attempt != "" {
		attempt += stepUpAttemptSeparator + s.Attempt
	}
	return c.Report(ctx, wire.ReportRequest{
		Flow: flow, Account: s.Account, IP: s.IP, Outcome: outcome,
		Attempt: attempt, DeviceToken: s.DeviceToken,
	}, mode)
}

// StepUp is the second factor a Guard asks for when a login's success
// report answers step_up (a breached password, an account under attack, an
// escalated address). The Guard does the rest: it drops the login
// handler's answer, keeps the login pending (sealed in GuardConfig.Holds,
// named by a random cookie), checks each try on the step-up flow first
// (a delay answers 429), compares it through Verify, reports it, and runs
// the login handler again, now signed in, only after a pass. A StepUp
// delivers the factor, compares a try and draws the page.
type StepUp interface {
	// Start sends a factor to account's owner (account as the end user
	// typed it, whose password was just verified) and returns the secret
	// tries are compared against, which the Guard keeps sealed on the
	// server, never in a page or a cookie. An error ends the step-up:
	// the end user is asked to try again later, and nothing signs in.
	Start(ctx context.Context, account string) (secret string, err error)
	// Verify reports whether try passes for account and the secret Start
	// returned. It must compare in constant time.
	Verify(ctx context.Context, account, secret, try string) bool
	// Page writes the page that asks for the factor: a form posted back
	// to the request's URL with the try in the field StepUpField. status
	// and message (empty, or why the form is shown again) are the
	// Guard's; the page must not depend on the account.
	Page(w http.ResponseWriter, r *http.Request, status int, message string)
}

// CodeStepUp is the default StepUp: a random 6-digit code sent through
// Send, typed into a small page. Codes are single-use, expire with the
// pending login (GuardConfig.StepUpTTL) and are compared in constant time.
type CodeStepUp struct {
	// Send delivers code to account's owner, by the address your user
	// records hold for it (e-mail, SMS), never one the request names. It
	// is required.
	Send func(ctx context.Context, account, code string) error
	// PageFunc, when set, writes the code page in place of the built-in
	// one, as StepUp.Page does. The default is nil: the built-in page.
	PageFunc func(w http.ResponseWriter, r *http.Request, status int, message string)
}

var _ StepUp = CodeStepUp{}

// Start makes a code and sends it.
func (c CodeStepUp) Start(ctx context.Context, account string) (string, error) {
	if c.Send == nil {
		return "", errors.New("client: step-up: CodeStepUp.Send is nil")
	}
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	code := fmt.Sprintf("%06d", n)
	if err := c.Send(ctx, account, code); err != nil {
		return "", err
	}
	return code, nil
}

// Verify compares try with the code in constant time, spaces around it
// ignored.
func (CodeStepUp) Verify(_ context.Context, _, secret, try string) bool {
	try = strings.TrimSpace(try)
	return secret != "" && subtle.ConstantTimeCompare([]byte(try), []byte(secret)) == 1
}

// Page writes PageFunc's page or the built-in one.
func (c CodeStepUp) Page(w http.ResponseWriter, r *http.Request, status int, message string) {
	if c.PageFunc != nil {
		c.PageFunc(w, r, status, message)
		return
	}
	body := "<p>This sign-in needs a second step: we have sent you a 6-digit code. Enter it below.</p>"
	if message != "" {
		body += `<p id="tollgate-message" role="alert">` + html.EscapeString(message) + "</p>"
	}
	body += `<form method="post"><label for="tollgate-code">Code</label> ` +
		`<input id="tollgate-code" name="` + StepUpField + `" inputmode="numeric" autocomplete="one-time-code" maxlength="6" required autofocus> ` +
		`<button id="tollgate-verify" type="submit">Continue</button></form>`
	writePage(w, status, "Enter your code", body)
}

// The messages of the step-up answers.
const (
	msgStepUpWrong   = "That code is not right. Please try again."
	msgStepUpTooMany = "Too many wrong codes. Please sign in again."
	msgStepUpLost    = "This sign-in has expired. Please sign in again."
)

// pendingStepUp is a login waiting for its second factor, sealed in the
// Guard's HoldStore.
type pendingStepUp struct {
	Account string `json:"a"`
	Ticket  string `json:"t"`
	Device  string `json:"d,omitempty"`
	Secret  string `json:"s"`
	Expires int64  `json:"e"` // Unix ms
	Tries   int    `json:"n,omitempty"`
	JSON    bool   `json:"j,omitempty"`
	// Body is the login's submission (the form, encoded, or the JSON
	// body), given to the handler again after a pass: an unchanged login
	// handler checks the password and signs in as it always does.
	Body []byte `json:"b"`
}

// stepUpBinding binds a pending step-up to the route it was posted to.
func stepUpBinding(r *http.Request) []byte {
	return []byte("step-up\x00" + r.Method + "\x00" + r.URL.RequestURI())
}

// stepUpKey is the store key of a step-up handle, apart from the holds'.
func stepUpKey(handle string) string { return holdKey("step-up\x00" + handle) }

// beginStepUp answers a login whose success report answered step_up, in
// place of the handler's answer: it starts the second factor, keeps the
// login pending and asks for the factor.
func (g *Guard) beginStepUp(w http.ResponseWriter, r *http.Request, a *Attempt) {
	ctx := r.Context()
	if g.stepUp == nil {
		g.log.Warn("tollgate guard: a login needs a second factor and GuardConfig has neither StepUp nor SendCode; not signed in")
		g.stepUpUnavailable(w, a.json)
		return
	}
	secret, err := g.stepUp.Start(ctx, a.account)
	if err != nil {
		g.log.Warn("tollgate guard: the second factor could not be started; not signed in", "err", err)
		g.stepUpUnavailable(w, a.json)
		return
	}
	now := g.client.now()
	p := pendingStepUp{Account: a.account, Ticket: a.result.Attempt, Device: a.device, Secret: secret,
		Expires: now.Add(g.stepTTL).UnixMilli(), JSON: a.json, Body: a.body}
	handle := newHandle()
	if err := g.putPending(ctx, r, handle, p, g.stepTTL); err != nil {
		g.logErr("hold", err)
		g.stepUpUnavailable(w, a.json)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: StepUpCookieName, Value: handle, Path: "/", MaxAge: int(g.stepTTL / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	g.stepUpPage(w, r, a.json, http.StatusOK, "")
}

// putPending seals p for handle and r's route and keeps it for ttl.
func (g *Guard) putPending(ctx context.Context, r *http.Request, handle string, p pendingStepUp, ttl time.Duration) error {
	plain, err := json.Marshal(p)
	if err != nil { // strings, ints and bytes: cannot fail
		return err
	}
	return g.holds.PutHold(ctx, stepUpKey(handle), g.seal.seal(handle, stepUpBinding(r), plain), ttl)
}

// pending is the step-up r's cookie names, unexpired, with its handle.
func (g *Guard) pending(r *http.Request) (pendingStepUp, string, []byte, bool) {
	c, err := r.Cookie(StepUpCookieName)
	if err != nil || !wellFormedHandle(c.Value) {
		return pendingStepUp{}, "", nil, false
	}
	blob, err := g.holds.GetHold(r.Context(), stepUpKey(c.Value))
	if err != nil || blob == nil {
		if err != nil {
			g.logErr("hold", err)
		}
		return pendingStepUp{}, "", nil, false
	}
	plain, ok := g.seal.open(c.Value, stepUpBinding(r), blob)
	var p pendingStepUp
	if !ok || json.Unmarshal(plain, &p) != nil || !g.client.now().Before(time.UnixMilli(p.Expires)) {
		return pendingStepUp{}, "", nil, false
	}
	return p, c.Value, blob, true
}

// take removes handle's pending step-up and reports whether this call did:
// with a store that can take a value at once (MemoryHolds), two posts of
// one right code cannot both sign in.
func (g *Guard) take(ctx context.Context, handle string, blob []byte) bool {
	key := stepUpKey(handle)
	if t, ok := g.holds.(interface {
		TakeHold(ctx context.Context, key string) ([]byte, error)
	}); ok {
		got, err := t.TakeHold(ctx, key)
		if err != nil {
			g.logErr("hold", err)
		}
		return err == nil && subtle.ConstantTimeCompare(got, blob) == 1
	}
	if err := g.holds.DeleteHold(ctx, key); err != nil {
		g.logErr("hold", err)
		return false
	}
	return true
}

// continueStepUp handles a second-factor try: check on the step-up flow,
// compare, report, and on a pass run next as the pending login, signed in.
func (g *Guard) continueStepUp(w http.ResponseWriter, r *http.Request, sub submission, ip string, next http.Handler) {
	ctx := r.Context()
	p, handle, blob, ok := g.pending(r)
	if !ok {
		g.clearStepUpCookie(w)
		g.stepUpLost(w, r, sub.json, msgStepUpLost)
		return
	}
	v, err := g.client.Check(ctx, wire.CheckRequest{Flow: g.stepFlow, Account: p.Account, IP: ip}, g.mode)
	if err != nil {
		g.logErr("check", err)
	}
	if v.Action != wire.ActionProceed {
		// A delay answers 429 with Retry-After; the try is not compared, so
		// waiting costs an attacker time and the owner nothing but a retry.
		g.responder(sub.json).Respond(w, r, v.Verdict)
		return
	}
	passed := g.stepUp != nil && g.stepUp.Verify(ctx, p.Account, p.Secret, sub.try)
	if passed && !g.take(ctx, handle, blob) {
		passed = false // taken by another post of the same code
	}
	rv, err := g.client.ReportStepUp(context.WithoutCancel(ctx), StepUpReport{Flow: g.stepFlow, Account: p.Account,
		IP: ip, Ticket: p.Ticket, Attempt: v.Attempt, DeviceToken: p.Device, Passed: passed}, g.mode)
	if err != nil {
		g.logErr("report", err)
	}
	if !passed {
		p.Tries++
		left := time.UnixMilli(p.Expires).Sub(g.client.now())
		if p.Tries >= maxStepUpTries || left <= 0 {
			g.holds.DeleteHold(ctx, stepUpKey(handle))
			g.clearStepUpCookie(w)
			g.stepUpLost(w, r, sub.json, msgStepUpTooMany)
			return
		}
		if err := g.putPending(ctx, r, handle, p, left); err != nil {
			g.logErr("hold", err)
		}
		g.stepUpPage(w, r, sub.json, http.StatusOK, msgStepUpWrong)
		return
	}
	g.clearStepUpCookie(w)
	var e *Error
	if errors.As(err, &e) {
		// tollgate refused the ticket (expired, or not this account's):
		// sign in again.
		g.stepUpLost(w, r, sub.json, msgStepUpLost)
		return
	}
	if rv.Action != wire.ActionProceed {
		g.responder(sub.json).Respond(w, r, rv.Verdict)
		return
	}
	// The login again, as it was posted, and signed in: the handler checks
	// the password and reports a success, which answers rv.
	g.restoreBody(r, p)
	a := &Attempt{Verdict: Verdict{Verdict: wire.Verdict{Action: wire.ActionProceed}}, g: g, w: w,
		account: p.Account, ip: ip, device: p.Device, stepped: true, result: rv}
	next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, attemptKey, a)))
}

// restoreBody makes r the pending login's post.
func (g *Guard) restoreBody(r *http.Request, p pendingStepUp) {
	if p.JSON {
		r.Body = io.NopCloser(strings.NewReader(string(p.Body)))
		r.ContentLength = int64(len(p.Body))
		r.Header.Set("Content-Type", "application/json")
		r.PostForm, r.Form = nil, nil
		return
	}
	form, _ := url.ParseQuery(string(p.Body)) // encoded by the Guard
	g.restore(r, form)
}

// stepUpPage asks for the second factor: StepUp's page for a browser, a
// problem document for JSON.
func (g *Guard) stepUpPage(w http.ResponseWriter, r *http.Request, json bool, status int, message string) {
	if json {
		detail := "This sign-in needs a second factor: send it as " + StepUpField + " to the same URL."
		if message != "" {
			detail = message
		}
		writeStepUpProblem(w, http.StatusUnauthorized, detail)
		return
	}
	g.stepUp.Page(w, r, status, message)
}

// stepUpLost answers a try whose pending login is gone (expired, taken,
// too many wrong tries): sign in again.
func (g *Guard) stepUpLost(w http.ResponseWriter, r *http.Request, json bool, message string) {
	if json {
		writeStepUpProblem(w, http.StatusUnauthorized, message)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writePage(w, http.StatusOK, "Sign in again", "<p>"+html.EscapeString(message)+`</p><p><a href="`+
		html.EscapeString(r.URL.RequestURI())+`">Sign in</a></p>`)
}

// stepUpUnavailable answers a login that needs a second factor the Guard
// cannot give: not signed in.
func (g *Guard) stepUpUnavailable(w http.ResponseWriter, json bool) {
	const msg = "Signing in needs a second step that cannot be done right now. Please try again later or reset your password."
	if json {
		writeStepUpProblem(w, http.StatusServiceUnavailable, msg)
		return
	}
	writePage(w, http.StatusServiceUnavailable, "Second step unavailable", "<p>"+msg+"</p>")
}

// clearStepUpCookie drops the step-up cookie.
func (g *Guard) clearStepUpCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: StepUpCookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
}

// writeStepUpProblem writes a problem document of the step-up.
func writeStepUpProblem(w http.ResponseWriter, status int, detail string) {
	body, err := json.Marshal(problemDoc{Type: defaultProblemType, Title: http.StatusText(status), Status: status, Detail: detail})
	if err != nil { // strings and an int: cannot fail
		panic("client: encoding a problem: " + err.Error())
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// stepWriter is the login handler's ResponseWriter: once the handler's
// success report answers step_up, everything it writes (its session
// cookie, its redirect, its page) is dropped, so that a handler written
// before step-up existed signs no one in on a step_up. Header fields wait
// in a map of their own until the first write.
type stepWriter struct {
	http.ResponseWriter
	stepping *atomic.Bool
	h        http.Header
	wrote    bool
}

func newStepWriter(w http.ResponseWriter, stepping *atomic.Bool) *stepWriter {
	return &stepWriter{ResponseWriter: w, stepping: stepping, h: w.Header().Clone()}
}

func (s *stepWriter) Header() http.Header {
	if s.wrote {
		return s.ResponseWriter.Header()
	}
	return s.h
}

func (s *stepWriter) WriteHeader(code int) {
	if s.stepping.Load() {
		return
	}
	s.flush()
	s.ResponseWriter.WriteHeader(code)
}

func (s *stepWriter) Write(b []byte) (int, error) {
	if s.stepping.Load() {
		return len(b), nil
	}
	s.flush()
	return s.ResponseWriter.Write(b)
}

// flush puts the handler's header fields in place before its first write.
func (s *stepWriter) flush() {
	if s.wrote {
		return
	}
	s.wrote = true
	h := s.ResponseWriter.Header()
	clear(h)
	for k, v := range s.h {
		h[k] = v
	}
}

// Flush flushes what the handler wrote, unless it is being dropped: a
// flush must not send the handler's status ahead of the step-up's page.
func (s *stepWriter) Flush() {
	if s.stepping.Load() {
		return
	}
	s.flush()
	http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap is for http.ResponseController.
func (s *stepWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
