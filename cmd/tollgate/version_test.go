package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// TestVersion_SaysWhichBuild: the first line is "tollgate <version>" (what
// scripts read) and the Go version and platform follow; a release build's
// -ldflags version wins over the module's.
func TestVersion_SaysWhichBuild(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &out, testkit.Env()); code != 0 {
		t.Fatalf("version: exit %d: %s", code, out.String())
	}
	if !regexp.MustCompile(`^tollgate \S+\n(?s:.*)go:       go1\.\d+\S* \w+/\w+\n$`).MatchString(out.String()) {
		t.Errorf("version printed %q", out.String())
	}
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	out.Reset()
	run(context.Background(), []string{"version"}, &out, &out, testkit.Env())
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "tollgate v9.8.7" {
		t.Errorf("with -X main.version: first line %q", first)
	}
	if b := readBuildInfo(); b.Version != "v9.8.7" {
		t.Errorf("readBuildInfo().Version = %q", b.Version)
	}
}

// TestServe_ExportsItsBuild: /metrics has tollgate_build_info with the
// version and Go version labels, and the start-up line names the version.
func TestServe_ExportsItsBuild(t *testing.T) {
	addr, logs := startServe(t, testConfig())
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	b := readBuildInfo()
	re := regexp.MustCompile(`(?m)^tollgate_build_info\{goversion="` + regexp.QuoteMeta(b.Go) + `",revision="[0-9a-f]*",version="` + regexp.QuoteMeta(b.Version) + `"\} 1$`)
	if !re.Match(body) {
		t.Errorf("no tollgate_build_info line matching %s in /metrics", re)
	}
	if !strings.Contains(logs.String(), `"version":"`+b.Version+`"`) {
		t.Errorf("the start-up line does not name the version %q:\n%s", b.Version, logs.String())
	}
}

// TestHealthcheck is the probe images without a shell use: 0 for a 200,
// 1 for anything else or no answer, 2 for a bad URL; by default /healthz
// at TOLLGATE_LISTEN's port on 127.0.0.1.
func TestHealthcheck(t *testing.T) {
	addr, _ := startServe(t, testConfig())
	status := http.StatusOK
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(other.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()

	check := func(env []string, args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), append([]string{"healthcheck"}, args...), &out, &out, testkit.Env(env...))
		return code, out.String()
	}
	_, port, _ := strings.Cut(addr, ":")
	tests := []struct {
		name string
		env  []string
		args []string
		want int
	}{
		{"tollgate's /healthz", nil, []string{"http://" + addr + "/healthz"}, 0},
		{"tollgate's /readyz on the memory store", nil, []string{"http://" + addr + "/readyz"}, 0},
		{"the default URL at TOLLGATE_LISTEN's port", []string{"TOLLGATE_LISTEN", "0.0.0.0:" + port}, nil, 0},
		{"a 404", nil, []string{"http://" + addr + "/nope"}, 1},
		{"nothing listening", nil, []string{down.URL + "/healthz"}, 1},
		{"not http", nil, []string{"ftp://" + addr + "/healthz"}, 2},
		{"two URLs", nil, []string{"http://a/", "http://b/"}, 2},
	}
	for _, tt := range tests {
		if code, out := check(tt.env, tt.args...); code != tt.want {
			t.Errorf("%s: exit %d, want %d: %s", tt.name, code, tt.want, out)
		}
	}
	status = http.StatusServiceUnavailable
	if code, out := check(nil, other.URL+"/healthz"); code != 1 || !strings.Contains(out, "503") {
		t.Errorf("a 503: exit %d: %q", code, out)
	}
}
