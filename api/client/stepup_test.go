package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// standIn plays tollgate's side of the step-up contract, for the client's
// logic before (and apart from) the engine: a login success reported
// breached from a device it does not know answers step_up with a ticket;
// the step_up flow's failures past stepUpLimit make its check delay.
type standIn struct {
	mu          sync.Mutex
	reports     []wire.ReportRequest
	checks      []wire.CheckRequest
	ranges      int // breached lookups
	rangeStatus int // the status of a breached lookup; 0 answers the vector's range
	stepFails   int
	stepUpLimit int
	loginDelay  bool // the login flow's check delays

	srv *httptest.Server
}

// The stand-in's tokens.
const (
	standInTicket  = "ticket-for-bob"
	standInDevice  = "device-after-step-up"
	standInPlain   = "device-after-login"
	breachedPass   = "password" // in breached.json's first range
	unbreachedPass = "tollgate-never-breached-8f3a"
)

func newStandIn(t testing.TB) *standIn {
	t.Helper()
	var doc breachedVectors
	b, err := os.ReadFile(filepath.Join("..", "..", "clients", "testdata", "breached.json"))
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("breached.json: %v", err)
	}
	ranges := map[string]string{}
	for _, c := range doc.Cases {
		ranges[c.Prefix] = c.Range
	}
	s := &standIn{stepUpLimit: 3}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if prefix, ok := strings.CutPrefix(r.URL.Path, "/v1/breached/"); ok {
			s.ranges++
			if s.rangeStatus != 0 {
				w.WriteHeader(s.rangeStatus)
				return
			}
			io.WriteString(w, ranges[prefix])
			return
		}
		var v wire.Verdict
		switch r.URL.Path {
		case "/v1/check":
			var req wire.CheckRequest
			json.NewDecoder(r.Body).Decode(&req)
			s.checks = append(s.checks, req)
			v = wire.Verdict{Action: wire.ActionProceed, Attempt: "attempt-" + req.Flow}
			if s.loginDelay && req.Flow == "login" {
				v = wire.Verdict{Action: wire.ActionDelay, DelayMS: 1000, RetryAfter: 1}
			}
			if req.Flow == client.DefaultStepUpFlow {
				v.Attempt = ""
				if s.stepFails >= s.stepUpLimit {
					v = wire.Verdict{Action: wire.ActionDelay, DelayMS: 4000, RetryAfter: 4}
				}
			}
		case "/v1/report":
			var req wire.ReportRequest
			json.NewDecoder(r.Body).Decode(&req)
			s.reports = append(s.reports, req)
			v = wire.Verdict{Action: wire.ActionProceed}
			switch req.Outcome {
			case wire.OutcomeSuccess:
				v.DeviceToken = standInPlain
				if req.Breached && req.DeviceToken != standInDevice {
					v = wire.Verdict{Action: wire.ActionStepUp, Attempt: standInTicket, Reasons: []string{"breached_password"}}
				}
			case wire.OutcomeStepUpPassed:
				if req.Attempt != standInTicket {
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusBadRequest)
					io.WriteString(w, `{"type":"https://tollgate.dev/problems/invalid-field","title":"Bad Request","status":400,"field":"attempt"}`)
					return
				}
				v.DeviceToken = standInDevice
			case wire.OutcomeStepUpFailed:
				s.stepFails++
			}
		default:
			http.NotFound(w, r)
			return
		}
		v.Reasons = append([]string{}, v.Reasons...)
		json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// outcomes are the outcomes reported, with breached marked.
func (s *standIn) outcomes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.reports {
		o := r.Flow + ":" + r.Outcome
		if r.Breached {
			o += "+breached"
		}
		out = append(out, o)
	}
	return out
}

// stepApp is a login behind a Guard on a standIn: a handler written before
// step-up existed (it signs in on any success report), and the codes the
// Guard's sender sent.
type stepApp struct {
	tg    *standIn
	app   *httptest.Server
	mu    sync.Mutex
	codes []string // the codes sent, to "bob"
	runs  int      // the login handler's runs
	// flush makes the handler flush its answer, as a streaming one does.
	flush bool
}

const sessionCookie = "session"

func newStepApp(t testing.TB, configure ...func(*client.GuardConfig)) *stepApp {
	t.Helper()
	s := &stepApp{tg: newStandIn(t)}
	tc, err := client.New(client.Config{BaseURL: s.tg.srv.URL, Timeout: 5 * time.Second, BreachedTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.CloseIdleConnections)
	proxies, err := client.NewProxies(client.ProxyConfig{
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Header: client.HeaderXForwardedFor,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.GuardConfig{
		Client: tc, AccountField: "username", Proxies: proxies,
		SendCode: func(_ context.Context, account, code string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if account == "bob" {
				s.codes = append(s.codes, code)
			}
			return nil
		},
	}
	for _, c := range configure {
		c(&cfg)
	}
	g, err := client.NewGuard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.app = httptest.NewServer(g.Middleware(http.HandlerFunc(s.login)))
	t.Cleanup(s.app.Close)
	return s
}

// login signs bob in on a success report, whatever it answered, as a
// handler from before step-up does: the session cookie, then a redirect.
func (s *stepApp) login(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.runs++
	s.mu.Unlock()
	var user, pass string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]string
		json.NewDecoder(r.Body).Decode(&m)
		user, pass = m["username"], m["password"]
	} else {
		r.ParseForm()
		user, pass = r.PostForm.Get("username"), r.PostForm.Get("password")
	}
	ok := user == "bob" && (pass == breachedPass || pass == unbreachedPass)
	outcome := wire.OutcomeFailure
	if ok {
		outcome = wire.OutcomeSuccess
	}
	client.AttemptFrom(r.Context()).Report(r.Context(), outcome)
	if !ok {
		io.WriteString(w, "Wrong username or password.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "signed-in-as-bob", Path: "/"})
	http.Redirect(w, r, "/home", http.StatusSeeOther)
	if s.flush {
		http.NewResponseController(w).Flush()
	}
}

func (s *stepApp) lastCode(t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.codes) == 0 {
		t.Fatal("no code was sent")
	}
	return s.codes[len(s.codes)-1]
}

func (s *stepApp) handlerRuns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// stepBrowser is a browser: it keeps the cookies it is given (a cookie jar
// would not send Secure cookies over the test's plain HTTP).
type stepBrowser struct {
	app     *stepApp
	cookies map[string]string
}

func (s *stepApp) browser() *stepBrowser { return &stepBrowser{app: s, cookies: map[string]string{}} }

func (b *stepBrowser) post(t *testing.T, form url.Values) answer {
	t.Helper()
	return b.send(t, "application/x-www-form-urlencoded", form.Encode())
}

func (b *stepBrowser) postJSON(t *testing.T, m map[string]string) answer {
	t.Helper()
	body, _ := json.Marshal(m)
	return b.send(t, "application/json", string(body))
}

func (b *stepBrowser) send(t *testing.T, ct, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.app.app.URL+"/login", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	for k, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	for _, c := range res.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	return answer{status: res.StatusCode, header: res.Header, body: string(got)}
}

func bob(password string) url.Values { return url.Values{"username": {"bob"}, "password": {password}} }

func code(c string) url.Values { return url.Values{client.StepUpField: {c}} }

func (b *stepBrowser) signedIn() bool { return b.cookies[sessionCookie] != "" }

// A stolen password found in a breach, typed right from a device the
// owner never used: the handler's session cookie and redirect never reach
// the attacker, who gets the code page; only the code sent to the owner
// signs in, and then as the same login, with the device cookie of the
// step-up's pass.
func TestGuard_AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	got := b.post(t, bob(breachedPass))
	if b.signedIn() || got.header.Get("Location") != "" {
		t.Fatalf("a breached password signed in without a second factor: %s, cookies %v", got, b.cookies)
	}
	if got.status != http.StatusOK || !strings.Contains(got.body, `name="`+client.StepUpField+`"`) {
		t.Fatalf("no code page: %s", got)
	}
	if b.cookies[client.StepUpCookieName] == "" {
		t.Fatalf("no step-up cookie: %v", b.cookies)
	}
	if want := []string{"login:success+breached"}; !equal(s.tg.outcomes(), want) {
		t.Errorf("reports %v, want %v", s.tg.outcomes(), want)
	}
	// The page holds neither the password nor the code.
	if c := s.lastCode(t); strings.Contains(got.body, c) || strings.Contains(got.body, breachedPass) {
		t.Errorf("the code page holds the code or the password:\n%s", got.body)
	}
	// Without the step-up cookie (the attacker's other browser), the code
	// gets nothing.
	other := s.browser()
	if got := other.post(t, code(s.lastCode(t))); other.signedIn() || got.status == http.StatusSeeOther {
		t.Fatalf("a code without its pending login signed in: %s", got)
	}
	got = b.post(t, code(s.lastCode(t)))
	if !b.signedIn() || got.status != http.StatusSeeOther {
		t.Fatalf("the right code did not sign in: %s", got)
	}
	if b.cookies[client.DefaultDeviceCookieName] != standInDevice {
		t.Errorf("device cookie %q, want the step-up pass's %q", b.cookies[client.DefaultDeviceCookieName], standInDevice)
	}
	if _, ok := b.cookies[client.StepUpCookieName]; ok {
		t.Errorf("the step-up cookie is still set after the pass")
	}
	if want := []string{"login:success+breached", "step_up:step_up_passed"}; !equal(s.tg.outcomes(), want) {
		t.Errorf("reports %v, want %v", s.tg.outcomes(), want)
	}
	s.tg.mu.Lock()
	passed := s.tg.reports[1]
	s.tg.mu.Unlock()
	if passed.Attempt != standInTicket || passed.Account != "bob" {
		t.Errorf("step_up_passed report %+v: want the ticket and the account", passed)
	}
}

// A handler that flushes its answer sends nothing of it on a step_up: the
// flush is dropped with the rest, and the step-up page goes out whole.
func TestGuard_AFlushingHandlerSendsNothingOnAStepUp(t *testing.T) {
	s := newStepApp(t)
	s.flush = true
	b := s.browser()
	got := b.post(t, bob(breachedPass))
	if b.signedIn() || got.status != http.StatusOK || b.cookies[client.StepUpCookieName] == "" {
		t.Fatalf("a flushing handler's step_up: %s, cookies %v", got, b.cookies)
	}
}

// A code signs in once: the same post again (a replay, or a second tab)
// finds no pending login.
func TestGuard_ASecondFactorCodeSignsInOnce(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	b.post(t, bob(breachedPass))
	pending := b.cookies[client.StepUpCookieName]
	if got := b.post(t, code(s.lastCode(t))); !b.signedIn() {
		t.Fatalf("the right code did not sign in: %s", got)
	}
	replay := s.browser()
	replay.cookies[client.StepUpCookieName] = pending
	if got := replay.post(t, code(s.lastCode(t))); replay.signedIn() || got.status == http.StatusSeeOther {
		t.Fatalf("a replayed code signed in again: %s", got)
	}
	if runs := s.handlerRuns(); runs != 2 {
		t.Errorf("the login handler ran %d times, want 2 (the login, then once after the pass)", runs)
	}
}

// Wrong codes are each reported step_up_failed (counted on the step-up
// flow, never the login's); once tollgate delays the step-up flow, a try
// is answered 429 with Retry-After before the code is even compared, so
// the right code too must wait; after five wrong codes the pending login
// is gone.
func TestGuard_AWrongSecondFactorCodeIsReportedAndThrottled(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	b.post(t, bob(breachedPass))
	for i := range 3 {
		got := b.post(t, code("000000"))
		if b.signedIn() || got.status != http.StatusOK || !strings.Contains(got.body, "not right") {
			t.Fatalf("wrong code %d: %s", i+1, got)
		}
	}
	want := []string{"login:success+breached", "step_up:step_up_failed", "step_up:step_up_failed", "step_up:step_up_failed"}
	if !equal(s.tg.outcomes(), want) {
		t.Errorf("reports %v, want %v", s.tg.outcomes(), want)
	}
	got := b.post(t, code(s.lastCode(t)))
	if got.status != http.StatusTooManyRequests || got.header.Get("Retry-After") != "4" || b.signedIn() {
		t.Fatalf("a try past the step-up flow's limit: %s, want 429 with Retry-After 4 and no session", got)
	}
	if !equal(s.tg.outcomes(), want) {
		t.Errorf("a delayed try was reported: %v", s.tg.outcomes())
	}
	s.tg.mu.Lock()
	s.tg.stepUpLimit = 100
	s.tg.mu.Unlock()
	for range 2 {
		b.post(t, code("000000"))
	}
	if got := b.post(t, code(s.lastCode(t))); b.signedIn() || !strings.Contains(got.body, "sign in again") {
		t.Fatalf("the right code after five wrong ones: %s, want the pending login gone", got)
	}
}

// The owner's browser that passed a step-up keeps the device cookie; with
// it, her next sign-in with the same (breached) password goes through at
// once: tollgate knows the device, and the Guard sends its token.
func TestGuard_TheOwnersKnownDeviceSignsInWithoutStepUp(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	b.post(t, bob(breachedPass))
	b.post(t, code(s.lastCode(t)))
	if !b.signedIn() {
		t.Fatal("the first sign-in did not pass its step-up")
	}
	delete(b.cookies, sessionCookie)
	sent := len(s.codes)
	if got := b.post(t, bob(breachedPass)); !b.signedIn() || got.status != http.StatusSeeOther {
		t.Fatalf("the owner's known device: %s, want signed in at once", got)
	}
	if len(s.codes) != sent {
		t.Errorf("a code was sent to a known device's sign-in")
	}
}

// A password that is not breached reports breached false and signs in at
// once; a wrong password is looked up too (failures feed the stuffing
// rule), and so is an unknown account's, so that the work done does not
// tell accounts apart.
func TestGuard_ReportsBreachedForFailuresAndSuccesses(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	b.post(t, url.Values{"username": {"nobody"}, "password": {breachedPass}})
	b.post(t, url.Values{"username": {"bob"}, "password": {"wrong"}})
	if got := b.post(t, bob(unbreachedPass)); !b.signedIn() {
		t.Fatalf("an unbreached password did not sign in: %s", got)
	}
	want := []string{"login:failure+breached", "login:failure", "login:success"}
	if !equal(s.tg.outcomes(), want) {
		t.Errorf("reports %v, want %v", s.tg.outcomes(), want)
	}
	if s.tg.ranges != 3 {
		t.Errorf("%d breached lookups, want 3", s.tg.ranges)
	}
}

// tollgate without a corpus (404), or failing, answers no range: the login
// is reported breached false and signs in as before.
func TestGuard_ABreachedCheckErrorNeverFailsTheLogin(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusServiceUnavailable} {
		s := newStepApp(t)
		s.tg.rangeStatus = status
		b := s.browser()
		if got := b.post(t, bob(breachedPass)); !b.signedIn() || got.status != http.StatusSeeOther {
			t.Fatalf("range status %d: the login %s, want signed in", status, got)
		}
		if want := []string{"login:success"}; !equal(s.tg.outcomes(), want) {
			t.Errorf("range status %d: reports %v, want %v", status, s.tg.outcomes(), want)
		}
	}
}

// A check answered delay checks no password, so nothing is looked up: the
// lookup comes after the password check, and only a proceed gets there.
func TestGuard_ADelayedAttemptLooksNothingUp(t *testing.T) {
	s := newStepApp(t)
	s.tg.loginDelay = true
	b := s.browser()
	if got := b.post(t, bob(breachedPass)); got.status != http.StatusTooManyRequests || b.signedIn() {
		t.Fatalf("a delayed attempt: %s", got)
	}
	if s.tg.ranges != 0 || len(s.tg.outcomes()) != 0 {
		t.Errorf("a delayed attempt: %d lookups, reports %v; want none", s.tg.ranges, s.tg.outcomes())
	}
}

// SkipBreachedCheck sends no lookup.
func TestGuard_SkipBreachedCheckLooksNothingUp(t *testing.T) {
	s := newStepApp(t, func(c *client.GuardConfig) { c.SkipBreachedCheck = true })
	b := s.browser()
	b.post(t, bob(breachedPass))
	if !b.signedIn() || s.tg.ranges != 0 {
		t.Errorf("signed in %v, %d lookups; want signed in and none", b.signedIn(), s.tg.ranges)
	}
}

// A JSON login: the step_up is a 401 problem document, the code goes back
// as the tollgate_code member, and the handler then sees the JSON body it
// first got.
func TestGuard_AJSONLoginStepsUpWithTheCodeMember(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	got := b.postJSON(t, map[string]string{"username": "bob", "password": breachedPass})
	if b.signedIn() || got.status != http.StatusUnauthorized || got.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a JSON login's step_up: %s", got)
	}
	got = b.postJSON(t, map[string]string{client.StepUpField: s.lastCode(t)})
	if !b.signedIn() {
		t.Fatalf("the right code did not sign the JSON login in: %s", got)
	}
}

// A login whose Guard has no second factor to give (no StepUp, no
// SendCode) is not signed in on a step_up.
func TestGuard_WithoutASecondFactorAStepUpSignsNoOneIn(t *testing.T) {
	s := newStepApp(t, func(c *client.GuardConfig) { c.SendCode = nil })
	b := s.browser()
	if got := b.post(t, bob(breachedPass)); b.signedIn() || got.status != http.StatusServiceUnavailable {
		t.Fatalf("a step_up without a second factor: %s, cookies %v", got, b.cookies)
	}
}

// A sender that fails signs no one in either.
func TestGuard_ASenderThatFailsSignsNoOneIn(t *testing.T) {
	s := newStepApp(t, func(c *client.GuardConfig) {
		c.SendCode = func(context.Context, string, string) error { return errors.New("mailer down") }
	})
	b := s.browser()
	if got := b.post(t, bob(breachedPass)); b.signedIn() || got.status != http.StatusServiceUnavailable {
		t.Fatalf("a step_up whose code could not be sent: %s", got)
	}
}

// A forged or made-up step-up cookie unseals nothing.
func TestGuard_AForgedStepUpCookieGetsNothing(t *testing.T) {
	s := newStepApp(t)
	b := s.browser()
	b.post(t, bob(breachedPass))
	real := b.cookies[client.StepUpCookieName]
	for _, forged := range []string{"", "x", strings.Repeat("A", len(real)), real[:len(real)-1] + "B"} {
		f := s.browser()
		f.cookies[client.StepUpCookieName] = forged
		if got := f.post(t, code(s.lastCode(t))); f.signedIn() || got.status == http.StatusSeeOther {
			t.Fatalf("forged cookie %q signed in: %s", forged, got)
		}
	}
}

// The client's side of the contract: step_up is a verdict of a report
// only; a check that answers it is answered by the fail mode.
func TestClient_StepUpIsAReportsVerdictOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"action":"step_up","delay_ms":0,"retry_after":0,"reasons":["breached_password"],"attempt":"t","device_token":""}`)
	}))
	defer srv.Close()
	tc, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := tc.Check(ctx, wire.CheckRequest{Flow: "login", Account: "a", IP: "192.0.2.1"}, client.FailDelay)
	if err == nil || v.Action != wire.ActionDelay || !v.Fallback {
		t.Errorf("a check answering step_up: %+v, %v; want FailDelay's fallback and an error", v, err)
	}
	v, err = tc.Report(ctx, wire.ReportRequest{Flow: "login", Account: "a", IP: "192.0.2.1", Outcome: wire.OutcomeSuccess}, client.FailOpen)
	if err != nil || v.Action != wire.ActionStepUp || v.Attempt != "t" {
		t.Errorf("a report answering step_up: %+v, %v", v, err)
	}
}

// ReportStepUp sends the outcome on the step-up flow with the ticket.
func TestClient_ReportStepUpSendsTheTicketOnTheStepUpFlow(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		io.WriteString(w, `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":"d"}`)
	}))
	defer srv.Close()
	tc, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, passed := range []bool{true, false} {
		if _, err := tc.ReportStepUp(context.Background(), client.StepUpReport{Account: "a", IP: "192.0.2.1",
			Ticket: "tk", DeviceToken: "old", Passed: passed}, client.FailDelay); err != nil {
			t.Fatal(err)
		}
	}
	// With the try's check's attempt token after the ticket, so that
	// tollgate settles the failure that check charged.
	if _, err := tc.ReportStepUp(context.Background(), client.StepUpReport{Account: "a", IP: "192.0.2.1",
		Ticket: "tk", Attempt: "at"}, client.FailDelay); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"flow":"step_up","account":"a","ip":"192.0.2.1","outcome":"step_up_passed","attempt":"tk","device_token":"old"}`,
		`{"flow":"step_up","account":"a","ip":"192.0.2.1","outcome":"step_up_failed","attempt":"tk","device_token":"old"}`,
		`{"flow":"step_up","account":"a","ip":"192.0.2.1","outcome":"step_up_failed","attempt":"tk,at"}`,
	}
	if !equal(bodies, want) {
		t.Errorf("bodies\n%v\nwant\n%v", bodies, want)
	}
}

// Respond never answers a step_up as a proceed: a 403 problem, or the
// configured page, and StepUp set.
func TestRespond_AStepUpIsNotALoginYet(t *testing.T) {
	v := wire.Verdict{Action: wire.ActionStepUp, Attempt: "ticket", Reasons: []string{"breached_password"}}
	rec := httptest.NewRecorder()
	res := (&client.Responder{}).Respond(rec, httptest.NewRequest("POST", "/login", nil), v)
	if res.Proceed || !res.StepUp || rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("Respond(step_up) = %+v, %d %v", res, rec.Code, rec.Header())
	}
	if strings.Contains(rec.Body.String(), "ticket") || strings.Contains(rec.Body.String(), "breached") {
		t.Errorf("the answer tells the ticket or the reason: %s", rec.Body)
	}
	rs, err := client.NewResponder(client.ResponderConfig{StepUp: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "enter your code")
	})})
	if err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	res = rs.Respond(rec, httptest.NewRequest("POST", "/login", nil), v)
	if res.Proceed || !res.StepUp || rec.Body.String() != "enter your code" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("Respond(step_up) with a StepUp page = %+v, %d %v %q", res, rec.Code, rec.Header(), rec.Body)
	}
}

var sixDigits = regexp.MustCompile(`^[0-9]{6}$`)

// CodeStepUp's codes are six random digits, compared exactly.
func TestCodeStepUp_CodesAreSixDigitsComparedExactly(t *testing.T) {
	var sent []string
	c := client.CodeStepUp{Send: func(_ context.Context, _, code string) error { sent = append(sent, code); return nil }}
	seen := map[string]bool{}
	for range 20 {
		secret, err := c.Start(context.Background(), "bob")
		if err != nil {
			t.Fatal(err)
		}
		if !sixDigits.MatchString(secret) || sent[len(sent)-1] != secret {
			t.Fatalf("code %q, sent %q", secret, sent[len(sent)-1])
		}
		seen[secret] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 codes, %d different", len(seen))
	}
	for _, tt := range []struct {
		try  string
		want bool
	}{{"123456", true}, {" 123456 ", true}, {"12345", false}, {"1234567", false}, {"", false}, {"123457", false}} {
		if got := c.Verify(context.Background(), "bob", "123456", tt.try); got != tt.want {
			t.Errorf("Verify(%q) = %v, want %v", tt.try, got, tt.want)
		}
	}
	if c.Verify(context.Background(), "bob", "", "") {
		t.Error("an empty secret passes an empty try")
	}
}

// FuzzGuard_StepUpTry: whatever a try and a step-up cookie hold, the Guard
// answers without a panic or a 500, and signs no one in without the code
// it sent.
func FuzzGuard_StepUpTry(f *testing.F) {
	f.Add("000000", "", false)
	f.Add("", "AAAA", true)
	f.Add("\x00\xff", strings.Repeat("A", 43), false)
	s := newStepApp(f)
	f.Fuzz(func(t *testing.T, try, cookie string, asJSON bool) {
		b := s.browser()
		b.post(t, bob(breachedPass))
		if cookie != "" {
			b.cookies[client.StepUpCookieName] = cookie
		}
		var got answer
		if asJSON {
			got = b.postJSON(t, map[string]string{client.StepUpField: try})
		} else {
			got = b.post(t, code(try))
		}
		if got.status >= 500 && got.status != http.StatusServiceUnavailable {
			t.Fatalf("status %d", got.status)
		}
		if b.signedIn() && strings.TrimSpace(try) != s.lastCode(t) {
			t.Fatalf("try %q signed in", try)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// MemoryHolds.TakeHold gives a value once: of two posts of one code, the
// second finds nothing.
func TestMemoryHolds_TakeHoldGivesAValueOnce(t *testing.T) {
	h := client.NewMemoryHolds(client.MemoryHoldsConfig{})
	ctx := context.Background()
	if err := h.PutHold(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	first, err := h.TakeHold(ctx, "k")
	if err != nil || string(first) != "v" {
		t.Fatalf("first TakeHold = %q, %v", first, err)
	}
	if second, err := h.TakeHold(ctx, "k"); err != nil || second != nil || h.Len() != 0 {
		t.Errorf("second TakeHold = %q, %v, %d held; want nothing", second, err, h.Len())
	}
}

// On the real tollgate: the Guard settles each try's charge, so a wrong
// code counts once on the step_up flow. The built-in flow lets 3 wrong codes
// through at once and delays the 4th; a Guard that reported without its
// check's attempt token would have each counted twice (the check's charge
// and the report) and be delayed at the 3rd.
func TestGuardOnTollgate_EachWrongCodeCountsOnce(t *testing.T) {
	s := newEngineStepApp(t)
	b := s.browser()
	if got := b.post(t, bob(breachedPass)); b.cookies[client.StepUpCookieName] == "" {
		t.Fatalf("no step-up: %s", got)
	}
	for i := range 3 {
		if got := b.post(t, code("000000")); got.status != http.StatusOK || b.signedIn() {
			t.Fatalf("wrong code %d: %s; want the code page again", i+1, got)
		}
	}
	if got := b.post(t, code("000000")); got.status != http.StatusTooManyRequests {
		t.Errorf("the 4th wrong code: %s; want 429 (3 wrong codes at once, each counted once)", got)
	}
}
