package expresslogin_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/tollgate-auth/tollgate/e2e/browser/browsertest"

	"github.com/tollgate-auth/tollgate/api/client"
)

// The addresses the test plays, through the app's X-Forwarded-For trust of
// loopback (TRUSTED_PROXIES): alice's own (her home router, which an
// attacker shares), a sprayer's and a stranger's.
const (
	aliceIP    = "203.0.113.7"
	sprayerIP  = "203.0.113.66"
	strangerIP = "198.51.100.200"
)

// The texts the pages show (the same as examples/demo-login's).
const (
	textWrong     = "Wrong username or password."
	textChallenge = "Checking that this request is not automated"
	textOnItsWay  = "If this number can receive codes, one is on its way."
	textPassword  = "Password accepted. Second step"
	textSignedIn  = "Signed in as alice."
	textTooMany   = "Too many attempts"
	textSMSPanel  = "Not a real SMS"
	textResend    = "A code was sent a moment ago. You can ask for another in"
	otpCookieName = "__Host-tollgate-otp-device"
	browserBudget = 150 * time.Second
	setupCommand  = "(cd clients/typescript && npm ci) && scripts/build-npm.sh build/npm && cd examples/express-login && npm ci && npm run build"
)

// need skips the test for a missing prerequisite, or fails it with CI=true.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true)", msg)
	}
	t.Skip(msg)
}

// appDir is examples/express-login once node, the app's node_modules (with
// the built client) and its build are there.
func appDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "examples", "express-login"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		need(t, "no node on PATH: the Express demo needs Node.js 18 or later; then run: %s", setupCommand)
	}
	for _, f := range []string{
		"node_modules/express/package.json",
		"node_modules/@tollgate/client/dist/index.js",
		"node_modules/@tollgate/client/dist/express.js",
		"dist/server.js",
	} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			need(t, "the Express demo is not installed and built (no %s); run: %s", f, setupCommand)
		}
	}
	return dir
}

// lines keeps a process's output lines.
type lines struct {
	mu  sync.Mutex
	buf []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, s)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.buf, "\n")
}

// lineWriter is an io.Writer into lines, for a process's other stream.
type lineWriter struct {
	l    *lines
	mu   sync.Mutex
	part []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.l.add(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
}

// process is a program the test started.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    *lines
	exited chan struct{}
	err    error // its exit status, once exited is closed
}

// start runs cmd, reads the stream watch (its stdout or stderr) line by line
// and returns once addr finds the address it listens on in a line; the
// process is stopped at cleanup, by its PID: SIGTERM, then SIGKILL after 5 s.
func start(t *testing.T, name string, cmd *exec.Cmd, watchStderr bool, addr func(line string) (string, bool)) (*process, string) {
	t.Helper()
	p := &process{name: name, cmd: cmd, out: &lines{}, exited: make(chan struct{})}
	var watch io.ReadCloser
	var err error
	if watchStderr {
		watch, err = cmd.StderrPipe()
		cmd.Stdout = &lineWriter{l: p.out}
	} else {
		watch, err = cmd.StdoutPipe()
		cmd.Stderr = &lineWriter{l: p.out}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(watch)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.out.add(line)
			if a, ok := addr(line); ok && !sent {
				found <- a
				sent = true
			}
		}
		io.Copy(io.Discard, watch)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case a := <-found:
		return p, a
	case <-p.exited:
		t.Fatalf("%s exited at start: %v\n%s", name, p.err, p.out)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start in 60 s:\n%s", name, p.out)
	}
	return nil, ""
}

// stop ends the process by its PID and waits for it.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Errorf("%s (pid %d) did not stop in 5 s after SIGTERM; killing it", p.name, p.cmd.Process.Pid)
		p.cmd.Process.Kill()
		<-p.exited
	}
	if t.Failed() {
		t.Logf("%s's output:\n%s", p.name, p.out)
	}
}

// startTollgate builds tollgate and starts it on a free loopback port with
// the memory store and the built-in policy (or what env's TOLLGATE_CONFIG
// says); it returns its base URL.
func startTollgate(t *testing.T, env ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		need(t, "no go tool on PATH to build tollgate")
	}
	bin := filepath.Join(t.TempDir(), "tollgate")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/tollgate")
	build.Dir = filepath.Join("..", "..", "..") // in the service's module, with its go.sum
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tollgate: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"TOLLGATE_LISTEN=127.0.0.1:0", // the kernel picks a free port; the log says which
		"TOLLGATE_SECRET=express-login-e2e-secret-of-32-bytes!",
	}
	cmd.Env = append(cmd.Env, env...)
	_, addr := start(t, "tollgate", cmd, true, func(line string) (string, bool) {
		var m struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "listening" && m.Addr != "" {
			return m.Addr, true
		}
		return "", false
	})
	return "http://" + addr
}

var listeningRE = regexp.MustCompile(`^listening (http://127\.0\.0\.1:\d+)$`)

// startApp starts the Express demo (node dist/server.js) on a free
// loopback port in front of tollgate; it returns its base URL. It trusts
// loopback peers' X-Forwarded-For, so that the test can play many client
// addresses, and hashes with few PBKDF2 iterations, to run fast; env adds
// variables (STEP_UP_CODES_FILE).
func startApp(t *testing.T, dir, tollgateURL string, env ...string) string {
	t.Helper()
	cmd := exec.Command("node", "dist/server.js")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"TOLLGATE_URL=" + tollgateURL,
		"LISTEN=127.0.0.1:0",
		"TRUSTED_PROXIES=127.0.0.0/8,::1/128",
		"DEMO_HASH_ITERATIONS=1000",
	}
	cmd.Env = append(cmd.Env, env...)
	_, base := start(t, "express-login", cmd, false, func(line string) (string, bool) {
		if m := listeningRE.FindStringSubmatch(line); m != nil {
			return m[1], true
		}
		return "", false
	})
	return base
}

// answer is a page the scripted attacker got.
type answer struct {
	status int
	header http.Header
	body   string
}

// postLogin posts a login form as a script would, from ip.
func postLogin(t *testing.T, base, ip, user, password string) answer {
	t.Helper()
	form := url.Values{"username": {user}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
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

// header is a response's header field, by any case of its name.
func header(res *network.Response, name string) string {
	for k, v := range res.Headers {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

var secondsRE = regexp.MustCompile(`in (\d+) seconds?\.`)

// waitSeconds is the wait a page's text names ("in N seconds."), or -1.
func waitSeconds(text string) int {
	m := secondsRE.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return n
}

// The owner of a known browser signs in at once while her account is
// guessed at from her own address (her home router, which the attacker
// shares) and another address sprays accounts; wrong passwords get 429
// with a growing Retry-After, a browser without her device cookie waits
// even with her password, and the 11th account sprayed from one address
// gets tollgate's challenge, which the browser solves and after which the
// login goes on with the form as filled in (through the second factor that
// a right password from that escalated address needs). Real processes, real clock:
// tollgate on the memory store and the built-in policy, the Express app
// (behind @tollgate/client/express, installed from its npm tarball) with
// node, Chromium.
func TestExpressDemo_OwnerSignsInDuringAnAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tollgate and runs tollgate, node and Chromium")
	}
	dir := appDir(t)
	browsertest.Path(t) // skip before building anything when there is no browser
	codes := filepath.Join(t.TempDir(), stepUpCodesName)
	base := startApp(t, dir, startTollgate(t), "STEP_UP_CODES_FILE="+codes)
	browser := browsertest.Start(t, browserBudget)
	alice := browsertest.NewTab(t, browser, base, aliceIP) // browser A

	if !t.Run("a: the owner signs in with a code and gets the device cookie", func(t *testing.T) {
		if got := alice.Open("/login"); got != http.StatusOK {
			t.Fatalf("GET /login: status %d", got)
		}
		alice.Shows("Sign in", "alice / wonderland-42", "bob / builder-42")
		alice.Fill("username", "alice", "password", "wonderland-42")
		if got := alice.Click("signin"); got != http.StatusOK {
			t.Errorf("password step: status %d", got)
		}
		alice.Shows(textPassword, textSMSPanel, "No message yet.")
		alice.Click("send-code")
		alice.Shows(textOnItsWay, "to +44 7400 123456: Your tollgate demo code is")
		code := alice.Read("#sms-log li:last-child .sms-code")
		alice.Fill("code", code)
		alice.Click("verify")
		alice.Shows(textSignedIn, "!"+textTooMany)
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
		if cookies[otpCookieName] == nil {
			t.Errorf("no %s cookie for the code step", otpCookieName)
		}
		alice.Click("signout")
		alice.Shows("Sign in")
	}) {
		return
	}

	var wrongBody string
	if !t.Run("b: wrong passwords for alice from her address get 429 with a growing Retry-After", func(t *testing.T) {
		// The attacker, behind alice's own address, waits out each delay,
		// until the login asks for 8 seconds: 1 + 2 + 4 s of waiting. Her
		// address is a known network of her account (her sign-in in a): the
		// five guesses past the account's five free ones go ahead on that
		// network's allowance, which he, behind her address, spends.
		var got []string
		for i := 1; i <= 20; i++ {
			a := postLogin(t, base, aliceIP, "alice", fmt.Sprintf("guess-%d", i))
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
			n, err := strconv.Atoi(retry)
			if err != nil || n < 1 || n > 8 {
				t.Fatalf("guess %d: Retry-After %q; want 1 to 8 seconds", i, retry)
			}
			if n == 8 {
				break
			}
			time.Sleep(time.Duration(n)*time.Second + 150*time.Millisecond) // the attacker waits it out
		}
		want := []string{"wrong", "wrong", "wrong", "wrong", "wrong",
			"wrong", "wrong", "wrong", "wrong", "wrong",
			"429 Retry-After: 1", "wrong", "429 Retry-After: 2", "wrong",
			"429 Retry-After: 4", "wrong", "429 Retry-After: 8"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("guesses at alice:\n got %q\nwant %q", got, want)
		}

		// A browser without her cookie waits too, even with her password,
		// and the page says as long as Retry-After.
		stranger := browsertest.NewTab(t, browser, base, strangerIP) // browser B
		stranger.Open("/login")
		stranger.Fill("username", "alice", "password", "wonderland-42")
		res := stranger.Submit("signin")
		if res.Status != http.StatusTooManyRequests {
			t.Errorf("alice's password from a browser without her cookie: status %d, want 429", res.Status)
		}
		text := stranger.Shows("Too many attempts, try again in", "!"+textPassword)
		retry := header(res, "Retry-After")
		if n := waitSeconds(text); n < 1 || n > 8 || strconv.Itoa(n) != retry {
			t.Errorf("the page says wait %d s, Retry-After %q; want the same, at most 8 s", n, retry)
		}
		stranger.Screenshot(t, "b-delayed-without-cookie")
	}) {
		return
	}

	if !t.Run("c: the 11th account sprayed from one address gets tollgate's challenge, which Chromium solves, and the held form goes on", func(t *testing.T) {
		// Unknown accounts, each failing once, answered exactly like
		// alice's wrong passwords, until the address needs a CAPTCHA.
		var sprayed int
		for i := 1; i <= 20; i++ {
			a := postLogin(t, base, sprayerIP, fmt.Sprintf("user%02d", i), "Summer2026!")
			if a.status == http.StatusOK {
				if a.body != wrongBody {
					t.Errorf("unknown account user%02d: the page differs from alice's wrong password:\n%s", i, a.body)
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
			t.Errorf("%d accounts failed from %s before the CAPTCHA; want 10 (ip_spray)", sprayed, sprayerIP)
		}

		// In a browser behind that address: tollgate's challenge page, whose
		// solver (tollgate's proof of work, in Chromium's Web Crypto) posts
		// the solution by itself; the form bob had filled in, held on the
		// server, then goes on to the password step: he types nothing again.
		// His right password from an address tollgate escalated is answered
		// step_up (address_escalated): the code page, then the code step.
		b := browsertest.NewTab(t, browser, base, sprayerIP)
		b.Open("/login")
		b.Fill("username", "bob", "password", "builder-42")
		res := b.Submit("signin")
		if res.Status != http.StatusTooManyRequests || header(res, "Retry-After") != "" {
			t.Errorf("bob from the sprayed address: status %d, Retry-After %q; want the challenge page, 429, none",
				res.Status, header(res, "Retry-After"))
		}
		b.Wait("#page-stepup", 60*time.Second)
		b.Shows(textStepUp, "!"+textChallenge, "!"+textTooMany)
		if b.Cookies()[demoSession] != nil {
			t.Errorf("a session cookie before the second factor")
		}
		code, _ := lastCode(t, codes)
		b.Fill("tollgate-code", code)
		b.Click("tollgate-step-up-submit")
		b.Shows(textPassword, "!"+textStepUp)
		b.Screenshot(t, "c-challenge-solved")
	}) {
		return
	}

	if !t.Run("d: the owner's browser goes ahead at once, from the attacked address", func(t *testing.T) {
		alice.Open("/login")
		alice.Fill("username", "alice", "password", "wonderland-42")
		started := time.Now()
		if got := alice.Click("signin"); got != http.StatusOK {
			t.Errorf("alice with her cookie: status %d", got)
		}
		// "At once" is what the page shows: the password step, not the delay
		// page or a CAPTCHA (the time is logged: a loaded machine moves it).
		t.Logf("alice's password step took %v", time.Since(started).Round(time.Millisecond))
		alice.Shows(textPassword, "!"+textTooMany, "!"+textChallenge)
		alice.Screenshot(t, "d-owner-at-once")
	}) {
		return
	}

	t.Run("e: a code resent too soon waits; the owner finishes signing in during the attack", func(t *testing.T) {
		// Her known device gets a code at once (the owner's codes), but a
		// second one right after it meets the destination's backoff: the
		// rest of 30 s after step a's code (60 s once that is over).
		if got := alice.Click("send-code"); got != http.StatusOK {
			t.Fatalf("send: status %d", got)
		}
		alice.Shows(textOnItsWay)
		code := alice.Read("#sms-log li:last-child .sms-code")
		res := alice.Submit("send-code")
		if res.Status != http.StatusTooManyRequests {
			t.Errorf("second send at once: status %d, want 429", res.Status)
		}
		text := alice.Shows(textResend)
		n, retry := waitSeconds(text), header(res, "Retry-After")
		if n < 1 || n > 60 || strconv.Itoa(n) != retry {
			t.Errorf("resend wait %d s, Retry-After %q; want the same, at most 60 s", n, retry)
		}
		alice.Screenshot(t, "e-resend-too-soon")

		alice.Fill("code", code)
		if got := alice.Click("verify"); got != http.StatusOK {
			t.Errorf("code step: status %d", got)
		}
		alice.Shows(textSignedIn, "!"+textTooMany, "!"+textChallenge)
		alice.Screenshot(t, "e-signed-in-during-attack")

		// Meanwhile, the account is still under backoff for everyone else:
		// a guess is delayed, or, when b's last 8 s have run out (a loaded
		// machine makes c and d slow), the one guess it lets through is
		// followed by a longer delay.
		a := postLogin(t, base, "198.51.100.99", "alice", "guess")
		if a.status == http.StatusOK {
			a = postLogin(t, base, "198.51.100.99", "alice", "guess-2")
		}
		if a.status != http.StatusTooManyRequests {
			t.Errorf("guesses at alice after her login: status %d, want 429 by the second", a.status)
		}
	})
}
