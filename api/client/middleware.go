package client

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// GuardConfig configures a Guard. Nothing in it may depend on the end user.
type GuardConfig struct {
	// Client is the tollgate client the Guard asks. It is required.
	Client *Client
	// Flow is the flow each attempt is checked and reported on. The
	// default is "login".
	Flow string
	// AccountField is the form field, or the top-level member of a JSON
	// body, that holds the account as the end user typed it. It is
	// required.
	AccountField string
	// PasswordField is the field (or member) of the password. The Guard
	// reads it only to compute the password fingerprint, and only when
	// FingerprintKey is set. The default is "password".
	PasswordField string
	// FingerprintKey keys the password fingerprint sent with each check and
	// report: HMAC-SHA-256 of the password under this key, in hex, never
	// the password. It lets tollgate count one password failing on many
	// accounts (password_spray) and a repeated wrong password once
	// (same_password_window). At least 32 bytes: 32 random bytes, kept as
	// secret as a session key (with it, an eavesdropper on the calls to
	// tollgate could test guesses against a fingerprint offline) and the
	// same on every instance, or each counts its own fingerprints. tollgate
	// never sees the key and verifies nothing with it, so a new key simply
	// starts new fingerprints. The default is nil: no fingerprint is sent,
	// and those rules skip these attempts.
	FingerprintKey []byte
	// Proxies resolves the end user's address. The default is the zero
	// Proxies: the connection's peer, no forwarding header read.
	Proxies *Proxies
	// DeviceCookie keeps the device token. The default is the zero
	// DeviceCookie: DefaultDeviceCookieName, 90 days.
	DeviceCookie *DeviceCookie
	// DeferDeviceCookie, when true, leaves setting the device cookie to
	// the handler (Attempt.DeviceToken after a success), for a login with
	// a second step: the browser becomes a known device once both steps
	// passed. The default is false: Attempt.Report sets it on a success.
	DeferDeviceCookie bool
	// FailMode answers the check when tollgate gives none. The default is
	// FailDelay.
	FailMode FailMode
	// Pages answers browsers (every request whose body is not JSON) that
	// may not go ahead: its Delay writes your "try again in N seconds"
	// page, and its Captcha your page for when no challenge can be shown.
	// The default is a Responder with Policy Flow and small built-in HTML
	// pages. JSON requests get RFC 9457 problem documents.
	Pages *Responder
	// Challenge is what a captcha verdict is answered with: ChallengePoW
	// (tollgate's proof of work), or a provider's kind tollgate is
	// configured with (ChallengeTurnstile, ...), or "none" for Pages'
	// captcha answer alone. The default is ChallengePoW.
	Challenge string
	// Holds keeps browsers' form submissions, sealed, while they solve a
	// challenge. The default is NewMemoryHolds(MemoryHoldsConfig{}), which
	// is right for one instance; several instances behind one address
	// need a shared HoldStore (or sticky sessions) and one HoldKey.
	Holds HoldStore
	// HoldKey seals the held submissions: at least 32 bytes, the same on
	// every instance sharing Holds. The default is a random key made by
	// NewGuard, which only the default Holds may use.
	HoldKey []byte
	// MaxBodyBytes bounds the request body the Guard reads. The default is
	// 64 KiB.
	MaxBodyBytes int64
	// Refused answers a request tollgate refused for its account field (an
	// identifier it will not count, or none): answer it as you answer a
	// wrong password, without checking the password. The default writes
	// 400 Bad Request.
	Refused http.Handler
	// Logger gets a line for each call tollgate did not answer and each
	// challenge that could not be shown; no line holds an identifier. The
	// default discards them.
	Logger *slog.Logger

	// SkipBreachedCheck, when true, sends no breached-password lookup. By
	// default Attempt.Report asks Client.Breached whether the password is
	// in tollgate's breached-password corpus (k-anonymity: 5 hex digits of
	// its SHA-1 leave the process) and reports the answer, for failures
	// (credential stuffing tries breached passwords) as for successes (a
	// breached correct password may answer step_up). The lookup is
	// best-effort: an error or a timeout (Client's BreachedTimeout) reports
	// false and the login goes on. The default is false: the lookup runs.
	SkipBreachedCheck bool
	// StepUp is the second factor asked for when a success report answers
	// step_up: the login handler's answer is dropped (no session, no
	// cookie), the login waits sealed in Holds, named by a random HttpOnly
	// cookie (StepUpCookieName), and the handler runs again, as the same
	// submission, once the factor passed (its success report then answers
	// the pass's device token). Each try is checked on StepUpFlow first (a
	// delay answers 429 with Retry-After) and reported step_up_passed or
	// step_up_failed. The pending login lives in Holds: the default
	// MemoryHolds serves one instance; several instances share a HoldStore
	// and a HoldKey (or use sticky sessions). The default is a CodeStepUp
	// with SendCode; with neither set, a step_up is answered "not possible
	// now" and nothing signs in.
	StepUp StepUp
	// SendCode sends the default StepUp's 6-digit code to account's owner
	// (account as typed; look it up as your login does): your mailer or
	// SMS gateway. The default is nil.
	SendCode func(ctx context.Context, account, code string) error
	// StepUpFlow is the flow second-factor tries are checked and reported
	// on. The default is DefaultStepUpFlow ("step_up").
	StepUpFlow string
	// StepUpTTL is how long a login waits for its second factor, and so
	// how long a code is good for; match it to the flow's step-up ticket.
	// The default is DefaultStepUpTTL (10 minutes).
	StepUpTTL time.Duration
}

// Guard is the middleware of a login route: it checks each POST with
// tollgate before the handler sees it, and lets the handler report the
// outcome (AttemptFrom(r.Context()).Report). It answers what may not go
// ahead itself:
//
//   - delay: 429 with Retry-After and RateLimit: Pages' page for a browser,
//     a problem document for a JSON body;
//   - captcha: for a browser's form post, a challenge page that runs
//     tollgate's proof of work (or a provider's widget) and posts the
//     solution back to the same URL; the form's fields wait on the server,
//     sealed (GuardConfig.Holds), and once tollgate has verified the
//     solution the request goes on as the original submission, its check
//     told the challenge was solved. For a JSON body, a 429 problem
//     document with the challenge, whose solution comes back in the
//     Tollgate-Challenge-Token and Tollgate-Challenge-Nonce (or
//     Tollgate-Challenge-Response) header fields of the same request sent
//     again;
//   - step_up (a success report's answer: the password was right, but it
//     is breached, or the account or address is under attack): whatever
//     the handler wrote is dropped, session cookie and all, and the end
//     user gets GuardConfig.StepUp's page (by default a 6-digit code sent
//     through GuardConfig.SendCode); once a try passes, the handler runs
//     again as the same login, and its success report answers the pass.
//
// Every answer depends on the verdict alone, never on the account: an
// unknown account's answers are a known one's. Requests other than POST
// pass through unchecked. A Guard is safe for concurrent use.
type Guard struct {
	client     *Client
	flow       string
	account    string
	password   string
	fpKey      []byte
	proxies    *Proxies
	cookie     *DeviceCookie
	deferSet   bool
	mode       FailMode
	pages      *Responder
	problems   *Responder
	challenge  string
	holds      HoldStore
	seal       *sealer
	maxBody    int64
	refused    http.Handler
	log        *slog.Logger
	breached   bool
	stepUp     StepUp
	stepFlow   string
	stepTTL    time.Duration
	solverMu   sync.Mutex
	solverJS   []byte
	solverNext time.Time // no new fetch before, after one failed
}

// The form fields a challenge page posts.
const (
	fieldHandle   = "tollgate_handle"
	fieldToken    = "tollgate_token"
	fieldNonce    = "tollgate_nonce"
	fieldResponse = "tollgate_response"
)

// The header fields a JSON request carries its challenge's solution in.
const (
	HeaderChallengeToken    = "Tollgate-Challenge-Token"
	HeaderChallengeNonce    = "Tollgate-Challenge-Nonce"
	HeaderChallengeResponse = "Tollgate-Challenge-Response"
)

// widgetFields are the form fields the providers' widgets fill themselves.
var widgetFields = map[string]string{
	ChallengeTurnstile: "cf-turnstile-response",
	ChallengeHCaptcha:  "h-captcha-response",
	ChallengeReCAPTCHA: "g-recaptcha-response",
}

// NewGuard returns a Guard for cfg, or an error naming what is unusable.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	g := &Guard{client: cfg.Client, flow: cfg.Flow, account: cfg.AccountField, password: cfg.PasswordField,
		proxies: cfg.Proxies, cookie: cfg.DeviceCookie, deferSet: cfg.DeferDeviceCookie, mode: cfg.FailMode,
		pages: cfg.Pages, challenge: cfg.Challenge, holds: cfg.Holds, maxBody: cfg.MaxBodyBytes,
		refused: cfg.Refused, log: cfg.Logger, breached: !cfg.SkipBreachedCheck, stepUp: cfg.StepUp,
		stepFlow: cfg.StepUpFlow, stepTTL: cfg.StepUpTTL}
	if g.client == nil {
		return nil, errors.New("client: guard: Config.Client is required")
	}
	if g.account == "" {
		return nil, errors.New("client: guard: Config.AccountField is required")
	}
	if g.flow == "" {
		g.flow = defaultPolicy
	}
	if g.password == "" {
		g.password = "password"
	}
	if cfg.FingerprintKey != nil {
		if len(cfg.FingerprintKey) < 32 {
			return nil, errors.New("client: guard: Config.FingerprintKey must have at least 32 bytes")
		}
		g.fpKey = append([]byte(nil), cfg.FingerprintKey...)
	}
	if g.proxies == nil {
		g.proxies = &Proxies{}
	}
	if g.cookie == nil {
		g.cookie = &DeviceCookie{}
	}
	policy := g.flow
	if len(policy) > 64 || !printableASCII(policy) {
		policy = defaultPolicy
	}
	var err error
	if g.problems, err = NewResponder(ResponderConfig{Policy: policy}); err != nil {
		return nil, err
	}
	if g.pages == nil {
		if g.pages, err = NewResponder(ResponderConfig{Policy: policy, Delay: delayPage, Captcha: http.HandlerFunc(captchaPage)}); err != nil {
			return nil, err
		}
	}
	switch g.challenge {
	case "":
		g.challenge = ChallengePoW
	case ChallengePoW, ChallengeTurnstile, ChallengeHCaptcha, ChallengeReCAPTCHA, "none":
	default:
		return nil, errors.New("client: guard: Config.Challenge must be pow, turnstile, hcaptcha, recaptcha or none")
	}
	key := cfg.HoldKey
	switch {
	case key == nil && g.holds != nil:
		return nil, errors.New("client: guard: Config.Holds needs a Config.HoldKey shared by the instances that share it")
	case key == nil:
		key = make([]byte, 32)
		rand.Read(key)
	case len(key) < 32:
		return nil, errors.New("client: guard: Config.HoldKey must have at least 32 bytes")
	}
	if g.holds == nil {
		g.holds = NewMemoryHolds(MemoryHoldsConfig{})
	}
	if g.seal, err = newSealer(key); err != nil {
		return nil, err
	}
	if g.maxBody <= 0 {
		g.maxBody = 64 << 10
	}
	if g.refused == nil {
		g.refused = http.HandlerFunc(g.badRequest)
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.stepUp == nil && cfg.SendCode != nil {
		g.stepUp = CodeStepUp{Send: cfg.SendCode}
	}
	if g.stepFlow == "" {
		g.stepFlow = DefaultStepUpFlow
	}
	switch {
	case g.stepTTL == 0:
		g.stepTTL = DefaultStepUpTTL
	case g.stepTTL < time.Second:
		return nil, errors.New("client: guard: Config.StepUpTTL must be at least a second")
	}
	return g, nil
}

// Middleware is the Guard in chi's shape, func(http.Handler) http.Handler:
// next runs only for an attempt that may go ahead, and finds it with
// AttemptFrom(r.Context()).
func (g *Guard) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		g.serve(w, r, next)
	})
}

// contextKey is the type of the package's context keys: a pointer to one
// is unique, so no other package's key can collide with it.
type contextKey struct{ name string }

// attemptKey is the context key of the request's Attempt.
var attemptKey = &contextKey{"tollgate attempt"}

// AttemptFrom returns the Attempt a Guard let through, or nil when the
// request did not pass through one.
func AttemptFrom(ctx context.Context) *Attempt {
	a, _ := ctx.Value(attemptKey).(*Attempt)
	return a
}

// Attempt is one credential check a Guard let through: report how it
// ended, once, with Report.
type Attempt struct {
	// Verdict is the check's verdict: a proceed, maybe the FailMode's
	// (Fallback set).
	Verdict Verdict
	// CaptchaSolved is true when the attempt came with a challenge that
	// tollgate verified.
	CaptchaSolved bool
	// Ref is sent with the report as the caller's own reference for the
	// end user (its user id: never for a failure, which names nobody);
	// tollgate passes it only to the webhooks the report causes. Set it
	// before Report.
	Ref string

	g                        *Guard
	w                        http.ResponseWriter
	account, ip, device, fpr string
	password                 string // for the breached lookup
	json                     bool
	body                     []byte // the submission, kept for a step-up
	// stepped is an attempt run again after its second factor passed:
	// result is the pass's, and a success reports nothing more.
	stepped bool
	// stepping is set once the success report answered step_up.
	stepping atomic.Bool

	mu       sync.Mutex
	reported bool
	result   Verdict
	err      error
}

// errNoAttempt is Report's error on a nil Attempt.
var errNoAttempt = errors.New("client: no attempt to report: the request did not pass through a Guard")

// Report tells tollgate how the attempt ended, wire.OutcomeSuccess or
// wire.OutcomeFailure: report an unknown account's failure exactly as a
// known one's. Before it, the password is looked up in tollgate's
// breached-password corpus (Client.Breached, unless
// GuardConfig.SkipBreachedCheck), and the report says whether it is there.
// A success answered step_up returns that verdict: the end user is not
// signed in, and whatever the handler writes is dropped for the Guard's
// second factor (a handler may return at once on wire.ActionStepUp). On a success it sets the device cookie from the token the
// report returned (unless GuardConfig.DeferDeviceCookie), so call it
// before writing the response. An attempt is reported once: later calls
// return the first one's result. The report is not canceled when the end
// user goes away (the call's own timeout bounds it): an attempt must
// settle. As for Client.Report, the Verdict is always usable.
func (a *Attempt) Report(ctx context.Context, outcome string) (Verdict, error) {
	if a == nil {
		return fallback(FailDelay, false, errNoAttempt), errNoAttempt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reported {
		return a.result, a.err
	}
	a.reported = true
	if a.stepped && outcome == wire.OutcomeSuccess {
		// The second factor passed: its report answered already.
		if !a.g.deferSet {
			if err := a.g.cookie.Set(a.w, a.result.DeviceToken); err != nil {
				a.g.log.Warn("tollgate guard: the device token cannot be a cookie; not set", "err", err)
			}
		}
		return a.result, nil
	}
	ctx = context.WithoutCancel(ctx)
	ref := a.Ref
	if outcome != wire.OutcomeSuccess {
		ref = ""
	}
	// The breached lookup runs for every outcome, known account or not,
	// so that the work done does not tell them apart.
	breached := false
	if a.g.breached && !a.stepped {
		var err error
		if breached, err = a.g.client.Breached(ctx, a.password); err != nil {
			a.g.logErr("breached", err)
		}
	}
	a.result, a.err = a.g.client.Report(ctx, wire.ReportRequest{
		Flow: a.g.flow, Account: a.account, IP: a.ip, Outcome: outcome, Attempt: a.Verdict.Attempt,
		DeviceToken: a.device, PasswordFingerprint: a.fpr, Ref: ref, Breached: breached,
	}, a.g.mode)
	if a.err != nil {
		a.g.logErr("report", a.err)
	}
	if a.result.Action == wire.ActionStepUp {
		// Not signed in yet: the Guard drops the handler's answer and asks
		// for the second factor.
		a.stepping.Store(true)
		return a.result, a.err
	}
	if outcome == wire.OutcomeSuccess && !a.g.deferSet {
		if err := a.g.cookie.Set(a.w, a.result.DeviceToken); err != nil {
			a.g.log.Warn("tollgate guard: the device token cannot be a cookie; not set", "err", err)
		}
	}
	return a.result, a.err
}

// DeviceToken is the device token a success report returned, "" before
// one: the handler sets the cookie with it (DeviceCookie.Set) when
// GuardConfig.DeferDeviceCookie is set.
func (a *Attempt) DeviceToken() string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.result.DeviceToken
}

// submission is what a Guard read of a request.
type submission struct {
	json     bool
	account  string
	password string
	// raw is a JSON body as it came.
	raw []byte
	// try is a second-factor try (StepUpField), with hasTry.
	try    string
	hasTry bool
	// form is the posted form of a browser (nil for JSON).
	form url.Values
}

// serve checks a POST and runs next, or answers it.
func (g *Guard) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	ctx := r.Context()
	sub, ok := g.read(w, r)
	if !ok {
		g.badRequest(w, r)
		return
	}
	ip := g.proxies.ClientIP(r)
	if !ip.IsValid() {
		g.badRequest(w, r)
		return
	}
	if sub.hasTry {
		g.continueStepUp(w, r, sub, ip.String(), next)
		return
	}
	solved := false
	switch {
	case !sub.json && sub.form.Has(fieldHandle):
		// A challenge page's post: the original submission, if its
		// solution holds.
		held, ok := g.resume(w, r, sub.form, ip.String())
		if !ok {
			return
		}
		sub = g.submissionOf(held)
		g.restore(r, held)
		solved = true
	case sub.json && (r.Header.Get(HeaderChallengeToken) != "" || r.Header.Get(HeaderChallengeResponse) != ""):
		if !g.verifyJSON(w, r, ip.String()) {
			return
		}
		solved = true
	}
	fp := ""
	if g.fpKey != nil {
		m := hmac.New(sha256.New, g.fpKey)
		io.WriteString(m, sub.password)
		fp = hex.EncodeToString(m.Sum(nil))
	}
	device := g.cookie.Token(r)
	v, err := g.client.Check(ctx, wire.CheckRequest{
		Flow: g.flow, Account: sub.account, IP: ip.String(), DeviceToken: device,
		CaptchaSolved: solved, PasswordFingerprint: fp,
	}, g.mode)
	if err != nil {
		g.logErr("check", err)
		var e *Error
		if errors.As(err, &e) && e.Field == "account" {
			g.refused.ServeHTTP(w, r)
			return
		}
	}
	switch v.Action {
	case wire.ActionProceed:
		if d := holdOf(v.DelayMS); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		a := &Attempt{Verdict: v, CaptchaSolved: solved, g: g,
			account: sub.account, ip: ip.String(), device: device, fpr: fp,
			password: sub.password, json: sub.json, body: sub.raw}
		if !sub.json {
			a.body = []byte(sub.form.Encode())
		}
		sw := newStepWriter(w, &a.stepping)
		a.w = sw
		next.ServeHTTP(sw, r.WithContext(context.WithValue(ctx, attemptKey, a)))
		if a.stepping.Load() {
			g.beginStepUp(w, r, a)
		}
	case wire.ActionCaptcha:
		g.answerCaptcha(w, r, sub)
	default:
		g.responder(sub.json).Respond(w, r, v.Verdict)
	}
}

// responder is the Responder of a request: problems for JSON.
func (g *Guard) responder(json bool) *Responder {
	if json {
		return g.problems
	}
	return g.pages
}

// read reads r's body: a JSON object, or a form (which r.PostForm then
// holds, for the handler). The body stays readable for the handler.
func (g *Guard) read(w http.ResponseWriter, r *http.Request) (submission, bool) {
	if isJSON(r.Header.Get("Content-Type")) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
		if err != nil {
			return submission{}, false
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return submission{}, false
		}
		_, hasTry := m[StepUpField]
		return submission{json: true, account: jsonString(m[g.account]), password: jsonString(m[g.password]),
			raw: b, try: jsonString(m[StepUpField]), hasTry: hasTry}, true
	}
	r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
	if err := r.ParseForm(); err != nil {
		return submission{}, false
	}
	return submission{form: r.PostForm, account: r.PostForm.Get(g.account), password: r.PostForm.Get(g.password),
		try: r.PostForm.Get(StepUpField), hasTry: r.PostForm.Has(StepUpField)}, true
}

// submissionOf is the submission of a held form.
func (g *Guard) submissionOf(form url.Values) submission {
	return submission{form: form, account: form.Get(g.account), password: form.Get(g.password)}
}

// restore makes r the held form's post: its body, PostForm and Form.
func (g *Guard) restore(r *http.Request, form url.Values) {
	body := form.Encode()
	r.Body = io.NopCloser(strings.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.PostForm = form
	all := url.Values{}
	for k, v := range form {
		all[k] = append(all[k], v...)
	}
	for k, v := range r.URL.Query() {
		all[k] = append(all[k], v...)
	}
	r.Form = all
}

// jsonString is raw as a JSON string, or "".
func jsonString(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// isJSON reports whether a Content-Type is JSON (application/json or a
// +json type).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// binding is what a held submission is bound to: the route it was posted
// to and the challenge issued for it.
func binding(r *http.Request, token string) []byte {
	return []byte(r.Method + "\x00" + r.URL.RequestURI() + "\x00" + token)
}

// resume verifies a challenge page's post and returns the submission it
// held, taken from the store; false once it has answered instead (a fresh
// challenge for a solution that does not hold, the form again for a hold
// that is gone).
func (g *Guard) resume(w http.ResponseWriter, r *http.Request, post url.Values, ip string) (url.Values, bool) {
	ctx := r.Context()
	handle, token := post.Get(fieldHandle), post.Get(fieldToken)
	held, ok := g.peek(ctx, handle, binding(r, token))
	if !ok {
		// Expired, taken, or held for another route or challenge: the form
		// again, to be filled in anew.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusSeeOther)
		return nil, false
	}
	s := ChallengeSolution{Token: token, Nonce: post.Get(fieldNonce)}
	if field, ok := widgetFields[g.challenge]; ok {
		resp := post.Get(fieldResponse)
		if resp == "" {
			resp = post.Get(field)
		}
		s = ChallengeSolution{Token: token, Provider: g.challenge, Response: resp, RemoteIP: ip}
	}
	res, err := g.client.VerifyChallenge(ctx, s)
	if err != nil || !res.Solved {
		if err != nil {
			g.logErr("challenge-verify", err)
		}
		// A fresh challenge for the same submission: each is solved once,
		// so a wrong solution costs another.
		g.holds.DeleteHold(ctx, holdKey(handle))
		if !g.challengePage(w, r, held) {
			g.pages.Respond(w, r, wire.Verdict{Action: wire.ActionCaptcha})
		}
		return nil, false
	}
	if err := g.holds.DeleteHold(ctx, holdKey(handle)); err != nil {
		g.logErr("hold", err)
	}
	return held, true
}

// peek is the form held under handle for binding, left in the store.
func (g *Guard) peek(ctx context.Context, handle string, bind []byte) (url.Values, bool) {
	if !wellFormedHandle(handle) {
		return nil, false
	}
	blob, err := g.holds.GetHold(ctx, holdKey(handle))
	if err != nil || blob == nil {
		if err != nil {
			g.logErr("hold", err)
		}
		return nil, false
	}
	plain, ok := g.seal.open(handle, bind, blob)
	if !ok {
		return nil, false
	}
	form, err := url.ParseQuery(string(plain))
	return form, err == nil
}

// verifyJSON verifies a JSON request's solution headers; false once it
// has answered a fresh challenge instead.
func (g *Guard) verifyJSON(w http.ResponseWriter, r *http.Request, ip string) bool {
	h := r.Header
	s := ChallengeSolution{Token: h.Get(HeaderChallengeToken), Nonce: h.Get(HeaderChallengeNonce)}
	if _, ok := widgetFields[g.challenge]; ok {
		s = ChallengeSolution{Token: s.Token, Provider: g.challenge, Response: h.Get(HeaderChallengeResponse), RemoteIP: ip}
	}
	res, err := g.client.VerifyChallenge(r.Context(), s)
	if err == nil && res.Solved {
		return true
	}
	if err != nil {
		g.logErr("challenge-verify", err)
	}
	g.answerCaptcha(w, r, submission{json: true})
	return false
}

// answerCaptcha answers a captcha verdict: a challenge (a page holding a
// browser's form, or a problem document for JSON), or the captcha answer
// of Pages (problems) when none can be issued.
func (g *Guard) answerCaptcha(w http.ResponseWriter, r *http.Request, sub submission) {
	if g.challenge != "none" {
		if sub.json {
			if g.challengeProblem(w, r) {
				return
			}
		} else if sub.form != nil {
			if g.challengePage(w, r, sub.form) {
				return
			}
		}
	}
	g.responder(sub.json).Respond(w, r, wire.Verdict{Action: wire.ActionCaptcha})
}

// issue asks tollgate for a challenge of the configured kind.
func (g *Guard) issue(ctx context.Context) (Challenge, bool) {
	kind := ""
	if g.challenge != ChallengePoW {
		kind = g.challenge
	}
	ch, err := g.client.IssueChallenge(ctx, kind)
	if err != nil {
		g.logErr("challenge", err)
		return Challenge{}, false
	}
	return ch, true
}

// challengePage holds form and writes the challenge page; false, having
// written nothing, when it cannot (no challenge, no solver, no hold).
func (g *Guard) challengePage(w http.ResponseWriter, r *http.Request, form url.Values) bool {
	ctx := r.Context()
	ch, ok := g.issue(ctx)
	if !ok {
		return false
	}
	var solver []byte
	if ch.Kind == ChallengePoW {
		if solver, ok = g.solver(ctx); !ok {
			return false
		}
	}
	keep := url.Values{}
	for k, v := range form {
		if !strings.HasPrefix(k, "tollgate_") {
			keep[k] = v
		}
	}
	handle := newHandle()
	ttl := time.Until(ch.ExpiresAt)
	if ttl <= 0 || ttl > 15*time.Minute {
		ttl = 5 * time.Minute
	}
	blob := g.seal.seal(handle, binding(r, ch.Token), []byte(keep.Encode()))
	if err := g.holds.PutHold(ctx, holdKey(handle), blob, ttl); err != nil {
		g.logErr("hold", err)
		return false
	}
	if err := writeChallengePage(w, ch, handle, solver); err != nil {
		g.log.Error("tollgate guard: rendering the challenge page", "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	}
	return true
}

// challengeDoc is the problem document of a JSON request's captcha verdict.
type challengeDoc struct {
	Type      string        `json:"type"`
	Title     string        `json:"title"`
	Status    int           `json:"status"`
	Detail    string        `json:"detail"`
	Challenge challengeJSON `json:"challenge"`
}

type challengeJSON struct {
	Token      string `json:"token"`
	Kind       string `json:"kind"`
	Difficulty int    `json:"difficulty"`
	ExpiresAt  string `json:"expires_at"`
	SiteKey    string `json:"site_key,omitempty"`
}

// challengeProblem writes a 429 problem document carrying a challenge;
// false, having written nothing, when none could be issued.
func (g *Guard) challengeProblem(w http.ResponseWriter, r *http.Request) bool {
	ch, ok := g.issue(r.Context())
	if !ok {
		return false
	}
	body, err := json.Marshal(challengeDoc{
		Type: defaultProblemType, Title: defaultTitle, Status: http.StatusTooManyRequests,
		Detail: "Solve the challenge, then send the request again with its solution in the " +
			HeaderChallengeToken + " and " + HeaderChallengeNonce + " (or " + HeaderChallengeResponse + ") header fields.",
		Challenge: challengeJSON{Token: ch.Token, Kind: ch.Kind, Difficulty: ch.Difficulty,
			ExpiresAt: ch.ExpiresAt.UTC().Format(time.RFC3339Nano), SiteKey: ch.SiteKey},
	})
	if err != nil { // strings and ints: cannot fail
		panic("client: encoding a challenge: " + err.Error())
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(body)
	return true
}

// solverRetry is how long the Guard waits to fetch the solver again after
// a fetch failed, so that a tollgate that does not serve it is not asked on
// every captcha verdict.
const solverRetry = 10 * time.Second

// solver is tollgate's solver script, fetched once.
func (g *Guard) solver(ctx context.Context) ([]byte, bool) {
	g.solverMu.Lock()
	defer g.solverMu.Unlock()
	if g.solverJS != nil {
		return g.solverJS, true
	}
	if time.Now().Before(g.solverNext) {
		return nil, false
	}
	b, err := g.client.ChallengeSolver(ctx)
	if err != nil {
		g.logErr("challenge-solver", err)
		g.solverNext = time.Now().Add(solverRetry)
		return nil, false
	}
	g.solverJS = b
	return b, true
}

// SolverHandler serves tollgate's solver script (fetched once), for a page
// of your own that solves a JSON request's challenge: mount it at a path of
// your origin, such as GET /tollgate/solver.js, and call
// tollgateSolve(token, difficulty) from your script.
func (g *Guard) SolverHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := g.solver(r.Context())
		if !ok {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "public, max-age=3600")
		w.Write(b)
	})
}

// badRequest answers a request the Guard cannot check: 400, a problem
// document for JSON, else a small page.
func (g *Guard) badRequest(w http.ResponseWriter, r *http.Request) {
	if isJSON(r.Header.Get("Content-Type")) {
		body := `{"type":"about:blank","title":"Bad Request","status":400,"detail":"The request could not be read."}` + "\n"
		h := w.Header()
		h.Set("Content-Type", "application/problem+json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body)
		return
	}
	writePage(w, http.StatusBadRequest, "Bad request", "<p>This request could not be read. Please go back and try again.</p>")
}

// logErr logs a call tollgate did not answer; the client's errors hold no
// identifier.
func (g *Guard) logErr(op string, err error) {
	g.log.Warn("tollgate guard: no answer", "call", op, "err", err)
}

// delayPage is the default Pages' delay answer.
func delayPage(w http.ResponseWriter, _ *http.Request, seconds int) {
	unit := "seconds"
	if seconds == 1 {
		unit = "second"
	}
	writePage(w, http.StatusTooManyRequests, "Too many attempts",
		fmt.Sprintf("<p>Too many attempts, try again in %d %s.</p>", seconds, unit))
}

// captchaPage is the default Pages' captcha answer, for when no challenge
// can be shown: waiting does not lift it, so it has no Retry-After.
func captchaPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writePage(w, http.StatusTooManyRequests, "Too many attempts from here",
		"<p>Signing in needs a check this page cannot show. Please try again later.</p>")
}
