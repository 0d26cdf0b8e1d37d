package expresslogin_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tollgate-auth/tollgate/e2e/browser/browsertest"

	"github.com/tollgate-auth/tollgate/api/client"
)

const (
	textStepUp      = "Confirm it is you"
	textCodeSent    = "We sent you a code"
	textWrongCode   = "That code is not right"
	stepUpCookie    = "__Host-tollgate-step-up"
	demoSession     = "__Host-demo-session"
	bobStepUpIP     = "198.51.100.41"
	bobStepUpOther  = "198.51.100.42"
	stepUpCodesName = "step-up-codes.jsonl"
)

// stepUpDemo starts tollgate with the demo's small breached corpus (which
// lists bob's password) and the demo with its step-up sender writing to a
// file; it returns the demo's base URL and the file.
func stepUpDemo(t *testing.T) (base, codes string) {
	t.Helper()
	dir := appDir(t)
	browsertest.Path(t) // skip before building anything when there is no browser
	tmp := t.TempDir()
	config := filepath.Join(tmp, "tollgate.yaml")
	corpus := filepath.Join(dir, "testdata", "breached-corpus.txt")
	if err := os.WriteFile(config, []byte("breached:\n  corpus: "+strconv.Quote(corpus)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	codes = filepath.Join(tmp, stepUpCodesName)
	return startApp(t, dir, startTollgate(t, "TOLLGATE_CONFIG="+config), "STEP_UP_CODES_FILE="+codes), codes
}

// lastCode is the code the demo's sender wrote last, and how many it wrote.
func lastCode(t *testing.T, codes string) (string, int) {
	t.Helper()
	f, err := os.Open(codes)
	if os.IsNotExist(err) {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last string
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct{ User, Code string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("the sender's line %q: %v", sc.Text(), err)
		}
		last, n = l.Code, n+1
	}
	return last, n
}

// A breached password, right, signs in only after the second factor: the
// browser gets the guard's code page and no session; a wrong code keeps it
// there, signed out; the code the demo's sender wrote leads on to the code
// step and, with the SMS code, to the signed-in page and the device cookie;
// that browser's next login skips the second factor. Real processes:
// tollgate (memory store, built-in policy, a breached corpus), the Express
// demo with node, Chromium.
func TestExpressDemo_ABreachedPasswordSignsInOnlyAfterTheSecondFactor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tollgate and runs tollgate, node and Chromium")
	}
	base, codes := stepUpDemo(t)
	browser := browsertest.Start(t, browserBudget)
	bob := browsertest.NewTab(t, browser, base, bobStepUpIP)

	if !t.Run("a: bob's breached password gets the code page, no session", func(t *testing.T) {
		bob.Open("/login")
		bob.Fill("username", "bob", "password", "builder-42")
		if got := bob.Click("signin"); got != http.StatusOK {
			t.Errorf("password step: status %d", got)
		}
		bob.Shows(textStepUp, textCodeSent, "!"+textPassword, "!bob")
		cookies := bob.Cookies()
		if cookies[demoSession] != nil {
			t.Errorf("a session cookie before the second factor")
		}
		c := cookies[stepUpCookie]
		if c == nil || !c.HTTPOnly || !c.Secure {
			t.Fatalf("step-up cookie %+v; want one, HttpOnly and Secure", c)
		}
		if _, n := lastCode(t, codes); n != 1 {
			t.Errorf("%d codes sent; want 1", n)
		}
		bob.Screenshot(t, "stepup-a-code-page")
	}) {
		return
	}

	if !t.Run("b: a wrong code does not sign in", func(t *testing.T) {
		code, _ := lastCode(t, codes)
		wrong := "000000"
		if code == wrong {
			wrong = "000001"
		}
		bob.Fill("tollgate-code", wrong)
		bob.Click("tollgate-step-up-submit")
		bob.Shows(textWrongCode, "!"+textPassword)
		if bob.Cookies()[demoSession] != nil {
			t.Errorf("a session cookie after a wrong code")
		}
		if got := bob.Open("/"); got != http.StatusOK {
			t.Errorf("GET /: status %d", got)
		}
		bob.Shows("Sign in", "!Signed in as")
		bob.Screenshot(t, "stepup-b-wrong-code")
	}) {
		return
	}

	if !t.Run("c: the sender's code leads on; with the SMS code bob is signed in", func(t *testing.T) {
		bob.Open("/login/step-up")
		code, _ := lastCode(t, codes)
		bob.Fill("tollgate-code", code)
		if got := bob.Click("tollgate-step-up-submit"); got != http.StatusOK {
			t.Errorf("step-up code: status %d", got)
		}
		bob.Shows(textPassword, "!"+textStepUp)
		bob.Click("send-code")
		sms := bob.Read("#sms-log li:last-child .sms-code")
		bob.Fill("code", sms)
		bob.Click("verify")
		bob.Shows("Signed in as bob.")
		if bob.Cookies()[client.DefaultDeviceCookieName] == nil {
			t.Errorf("no device cookie after both steps")
		}
		bob.Screenshot(t, "stepup-c-signed-in")
		bob.Click("signout")
	}) {
		return
	}

	t.Run("d: the owner's known device signs in without a second code", func(t *testing.T) {
		_, before := lastCode(t, codes)
		bob.Open("/login")
		bob.Fill("username", "bob", "password", "builder-42")
		bob.Click("signin")
		bob.Shows(textPassword, "!"+textStepUp)
		if _, n := lastCode(t, codes); n != before {
			t.Errorf("%d step-up codes sent; want %d (none more)", n, before)
		}
		// Another browser, with the same password, still gets the code page.
		other := browsertest.NewTab(t, browser, base, bobStepUpOther)
		other.Open("/login")
		other.Fill("username", "bob", "password", "builder-42")
		other.Click("signin")
		other.Shows(textStepUp, "!"+textPassword)
	})
}
