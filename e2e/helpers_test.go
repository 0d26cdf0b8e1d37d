package e2e_test

import (
	"bytes"
	"context"
	"errors"
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
	// settled, when not nil, tells when what hydra's guesses set off at
	// the upstream is done: it settles a run hydra cut short.
	settled settledFunc
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
	h := &hydra{out: filepath.Join(dir, "hydra.out"), done: make(chan struct{}), settled: settlerAt(t, base)}
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
// of passwords it says it found. A run hydra cut short by its own
// miscount (hydraCutShort) counts only once what its cut guesses did at
// the upstream is settled (settle); any other failure of hydra fails the
// test.
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
		var exit *exec.ExitError
		cut, ok := hydraCutShort(out)
		if !ok || !errors.As(h.err, &exit) || exit.ExitCode() != 255 {
			t.Fatalf("hydra: %v", h.err)
		}
		h.settle(t, cut)
	}
	m := regexp.MustCompile(`(\d+) valid passwords? found`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("hydra's output says no count of valid passwords:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// hydraMiscount is the end of a run of hydra 9.4 that its own bookkeeping
// cut short. Its SIGCHLD handler (killed_childs) can run inside
// hydra_kill_head, between the SIGTERM to a finished task and the line
// that forgets the task's pid, and kill the same task again: its count of
// running tasks drops twice for one. With the whole list handed out, the
// count reaches 0 while a task is still guessing, hydra leaves its loop,
// SIGKILLs that task and exits 255, reporting the n tasks it cut as "n
// final worker threads" and again, under the count of targets it did not
// reach, as "n target(s) did not resolve or could not be connected":
// nothing failed to connect. On a loaded 2-core machine: 3 runs in 100 of
// 16 tasks, 10 in 80 of 64; with -d, as one task killed twice in a row.
var hydraMiscount = regexp.MustCompile(`(?m)^\[WARNING\] Writing restore file because (\d+) final worker threads did not complete until end\.$`)

// hydraCompleted is hydra's summary: targets completed of all.
var hydraCompleted = regexp.MustCompile(`(?m)^(\d+) of (\d+) targets? (?:successfully )?completed, \d+ valid passwords? found$`)

// hydraCutShort reports whether out, hydra's output, is that of a run
// hydra's miscount cut short, and how many guesses it cut: every target
// completed (the whole list handed out), the cut tasks reported, and no
// error but the two lines the miscount prints. A connect error, a
// disabled target, a crashed task or anything else hydra reports is not.
func hydraCutShort(out string) (cut int, ok bool) {
	m := hydraMiscount.FindAllStringSubmatch(out, -1)
	if len(m) != 1 {
		return 0, false
	}
	cut, err := strconv.Atoi(m[0][1])
	if err != nil || cut < 1 {
		return 0, false
	}
	done := hydraCompleted.FindStringSubmatch(out)
	if done == nil || done[1] != done[2] {
		return 0, false
	}
	expected := map[string]bool{
		fmt.Sprintf("[ERROR] %d target%s did not resolve or could not be connected", cut, map[bool]string{true: "", false: "s"}[cut == 1]): true,
		"[ERROR] 0 target did not complete": true,
	}
	seen := 0
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case expected[line]:
			seen++
		case strings.Contains(line, "[ERROR]"), strings.Contains(line, "[WARNING]") && !hydraMiscount.MatchString(line):
			return 0, false
		}
	}
	if seen != len(expected) {
		return 0, false
	}
	return cut, true
}

// settledFunc tells whether everything hydra's guesses set off at an
// upstream is done (the application counts a check before it answers):
// pending says what is not, or is ""; once it is "", unknown, when not
// "", says why what some guesses did there cannot be known.
type settledFunc func(t *testing.T) (pending, unknown string)

// settlerAt is the settledFunc of the upstream at base, from now on: the
// set-up's proxies and the plug-in's Django; nil for any other.
func settlerAt(t *testing.T, base string) settledFunc {
	t.Helper()
	if env == nil {
		return nil
	}
	for _, tg := range append([]*tollgate{env.djangoProxy, env.wikiProxy}, env.pair[:]...) {
		if tg != nil && tg.proxy == base {
			return proxySettled(t, tg)
		}
	}
	if p := pluginSetup.p; p != nil && p.dj.base == base {
		return pluginSettled(t, p)
	}
	return nil
}

// upstreamCounts are a proxy's counts of the requests of its routes that
// it forwarded after a check: all of them, those the upstream answered,
// those it did not (502, 504, or the client gone), and of those the ones
// whose client left before the upstream answered.
type upstreamCounts struct{ forwarded, answered, unanswered, canceled float64 }

func upstreamCountsOf(t *testing.T, tg *tollgate) upstreamCounts {
	t.Helper()
	// A request of no route (_pass) is forwarded unchecked and counted
	// only among the errors: left out of both sides.
	const errs = "tollgate_proxy_upstream_errors_total"
	return upstreamCounts{
		forwarded:  tg.metric(t, "tollgate_proxy_answers_total", "answer", "forwarded"),
		answered:   tg.metric(t, "tollgate_proxy_outcomes_total"),
		unanswered: tg.metric(t, errs) - tg.metric(t, errs, "route", "_pass"),
		canceled:   tg.metric(t, errs, "kind", "canceled") - tg.metric(t, errs, "route", "_pass", "kind", "canceled"),
	}
}

// proxySettled: a guess the proxy forwarded was checked at the upstream
// once the upstream answered it, so all is done once every request
// forwarded since has an answer or an error; a guess whose client left
// before the upstream answered may still be being checked there, or never
// have reached it.
func proxySettled(t *testing.T, tg *tollgate) settledFunc {
	before := upstreamCountsOf(t, tg)
	return func(t *testing.T) (string, string) {
		now := upstreamCountsOf(t, tg)
		fwd, answered, unanswered := now.forwarded-before.forwarded, now.answered-before.answered, now.unanswered-before.unanswered
		if fwd != answered+unanswered {
			return fmt.Sprintf("the proxy forwarded %v requests; the upstream answered %v and failed %v", fwd, answered, unanswered), ""
		}
		if n := now.canceled - before.canceled; n != 0 {
			return "", fmt.Sprintf("%v forwarded guesses lost their client before the upstream answered", n)
		}
		return "", ""
	}
}

// pluginSettled: the plug-in's backend asks tollgate, and on proceed the
// next backend checks the password in the same request, whether or not
// the client is still there; with the fail mode the README's block keeps
// (delay), Django checks no password without a proceed. So all is done
// once Django has made a check for each proceed tollgate answered since.
// A proceed the plug-in gave up waiting for (its timeout) is never
// checked: that run stays unsettled and fails.
func pluginSettled(t *testing.T, p *plugin) settledFunc {
	proceeds := func(t *testing.T) float64 {
		return p.tg.metric(t, "tollgate_verdicts_total", "call", "check", "flow", loginFlow, "action", "proceed")
	}
	before, checked := proceeds(t), p.dj.all("checked")
	return func(t *testing.T) (string, string) {
		if n, c := proceeds(t)-before, p.dj.all("checked")-checked; n != float64(c) {
			return fmt.Sprintf("tollgate answered %v checks proceed; Django made %d password checks", n, c), ""
		}
		return "", ""
	}
}

// all is how many lines of Django's signal file are of kind, whoever's.
func (d *django) all(kind string) int {
	b, _ := os.ReadFile(d.events)
	return strings.Count("\n"+string(b), "\n"+kind+" ")
}

// settle makes what a run hydra cut short did at the upstream final, or
// fails the test. Hydra's tasks are gone (it SIGKILLed the cut ones; the
// group is killed again here), so no guess is still being sent; the
// count is final once the upstream has settled what reached it.
func (h *hydra) settle(t *testing.T, cut int) {
	t.Helper()
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	if h.settled == nil {
		t.Fatalf("hydra: %v: it cut %d guesses short, at an upstream nothing here settles: what they did there is not known", h.err, cut)
	}
	var pending, unknown string
	if !waitUntil(time.Minute, func() bool {
		pending, unknown = h.settled(t)
		return pending == ""
	}) {
		t.Fatalf("hydra: %v: it cut %d guesses short, and what they set off at the upstream is not done after a minute: %s", h.err, cut, pending)
	}
	if unknown != "" {
		t.Fatalf("hydra: %v: it cut %d guesses short, and %s: what they did there is not known", h.err, cut, unknown)
	}
	t.Logf("hydra exited %v by its own miscount, cutting %d guesses short; all they set off at the upstream is done: its count is final", h.err, cut)
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
