package client_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math/bits"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// The demo login behind a Guard: two accounts, and the end users the tests
// play.
const (
	guardUser      = "bob"
	guardPassword  = "builder-42"
	guardWrong     = "Wrong username or password."
	guardDifficult = 8 // the proof of work's bits: 256 hashes on average
)

var guardFPKey = []byte("guard-test-fingerprint-key-of-32-bytes!!")

// guardStack is a real tollgate (engine, API and challenges on a memory
// store and a manual clock) and a login app behind a Guard, both on
// 127.0.0.1.
type guardStack struct {
	clock *testclock.Clock
	app   *httptest.Server
	holds *client.MemoryHolds
	guard *client.Guard

	mu      sync.Mutex
	calls   []string          // the bodies of the calls tollgate got
	logins  []url.Values      // the submissions the login handler saw
	reports []client.Verdict  // the handler's reports
	refused int               // requests the Refused handler answered
	paths   map[string]string // path of each tollgate call, by body
	codes   []string          // the step-up codes the Guard sent
}

// startGuard starts a guardStack; configure, if any, changes the Guard's
// config (its Client, Holds and Proxies are set first).
func startGuard(t *testing.T, configure ...func(*client.GuardConfig)) *guardStack {
	t.Helper()
	s := &guardStack{clock: testclock.New(testclock.Epoch), paths: map[string]string{}}
	secret := []byte("guard-tests-secret-of-32-bytes-or-more")
	engine, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(),
		Store:  memstore.New(memstore.Config{Now: s.clock.Now}),
		Secret: secret,
		Now:    s.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := challenge.New(challenge.Config{Secret: secret, Difficulty: guardDifficult, Now: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := api.New(api.Config{Engine: engine, Challenger: ch})
	if err != nil {
		t.Fatal(err)
	}
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls = append(s.calls, r.URL.Path+" "+string(body))
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(tg.Close)
	tc, err := client.New(client.Config{BaseURL: tg.URL, Timeout: 5 * time.Second})
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
	s.holds = client.NewMemoryHolds(client.MemoryHoldsConfig{})
	cfg := client.GuardConfig{
		Client: tc, AccountField: "username", FingerprintKey: guardFPKey, Proxies: proxies,
		Holds: s.holds, HoldKey: []byte("guard-test-hold-key-of-32-bytes-at-least"),
		Refused: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.refused++
			s.mu.Unlock()
			wrongPage(w)
		}),
		SendCode: func(_ context.Context, _, code string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.codes = append(s.codes, code)
			return nil
		},
	}
	for _, c := range configure {
		c(&cfg)
	}
	if s.guard, err = client.NewGuard(cfg); err != nil {
		t.Fatal(err)
	}
	s.app = httptest.NewServer(s.guard.Middleware(http.HandlerFunc(s.login)))
	t.Cleanup(s.app.Close)
	return s
}

// wrongPage is the login's answer to a wrong password: the form again,
// 200, as a framework re-renders it.
func wrongPage(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<form method="post"><p>`+guardWrong+`</p><input name="username"><input name="password" type="password"></form>`)
}

// login is the app's handler: the password, then the report.
func (s *guardStack) login(w http.ResponseWriter, r *http.Request) {
	var form url.Values
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]string
		if json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		form = url.Values{}
		for k, v := range m {
			form.Set(k, v)
		}
	} else {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		form = r.PostForm
	}
	ok := form.Get("username") == guardUser && form.Get("password") == guardPassword
	outcome := wire.OutcomeFailure
	if ok {
		outcome = wire.OutcomeSuccess
	}
	a := client.AttemptFrom(r.Context())
	a.Ref = "user-1"
	v, _ := a.Report(r.Context(), outcome)
	s.mu.Lock()
	s.logins = append(s.logins, form)
	s.reports = append(s.reports, v)
	s.mu.Unlock()
	switch {
	case ok:
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/home", http.StatusSeeOther)
	case form.Get("json") != "":
		io.WriteString(w, `{"signed_in":false}`)
	default:
		wrongPage(w)
	}
}

// answer is what a script got.
type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) String() string {
	return fmt.Sprintf("%d %v\n%s", a.status, a.header, a.body)
}

// do sends req from ip (as X-Forwarded-For through the trusted loopback)
// without following redirects.
func (s *guardStack) do(t *testing.T, req *http.Request, ip string) answer {
	t.Helper()
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

// post posts form to the login from ip, with cookies, if any.
func (s *guardStack) post(t *testing.T, ip string, form url.Values, cookies ...*http.Cookie) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.app.URL+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return s.do(t, req, ip)
}

// postJSON posts body as JSON from ip with header fields hdr (name, value...).
func (s *guardStack) postJSON(t *testing.T, ip string, body map[string]string, hdr ...string) answer {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, s.app.URL+"/login", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return s.do(t, req, ip)
}

// throughStepUp completes the step-up that a asks for, if any (tollgate
// answers a correct password from an address it escalated step_up): the
// code the Guard sent, posted back with the step-up cookie as a browser or
// a JSON client would. Without a step-up it returns a.
func (s *guardStack) throughStepUp(t *testing.T, ip string, a answer, asJSON bool) answer {
	t.Helper()
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == client.StepUpCookieName && c.MaxAge >= 0 {
			cookie = c
		}
	}
	if cookie == nil {
		return a
	}
	s.mu.Lock()
	code := s.codes[len(s.codes)-1]
	s.mu.Unlock()
	if !asJSON {
		return s.post(t, ip, url.Values{client.StepUpField: {code}}, cookie)
	}
	b, _ := json.Marshal(map[string]string{client.StepUpField: code})
	req, err := http.NewRequest(http.MethodPost, s.app.URL+"/login", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(cookie)
	return s.do(t, req, ip)
}

func creds(user, password string) url.Values {
	return url.Values{"username": {user}, "password": {password}}
}

// handled is how many submissions the login handler saw.
func (s *guardStack) handled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.logins)
}

// lastLogin is the last submission the login handler saw.
func (s *guardStack) lastLogin() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.logins) == 0 {
		return nil
	}
	return s.logins[len(s.logins)-1]
}

// tollgateCalls are the bodies of the calls tollgate got.
func (s *guardStack) tollgateCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// spray fails ten made-up accounts from ip, once each, so that ip_spray
// asks the next attempt from ip for a CAPTCHA.
func (s *guardStack) spray(t *testing.T, ip string) {
	t.Helper()
	for i := 1; i <= 10; i++ {
		if a := s.post(t, ip, creds(fmt.Sprintf("user%02d", i), "Summer2026!")); a.status != http.StatusOK {
			t.Fatalf("spray %d: %v", i, a)
		}
	}
}

// The challenge page's fields.
var (
	handleRE     = regexp.MustCompile(`name="tollgate_handle" value="([^"]*)"`)
	tokenRE      = regexp.MustCompile(`name="tollgate_token" value="([^"]*)"`)
	difficultyRE = regexp.MustCompile(`data-difficulty="(\d+)"`)
)

// challengeOf reads a challenge page's handle, token and difficulty.
func challengeOf(t *testing.T, a answer) (handle, token string, difficulty int) {
	t.Helper()
	h, tk, d := handleRE.FindStringSubmatch(a.body), tokenRE.FindStringSubmatch(a.body), difficultyRE.FindStringSubmatch(a.body)
	if a.status != http.StatusTooManyRequests || h == nil || tk == nil || d == nil {
		t.Fatalf("not a challenge page: %v", a)
	}
	n, _ := strconv.Atoi(d[1])
	return html.UnescapeString(h[1]), html.UnescapeString(tk[1]), n
}

// solve finds a proof-of-work nonce: SHA-256(token || nonce as 8 bytes
// big-endian) starting with difficulty zero bits, as the solver does.
func solve(t *testing.T, token string, difficulty int) string {
	t.Helper()
	buf := append([]byte(token), make([]byte, 8)...)
	for n := uint64(0); n < 1<<26; n++ {
		binary.BigEndian.PutUint64(buf[len(token):], n)
		sum := sha256.Sum256(buf)
		z := 0
		for _, b := range sum {
			if b != 0 {
				z += bits.LeadingZeros8(b)
				break
			}
			z += 8
		}
		if z >= difficulty {
			return strconv.FormatUint(n, 10)
		}
	}
	t.Fatal("no nonce found")
	return ""
}

// An unknown account gets the same bytes as a known one with a wrong
// password: the login's own 200 form, then, once each account is delayed,
// the same 429 with Retry-After. The Guard answers by the verdict alone.
func TestGuard_UnknownAccountIsAnsweredExactlyLikeAKnownOne(t *testing.T) {
	s := startGuard(t)
	for i := 1; i <= 6; i++ {
		guess := fmt.Sprintf("guess-%d", i) // a repeated password is counted once
		known := s.post(t, fmt.Sprintf("198.51.100.%d", i), creds(guardUser, guess))
		unknown := s.post(t, fmt.Sprintf("192.0.2.%d", i), creds("nobody", guess))
		wantStatus, wantText := http.StatusOK, guardWrong
		if i == 6 { // past account_backoff's five free failures
			wantStatus, wantText = http.StatusTooManyRequests, "Too many attempts, try again in 1 second."
		}
		if known.status != wantStatus || !strings.Contains(known.body, wantText) {
			t.Errorf("attempt %d at bob: %v; want %d and %q", i, known, wantStatus, wantText)
		}
		if unknown.status != known.status || unknown.body != known.body ||
			unknown.header.Get("Retry-After") != known.header.Get("Retry-After") {
			t.Errorf("attempt %d: an unknown account got\n%v\nbob got\n%v", i, unknown, known)
		}
	}
	a := s.post(t, "198.51.100.77", creds(guardUser, "guess-77"))
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "1" ||
		a.header.Get("Ratelimit") != `"login";r=0;t=1` || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Errorf("a delayed browser: %v; want 429, Retry-After 1, a RateLimit field and an HTML page", a)
	}
	if got := s.handled(); got != 10 {
		t.Errorf("the login handler ran %d times, want 10 (the delayed attempts never reach it)", got)
	}
}

// A browser at an address that sprayed ten accounts gets a challenge page
// instead of the login; its browser solves it, the page posts the solution
// back, and the login goes on with the form the user had filled in, never
// echoed into the page: she types nothing again, and the check was told
// the challenge was solved.
func TestGuard_ASprayedAddressMeetsAChallengeAndTheHeldFormGoesOnOnceSolved(t *testing.T) {
	s := startGuard(t)
	const ip = "203.0.113.66"
	s.spray(t, ip)
	before := s.handled()
	a := s.post(t, ip, creds(guardUser, guardPassword))
	handle, token, difficulty := challengeOf(t, a)
	if s.handled() != before {
		t.Fatalf("the login handler ran for a captcha verdict")
	}
	if strings.Contains(a.body, guardPassword) || strings.Contains(a.body, guardUser) {
		t.Errorf("the challenge page holds the submission:\n%s", a.body)
	}
	if a.header.Get("Retry-After") != "" || !strings.Contains(a.header.Get("Content-Security-Policy"), "script-src 'nonce-") ||
		a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("challenge page headers %v; want no Retry-After, a nonce CSP, no-store", a.header)
	}
	if difficulty != guardDifficult || !strings.Contains(a.body, "tollgateSolve") {
		t.Errorf("difficulty %d, want %d; the page must inline tollgate's solver", difficulty, guardDifficult)
	}

	res := s.post(t, ip, url.Values{"tollgate_handle": {handle}, "tollgate_token": {token},
		"tollgate_nonce": {solve(t, token, difficulty)}})
	res = s.throughStepUp(t, ip, res, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/home" {
		t.Fatalf("the solved challenge's post: %v; want the login's 303 to /home", res)
	}
	got := s.lastLogin()
	if got.Get("username") != guardUser || got.Get("password") != guardPassword || got.Has("tollgate_handle") {
		t.Errorf("the login saw %v; want bob's own form, without the challenge's fields", got)
	}
	var checked bool
	for _, c := range s.tollgateCalls() {
		if strings.HasPrefix(c, "/v1/check ") && strings.Contains(c, `"captcha_solved":true`) {
			checked = true
		}
	}
	if !checked {
		t.Errorf("no check said captcha_solved: %q", s.tollgateCalls())
	}
	if s.holds.Len() != 0 {
		t.Errorf("%d submissions still held after the solved post", s.holds.Len())
	}
}

// The post of a solved challenge page, sent again (a double click, or an
// attacker who got hold of it), does not run the login twice: the hold is
// taken and tollgate spends the solution.
func TestGuard_ASolutionPostReplayedDoesNotRunTheLoginAgain(t *testing.T) {
	s := startGuard(t)
	const ip = "203.0.113.67"
	s.spray(t, ip)
	handle, token, difficulty := challengeOf(t, s.post(t, ip, creds(guardUser, "wrong-one")))
	post := url.Values{"tollgate_handle": {handle}, "tollgate_token": {token}, "tollgate_nonce": {solve(t, token, difficulty)}}
	if a := s.post(t, ip, post); a.status != http.StatusOK || !strings.Contains(a.body, guardWrong) {
		t.Fatalf("the solved post: %v; want the login's wrong-password form", a)
	}
	n := s.handled()
	again := s.post(t, ip, post)
	if again.status != http.StatusSeeOther || again.header.Get("Location") != "/login" {
		t.Errorf("the replayed post: %v; want 303 back to the form", again)
	}
	if s.handled() != n {
		t.Errorf("a replayed solution ran the login again")
	}
}

// A wrong solution (a script guessing instead of working) gets a fresh
// challenge for the same held form, never the login.
func TestGuard_AWrongSolutionGetsAFreshChallengeNotTheLogin(t *testing.T) {
	s := startGuard(t)
	const ip = "203.0.113.68"
	s.spray(t, ip)
	handle, token, difficulty := challengeOf(t, s.post(t, ip, creds(guardUser, guardPassword)))
	n := s.handled()
	nonce := solve(t, token, difficulty)
	wrong := "1"
	if nonce == "1" {
		wrong = "2"
	}
	a := s.post(t, ip, url.Values{"tollgate_handle": {handle}, "tollgate_token": {token}, "tollgate_nonce": {wrong}})
	handle2, token2, _ := challengeOf(t, a)
	if handle2 == handle || token2 == token {
		t.Errorf("a wrong solution got the same handle or token again")
	}
	if s.handled() != n {
		t.Fatalf("a wrong solution ran the login")
	}
	// The old handle is gone; the fresh one holds the form.
	if a := s.post(t, ip, url.Values{"tollgate_handle": {handle}, "tollgate_token": {token}, "tollgate_nonce": {nonce}}); a.status != http.StatusSeeOther || s.handled() != n {
		t.Errorf("the first challenge's handle after a fresh one: %v", a)
	}
	a = s.post(t, ip, url.Values{"tollgate_handle": {handle2}, "tollgate_token": {token2}, "tollgate_nonce": {solve(t, token2, guardDifficult)}})
	a = s.throughStepUp(t, ip, a, false)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/home" || s.lastLogin().Get("password") != guardPassword {
		t.Errorf("the fresh challenge solved: %v; want bob signed in with his held form", a)
	}
}

// A handle posted with another challenge's token (a page's handle lifted
// onto a solution of the attacker's own) opens nothing: the submission is
// bound to the challenge issued for it.
func TestGuard_AHandleWithAnotherChallengesSolutionOpensNothing(t *testing.T) {
	s := startGuard(t)
	const ip = "203.0.113.69"
	s.spray(t, ip)
	victim, _, _ := challengeOf(t, s.post(t, ip, creds(guardUser, guardPassword)))
	_, own, d := challengeOf(t, s.post(t, ip, creds("mallory", "x")))
	n := s.handled()
	a := s.post(t, ip, url.Values{"tollgate_handle": {victim}, "tollgate_token": {own}, "tollgate_nonce": {solve(t, own, d)}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/login" || s.handled() != n {
		t.Errorf("the victim's handle with the attacker's solution: %v (login ran %d times)", a, s.handled()-n)
	}
}

// A JSON login gets problem documents: a delay with Retry-After, a captcha
// with the challenge, and the same request sent again with the solution's
// header fields goes on.
func TestGuard_JSONGetsProblemDocumentsAndGoesOnWithTheSolutionsHeaders(t *testing.T) {
	s := startGuard(t)
	const ip = "203.0.113.70"
	s.spray(t, ip)
	body := map[string]string{"username": guardUser, "password": guardPassword, "json": "1"}
	a := s.postJSON(t, ip, body)
	var doc struct {
		Status    int    `json:"status"`
		Detail    string `json:"detail"`
		Challenge struct {
			Token      string `json:"token"`
			Kind       string `json:"kind"`
			Difficulty int    `json:"difficulty"`
		} `json:"challenge"`
	}
	if a.status != http.StatusTooManyRequests || a.header.Get("Content-Type") != "application/problem+json" ||
		json.Unmarshal([]byte(a.body), &doc) != nil || doc.Challenge.Kind != "pow" || doc.Challenge.Token == "" {
		t.Fatalf("a JSON login past ip_spray: %v; want a 429 problem with a pow challenge", a)
	}
	n := s.handled()
	if a := s.postJSON(t, ip, body, client.HeaderChallengeToken, doc.Challenge.Token, client.HeaderChallengeNonce, "1"); a.status != http.StatusTooManyRequests || s.handled() != n {
		t.Errorf("a JSON login with a wrong solution: %v; want a fresh challenge", a)
	}
	nonce := solve(t, doc.Challenge.Token, doc.Challenge.Difficulty)
	if a := s.throughStepUp(t, ip, s.postJSON(t, ip, body, client.HeaderChallengeToken, doc.Challenge.Token, client.HeaderChallengeNonce, nonce), true); a.status != http.StatusSeeOther {
		t.Errorf("a JSON login with the solution: %v; want the login's 303", a)
	}
	if got := s.lastLogin(); got.Get("username") != guardUser || got.Get("password") != guardPassword {
		t.Errorf("the login read %v from the JSON body; want it whole", got)
	}

	// Delayed: the account's sixth failure in a row.
	for i := 1; i <= 5; i++ {
		s.postJSON(t, fmt.Sprintf("198.51.100.%d", i), map[string]string{"username": "carol", "password": fmt.Sprintf("g%d", i), "json": "1"})
	}
	a = s.postJSON(t, "198.51.100.9", map[string]string{"username": "carol", "password": "g9", "json": "1"})
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "1" ||
		a.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(a.body, "Try again in 1 second.") {
		t.Errorf("a delayed JSON login: %v; want a 429 problem with Retry-After 1", a)
	}
}

// A client that writes its own X-Forwarded-For, from a peer that is no
// trusted proxy, is counted under its peer's address: rotating the header
// does not take a spray past ip_spray.
func TestGuard_AForgedForwardedForFromAnUntrustedPeerDoesNotEscapeTheSprayCount(t *testing.T) {
	s := startGuard(t, func(c *client.GuardConfig) { c.Proxies = nil })
	var captcha int
	for i := 1; i <= 12; i++ {
		a := s.post(t, fmt.Sprintf("198.18.0.%d", i), creds(fmt.Sprintf("user%02d", i), "Summer2026!"))
		if a.status == http.StatusTooManyRequests && strings.Contains(a.body, "tollgate_handle") {
			captcha++
		}
	}
	if captcha != 2 {
		t.Errorf("%d of 12 sprayed accounts with a fresh forged address each met a challenge, want the 11th and 12th", captcha)
	}
}

// tollgate gets the password's HMAC under the caller's key, with the check
// and the report, and never the password: with it, a password sprayed over
// many accounts is counted from any address.
func TestGuard_SendsTheFingerprintNeverThePassword(t *testing.T) {
	s := startGuard(t)
	s.post(t, "198.51.100.1", creds(guardUser, "Summer2026!"))
	m := hmac.New(sha256.New, guardFPKey)
	m.Write([]byte("Summer2026!"))
	fp := hex.EncodeToString(m.Sum(nil))
	calls := s.tollgateCalls()
	var n int
	for _, c := range calls {
		if strings.Contains(c, "Summer2026") {
			t.Errorf("tollgate got the password: %s", c)
		}
		if strings.Contains(c, `"password_fingerprint":"`+fp+`"`) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d calls carried the fingerprint, want the check and the report: %q", n, calls)
	}

	// Without a key, no fingerprint.
	s = startGuard(t, func(c *client.GuardConfig) { c.FingerprintKey = nil })
	s.post(t, "198.51.100.1", creds(guardUser, "Summer2026!"))
	for _, c := range s.tollgateCalls() {
		if strings.Contains(c, "password_fingerprint") {
			t.Errorf("a Guard without a key sent a fingerprint: %s", c)
		}
	}
}

// An account tollgate will not count (over 256 bytes) is answered by
// Refused, as a wrong password, and its password is never checked.
func TestGuard_AnAccountTollgateRefusesNeverReachesThePasswordCheck(t *testing.T) {
	s := startGuard(t)
	a := s.post(t, "198.51.100.1", creds(strings.Repeat("a", 300), "pw"))
	if a.status != http.StatusOK || !strings.Contains(a.body, guardWrong) || s.refused != 1 || s.handled() != 0 {
		t.Errorf("a refused account: %v, refused %d, login ran %d times; want Refused's page and no login", a, s.refused, s.handled())
	}
}

// A success sets the device cookie; with it, the owner goes ahead at once
// while her account is delayed for everyone else.
func TestGuard_TheOwnersDeviceCookieGoesAheadWhileHerAccountIsGuessedAt(t *testing.T) {
	s := startGuard(t)
	a := s.post(t, "203.0.113.7", creds(guardUser, guardPassword))
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == client.DefaultDeviceCookieName {
			cookie = c
		}
	}
	if a.status != http.StatusSeeOther || cookie == nil || !cookie.Secure || !cookie.HttpOnly || cookie.Value == "" {
		t.Fatalf("bob's success: %v; want 303 and a Secure, HttpOnly device cookie", a)
	}
	for i := 1; i <= 8; i++ {
		s.post(t, fmt.Sprintf("198.51.100.%d", i), creds(guardUser, fmt.Sprintf("guess-%d", i)))
	}
	if a := s.post(t, "198.51.100.50", creds(guardUser, guardPassword)); a.status != http.StatusTooManyRequests {
		t.Errorf("bob's password without his cookie during the attack: %d, want 429", a.status)
	}
	if a := s.post(t, "198.51.100.51", creds(guardUser, guardPassword), cookie); a.status != http.StatusSeeOther {
		t.Errorf("bob's password with his cookie during the attack: %v, want the login's 303", a)
	}
}

// With DeferDeviceCookie the Guard leaves the cookie to the handler (a
// second step first), and the token is there to set.
func TestGuard_DeferDeviceCookieLeavesTheCookieToTheHandler(t *testing.T) {
	s := startGuard(t, func(c *client.GuardConfig) { c.DeferDeviceCookie = true })
	a := s.post(t, "203.0.113.7", creds(guardUser, guardPassword))
	if a.status != http.StatusSeeOther || a.header.Get("Set-Cookie") != "" {
		t.Errorf("a deferred success: %v; want 303 and no cookie", a)
	}
	if len(s.reports) != 1 || s.reports[0].DeviceToken == "" {
		t.Errorf("the report returned no device token to set later: %+v", s.reports)
	}
}

// With tollgate down, the fail mode answers: FailDelay's 429, and the
// login never runs unchecked.
func TestGuard_TollgateDownFailsClosed(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	tc, err := client.New(client.Config{BaseURL: down.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := startGuard(t, func(c *client.GuardConfig) { c.Client = tc })
	a := s.post(t, "198.51.100.1", creds(guardUser, guardPassword))
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "1" || s.handled() != 0 {
		t.Errorf("tollgate down: %v; want FailDelay's 429 and no login", a)
	}
}

// Requests the Guard cannot read are a 400, with nothing checked.
func TestGuard_BadBodiesAreBadRequests(t *testing.T) {
	s := startGuard(t)
	// The same app on a plain http.Server: after the form over the size
	// limit net/http holds the connection half a second before closing it
	// (so that the client reads the 400 before a reset), and httptest's
	// Close would wait that out; http.Server's Close does not.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: s.app.Config.Handler}
	go app.Serve(ln)
	t.Cleanup(func() { app.Close() })
	appURL := "http://" + ln.Addr().String()
	for _, tt := range []struct{ name, ct, body string }{
		{"JSON that is not an object", "application/json", `["bob"]`},
		{"broken JSON", "application/json", `{"username":`},
		{"a form over the size limit", "application/x-www-form-urlencoded", "username=" + strings.Repeat("a", 70<<10)},
		{"a bad form escape", "application/x-www-form-urlencoded", "username=%zz"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, appURL+"/login", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ct)
			if a := s.do(t, req, "198.51.100.1"); a.status != http.StatusBadRequest {
				t.Errorf("%v; want 400", a)
			}
		})
	}
	if n := len(s.tollgateCalls()); n != 0 || s.handled() != 0 {
		t.Errorf("%d calls to tollgate, %d logins for bad bodies; want none", n, s.handled())
	}
}

// The memory store of held forms stays within its bounds and frees what
// expired.
func TestMemoryHolds_BoundedAndExpiring(t *testing.T) {
	clock := testclock.New(testclock.Epoch)
	m := client.NewMemoryHolds(client.MemoryHoldsConfig{MaxBytes: 100, MaxHolds: 3, Now: clock.Now})
	ctx := t.Context()
	for i, tt := range []struct {
		key  string
		size int
		want error
	}{
		{"a", 40, nil}, {"b", 40, nil}, {"c", 40, client.ErrHoldsFull}, {"c", 20, nil}, {"d", 1, client.ErrHoldsFull},
	} {
		if err := m.PutHold(ctx, tt.key, make([]byte, tt.size), time.Minute); err != tt.want {
			t.Errorf("put %d (%s, %d bytes): %v, want %v", i, tt.key, tt.size, err, tt.want)
		}
	}
	clock.Advance(time.Minute)
	if v, _ := m.GetHold(ctx, "a"); v != nil {
		t.Errorf("an expired hold was given out")
	}
	if err := m.PutHold(ctx, "e", make([]byte, 90), time.Minute); err != nil {
		t.Errorf("a put once the others expired: %v", err)
	}
	if m.Len() != 1 {
		t.Errorf("%d held, want 1", m.Len())
	}
	m.DeleteHold(ctx, "e")
	if v, _ := m.GetHold(ctx, "e"); v != nil || m.Len() != 0 {
		t.Errorf("a deleted hold is still there")
	}
}

// FuzzGuard_Request posts any body, content type and challenge fields
// through a Guard: it answers 400, a verdict's answer or the login, never
// a 500 or a panic.
func FuzzGuard_Request(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", "username=bob&password=x", "")
	f.Add("application/json", `{"username":"bob","password":1}`, "")
	f.Add("application/x-www-form-urlencoded", "tollgate_handle=AAAA&tollgate_token=x&tollgate_nonce=1", "")
	f.Add("application/json", `{"username":"bob"}`, "AQEP")
	f.Add("text/plain", "\x00\xff", "")
	verdict := `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"a","device_token":""}`
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/challenge/verify":
			io.WriteString(w, `{"solved":false,"reason":"invalid"}`)
		case "/v1/challenge":
			io.WriteString(w, `{"token":"t","kind":"pow","difficulty":1,"expires_at":"2030-01-01T00:00:00Z","solver_url":"/v1/challenge/solver.js"}`)
		case "/v1/challenge/solver.js":
			io.WriteString(w, "/* solver */")
		default:
			io.WriteString(w, verdict)
		}
	}))
	defer tg.Close()
	tc, err := client.New(client.Config{BaseURL: tg.URL, Timeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	g, err := client.NewGuard(client.GuardConfig{Client: tc, AccountField: "username", FingerprintKey: guardFPKey})
	if err != nil {
		f.Fatal(err)
	}
	h := g.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client.AttemptFrom(r.Context()).Report(r.Context(), wire.OutcomeFailure)
		w.WriteHeader(http.StatusOK)
	}))
	f.Fuzz(func(t *testing.T, ct, body, token string) {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if token != "" {
			req.Header.Set(client.HeaderChallengeToken, token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusTooManyRequests, http.StatusSeeOther:
		default:
			t.Errorf("status %d for %q %q", w.Code, ct, body)
		}
	})
}
