package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/proxy"
)

const proxySection = `
listen: 127.0.0.1:8080
proxy:
  listen: 0.0.0.0:8443
  upstream: http://127.0.0.1:8000
  trusted_proxies: [10.0.0.0/8, 192.0.2.7]
  client_ip_header: x-forwarded-for
  upstream_timeout: 5s
  device_cookie: {max_age: 30d}
  routes:
    - name: admin
      flow: login
      mode: shadow
      path: /admin/login/
      account: username
      password: password
      max_body: 32KiB
      success:
        status: [302]
        location_not: /admin/login/
        cookie: sessionid
      failure:
        - status: [200]
          body_contains: 'id="login-form"'
        - json: /error/code
          json_value: bad_password
    - name: api
      flow: login
      methods: [POST, PUT]
      path: /api/
      prefix: true
      body: json
      account: /user
      success: {json: /ok, json_value: true}
    - name: codes
      flow: otp_send
      path: /otp
      destination: phone
      channel: sms
`

func TestProxyConfig_ASectionIsRead(t *testing.T) {
	cfg, err := Parse([]byte(proxySection))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Proxy
	if p == nil || p.Listen != "0.0.0.0:8443" || p.Upstream.String() != "http://127.0.0.1:8000" || len(p.TrustedProxies) != 2 ||
		p.ClientIPHeader != client.HeaderXForwardedFor || p.UpstreamTimeout.Seconds() != 5 || p.Cookie.MaxAge.Hours() != 720 {
		t.Fatalf("proxy = %+v", p)
	}
	if len(p.Routes) != 3 {
		t.Fatalf("%d routes", len(p.Routes))
	}
	admin, api := p.Routes[0], p.Routes[1]
	if admin.Mode != proxy.Shadow || admin.Body != proxy.Form || admin.MaxBodyBytes != 32<<10 || len(admin.Success) != 1 || len(admin.Failure) != 2 {
		t.Errorf("admin = %+v", admin)
	}
	if m := admin.Success[0]; m.LocationNot.String() != "/admin/login/" || m.Cookie != "sessionid" || m.Status[0] != 302 {
		t.Errorf("admin's success = %+v", m)
	}
	if m := admin.Failure[1]; m.JSON != "/error/code" || m.JSONValue != `"bad_password"` {
		t.Errorf("admin's second failure = %+v", m)
	}
	if api.Body != proxy.JSON || !api.Prefix || api.Success[0].JSONValue != "true" || len(api.Methods) != 2 {
		t.Errorf("api = %+v", api)
	}
	if err := cfg.CheckListen(); err != nil {
		t.Errorf("the proxy on 0.0.0.0 made the API's listen check fail: %v", err)
	}
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("warnings = %q, want none: every route can classify", w)
	}
}

// The API stays on loopback without caller authentication, whatever the
// proxy listens on.
func TestProxyConfig_TheAPIsLoopbackRuleStaysTheAPIs(t *testing.T) {
	cfg, err := Parse([]byte(strings.Replace(proxySection, "listen: 127.0.0.1:8080", "listen: 0.0.0.0:8080", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckListen(); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("CheckListen = %v, want the API refused off loopback", err)
	}
}

func TestProxyConfig_AMistakeNamesItsLine(t *testing.T) {
	base := "listen: 127.0.0.1:8080\nproxy:\n  listen: 0.0.0.0:8443\n  upstream: http://127.0.0.1:8000\n  routes:\n    - name: r\n      flow: login\n      path: /login\n      account: u\n"
	tests := []struct {
		name, yaml string
		line       int
		path, says string
	}{
		{"no listen", "proxy:\n  upstream: http://x\n", 1, "proxy.listen", "is required"},
		{"the API's address", "listen: 127.0.0.1:8080\nproxy:\n  listen: 127.0.0.1:8080\n  upstream: http://x\n", 3, "proxy.listen", "the API's"},
		{"a bad upstream", "proxy:\n  listen: :8443\n  upstream: ftp://x\n", 3, "proxy.upstream", "not an http(s) URL"},
		{"proxies without their header", "proxy:\n  listen: :8443\n  upstream: http://x\n  trusted_proxies: [10.0.0.0/8]\n", 4, "proxy.trusted_proxies", "client_ip_header"},
		{"a bad prefix", "proxy:\n  listen: :8443\n  upstream: http://x\n  trusted_proxies: [10.0.0.0/33]\n", 4, "proxy.trusted_proxies[0]", "not an address"},
		{"an insecure __Host- cookie", "proxy:\n  listen: :8443\n  upstream: http://x\n  device_cookie:\n    name: __Host-d\n    insecure: true\n", 4, "proxy.device_cookie", "__Host-"},
		{"an unknown key in a route", base + "      acount: x\n", 10, "proxy.routes[0]", `did you mean "account"`},
		{"a valid route", base + "      success: {status: [302]}\n", 0, "", ""},
		{"a flow the policy lacks", strings.Replace(base, "flow: login", "flow: logn", 1), 7, "proxy.routes[r].flow", `"logn" is not a flow`},
		{"a bad regular expression", base + "      success:\n        location: '('\n", 11, "proxy.routes[r].success.location", "regular expression"},
		{"an unknown key in a match", base + "      success:\n        - staus: [302]\n", 11, "proxy.routes[r].success[0]", `did you mean "status"`},
		{"a bad status", base + "      failure:\n        status: [2000]\n", 10, "proxy.routes[r].failure[0].status", "status must be HTTP status codes, 100 to 599"},
		{"a body bound too large", base + "      max_body: 1GiB\n", 10, "proxy.routes[r].max_body", "64 MiB"},
		{"a bad mode", base + "      mode: enforcing\n", 10, "proxy.routes[r].mode", "enforce or shadow"},
		{"a missing account", strings.Replace(base, "      account: u\n", "", 1), 6, "proxy.routes[r].account", "required"},
		{"a match that is a word", base + "      success: yes\n", 10, "proxy.routes[r].success", "is a match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if tt.path == "" {
				if err != nil {
					t.Fatalf("Parse = %v, want it valid", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, want a *config.Error", err)
			}
			if e.Line != tt.line || e.Path != tt.path || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q at line %d, path %q; want line %d, path %q, saying %q", err, e.Line, e.Path, tt.line, tt.path, tt.says)
			}
		})
	}
}

func TestProxyConfig_ARouteThatCanNeverClassifyIsWarnedOf(t *testing.T) {
	cfg, err := Parse([]byte("proxy:\n  listen: 127.0.0.1:8443\n  upstream: http://x\n  device_cookie: {insecure: true}\n  routes:\n" +
		"    - {name: blind, flow: login, path: /a, account: u}\n" +
		"    - {name: half, flow: login, path: /b, account: u, failure: {status: [200]}}\n" +
		"    - {name: sends, flow: otp_send, path: /c, destination: d, channel: sms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Proxy.Warnings()
	if len(w) != 2 || !strings.Contains(w[0], "blind") || !strings.Contains(w[0], "never classify") || !strings.Contains(w[1], "half") {
		t.Errorf("warnings = %q, want the route that never classifies and the one without a success", w)
	}
	cfg, _ = Parse([]byte("proxy:\n  listen: 0.0.0.0:8443\n  upstream: http://x\n  device_cookie: {insecure: true}\n"))
	if w := cfg.Proxy.Warnings(); len(w) != 1 || !strings.Contains(w[0], "insecure") {
		t.Errorf("warnings = %q, want the insecure cookie off loopback", w)
	}
}

// The examples of examples/proxy load as serve reads them, and every route
// in them can classify.
func TestProxyConfig_TheExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/proxy/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cfg, err := Load(path, testkit.Env())
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Proxy == nil || len(cfg.Proxy.Routes) == 0 {
				t.Fatal("no proxy routes")
			}
			if w := cfg.Proxy.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %q", w)
			}
			if err := cfg.CheckListen(); err != nil {
				t.Error(err)
			}
		})
	}
	b, _ := os.ReadFile("../../examples/proxy/django-admin.yaml")
	if !strings.Contains(string(b), "csrfmiddlewaretoken") {
		t.Error("the Django example does not say the CSRF token passes through")
	}
}

func TestProxyConfig_AStepUpPageIsReadAndCheckedPerRoute(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "step-up.html")
	bad := filepath.Join(dir, "bad.html")
	unknown := filepath.Join(dir, "unknown.html")
	os.WriteFile(good, []byte(`<p>{{if .Breached}}reset your password{{else}}try later{{end}}</p>`), 0o644)
	os.WriteFile(bad, []byte(`<p>{{if .Breached}</p>`), 0o644)
	os.WriteFile(unknown, []byte(`<p>{{.Account}}</p>`), 0o644) // the page gets nothing but Breached
	route := func(extra string) string {
		return "listen: 127.0.0.1:8080\nproxy:\n  listen: 0.0.0.0:8443\n  upstream: http://127.0.0.1:8000\n  routes:\n" +
			"    - name: r\n      flow: login\n      path: /login\n      account: u\n      password: p\n      success: {status: [302]}\n" + extra
	}
	cfg, err := Parse([]byte(route("      step_up_page: " + good + "\n      step_up_logout: /admin/logout/\n      step_up_pass: [address_escalated]\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Proxy.Routes[0].StepUpPass; len(got) != 1 || got[0] != "address_escalated" {
		t.Errorf("step_up_pass = %q", got)
	}
	if got := cfg.Proxy.Routes[0].StepUpLogout; got != "/admin/logout/" {
		t.Errorf("step_up_logout = %q", got)
	}
	var b strings.Builder
	if err := cfg.Proxy.Routes[0].StepUpPage.Execute(&b, proxy.StepUpPageData{Breached: true}); err != nil || b.String() != "<p>reset your password</p>" {
		t.Errorf("the page executes to %q, %v", b.String(), err)
	}
	tests := []struct{ name, extra, path, says string }{
		{"a page that does not parse", "      step_up_page: " + bad + "\n", "proxy.routes[r].step_up_page", "bad.html"},
		{"a page that asks for more than Breached", "      step_up_page: " + unknown + "\n", "proxy.routes[r].step_up_page", "Account"},
		{"a page that is not there", "      step_up_page: " + filepath.Join(dir, "none.html") + "\n", "proxy.routes[r].step_up_page", "none.html"},
		{"a page on a JSON route", "      body: json\n      step_up_page: " + good + "\n", "proxy.routes[r].step_up_page", "problem document"},
		{"a reason no step-up gives", "      step_up_pass: [address_escalated, credential_stuffing]\n", "proxy.routes[r].step_up_pass[1]", "not a step-up reason"},
		{"a logout that is no path", "      step_up_logout: logout?next=/\n", "proxy.routes[r].step_up_logout", "path starting with /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := route(tt.extra)
			if tt.name == "a page on a JSON route" {
				yaml = strings.NewReplacer("account: u", "account: /u", "password: p", "password: /p").Replace(yaml)
			}
			_, err := Parse([]byte(yaml))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, want a *config.Error", err)
			}
			if e.Path != tt.path || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q at %q, want %q saying %q", err, e.Path, tt.path, tt.says)
			}
		})
	}
}
