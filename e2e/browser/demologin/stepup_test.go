package demologin_test

import (
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/e2e/browser/browsertest"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/breached"
	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/examples/demo-login/demo"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// The step-up pages' texts.
const (
	textStepUp    = "this sign-in needs one more step first"
	textWrongCode = "That code is not right."
	attackerIP    = "192.0.2.66"
)

// stepUpStack is tollgate with a breached-password corpus that holds
// alice's demo password (as if it had leaked), and the demo in front of
// it, whose step-up codes go to codeFile.
type stepUpStack struct {
	clock    *testclock.Clock
	demo     *httptest.Server
	codeFile string
}

func startStepUpStack(t *testing.T) *stepUpStack {
	t.Helper()
	clock := testclock.New(testclock.Epoch)
	secret := []byte("demo-login-step-up-secret-of-32-bytes")
	engine, err := authguard.New(authguard.Config{
		Policy: config.DefaultPolicy(),
		Store:  memstore.New(memstore.Config{Now: clock.Now}),
		Secret: secret,
		Now:    clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := challenge.New(challenge.Config{Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(demo.DemoUsers()[0].Password)) // alice's
	corpus, err := breached.Parse([]byte(strings.ToUpper(hex.EncodeToString(sum[:]))+":42\r\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := breached.New(breached.Config{Corpus: corpus})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := api.New(api.Config{Engine: engine, Challenger: ch, Breached: ranges})
	if err != nil {
		t.Fatal(err)
	}
	tg := httptest.NewServer(handler)
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
	app, err := demo.New(demo.Config{
		Tollgate: tc, Proxies: proxies, Now: clock.Now,
		HashIterations: 1000, // the default's 600,000 are slow under -race
		CodeFile:       codeFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	return &stepUpStack{clock: clock, demo: srv, codeFile: codeFile}
}

var codeLine = regexp.MustCompile(`to (\S+): Your tollgate demo sign-in code is ([0-9]{6})`)

// codes are the step-up codes the demo "e-mailed" to user, oldest first.
func (s *stepUpStack) codes(t *testing.T, user string) []string {
	t.Helper()
	return readCodes(t, s.codeFile, user)
}

// readCodes are the step-up codes the demo wrote to codeFile for user,
// oldest first.
func readCodes(t *testing.T, codeFile, user string) []string {
	t.Helper()
	b, err := os.ReadFile(codeFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, m := range codeLine.FindAllStringSubmatch(string(b), -1) {
		if m[1] == user {
			out = append(out, m[2])
		}
	}
	return out
}

// notSignedIn fails the test unless the tab, opening the home page, is
// sent to the login form.
func notSignedIn(t *testing.T, tab *browsertest.Tab) {
	t.Helper()
	tab.Open("/")
	tab.Shows("Sign in", "!"+textSignedIn)
	if _, ok := tab.Cookies()["__Host-demo-session"]; ok {
		t.Errorf("the tab holds a session cookie")
	}
}

// A password found in a breach corpus signs in only after the second
// factor: a stranger's browser (no device cookie) that types alice's
// leaked password gets the step-up page and no session, a wrong code gets
// nothing, and only the code the demo e-mailed to alice lets the sign-in go
// on. Her browser then holds the device cookie of the step-up's pass, and
// her next sign-in with the same password goes straight on.
func TestDemo_ABreachedPasswordSignsInOnlyAfterTheSecondFactor(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the demo in headless Chromium: runs in the full make test, not under -short")
	}
	s := startStepUpStack(t)
	browser := browsertest.Start(t, browserBudget)
	alicePassword := demo.DemoUsers()[0].Password

	t.Run("a wrong code does not sign in", func(t *testing.T) {
		attacker := browsertest.NewTab(t, browser, s.demo.URL, attackerIP)
		attacker.Open("/login")
		attacker.Fill("username", "alice", "password", alicePassword)
		if got := attacker.Click("signin"); got != http.StatusOK {
			t.Errorf("password step: status %d", got)
		}
		attacker.Shows(textStepUp, "!"+textPassword, "!"+textSignedIn)
		if n := len(s.codes(t, "alice")); n != 1 {
			t.Fatalf("%d codes e-mailed to alice, want 1", n)
		}
		attacker.Fill("stepup-code", "000000")
		attacker.Click("stepup-verify")
		attacker.Shows(textWrongCode, "!"+textPassword, "!"+textSignedIn)
		attacker.Screenshot(t, "stepup-wrong-code")
		notSignedIn(t, attacker)
	})

	t.Run("the owner signs in with the e-mailed code, then her device goes straight on", func(t *testing.T) {
		alice := browsertest.NewTab(t, browser, s.demo.URL, aliceIP)
		alice.Open("/login")
		alice.Fill("username", "alice", "password", alicePassword)
		alice.Click("signin")
		alice.Shows(textStepUp, "!"+textPassword)
		alice.Screenshot(t, "stepup-page")
		codes := s.codes(t, "alice")
		if len(codes) != 2 {
			t.Fatalf("%d codes e-mailed to alice, want 2", len(codes))
		}
		// Not signed in before the code, even in the same browser.
		if _, ok := alice.Cookies()["__Host-demo-session"]; ok {
			t.Errorf("a session cookie before the second factor")
		}
		alice.Fill("stepup-code", codes[1])
		if got := alice.Click("stepup-verify"); got != http.StatusOK {
			t.Errorf("code step: status %d", got)
		}
		// The step-up passed: the login goes on to the demo's own SMS
		// step, as every sign-in does.
		alice.Shows(textPassword, "!"+textStepUp)
		alice.Click("send-code")
		alice.Fill("code", alice.Read("#sms-log li:last-child .sms-code"))
		alice.Click("verify")
		alice.Shows(textSignedIn)
		if _, ok := alice.Cookies()[client.DefaultDeviceCookieName]; !ok {
			t.Fatalf("no device cookie after the stepped-up sign-in")
		}

		// Signed out, the same browser and the same leaked password: her
		// device is known, so no second factor is asked for.
		alice.Click("signout")
		alice.Fill("username", "alice", "password", alicePassword)
		alice.Click("signin")
		alice.Shows(textPassword, "!"+textStepUp)
		if n := len(s.codes(t, "alice")); n != 2 {
			t.Errorf("%d codes e-mailed to alice, want still 2", n)
		}
	})
}
