package main

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/examples/demo-login/demo"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// realTimeDemo is the demo on tollgate's built-in policy and the real
// clock (the script waits out real Retry-After values), with proxies as
// the demo's client-address setting; it answers the demo's URL.
func realTimeDemo(t *testing.T, proxies *client.Proxies) string {
	t.Helper()
	engine, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(),
		Store:  memstore.New(memstore.Config{}),
		Secret: []byte("check-login-test-secret-of-32-bytes!"),
	})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := api.New(api.Config{Engine: engine})
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
	app, err := demo.New(demo.Config{Tollgate: tc, Proxies: proxies, HashIterations: 1000})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	return srv.URL
}

// runCheckLogin runs scripts/check-login.sh against url with SPRAY=1 and
// answers its output and whether it passed.
func runCheckLogin(t *testing.T, url string) (string, bool) {
	t.Helper()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is needed with CI=true", tool)
			}
			t.Skipf("%s is not on PATH", tool)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "check-login.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "LOGIN_URL="+url+"/login", "TEST_ACCOUNT=alice", "SPRAY=1")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// TestCheckLogin_PassesOnTheDemoLogin holds docs/integrate.md's copy-paste
// check to what it promises: against a login that calls tollgate as the
// guide says (the demo, trusting no proxy), every check passes, the
// Retry-After it saw grows, and the sprayed accounts were escalated.
func TestCheckLogin_PassesOnTheDemoLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out two real delays (about 3 s)")
	}
	out, ok := runCheckLogin(t, realTimeDemo(t, &client.Proxies{}))
	if !ok {
		t.Fatalf("check-login.sh failed on the demo login:\n%s", out)
	}
	for _, want := range []string{
		"ok    an unknown account and a wrong password get the same answer (200)",
		"ok    wrong passwords get 429 with a growing Retry-After (1 ", // (1 2 s), or (1 1 3 s) on a busy machine
		"ok    12 accounts from one client with forged forwarding headers: the 12th is answered differently",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckLogin_CatchesALoginThatTrustsForgedForwardingHeaders is the
// check's negative control, the mistake it exists to find: the demo set to
// read X-Forwarded-For from loopback peers (its `make demo` setting, which
// lets one machine play many addresses) is, to a client on loopback, a
// login that takes the address from a header the client wrote, and the
// check must fail on it, naming the header.
func TestCheckLogin_CatchesALoginThatTrustsForgedForwardingHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out two real delays (about 3 s)")
	}
	proxies, err := demo.LoopbackProxies()
	if err != nil {
		t.Fatal(err)
	}
	out, ok := runCheckLogin(t, realTimeDemo(t, proxies))
	if ok {
		t.Fatalf("check-login.sh passed a login that trusts forged X-Forwarded-For:\n%s", out)
	}
	if want := "FAIL  12 accounts from one client, each with a forged X-Forwarded-For, all answered alike"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if strings.Count(out, "FAIL") != 1 {
		t.Errorf("want exactly the spoofing check to fail:\n%s", out)
	}
}
