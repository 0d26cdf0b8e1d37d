package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// proxyUpstream is a login nobody can change: POST /login answers 302 for
// alice's password and the form again for anything else.
func proxyUpstream(t *testing.T) (*httptest.Server, *int) {
	t.Helper()
	logins := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/login" {
			io.WriteString(w, "page")
			return
		}
		*logins++
		r.ParseForm()
		if r.PostForm.Get("username") == "alice" && r.PostForm.Get("password") == "correct horse" {
			http.SetCookie(w, &http.Cookie{Name: "sessionid", Value: "s", Path: "/"})
			http.Redirect(w, r, "/home", http.StatusFound)
			return
		}
		io.WriteString(w, `<form id="login">wrong</form>`)
	}))
	t.Cleanup(srv.Close)
	return srv, logins
}

// proxyYAML is a config whose proxy fronts upstream on a free loopback
// port, with the login route in mode.
func proxyYAML(upstream, mode string) string {
	return `
listen: 127.0.0.1:0
proxy:
  listen: 127.0.0.1:0
  upstream: ` + upstream + `
  device_cookie: {insecure: true}
  routes:
    - name: app-login
      flow: login
      mode: ` + mode + `
      path: /login
      account: username
      password: password
      success: {status: [302], cookie: sessionid}
      failure: {status: [200], body_contains: 'id="login"'}
`
}

var proxyAddrRE = regexp.MustCompile(`"msg":"proxy listening","addr":"([^"]+)"`)

// serveFile runs serve on the config file at path (reloaded from it) until
// the test ends, and returns the API's and the proxy's addresses.
func serveFile(t *testing.T, path string) (api, proxyAddr string) {
	t.Helper()
	load := func() (*config.Config, error) { return config.Load(path, testkit.Env("TOLLGATE_SECRET", secret32)) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := new(testkit.SyncBuffer)
	addrs, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs, func(a net.Addr) { addrs <- a }, load) }()
	select {
	case a := <-addrs:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if t.Failed() {
				t.Logf("logs:\n%s", logs.String())
			}
		})
		m := proxyAddrRE.FindStringSubmatch(logs.String()) // written before the API listens
		if m == nil {
			t.Fatalf("no proxy address in the log:\n%s", logs.String())
		}
		return a.String(), m[1]
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	return "", ""
}

// postLogin posts a form login to the proxy.
func postLogin(t *testing.T, proxyAddr, user, password string) *http.Response {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm("http://"+proxyAddr+"/login", url.Values{"username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// One process serves the API and the proxy on their own listeners, with
// one engine: a login through the proxy is a check and a report in the
// API's metrics, and the proxy's own metrics are on the API's /metrics.
func TestServe_TheProxyServesBesideTheAPIOnOneEngine(t *testing.T) {
	up, logins := proxyUpstream(t)
	path := filepath.Join(t.TempDir(), "tollgate.yaml")
	os.WriteFile(path, []byte(proxyYAML(up.URL, "enforce")), 0o600)
	apiAddr, proxyAddr := serveFile(t, path)
	if apiAddr == proxyAddr {
		t.Fatal("one listener for both")
	}
	for i := range 5 {
		if resp := postLogin(t, proxyAddr, "alice", "guess-"+string(rune('a'+i))); resp.StatusCode != http.StatusOK {
			t.Fatalf("guess %d through the proxy answered %d, want the upstream's form", i+1, resp.StatusCode)
		}
	}
	if resp := postLogin(t, proxyAddr, "alice", "guess-f"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the 6th guess answered %d, want 429", resp.StatusCode)
	}
	if *logins != 5 {
		t.Errorf("the upstream checked %d passwords, want 5", *logins)
	}
	resp, err := http.Get("http://" + apiAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tollgate_verdicts_total{action="proceed",call="check",flow="login"} 5`,
		`tollgate_verdicts_total{action="delay",call="check",flow="login"} 1`,
		`tollgate_proxy_answers_total{answer="delayed",route="app-login"} 1`,
		`tollgate_proxy_outcomes_total{outcome="failure",route="app-login"} 5`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The proxy is not the API: /v1/check there is the upstream's.
	resp, err = http.Post("http://"+proxyAddr+"/v1/check", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "page" {
		t.Errorf("the proxy's /v1/check answered %q, want the upstream's page", b)
	}
}

// The API keeps its loopback rule without caller authentication, whatever
// the proxy's listener: serve refuses to start.
func TestServe_AProxyDoesNotTakeTheAPIOffLoopback(t *testing.T) {
	cfg, err := config.Parse([]byte(strings.Replace(proxyYAML("http://127.0.0.1:1", "enforce"), "listen: 127.0.0.1:0\nproxy", "listen: 0.0.0.0:0\nproxy", 1)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Secret = []byte(secret32)
	err = serve(context.Background(), cfg, io.Discard, nil, nil)
	if !errors.Is(err, config.ErrNotLoopback) {
		t.Errorf("serve = %v, want the API refused off loopback", err)
	}
}

// A reload with a route the policy cannot serve is refused with its line,
// and the routes in force stay; a good one applies at once (shadow mode
// here: the delayed attacker now reaches the upstream) and needs no
// restart.
func TestReload_ABadProxyRouteIsRefusedWithItsLineAndTheRoutesStay(t *testing.T) {
	up, logins := proxyUpstream(t)
	path := filepath.Join(t.TempDir(), "tollgate.yaml")
	os.WriteFile(path, []byte(proxyYAML(up.URL, "enforce")), 0o600)
	apiAddr, proxyAddr := serveFile(t, path)
	reloadAPI := func() (int, map[string]any) {
		resp, err := http.Post("http://"+apiAddr+"/v1/admin/reload", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	for i := range 5 {
		postLogin(t, proxyAddr, "alice", "guess-"+string(rune('a'+i)))
	}
	if resp := postLogin(t, proxyAddr, "alice", "guess-f"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the 6th guess answered %d, want 429", resp.StatusCode)
	}

	bad := strings.Replace(proxyYAML(up.URL, "shadow"), "flow: login", "flow: logn", 1)
	os.WriteFile(path, []byte(bad), 0o600)
	status, body := reloadAPI()
	if detail, _ := body["detail"].(string); status != http.StatusConflict || !strings.Contains(detail, "line 9") || !strings.Contains(detail, `"logn" is not a flow`) {
		t.Fatalf("reload = %d %v, want 409 naming line 9 and the flow", status, body)
	}
	if resp := postLogin(t, proxyAddr, "alice", "guess-g"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("after the refused reload the route answered %d, want 429: the routes in force stay", resp.StatusCode)
	}

	os.WriteFile(path, []byte(proxyYAML(up.URL, "shadow")), 0o600)
	status, body = reloadAPI()
	if rn, _ := body["restart_needed"].([]any); status != http.StatusOK || len(rn) != 0 {
		t.Fatalf("reload = %d %v, want 200 with nothing to restart", status, body)
	}
	before := *logins
	if resp := postLogin(t, proxyAddr, "alice", "guess-h"); resp.StatusCode != http.StatusOK || *logins != before+1 {
		t.Errorf("after the reload to shadow the guess answered %d, upstream %d → %d: want it forwarded", resp.StatusCode, before, *logins)
	}

	os.WriteFile(path, []byte(strings.Replace(proxyYAML(up.URL, "shadow"), "device_cookie: {insecure: true}", "device_cookie: {insecure: true, max_age: 1h}", 1)), 0o600)
	if status, body = reloadAPI(); status != http.StatusOK || !strings.Contains(jsonText(body["restart_needed"]), "proxy") {
		t.Errorf("reload of the cookie's max age = %d %v, want proxy among restart_needed", status, body)
	}
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

// validate-config warns of a route that can never classify an answer, and
// -strict fails on it.
func TestValidate_WarnsOfAProxyRouteThatCanNeverClassify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tollgate.yaml")
	os.WriteFile(path, []byte("proxy:\n  listen: 127.0.0.1:8443\n  upstream: http://127.0.0.1:8000\n  routes:\n"+
		"    - {name: blind, flow: login, path: /login, account: username}\n"), 0o600)
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"validate-config", path}, &out, &errOut, testkit.Env()); code != 0 {
		t.Fatalf("validate-config = %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "warning: proxy route blind: no success and no failure: it can never classify") {
		t.Errorf("stderr = %q, want the warning", errOut.String())
	}
	if code := run(context.Background(), []string{"validate-config", "-strict", path}, &out, &errOut, testkit.Env()); code != 1 {
		t.Errorf("validate-config -strict = %d, want 1", code)
	}
}
