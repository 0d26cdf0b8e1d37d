package e2e_test

import (
	"bytes"
	"context"
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
	"github.com/chromedp/chromedp"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/proxy"
)

func queryEscape(s string) string { return url.QueryEscape(s) }

// loginFlow is the flow of the examples' login routes.
const loginFlow = "login"

// configOf is tg's config, read from its file as tollgate serve reads it.
func configOf(t *testing.T, tg *tollgate) *config.Config {
	t.Helper()
	cfg, err := config.Load(tg.config, func(k string) string {
		if k == "TOLLGATE_SECRET" {
			return secret
		}
		return ""
	})
	if err != nil {
		t.Fatalf("reading %s: %v", tg.config, err)
	}
	return cfg
}

// policyOf is the policy tg runs with.
func policyOf(t *testing.T, tg *tollgate) *authguard.Policy { return configOf(t, tg).Policy }

// free is the number of failures the login flow lets an account have
// before its first delay: account_backoff's free.
func free(t *testing.T, tg *tollgate) int {
	t.Helper()
	r := policyOf(t, tg).Flow(loginFlow).Rule("account_backoff")
	if r == nil {
		t.Fatal("the login flow has no account_backoff rule")
	}
	return r.Backoff.Free
}

// attackBound is the most failed checks the login flow's account_backoff
// lets one account have within an attack that lasted span: free at once,
// then one each time the growing delay runs out (the policy's own exact
// figure, backoff.Policy.MaxFailuresIn). With the built-in policy that is
// free+2 for an attack shorter than 3 s (delays of 1 s, then 2 s), free+3
// up to 7 s: a slow machine stretches hydra's run and so what the policy
// allows, which a bound of free+2 alone would miss-read as a failure.
func attackBound(t *testing.T, tg *tollgate, span time.Duration) int {
	t.Helper()
	r := policyOf(t, tg).Flow(loginFlow).Rule("account_backoff")
	if r == nil {
		t.Fatal("the login flow has no account_backoff rule")
	}
	return r.Backoff.MaxFailuresIn(span + time.Millisecond)
}

// limitOf is the limit of rule's first window in the login flow.
func limitOf(t *testing.T, tg *tollgate, rule string) int {
	t.Helper()
	r := policyOf(t, tg).Flow(loginFlow).Rule(rule)
	if r == nil || len(r.Windows) == 0 {
		t.Fatalf("the login flow has no %s rule with windows", rule)
	}
	return r.Windows[0].Limit
}

// deviceCookie is the name of tg's device cookie: the config's, or the
// default without __Host- (device_cookie.insecure, which the set-up sets).
func deviceCookie(t *testing.T, tg *tollgate) string {
	t.Helper()
	if name := configOf(t, tg).Proxy.Cookie.Name; name != "" {
		return name
	}
	return proxy.DefaultInsecureCookieName
}

// client is a plain HTTP client at an address of its own: it says so in
// X-Forwarded-For, which the proxy believes from 127.0.0.1 alone, and
// follows no redirect.
type client struct {
	ip string
	hc *http.Client
}

func newClient(ip string) *client {
	return &client{ip: ip, hc: &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// answer is a response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// post posts a form to url with cookie (a Cookie header's value, or "").
func (c *client) post(t *testing.T, url, form, cookie string) answer {
	t.Helper()
	a, err := c.tryPost(url, form, cookie)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// tryPost is post for a goroutine of its own.
func (c *client) tryPost(url, form, cookie string) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(form))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", c.ip)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("POST %s: reading the body: %w", url, err)
	}
	return answer{resp.StatusCode, resp.Header, body}, nil
}

// djangoLogin posts the admin's login form as an attacker who never loads
// it does: the fixed CSRF pair.
func (c *client) djangoLogin(t *testing.T, base, username, password string) answer {
	t.Helper()
	return c.post(t, base+djangoLoginPath, djangoLoginBody(username, password), "csrftoken="+csrfPair)
}

// djangoLogins posts one login for each username at once, from one
// goroutine each, and returns the answers in the same order.
func (c *client) djangoLogins(t *testing.T, base, password string, usernames ...string) []answer {
	t.Helper()
	out, errs := make([]answer, len(usernames)), make([]error, len(usernames))
	var wg sync.WaitGroup
	for i, u := range usernames {
		wg.Go(func() {
			out[i], errs[i] = c.tryPost(base+djangoLoginPath, djangoLoginBody(u, password), "csrftoken="+csrfPair)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// challenged reports whether a is the proxy's challenge page.
func (a answer) challenged() bool {
	return a.status == http.StatusTooManyRequests && bytes.Contains(a.body, []byte("tollgate-challenge"))
}

// delayed reports whether a is the proxy's delay page.
func (a answer) delayed() bool {
	return a.status == http.StatusTooManyRequests && a.header.Get("Retry-After") != "" && !a.challenged()
}

// hydra is a hydra run against a proxy: one login, the top-100 list, 16
// tasks (forked processes of its own, in a process group of its own),
// its output in a file.
type hydra struct {
	cmd  *exec.Cmd
	out  string
	done chan struct{}
	err  error
	// started and ended bound the attack: every guess it made reached
	// the proxy between them.
	started, ended time.Time
}

// startHydra starts hydra against the proxy at base (http://host:port)
// with the http-post-form option form; it is stopped at cleanup, its
// whole process group by the group's id.
func startHydra(t *testing.T, base, login, form string) *hydra {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	list, err := filepath.Abs("testdata/top100.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := &hydra{out: filepath.Join(dir, "hydra.out"), done: make(chan struct{})}
	out, err := os.Create(h.out)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// -I: no restore file from an earlier run (hydra writes its own in
	// its work directory, the test's).
	h.cmd = exec.Command("hydra", "-I", "-l", login, "-P", list, "-t", "16", u.Hostname(), "-s", u.Port(), "http-post-form", form)
	h.cmd.Dir = dir
	h.cmd.Stdout, h.cmd.Stderr = out, out
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	h.started = time.Now()
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("starting hydra: %v", err)
	}
	go func() {
		h.err = h.cmd.Wait()
		h.ended = time.Now()
		close(h.done)
	}()
	t.Cleanup(h.stop)
	return h
}

// stop kills hydra's process group (its tasks are forked processes) and
// waits for hydra.
func (h *hydra) stop() {
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.done
}

// running reports whether hydra is still attacking.
func (h *hydra) running() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// wait waits, up to limit, for hydra to finish, and returns the number
// of passwords it says it found.
func (h *hydra) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(limit):
		h.stop()
		b, _ := os.ReadFile(h.out)
		t.Fatalf("hydra did not finish within %v:\n%s", limit, b)
	}
	b, _ := os.ReadFile(h.out)
	out := string(b)
	t.Logf("hydra:\n%s", out)
	if h.err != nil {
		t.Fatalf("hydra: %v", h.err)
	}
	m := regexp.MustCompile(`(\d+) valid passwords? found`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("hydra's output says no count of valid passwords:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitUntil waits, up to limit, until cond holds, and reports whether it
// did. For the real processes' progress, which no test clock moves.
func waitUntil(limit time.Duration, cond func() bool) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
	return true
}

// browser is the headless Chromium the tests share, started on first use
// and stopped when the binary's tests end.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

// startBrowser starts headless Chromium as e2e/browser/browsertest does.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium()),
			chromedp.NoSandbox, // the tests run as root
			chromedp.UserDataDir(env.sub("chromium")),
			chromedp.WindowSize(900, 820),
		)
		// The browser lives as long as the context of its first action,
		// bounded as the tests are.
		bounded, cancelBound := context.WithTimeout(context.Background(), 10*time.Minute)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(bounded, opts...)
		ctx, cancelBrowser := chromedp.NewContext(allocCtx)
		browser.ctx = ctx
		browser.cancel = func() {
			// Closed gracefully, it reaps its own child processes; then the
			// allocator kills what is left by its process id, and waits.
			closing, cancel := context.WithTimeout(ctx, 10*time.Second)
			chromedp.Cancel(closing)
			cancel()
			cancelBrowser()
			cancelAlloc()
			cancelBound()
		}
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	if browser.err != nil {
		t.Fatalf("starting Chromium: %v", browser.err)
	}
	return browser.ctx
}

// stopBrowser stops the shared browser, if it started.
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// tab is one end user in the browser: a browser context of its own
// (cookies apart), whose every request says it comes from ip.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func newTab(t *testing.T, base, ip string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(startBrowser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	b := &tab{t: t, ctx: ctx, base: base}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network.Enable: %v", err)
	}
	b.setIP(ip)
	return b
}

// setIP makes the tab's requests come from ip: the browser moved to
// another network, its cookies with it.
func (b *tab) setIP(ip string) {
	b.t.Helper()
	_, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-For": ip}})
	if err != nil {
		b.t.Fatalf("setting X-Forwarded-For: %v", err)
	}
}

// bounded is the tab's context, bounded by limit.
func (b *tab) bounded(limit time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, limit)
}

// open loads path and returns its status.
func (b *tab) open(path string) int64 {
	b.t.Helper()
	ctx, cancel := b.bounded(time.Minute)
	defer cancel()
	res, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.base+path))
	if err != nil {
		b.t.Fatalf("opening %s: %v", path, err)
	}
	return res.Status
}

// signIn types username and password into the fields user and pass of the
// page's form and clicks submit; it returns the status of the page the
// click leads to (after redirects).
func (b *tab) signIn(user, pass, submit, username, password string) int64 {
	b.t.Helper()
	ctx, cancel := b.bounded(time.Minute)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(user), username),
		chromedp.SendKeys(chromedp.CSS(pass), password))
	if err != nil {
		b.t.Fatalf("typing into the login form: %v", err)
	}
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(submit)))
	if err != nil {
		b.t.Fatalf("submitting the login form: %v", err)
	}
	return res.Status
}

// waitFor waits, up to limit, for an element sel to be visible, and
// returns the page's location; it fails the test with the page's text
// when sel does not show.
func (b *tab) waitFor(sel string, limit time.Duration) string {
	b.t.Helper()
	ctx, cancel := b.bounded(limit)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		b.t.Fatalf("waiting for %s: %v; the page at %s shows:\n%s", sel, err, b.location(), b.text())
	}
	return b.location()
}

// signOut drops every cookie of the tab but keep's (the proxy's device
// cookie): the application's session ends, the device stays known.
func (b *tab) signOut(keep string) {
	b.t.Helper()
	for name, c := range b.cookies() {
		if name == keep {
			continue
		}
		_, err := chromedp.Call(b.ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: name, Domain: c.Domain, Path: c.Path})
		if err != nil {
			b.t.Fatalf("deleting the cookie %s: %v", name, err)
		}
	}
}

// location is the page's URL.
func (b *tab) location() string {
	ctx, cancel := b.bounded(10 * time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Location())
	return s
}

// text is the page's visible text.
func (b *tab) text() string {
	ctx, cancel := b.bounded(10 * time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	return s
}

// cookies are the tab's cookies for its site, by name.
func (b *tab) cookies() map[string]*network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
	if err != nil {
		b.t.Fatalf("network.GetCookies: %v", err)
	}
	m := make(map[string]*network.Cookie)
	for _, c := range res.Cookies {
		m[c.Name] = c
	}
	return m
}

// hasDeviceCookie fails the test unless the tab holds the proxy's device
// cookie, HttpOnly, for the whole site.
func (b *tab) hasDeviceCookie(name string) {
	b.t.Helper()
	c, ok := b.cookies()[name]
	switch {
	case !ok:
		b.t.Errorf("the browser holds no %s cookie; it holds %v", name, keys(b.cookies()))
	case c.Value == "" || !c.HTTPOnly || c.Path != "/":
		b.t.Errorf("the %s cookie is %+v; want a value, HttpOnly, Path=/", name, c)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// figure logs a figure for the report, in one greppable shape.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("FIGURE: "+format, args...)
	fmt.Fprintf(os.Stderr, "FIGURE %s: %s\n", t.Name(), fmt.Sprintf(format, args...))
}
