package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/proxy"
)

// testSecret keys every test engine and proxy.
var testSecret = []byte("tollgate-proxy-tests-secret-32-bytes-long")

// The fake login's accounts: alice's password is "correct horse".
const (
	owner         = "alice"
	ownerPassword = "correct horse"
)

// upstream is a login nobody can change: POST /login takes a form
// (username, password, csrf), POST /api/login a JSON body ({"user":
// {"name"}, "password"}); a success redirects (form) or answers
// {"ok":true} with a session cookie, a failure re-renders the form (200)
// or answers {"ok":false} (401). Anything else answers 200 "page". It
// records every request it sees.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
	// streaming is told when a streamed request's first MiB has arrived
	// (/upload) or a streamed response's first MiB is out (/download,
	// which then waits for release).
	streaming chan struct{}
	release   chan struct{}
}

// seenRequest is what the upstream received.
type seenRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{streaming: make(chan struct{}, 1), release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	t.Cleanup(func() { close(u.release) }) // before Close, which waits for handlers
	return u
}

// streamed is the size of the streaming tests' bodies.
const streamed = 64 << 20

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/upload":
		u.upload(w, r)
		return
	case "/download":
		u.download(w, r)
		return
	case "/ws":
		u.websocket(w, r)
		return
	case "/slow":
		select { // answers nothing until the client or the test is gone
		case <-r.Context().Done():
		case <-u.release:
		}
		return
	}
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, seenRequest{r.Method, r.URL.Path, r.Header.Clone(), body})
	u.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/login":
		// The form as a Go server reads it: query, urlencoded or multipart.
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ParseMultipartForm(1 << 20)
		if r.FormValue("username") == owner && r.FormValue("password") == ownerPassword {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3ss10n", Path: "/", HttpOnly: true})
			http.Redirect(w, r, "/home", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<form id="login"><p>Wrong user name or password.</p></form>`)
	case r.Method == http.MethodPost && r.URL.Path == "/otp/send":
		io.WriteString(w, "a code is on its way")
	case r.Method == http.MethodPost && r.URL.Path == "/otp/verify":
		vals, _ := url.ParseQuery(string(body))
		if vals.Get("code") == "123456" {
			http.Redirect(w, r, "/home", http.StatusFound)
			return
		}
		io.WriteString(w, `<form id="otp"><p>Wrong code.</p></form>`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/login":
		var req struct {
			User     struct{ Name string } `json:"user"`
			Password string                `json:"password"`
		}
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		if req.User.Name == owner && req.Password == ownerPassword {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3ss10n", Path: "/"})
			io.WriteString(w, `{"ok":true}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"ok":false}`)
	default:
		io.WriteString(w, "page")
	}
}

// upload reads a streamed body, telling streaming after its first MiB,
// and answers its length and SHA-256.
func (u *upstream) upload(w http.ResponseWriter, r *http.Request) {
	sum := sha256.New()
	n, err := io.CopyN(sum, r.Body, 1<<20)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	u.streaming <- struct{}{}
	m, err := io.Copy(sum, r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	fmt.Fprintf(w, "%d %x", n+m, sum.Sum(nil))
}

// download streams streamed bytes of 'x': one MiB, flushed, then the
// rest once released.
func (u *upstream) download(w http.ResponseWriter, r *http.Request) {
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	w.Write(chunk)
	w.(http.Flusher).Flush()
	select {
	case <-u.release:
	case <-r.Context().Done():
		return
	}
	for range streamed>>20 - 1 {
		w.Write(chunk)
	}
}

// websocket takes an Upgrade: websocket, answers 101 and echoes what it
// reads.
func (u *upstream) websocket(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "not an upgrade", 400)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
	brw.Flush()
	io.Copy(conn, brw)
}

// requests returns what the upstream has received.
func (u *upstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.seen...)
}

// logins counts the requests the upstream received on path.
func (u *upstream) logins(path string) int {
	n := 0
	for _, s := range u.requests() {
		if s.path == path {
			n++
		}
	}
	return n
}

// formRoute is the fake login's form route.
func formRoute() proxy.Route {
	return proxy.Route{
		Name: "form-login", Flow: "login", Path: "/login", Body: proxy.Form,
		Account: "username", Password: "password",
		Success: []proxy.Match{{Status: []int{302}, LocationNot: regexp.MustCompile(`^/login`), Cookie: "session"}},
		Failure: []proxy.Match{{Status: []int{200}, BodyContains: `id="login"`}},
	}
}

// jsonRoute is the fake login's JSON route.
func jsonRoute() proxy.Route {
	return proxy.Route{
		Name: "api-login", Flow: "login", Path: "/api/login", Body: proxy.JSON,
		Account: "/user/name", Password: "/password",
		Success: []proxy.Match{{Status: []int{200}, JSON: "/ok", JSONValue: "true"}},
		Failure: []proxy.Match{{Status: []int{401}, JSON: "/ok", JSONValue: "false"}},
	}
}

// recorder is the engine as the proxy calls it, recording each request.
type recorder struct {
	*authguard.Engine
	mu      sync.Mutex
	checks  []authguard.CheckRequest
	sends   []authguard.SendRequest
	reports []authguard.ReportRequest
}

func (r *recorder) Report(ctx context.Context, req authguard.ReportRequest) (authguard.Verdict, error) {
	r.mu.Lock()
	r.reports = append(r.reports, req)
	r.mu.Unlock()
	return r.Engine.Report(ctx, req)
}

// lastReport is the last report the proxy made.
func (r *recorder) lastReport() authguard.ReportRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) == 0 {
		return authguard.ReportRequest{}
	}
	return r.reports[len(r.reports)-1]
}

func (r *recorder) Check(ctx context.Context, req authguard.CheckRequest) (authguard.Verdict, error) {
	r.mu.Lock()
	r.checks = append(r.checks, req)
	r.mu.Unlock()
	return r.Engine.Check(ctx, req)
}

func (r *recorder) Send(ctx context.Context, req authguard.SendRequest) (authguard.Verdict, error) {
	r.mu.Lock()
	r.sends = append(r.sends, req)
	r.mu.Unlock()
	return r.Engine.Send(ctx, req)
}

// lastCheck is the last check the proxy asked for.
func (r *recorder) lastCheck() authguard.CheckRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.checks) == 0 {
		return authguard.CheckRequest{}
	}
	return r.checks[len(r.checks)-1]
}

// harness is a proxy in front of an upstream, on an engine with the
// built-in policy, a memory store and a test clock.
type harness struct {
	t        *testing.T
	clock    *testclock.Clock
	engine   *authguard.Engine
	rec      *recorder
	events   *events
	up       *upstream
	proxy    *proxy.Proxy
	reg      *prometheus.Registry
	upstream *url.URL
}

// events records the engine's events.
type events struct {
	mu  sync.Mutex
	evs []authguard.Event
}

func (e *events) observe(ev authguard.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// calls counts the events of call ("check", "report", "send").
func (e *events) calls(call string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.evs {
		if ev.Call == call {
			n++
		}
	}
	return n
}

// last is the last event of call.
func (e *events) last(call string) authguard.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.evs) - 1; i >= 0; i-- {
		if e.evs[i].Call == call {
			return e.evs[i]
		}
	}
	return authguard.Event{}
}

// newHarness starts an upstream and a proxy with cfg (Upstream, Secret,
// Registerer and Now filled in, and an insecure cookie unless cfg names
// one) in front of it.
func newHarness(t *testing.T, cfg proxy.Config, opts ...func(*authguard.Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: testclock.New(testclock.Epoch), events: &events{}, up: newUpstream(t), reg: prometheus.NewRegistry()}
	ecfg := authguard.Config{
		Policy: config.DefaultPolicy(), Store: memstore.New(memstore.Config{Now: h.clock.Now}),
		Secret: testSecret, Now: h.clock.Now, Observe: h.events.observe,
	}
	for _, o := range opts {
		o(&ecfg)
	}
	eng, err := authguard.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	h.engine, h.rec = eng, &recorder{Engine: eng}
	h.upstream, _ = url.Parse(h.up.URL)
	cfg.Upstream, cfg.Secret, cfg.Registerer, cfg.Now = h.upstream, testSecret, h.reg, h.clock.Now
	if cfg.Cookie == (proxy.CookieConfig{}) {
		cfg.Cookie = proxy.CookieConfig{Insecure: true}
	}
	p, err := proxy.New(cfg, h.rec)
	if err != nil {
		t.Fatal(err)
	}
	h.proxy = p
	return h
}

// do sends r through the proxy from remote (RemoteAddr).
func (h *harness) do(r *http.Request, remote string) *http.Response {
	h.t.Helper()
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.proxy.ServeHTTP(w, r)
	return w.Result()
}

// post sends a form login to /login from remote, with the cookies given.
func (h *harness) post(remote, user, password string, cookies ...*http.Cookie) *http.Response {
	h.t.Helper()
	form := url.Values{"username": {user}, "password": {password}, "csrf": {"t0k3n"}}
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		r.AddCookie(c)
	}
	return h.do(r, remote)
}

// body reads and closes resp's body.
func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counter is the value of a proxy counter with these labels.
func (h *harness) counter(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
		}
	}
	return 0
}

// deviceCookie is the device cookie resp sets, or nil.
func deviceCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == proxy.DefaultInsecureCookieName && c.Value != "" {
			return c
		}
	}
	return nil
}
