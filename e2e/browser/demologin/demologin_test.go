package demologin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/tollgate-auth/tollgate/e2e/browser/browsertest"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/examples/demo-login/demo"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/webhook"
)

// The addresses the test plays, through the demo's X-Forwarded-For trust:
// alice's own (her home router, which a sprayer shares), and the
// attackers' and a stranger's.
const (
	aliceIP    = "203.0.113.7"
	strangerIP = "198.51.100.200"
)

// The texts the pages show.
const (
	textWrong     = "Wrong username or password."
	textChallenge = "Checking that this request is not automated"
	textOnItsWay  = "If this number can receive codes, one is on its way."
	textPassword  = "Password accepted. Second step"
	textSignedIn  = "Signed in as alice."
	textTooMany   = "Too many attempts"
	textSMSPanel  = "Not a real SMS"
	textNewSignIn = "New sign-in to your account from a browser we have not seen before. Was this you?"
	browserBudget = 90 * time.Second
)

// stack is tollgate on a memory store and a manual clock, and the demo in
// front of it, both on 127.0.0.1.
type stack struct {
	clock *testclock.Clock
	demo  *httptest.Server
	// codeFile is where the demo "e-mails" its step-up codes.
	codeFile string
}

func startStack(t *testing.T) *stack {
	t.Helper()
	clock := testclock.New(testclock.Epoch)
	// The demo's server comes first: tollgate's webhook endpoint is its
	// POST /tollgate/events, and tollgate must know where that is.
	var app http.Handler
	demoSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { app.ServeHTTP(w, r) }))
	t.Cleanup(demoSrv.Close)
	hooks, err := webhook.New(webhook.Config{Endpoints: []webhook.Endpoint{{
		Name: "demo", Tenant: authguard.DefaultTenant, URL: demoSrv.URL + "/tollgate/events", Secret: hookSecret,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hooks.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	engine, err := authguard.New(authguard.Config{
		Policy:   config.DefaultPolicy(),
		Store:    memstore.New(memstore.Config{Now: clock.Now}),
		Secret:   []byte("demo-login-e2e-secret-of-32-bytes!"),
		Now:      clock.Now,
		Notifier: webhook.Notifier{D: hooks},
	})
	if err != nil {
		t.Fatal(err)
	}
	// tollgate's challenges (the built-in proof of work at its default
	// difficulty), which the demo's guard shows a CAPTCHA verdict.
	ch, err := challenge.New(challenge.Config{Secret: []byte("demo-login-e2e-secret-of-32-bytes!"), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := api.New(api.Config{Engine: engine, Challenger: ch})
	if err != nil {
		t.Fatal(err)
	}
	tg := httptest.NewServer(handler) // httptest listens on 127.0.0.1
	t.Cleanup(tg.Close)

	tc, err := client.New(client.Config{BaseURL: tg.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.CloseIdleConnections)
	proxies, err := demo.LoopbackProxies()
	if err != nil {
		t.Fatal(err)
	}
	codeFile := filepath.Join(t.TempDir(), "codes.txt")
	a, err := demo.New(demo.Config{
		Tollgate: tc, Proxies: proxies, Now: clock.Now,
		HashIterations: 1000, // the default's 600,000 are slow under -race
		WebhookSecret:  hookSecret,
		CodeFile:       codeFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	app = a
	return &stack{clock: clock, demo: demoSrv, codeFile: codeFile}
}

// hookSecret signs the webhooks tollgate sends the demo.
const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// answer is a page the scripted attacker got.
type answer struct {
	status int
	header http.Header
	body   string
}

// postLogin posts a login form as a script would, from ip.
func (s *stack) postLogin(t *testing.T, ip, user, password string) answer {
	t.Helper()
	form := url.Values{"username": {user}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, s.demo.URL+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: string(body)}
}

var secondsRE = regexp.MustCompile(`in (\d+) seconds?\.`)

// The owner of a known browser signs in without a wait or a CAPTCHA while
// her account is guessed at from many addresses and her own address sprays
// other accounts (the sprayed address makes tollgate ask her for an
// e-mailed code first, address_escalated); a browser without her device
// cookie waits even with her password, the sprayed address gets a CAPTCHA
// and then the step-up, and her code step refuses a resend that comes too
// soon.
func TestDemo_OwnerSignsInDuringAnAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the demo in headless Chromium: runs in the full make test, not under -short")
	}
	s := startStack(t)
	browser := browsertest.Start(t, browserBudget)
	alice := browsertest.NewTab(t, browser, s.demo.URL, aliceIP) // browser A
	var code string

	if !t.Run("a: the owner signs in with a code and gets the device cookie", func(t *testing.T) {
		if got := alice.Open("/login"); got != http.StatusOK {
			t.Fatalf("GET /login: status %d", got)
		}
		alice.Shows("Sign in", "alice / wonderland-42")
		alice.Fill("username", "alice", "password", "wonderland-42")
		if got := alice.Click("signin"); got != http.StatusOK {
			t.Errorf("password step: status %d", got)
		}
		alice.Shows(textPassword, textSMSPanel, "No message yet.")
		alice.Click("send-code")
		alice.Shows(textOnItsWay, "to +44 7400 123456: Your tollgate demo code is")
		code = alice.Read("#sms-log li:last-child .sms-code")
		alice.Fill("code", code)
		alice.Click("verify")
		alice.Shows(textSignedIn, "!"+textTooMany)
		// Her first sign-in from this browser: tollgate's login.new_device
		// webhook reaches the demo, which shows the e-mail it would send.
		// Delivery is asynchronous: reload until it is there.
		for i := 0; i < 100 && !strings.Contains(alice.Text(), textNewSignIn); i++ {
			time.Sleep(100 * time.Millisecond)
			alice.Open("/")
		}
		alice.Shows(textNewSignIn)
		if n := strings.Count(alice.Text(), textNewSignIn); n != 1 {
			t.Errorf("the inbox shows %d new sign-in notices, want 1", n)
		}
		alice.Screenshot(t, "a-signed-in")

		cookies := alice.Cookies()
		c := cookies[client.DefaultDeviceCookieName]
		if c == nil {
			t.Fatalf("no %s cookie; cookies: %v", client.DefaultDeviceCookieName, cookies)
		}
		if !c.Secure || !c.HTTPOnly || c.Path != "/" || c.SameSite != network.CookieSameSiteLax || c.Session || c.Value == "" {
			t.Errorf("device cookie: secure %v, httpOnly %v, path %q, sameSite %q, session %v, empty %v; want Secure, HttpOnly, Path=/, SameSite=Lax, persistent, a token",
				c.Secure, c.HTTPOnly, c.Path, c.SameSite, c.Session, c.Value == "")
		}
		if expires := time.Unix(int64(c.Expires), 0); time.Until(expires) < 89*24*time.Hour {
			t.Errorf("device cookie expires %v; want about 90 days from now", expires)
		}
		if cookies[demo.OTPDeviceCookieName] == nil {
			t.Errorf("no %s cookie for the code step", demo.OTPDeviceCookieName)
		}
		alice.Click("signout")
		alice.Shows("Sign in")
	}) {
		return
	}

	s.clock.Advance(31 * time.Second) // t=+31s: later, past the code's resend wait

	if !t.Run("b: guesses at alice make her login answer 429, a spray from her address a CAPTCHA", func(t *testing.T) {
		// Guesses from a new address each, waiting out each delay, until
		// the login asks for 8 seconds.
		var got []string
		var wrongBody string
		for i := 1; i <= 20; i++ {
			a := s.postLogin(t, fmt.Sprintf("198.51.100.%d", i), "alice", fmt.Sprintf("guess-%d", i))
			switch a.status {
			case http.StatusOK:
				got = append(got, "wrong")
				if !strings.Contains(a.body, textWrong) {
					t.Errorf("guess %d: 200 without %q:\n%s", i, textWrong, a.body)
				}
				wrongBody = a.body
				continue
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("guess %d: status %d:\n%s", i, a.status, a.body)
			}
			retry := a.header.Get("Retry-After")
			got = append(got, "429 Retry-After: "+retry)
			want := "Too many attempts, try again in " + retry + " second"
			if !strings.Contains(a.body, want) {
				t.Errorf("guess %d: 429 without %q:\n%s", i, want, a.body)
			}
			if a.header.Get("Ratelimit") == "" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
				t.Errorf("guess %d: RateLimit %q, Content-Type %q; want a RateLimit field and an HTML page",
					i, a.header.Get("Ratelimit"), a.header.Get("Content-Type"))
			}
			n, _ := time.ParseDuration(retry + "s")
			if n >= 8*time.Second {
				break
			}
			s.clock.Advance(n) // the attacker waits it out
		}
		want := []string{"wrong", "wrong", "wrong", "wrong", "wrong",
			"429 Retry-After: 1", "wrong", "429 Retry-After: 2", "wrong",
			"429 Retry-After: 4", "wrong", "429 Retry-After: 8"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("guesses at alice:\n got %q\nwant %q", got, want)
		}

		// A spray from alice's own address (her home router): unknown
		// accounts, each failing once, answered exactly like her wrong
		// passwords, until the address needs a CAPTCHA.
		var sprayed int
		for i := 1; i <= 20; i++ {
			a := s.postLogin(t, aliceIP, fmt.Sprintf("user%02d", i), "Summer2026!")
			if a.status == http.StatusOK {
				if a.body != wrongBody {
					t.Errorf("unknown account user%02d: the page differs from alice's wrong password", i)
				}
				sprayed++
				continue
			}
			if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "" ||
				!strings.Contains(a.body, textChallenge) || strings.Contains(a.body, "Summer2026!") {
				t.Errorf("spray %d: status %d, Retry-After %q; want 429, none, and %q without the password:\n%s",
					i, a.status, a.header.Get("Retry-After"), textChallenge, a.body)
			}
			break
		}
		if sprayed != 10 {
			t.Errorf("%d accounts failed from %s before the CAPTCHA; want 10 (ip_spray)", sprayed, aliceIP)
		}
	}) {
		return
	}

	if !t.Run("b: a browser without the cookie waits; behind the sprayed address, Chromium solves tollgate's challenge and the held form goes on", func(t *testing.T) {
		stranger := browsertest.NewTab(t, browser, s.demo.URL, strangerIP) // browser B
		stranger.Open("/login")
		stranger.Fill("username", "alice", "password", "wonderland-42") // even the right password
		if got := stranger.Click("signin"); got != http.StatusTooManyRequests {
			t.Errorf("alice's password from a browser without her cookie: status %d, want 429", got)
		}
		stranger.Shows("Too many attempts, try again in 8 seconds.", "!"+textPassword)
		stranger.Screenshot(t, "b-delayed-without-cookie")

		// Behind the sprayed address, bob's login meets tollgate's
		// challenge: the page's solver (tollgate's proof of work, in
		// Chromium's Web Crypto) posts the solution, and the form he had
		// filled in, held on the server, goes on: he types nothing again.
		stranger.SetIP(aliceIP)
		stranger.Open("/login")
		stranger.Fill("username", "bob", "password", "builder-42")
		res := stranger.Submit("signin")
		if res.Status != http.StatusTooManyRequests || header(res, "Retry-After") != "" {
			t.Errorf("bob from the sprayed address: status %d, Retry-After %q; want the challenge page, 429, none",
				res.Status, header(res, "Retry-After"))
		}
		// Bob's right password from an address tollgate escalated is
		// answered step_up (address_escalated): the code "e-mailed" to him
		// first, then the demo's SMS step.
		stranger.Wait("#page-stepup", 60*time.Second)
		stranger.Shows(textStepUp, "!"+textPassword, "!"+textChallenge)
		codes := readCodes(t, s.codeFile, "bob")
		if len(codes) != 1 {
			t.Fatalf("%d codes e-mailed to bob, want 1", len(codes))
		}
		stranger.Fill("stepup-code", codes[0])
		stranger.Click("stepup-verify")
		stranger.Shows(textPassword, "!"+textChallenge, "!"+textStepUp)
		stranger.Screenshot(t, "b-challenge-solved")
	}) {
		return
	}

	if !t.Run("c: the owner's browser goes ahead, through the step-up of her escalated address", func(t *testing.T) {
		alice.Open("/login")
		alice.Fill("username", "alice", "password", "wonderland-42")
		if got := alice.Click("signin"); got != http.StatusOK {
			t.Errorf("alice with her cookie: status %d", got)
		}
		// Her device cookie exempts her from every delay and from every
		// step-up reason but one: her own address sprayed (a device token
		// can be stolen with the browser; the address is the attack's).
		// So a code first, then her SMS step; no wait, no CAPTCHA.
		alice.Shows(textStepUp, "!"+textTooMany, "!"+textChallenge)
		codes := readCodes(t, s.codeFile, "alice")
		if len(codes) != 1 {
			t.Fatalf("%d codes e-mailed to alice, want 1", len(codes))
		}
		alice.Fill("stepup-code", codes[0])
		alice.Click("stepup-verify")
		alice.Shows(textPassword, "!"+textTooMany, "!"+textChallenge)
		alice.Screenshot(t, "c-owner-at-once")
	}) {
		return
	}

	if !t.Run("d: a code resent too soon waits", func(t *testing.T) {
		alice.Click("send-code")
		alice.Shows(textOnItsWay)
		code = alice.Read("#sms-log li:last-child .sms-code")
		if got := alice.Click("send-code"); got != http.StatusTooManyRequests {
			t.Errorf("second send: status %d, want 429", got)
		}
		text := alice.Shows("A code was sent a moment ago. You can ask for another in")
		if m := secondsRE.FindStringSubmatch(text); m == nil || m[1] != "60" {
			t.Errorf("resend wait %v; want 60 seconds (30 s, then doubling)", m)
		}
		alice.Screenshot(t, "d-resend-too-soon")
	}) {
		return
	}

	t.Run("c: the owner finishes signing in during the attack", func(t *testing.T) {
		alice.Fill("code", code)
		if got := alice.Click("verify"); got != http.StatusOK {
			t.Errorf("code step: status %d", got)
		}
		alice.Shows(textSignedIn, "!"+textTooMany, "!"+textChallenge)
		alice.Screenshot(t, "c-signed-in-during-attack")

		// Meanwhile, the account is still delayed for everyone else.
		if a := s.postLogin(t, "198.51.100.99", "alice", "guess"); a.status != http.StatusTooManyRequests {
			t.Errorf("a guess at alice after her login: status %d, want 429", a.status)
		}
	})
}

// header is a response's header field, by any case of its name.
func header(res *network.Response, name string) string {
	for k, v := range res.Headers {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}
