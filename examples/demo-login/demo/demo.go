package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"math/big"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// The flows of tollgate's built-in policy that the demo calls.
const (
	flowLogin  = "login"
	flowVerify = "otp_verify"
	flowSend   = wire.DefaultSendFlow
)

// OTPDeviceCookieName is the cookie that keeps otp_verify's device token.
// otp_verify does not trust login's tokens (an attacker who knows the
// password must not buy fresh code guesses by signing in again), so each
// flow's token has a cookie of its own.
const OTPDeviceCookieName = "__Host-tollgate-otp-device"

// maxFormBytes bounds a form body.
const maxFormBytes = 4 << 10

//go:embed templates
var templateFS embed.FS

var (
	pageTemplate = template.Must(template.ParseFS(templateFS, "templates/page.html"))
	styleCSS     = must(templateFS.ReadFile("templates/style.css"))
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Config configures the demo App.
type Config struct {
	// Tollgate is the client the App asks. It is required.
	Tollgate *client.Client
	// Proxies resolves each request's client IP. The default is the zero
	// Proxies: the connection's peer, no header read. LoopbackProxies is
	// the demo's setting.
	Proxies *client.Proxies
	// Users are the accounts. The default is DemoUsers().
	Users []User
	// HashIterations is the PBKDF2-HMAC-SHA256 iteration count of the
	// stored password hashes; tests lower it to run fast. The default is
	// DefaultHashIterations (600,000).
	HashIterations int
	// FingerprintKey keys the password fingerprints sent to tollgate (an
	// HMAC of the password, never the password): at least 32 bytes. A real
	// login reads 32 random bytes from its secrets, the same on every
	// instance and across restarts (a new key starts the counts of sprayed
	// and repeated passwords anew). The default is a random key, which
	// changes at every start: a demo may do that.
	FingerprintKey []byte
	// Now is the App's clock, for sessions and code expiry. The default is
	// time.Now.
	Now func() time.Time
	// Logger gets a line for each call tollgate did not answer; such lines
	// hold no identifier. The default discards them.
	Logger *slog.Logger
	// WebhookSecret, when set, is the whsec_ secret of the tollgate
	// webhook endpoint the App serves at POST /tollgate/events: a
	// login.new_device event puts a "was this you?" notice in the user's
	// inbox panel. The default is empty: no endpoint.
	WebhookSecret string
	// CodeFile is the demo's stand-in for e-mail: the file each step-up
	// code is appended to, one line "<time> to <user>: <code>", when
	// tollgate answers a sign-in step_up (its password is in the breach
	// corpus, or the account or address is under attack). The default is
	// "": the codes go to Logger.
	CodeFile string
}

// LoopbackProxies trusts every loopback peer (127.0.0.0/8 and ::1) as a
// reverse proxy and reads X-Forwarded-For from it.
//
// Security: it is a demo setting, so that one machine can play many client
// addresses. With it, any program on the machine picks the address
// tollgate counts it under; a real service trusts only the proxies it runs.
func LoopbackProxies() (*client.Proxies, error) {
	return client.NewProxies(client.ProxyConfig{
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		Header:  client.HeaderXForwardedFor,
	})
}

// App is the demo's web app: an http.Handler.
type App struct {
	tg          *client.Client
	proxies     *client.Proxies
	users       *userStore
	sessions    *sessions
	fpKey       []byte
	now         func() time.Time
	log         *slog.Logger
	loginDevice *client.DeviceCookie
	otpDevice   *client.DeviceCookie
	guard       *client.Guard // the password step's middleware
	loginRS     *client.Responder
	sendRS      *client.Responder
	verifyRS    *client.Responder
	mux         *http.ServeMux
	// webhookSecret and notices serve POST /tollgate/events.
	webhookSecret string
	notices       notices
	// codeFile and codeMu serve the step-up's code sender.
	codeFile string
	codeMu   sync.Mutex
}

// New returns the App for cfg, or an error when cfg is unusable.
func New(cfg Config) (*App, error) {
	if cfg.Tollgate == nil {
		return nil, errors.New("demo: Config.Tollgate is required")
	}
	a := &App{tg: cfg.Tollgate, proxies: cfg.Proxies, fpKey: cfg.FingerprintKey, now: cfg.Now, log: cfg.Logger,
		webhookSecret: cfg.WebhookSecret, codeFile: cfg.CodeFile}
	if a.proxies == nil {
		a.proxies = &client.Proxies{}
	}
	if a.fpKey == nil {
		a.fpKey = make([]byte, 32)
		rand.Read(a.fpKey)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	users, iterations := cfg.Users, cfg.HashIterations
	if users == nil {
		users = DemoUsers()
	}
	if iterations <= 0 {
		iterations = DefaultHashIterations
	}
	var err error
	if a.users, err = newUserStore(users, iterations); err != nil {
		return nil, err
	}
	a.sessions = newSessions(a.now)
	if a.loginDevice, err = client.NewDeviceCookie(client.DeviceCookieConfig{}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if a.otpDevice, err = client.NewDeviceCookie(client.DeviceCookieConfig{Name: OTPDeviceCookieName}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// The CAPTCHA and delay pages get the request, never the verdict: they
	// show the same page to everyone the flow asks, the delay page with
	// only the wait.
	if a.loginRS, err = client.NewResponder(client.ResponderConfig{
		Policy:  flowLogin,
		Captcha: http.HandlerFunc(a.loginCaptcha),
		Delay: func(w http.ResponseWriter, r *http.Request, seconds int) {
			a.render(w, http.StatusTooManyRequests, loginPage(tooManyAttempts(seconds)))
		},
	}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// The password step's guard checks before the password and answers
	// what may not go ahead: a delay with loginRS's page, a CAPTCHA
	// verdict with tollgate's proof-of-work challenge (the form the user
	// filled in goes on by itself once it is solved). The device cookie is
	// set once the code step has passed too. A sign-in tollgate answers
	// step_up gets the guard's second factor first: a code "e-mailed"
	// through sendStepUpCode, on the demo's step-up page; once it passed,
	// the guard runs login again and the SMS step follows as always.
	if a.guard, err = client.NewGuard(client.GuardConfig{
		Client: a.tg, Flow: flowLogin, AccountField: "username", PasswordField: "password",
		FingerprintKey: a.fpKey, Proxies: a.proxies, DeviceCookie: a.loginDevice, DeferDeviceCookie: true,
		FailMode: client.FailDelay, Pages: a.loginRS, MaxBodyBytes: maxFormBytes, Logger: a.log,
		// An account tollgate will not count is answered as a wrong
		// password, without checking it.
		Refused: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.render(w, http.StatusOK, loginPage(msgWrong))
		}),
		StepUp: client.CodeStepUp{Send: a.sendStepUpCode, PageFunc: func(w http.ResponseWriter, r *http.Request, status int, message string) {
			a.render(w, status, page{Page: "stepup", Title: "One more step", Message: message, Alert: message != ""})
		}},
	}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if a.sendRS, err = client.NewResponder(client.ResponderConfig{
		Policy:   flowSend,
		Captcha:  a.otpCaptcha("send"),
		Accepted: http.HandlerFunc(codeOnItsWay),
		Delay:    a.otpDelay(resendWait),
	}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if a.verifyRS, err = client.NewResponder(client.ResponderConfig{
		Policy:  flowVerify,
		Captcha: a.otpCaptcha("verify"),
		Delay:   a.otpDelay(tooManyAttempts),
	}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}

	a.mux = http.NewServeMux()
	a.mux.HandleFunc("GET /{$}", a.home)
	a.mux.HandleFunc("GET /login", a.loginPage)
	a.mux.Handle("POST /login", a.guard.Middleware(http.HandlerFunc(a.login)))
	a.mux.HandleFunc("GET /otp", a.otpPage)
	a.mux.HandleFunc("POST /otp/send", a.sendCode)
	a.mux.HandleFunc("POST /otp/verify", a.verifyCode)
	a.mux.HandleFunc("POST /logout", a.logout)
	if a.webhookSecret != "" {
		a.mux.HandleFunc("POST /tollgate/events", a.events)
	}
	a.mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write(styleCSS)
	})
	return a, nil
}

// ServeHTTP serves the demo's pages.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	a.mux.ServeHTTP(w, r)
}

// page is what the template shows.
type page struct {
	Page    string // login, otp, home or error
	Title   string
	Message string
	Alert   bool   // Message is a warning
	Users   []User // the login page's demo accounts
	// CaptchaFor is the code step's form that shows the CAPTCHA
	// stand-in: send or verify; empty for none. The password step gets
	// tollgate's challenge instead.
	CaptchaFor string
	User       string
	PhoneEnd   string
	SMS        []SMS
	Notices    []Notice // the home page's inbox
}

// render writes p with status, all at once.
func (a *App) render(w http.ResponseWriter, status int, p page) {
	if p.Page == "login" {
		p.Users = DemoUsers()
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		a.log.Error("demo: rendering a page", "page", p.Page, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (a *App) badRequest(w http.ResponseWriter) {
	a.render(w, http.StatusBadRequest, page{Page: "error", Title: "Bad request",
		Message: "The demo could not read this request.", Alert: true})
}

func loginPage(message string) page {
	return page{Page: "login", Title: "Sign in", Message: message, Alert: message != ""}
}

func (a *App) otpPageFor(s session, message string, alert bool) page {
	end := s.phone
	if i := len(end) - 4; i > 0 {
		end = end[i:]
	}
	return page{Page: "otp", Title: "Enter your code", Message: message, Alert: alert,
		User: s.user, PhoneEnd: end, SMS: s.sms}
}

// The messages end users see. The login's are the same for an unknown
// account and a wrong password.
const (
	msgWrong            = "Wrong username or password."
	msgCheckUnavailable = "Signing in from here needs a check that cannot be shown right now. Please try again later."
	msgCodeCaptcha      = "Please show you are a person: tick the box and try again."
	msgOnItsWay         = "If this number can receive codes, one is on its way."
	msgBadCode          = "That code is not right, or it has expired."
	msgUnavailable      = "Signing in is not possible right now. Please try again in a moment."
)

// tooManyAttempts is the delay page's message.
func tooManyAttempts(seconds int) string {
	return "Too many attempts, try again in " + plural(seconds, "second") + "."
}

// resendWait is the message of a code asked for too soon.
func resendWait(seconds int) string {
	return "A code was sent a moment ago. You can ask for another in " + plural(seconds, "second") + "."
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// respond answers verdict v through rs (its Delay and Captcha hooks write
// the pages) and reports whether to go ahead, after holding a queued call.
func (a *App) respond(w http.ResponseWriter, r *http.Request, rs *client.Responder, v wire.Verdict) bool {
	res := rs.Respond(w, r, v)
	if res.Proceed && res.Hold > 0 {
		t := time.NewTimer(res.Hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return false
		}
	}
	return res.Proceed
}

// readForm parses a small urlencoded form body.
func readForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	return r.ParseForm() == nil
}

// clientIP is the request's client address as tollgate wants it, or "".
func (a *App) clientIP(r *http.Request) string {
	ip := a.proxies.ClientIP(r)
	if !ip.IsValid() {
		return ""
	}
	return ip.String()
}

// logErr logs a call that tollgate did not answer; the client's errors
// hold no identifier.
func (a *App) logErr(call string, err error) {
	if err != nil {
		a.log.Warn("demo: tollgate gave no verdict", "call", call, "err", err)
	}
}

func (a *App) home(w http.ResponseWriter, r *http.Request) {
	s, ok := a.sessions.get(r)
	if !ok || !s.signedIn {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	a.render(w, http.StatusOK, page{Page: "home", Title: "Welcome", User: s.user, Notices: a.notices.of(s.user)})
}

func (a *App) loginPage(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.sessions.get(r); ok && s.signedIn {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	a.render(w, http.StatusOK, loginPage(""))
}

// loginCaptcha is the login Responder's CAPTCHA page, for when the guard
// cannot show tollgate's challenge (tollgate issues none, or does not
// answer). Waiting does not lift a CAPTCHA, so it has no Retry-After.
func (a *App) loginCaptcha(w http.ResponseWriter, r *http.Request) {
	a.render(w, http.StatusTooManyRequests, loginPage(msgCheckUnavailable))
}

// login is the password step behind the guard, which checked (and
// answered anything but a proceed): the password, then the report.
func (a *App) login(w http.ResponseWriter, r *http.Request) {
	attempt := client.AttemptFrom(r.Context())
	if attempt == nil {
		a.badRequest(w)
		return
	}
	acct := a.users.verify(r.PostForm.Get("username"), r.PostForm.Get("password"))
	outcome := wire.OutcomeFailure
	if acct != nil {
		outcome = wire.OutcomeSuccess
		// A success names the account by the app's own user name (ref),
		// which tollgate's events carry back: the notice goes to the
		// account, not to the spelling typed.
		attempt.Ref = acct.name
	}
	// A failure for an unknown name is reported exactly like a wrong
	// password for a known one.
	rv, _ := attempt.Report(r.Context(), outcome) // the guard logs a report tollgate did not answer
	if rv.Action == wire.ActionStepUp {
		// The password was right, but tollgate wants a second factor
		// first: no session yet. The guard asks for the code and runs
		// login again once it passed (it would drop anything written here).
		return
	}
	if acct == nil {
		a.render(w, http.StatusOK, loginPage(msgWrong))
		return
	}
	s, ok := a.sessions.create(acct.name, acct.phone, rv.DeviceToken)
	if !ok {
		a.render(w, http.StatusServiceUnavailable, loginPage(msgUnavailable))
		return
	}
	setSessionCookie(w, s.id)
	http.Redirect(w, r, "/otp", http.StatusSeeOther)
}

// sendStepUpCode is the guard's code sender: the demo's stand-in for an
// e-mail to the account's owner, a line in CodeFile (or the log).
func (a *App) sendStepUpCode(_ context.Context, account, code string) error {
	u := a.users.lookup(account)
	if u == nil { // the password was just verified: cannot happen
		return errors.New("demo: no such account")
	}
	line := fmt.Sprintf("%s to %s: Your tollgate demo sign-in code is %s\n", a.now().UTC().Format(time.RFC3339), u.name, code)
	if a.codeFile == "" {
		a.log.Info("demo: step-up code (the demo's stand-in for an e-mail)", "line", strings.TrimSpace(line))
		return nil
	}
	a.codeMu.Lock()
	defer a.codeMu.Unlock()
	f, err := os.OpenFile(a.codeFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pending returns the request's session that passed the password step and
// not yet the code step, or redirects and returns false.
func (a *App) pending(w http.ResponseWriter, r *http.Request) (session, bool) {
	s, ok := a.sessions.get(r)
	switch {
	case !ok:
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	case s.signedIn:
		http.Redirect(w, r, "/", http.StatusSeeOther)
	default:
		return s, true
	}
	return session{}, false
}

// pendingPost is a code step's POST: the pending session, its form read
// and the client's address; false when it has answered already (a redirect
// or a bad request).
func (a *App) pendingPost(w http.ResponseWriter, r *http.Request) (session, string, bool) {
	s, ok := a.pending(w, r)
	if !ok {
		return session{}, "", false
	}
	ip := ""
	if readForm(w, r) {
		ip = a.clientIP(r)
	}
	if ip == "" {
		a.badRequest(w)
		return session{}, "", false
	}
	return s, ip, true
}

func (a *App) otpPage(w http.ResponseWriter, r *http.Request) {
	s, ok := a.pending(w, r)
	if !ok {
		return
	}
	msg := ""
	if r.URL.Query().Get("sent") == "1" {
		msg = msgOnItsWay
	}
	a.render(w, http.StatusOK, a.otpPageFor(s, msg, false))
}

// codeOnItsWay is the send Responder's Accepted answer, the same for a
// code sent and one refused: back to the code page, which says a code may
// be on its way.
func codeOnItsWay(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/otp?sent=1", http.StatusSeeOther)
}

// otpDelay is the delay page of the code step, with message's text.
func (a *App) otpDelay(message func(seconds int) string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, seconds int) {
		s, ok := a.pending(w, r)
		if !ok {
			return
		}
		a.render(w, http.StatusTooManyRequests, a.otpPageFor(s, message(seconds), true))
	}
}

// otpCaptcha is a CAPTCHA page of the code step, on form ("send" or
// "verify").
func (a *App) otpCaptcha(form string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := a.pending(w, r)
		if !ok {
			return
		}
		p := a.otpPageFor(s, msgCodeCaptcha, true)
		p.CaptchaFor = form
		a.render(w, http.StatusTooManyRequests, p)
	})
}

// sendCode asks tollgate whether a code may go to the account's phone and
// "sends" it to the page's phone panel.
func (a *App) sendCode(w http.ResponseWriter, r *http.Request) {
	s, ip, ok := a.pendingPost(w, r)
	if !ok {
		return
	}
	v, err := a.tg.SendOTP(r.Context(), wire.SendRequest{
		Destination: s.phone, Channel: wire.ChannelSMS, IP: ip,
		Account: s.user, DeviceToken: a.loginDevice.Token(r),
		CaptchaSolved: r.PostForm.Get("captcha") == "yes",
	}, client.FailDelay)
	a.logErr("send", err)
	if !a.respond(w, r, a.sendRS, v.Verdict) {
		return
	}
	code, err := newCode()
	if err != nil {
		a.render(w, http.StatusServiceUnavailable, a.otpPageFor(s, msgUnavailable, true))
		return
	}
	now := a.now()
	a.sessions.update(s.id, func(v *session) {
		v.code, v.codeExpires = code, now.Add(codeTTL)
		v.sms = append(v.sms, SMS{At: now, To: v.phone, Code: code})
		if len(v.sms) > maxSMS {
			v.sms = v.sms[len(v.sms)-maxSMS:]
		}
	})
	a.sendRS.Accept(w, r)
}

// newCode returns a random 6-digit code.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n), nil
}

// verifyCode is the code step: check on otp_verify, compare, report, and
// on success sign in and set the device cookies.
func (a *App) verifyCode(w http.ResponseWriter, r *http.Request) {
	s, ip, ok := a.pendingPost(w, r)
	if !ok {
		return
	}
	token := a.otpDevice.Token(r)
	ctx := r.Context()
	v, err := a.tg.Check(ctx, wire.CheckRequest{
		Flow: flowVerify, Account: s.user, IP: ip, DeviceToken: token,
		CaptchaSolved: r.PostForm.Get("captcha") == "yes",
		Destination:   s.phone, Channel: wire.ChannelSMS,
	}, client.FailDelay)
	a.logErr("check", err)
	if !a.respond(w, r, a.verifyRS, v.Verdict) {
		return
	}
	got := strings.TrimSpace(r.PostForm.Get("code"))
	right := s.code != "" && a.now().Before(s.codeExpires) &&
		subtle.ConstantTimeCompare([]byte(got), []byte(s.code)) == 1
	outcome := wire.OutcomeFailure
	if right {
		outcome = wire.OutcomeSuccess
	}
	rv, err := a.tg.Report(ctx, wire.ReportRequest{
		Flow: flowVerify, Account: s.user, IP: ip, Outcome: outcome,
		Attempt: v.Attempt, DeviceToken: token,
		Destination: s.phone, Channel: wire.ChannelSMS,
	}, client.FailDelay)
	a.logErr("report", err)
	if !right {
		a.render(w, http.StatusOK, a.otpPageFor(s, msgBadCode, true))
		return
	}
	signed, ok := a.sessions.signIn(s.id)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	// Both steps passed: this browser is now a known device of the
	// account, for login (the password step's token) and for otp_verify.
	if err := a.loginDevice.Set(w, s.loginToken); err != nil {
		a.log.Warn("demo: setting the device cookie", "err", err)
	}
	if err := a.otpDevice.Set(w, rv.DeviceToken); err != nil {
		a.log.Warn("demo: setting the code step's device cookie", "err", err)
	}
	setSessionCookie(w, signed.id)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session; the device cookies stay, as they should.
func (a *App) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		a.sessions.end(c.Value)
	}
	clearSessionCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
