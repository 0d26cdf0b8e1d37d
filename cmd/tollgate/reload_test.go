package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

const reloadBefore = `
flows:
  login:
    rules:
      - name: account_backoff
        free: 3
`

// After the reload: 5 free failures, and a new rule of 2 checks a minute
// per address.
const reloadAfter = `
flows:
  login:
    rules:
      - name: account_backoff
        free: 5
      - name: ip_minute
        subject: ip
        algorithm: fixed_window
        counts: check
        limit: 2
        window: 1m
        past: delay
`

// A real tollgate process, under steady traffic, reloads its policy on
// SIGHUP (which, before, killed a server without TLS and every counter of
// its memory store with it) and on POST /v1/admin/reload. The new limit
// applies at the next call, the counters are kept (the account's 3
// failures count under the new free 5), a new rule applies, a bad file is
// refused with its line and keeps the running policy, and no call fails.
func TestReload_ARealProcessReloadsItsPolicyUnderTrafficAndKeepsItsCounters(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tollgate.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(reloadBefore)
	p := startTollgate(t, "TOLLGATE_CONFIG="+file, "TOLLGATE_SECRET=reload-test-secret-of-at-least-32-bytes!")
	c := &e2eClient{t: t, base: "http://" + p.addr, http: &http.Client{Timeout: 5 * time.Second}}

	// Steady traffic from other accounts and addresses, through both
	// reloads: every call must be answered 200.
	ctx, stop := context.WithCancel(context.Background())
	var calls, failed atomic.Int64
	var traffic sync.WaitGroup
	for w := range 4 {
		traffic.Go(func() {
			hc := &http.Client{Timeout: 5 * time.Second}
			for i := 0; ctx.Err() == nil; i++ {
				body := fmt.Sprintf(`{"flow":"login","account":"user%d-%d@example.com","ip":"198.51.100.%d"}`, w, i%50, 1+i%200)
				res, err := hc.Post(c.base+"/v1/check", "application/json", strings.NewReader(body))
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	defer func() { stop(); traffic.Wait() }()

	victim := map[string]any{"flow": "login", "account": "victim@example.com", "ip": "203.0.113.9"}
	fail := func() string {
		t.Helper()
		v := c.post("/v1/check", victim)
		if v.Action != "proceed" {
			return v.Action
		}
		c.post("/v1/report", testkit.With(victim, "outcome", "failure", "attempt", v.Attempt))
		return "proceed"
	}
	for i := range 3 {
		if got := fail(); got != "proceed" {
			t.Fatalf("free failure %d: %s", i+1, got)
		}
	}
	if got := fail(); got != "delay" {
		t.Fatalf("after 3 failures with free 3: %s, want delay", got)
	}

	write(reloadAfter)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	died := false
	reloaded := testkit.Eventually(10*time.Second, func() bool {
		select {
		case <-p.exited:
			died = true
			return true
		default:
		}
		return strings.Contains(p.logs.String(), `"msg":"configuration reloaded"`)
	})
	switch {
	case died:
		t.Fatalf("SIGHUP ended the process: %v\n%s", p.waitErr, p.logs)
	case !reloaded:
		t.Fatalf("no reload logged 10 s after SIGHUP:\n%s", p.logs)
	}
	// free 5: the account's 3 failures are kept, so 2 more go ahead, then
	// it waits.
	for i := range 2 {
		if got := fail(); got != "proceed" {
			t.Fatalf("failure %d after the reload to free 5: %s, want proceed", 4+i, got)
		}
	}
	if got := fail(); got != "delay" {
		t.Errorf("after 5 failures, 3 of them before the reload: %s, want delay (the reload forgot the counter)", got)
	}
	// The new rule: 2 checks a minute from one address, then a delay.
	fresh := map[string]any{"flow": "login", "account": "someone@example.com", "ip": "192.0.2.200"}
	for i := range 2 {
		if v := c.post("/v1/check", fresh); v.Action != "proceed" {
			t.Fatalf("check %d from a fresh address: %+v", i+1, v)
		}
	}
	if v := c.post("/v1/check", fresh); v.Action != "delay" || !strings.Contains(strings.Join(v.Reasons, ","), "ip_minute") {
		t.Errorf("3rd check in a minute from one address: %+v, want a delay for the new rule ip_minute", v)
	}

	// A bad file: refused with its line, the running policy stays.
	write(reloadAfter + "      - name: broken\n        algorithm: nonsense\n")
	res, err := c.http.Post(c.base+"/v1/admin/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusConflict || !strings.Contains(string(body), "config-invalid") || !strings.Contains(string(body), "line 14") {
		t.Errorf("reload of a bad file: %d %s, want 409 config-invalid naming line 14", res.StatusCode, body)
	}
	if v := c.post("/v1/check", fresh); v.Action != "delay" {
		t.Errorf("after the refused reload the new rule no longer holds: %+v", v)
	}
	// And a good one through the route: synchronous, 200 with the flows.
	write(reloadAfter)
	res, err = c.http.Post(c.base+"/v1/admin/reload", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"login"`) {
		t.Errorf("reload through the route: %d %s", res.StatusCode, body)
	}

	stop()
	traffic.Wait()
	if calls.Load() < 20 || failed.Load() != 0 {
		t.Errorf("steady traffic through the reloads: %d of %d calls failed or were not 200 (want 0 of at least 20)", failed.Load(), calls.Load())
	}
	_, metrics := c.get("/metrics")
	for _, want := range []string{`tollgate_config_reloads_total{result="ok"} 2`, `tollgate_config_reloads_total{result="invalid"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	t.Logf("%d calls of steady traffic through 3 reloads, %d failed", calls.Load(), failed.Load())
}
