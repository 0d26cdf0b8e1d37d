package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// slowCall is a check whose body arrives in two parts, so that it is in
// flight for as long as the test wants.
type slowCall struct {
	conn net.Conn
	r    *bufio.Reader
	rest []byte
}

// startSlowCheck sends a check's headers to addr, waits until the server's
// handler reads the body, and sends half of it: the check is then in
// flight. The wait is on the server itself: with Expect: 100-continue the
// server answers 100 Continue when the handler first reads the body.
func startSlowCheck(t *testing.T, addr string) *slowCall {
	t.Helper()
	body := []byte(`{"flow":"login","account":"slow@example.com","ip":"192.0.2.99"}`)
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	half := len(body) / 2
	fmt.Fprintf(conn, "POST /v1/check HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, len(body))
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if res, err := http.ReadResponse(r, nil); err != nil || res.StatusCode != http.StatusContinue {
		t.Fatalf("the server did not ask for the check's body: %v, %v", res, err)
	}
	conn.SetReadDeadline(time.Time{})
	if _, err := conn.Write(body[:half]); err != nil {
		t.Fatal(err)
	}
	return &slowCall{conn: conn, r: r, rest: body[half:]}
}

// finish sends the rest of the body and returns the verdict's action.
func (s *slowCall) finish(t *testing.T) string {
	t.Helper()
	if _, err := s.conn.Write(s.rest); err != nil {
		t.Fatalf("finishing the in-flight request: %v", err)
	}
	s.conn.SetDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(s.r, nil)
	if err != nil {
		t.Fatalf("reading the in-flight request's response: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("in-flight request: %d %s", res.StatusCode, b)
	}
	var v struct{ Action string }
	json.Unmarshal(b, &v)
	return v.Action
}

// TestServe_ShutdownFinishesInFlightRequests: once shutdown starts, new
// connections are refused but a request already in flight is answered, and
// only then does serve return.
func TestServe_ShutdownFinishesInFlightRequests(t *testing.T) {
	cfg := testConfig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testkit.SyncBuffer
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &logs, func(a net.Addr) { addrs <- a }, nil) }()
	var addr string
	select {
	case a := <-addrs:
		addr = a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", res, err)
	}
	res.Body.Close()

	slow := startSlowCheck(t, addr)
	cancel()
	// Shutdown closes the listener first and then waits for the request in
	// flight: once a new connection is refused, serve is in that wait and
	// must not have returned.
	refused := testkit.Eventually(5*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if !refused {
		t.Error("new connections are still accepted during shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("serve returned with a request in flight: %v", err)
	default:
	}
	if got := slow.finish(t); got != "proceed" {
		t.Errorf("in-flight check answered %q", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after the in-flight request finished")
	}
	for _, want := range []string{`"msg":"listening"`, `"msg":"shutting down`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "slow@example.com") || strings.Contains(logs.String(), "192.0.2.99") {
		t.Errorf("logs contain an identifier:\n%s", logs.String())
	}
}

// TestServe_WarnsAboutARandomSecret: without TOLLGATE_SECRET the server
// starts, with a warning saying what that costs.
func TestServe_WarnsAboutARandomSecret(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Policy = config.DefaultPolicy()
	ctx, cancel := context.WithCancel(context.Background())
	var logs testkit.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &logs, func(net.Addr) { cancel() }, nil) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"level":"WARN","msg":"TOLLGATE_SECRET is not set`) ||
		!strings.Contains(logs.String(), "will not survive a restart") {
		t.Errorf("no warning about the random secret:\n%s", logs.String())
	}
}

// testConfig is the default configuration on a free loopback port, with a
// fixed secret and the built-in policy.
func testConfig() *config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Secret = []byte(secret32)
	cfg.Policy = config.DefaultPolicy()
	return cfg
}

// startServe runs serve with cfg until the test ends and returns the
// address it listens on and its log. At cleanup it stops serve, fails the
// test if serve returned an error, and shows the log if the test failed.
func startServe(t *testing.T, cfg *config.Config) (string, *testkit.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := new(testkit.SyncBuffer)
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs, func(a net.Addr) { addrs <- a }, nil) }()
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
		return a.String(), logs
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v\n%s", err, logs.String())
		return "", nil
	}
}
