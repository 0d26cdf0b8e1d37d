package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// e2eClient talks to a running tollgate.
type e2eClient struct {
	t    *testing.T
	base string
	http *http.Client
}

type e2eVerdict struct {
	Action     string   `json:"action"`
	DelayMS    int64    `json:"delay_ms"`
	RetryAfter int64    `json:"retry_after"`
	Reasons    []string `json:"reasons"`
	Attempt    string   `json:"attempt"`
}

func (c *e2eClient) post(path string, body map[string]any) e2eVerdict {
	c.t.Helper()
	b, _ := json.Marshal(body)
	res, err := c.http.Post(c.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Request-Id") == "" || res.Header.Get("Cache-Control") != "no-store" {
		c.t.Fatalf("POST %s: %d %v %s", path, res.StatusCode, res.Header, out)
	}
	var v e2eVerdict
	if err := json.Unmarshal(out, &v); err != nil {
		c.t.Fatalf("POST %s: %s: %v", path, out, err)
	}
	return v
}

func (c *e2eClient) get(path string) (int, string) {
	c.t.Helper()
	res, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// logLines collects the server's log lines and finds the listen address.
type logLines struct {
	mu    sync.Mutex
	lines []string
	addr  chan string
}

func (l *logLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
		var m struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "listening" {
			l.addr <- m.Addr
		}
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestEndToEnd builds the real binary, starts it on a free loopback port,
// replays a short brute force and a spray over HTTP, then stops it with
// SIGTERM while a request is in flight: the request is answered and the
// process exits 0.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p := startTollgate(t, "TOLLGATE_SECRET=end-to-end-test-secret-of-at-least-32-bytes")
	cmd, exited, logs, addr := p.cmd, p.exited, p.logs, p.addr
	c := &e2eClient{t: t, base: "http://" + addr, http: &http.Client{Timeout: 5 * time.Second}}

	if code, body := c.get("/healthz"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := c.get("/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}

	t.Run("brute force on one account: a delay appears", func(t *testing.T) {
		c.t = t
		victim := map[string]any{"flow": "login", "account": "Victim@Example.com", "ip": "203.0.113.50"}
		for i := 1; i <= 5; i++ {
			v := c.post("/v1/check", victim)
			if v.Action != "proceed" || v.Attempt == "" {
				t.Fatalf("check %d = %+v, want proceed", i, v)
			}
			r := c.post("/v1/report", testkit.With(victim, "outcome", "failure", "attempt", v.Attempt))
			want := "proceed"
			if i == 5 {
				want = "delay"
			}
			if r.Action != want {
				t.Fatalf("report %d = %+v, want %s", i, r, want)
			}
		}
		// The 6th attempt, from another case of the same address and
		// another IP, is delayed: the account's counter is shared.
		v := c.post("/v1/check", map[string]any{"flow": "login", "account": " victim@example.com", "ip": "198.51.100.77"})
		if v.Action != "delay" || v.DelayMS <= 0 || v.DelayMS > 1000 || v.RetryAfter != 1 || !slices.Equal(v.Reasons, []string{"account_backoff"}) || v.Attempt != "" {
			t.Fatalf("6th check = %+v, want a delay of at most 1s for account_backoff", v)
		}
	})

	t.Run("spraying from one address: captcha", func(t *testing.T) {
		c.t = t
		for i := 1; i <= 10; i++ {
			acct := map[string]any{"flow": "login", "account": fmt.Sprintf("user%02d@example.com", i), "ip": "192.0.2.66"}
			v := c.post("/v1/check", acct)
			if v.Action != "proceed" {
				t.Fatalf("account %d: check = %+v", i, v)
			}
			c.post("/v1/report", testkit.With(acct, "outcome", "failure", "attempt", v.Attempt))
		}
		eleventh := map[string]any{"flow": "login", "account": "user11@example.com", "ip": "192.0.2.66"}
		v := c.post("/v1/check", eleventh)
		if v.Action != "captcha" || !slices.Equal(v.Reasons, []string{"ip_spray"}) {
			t.Fatalf("11th account = %+v, want captcha for ip_spray", v)
		}
		if v := c.post("/v1/check", testkit.With(eleventh, "captcha_solved", true)); v.Action != "proceed" {
			t.Fatalf("11th account with a solved captcha = %+v", v)
		}
	})
	t.Run("a success reported again settles once", func(t *testing.T) {
		c.t = t
		acct := map[string]any{"flow": "login", "account": "replay@example.com", "ip": "203.0.113.60"}
		for range 4 {
			v := c.post("/v1/check", acct)
			c.post("/v1/report", testkit.With(acct, "outcome", "failure", "attempt", v.Attempt))
		}
		v := c.post("/v1/check", acct)
		for range 5 { // a caller retrying its report
			c.post("/v1/report", testkit.With(acct, "outcome", "success", "attempt", v.Attempt))
		}
		// The success refunded itself once; the 4 failures stay: one more
		// attempt goes ahead, then the delay (from another address: the
		// success made this one a known network of the account's).
		acct["ip"] = "203.0.113.62"
		v = c.post("/v1/check", acct)
		if r := c.post("/v1/report", testkit.With(acct, "outcome", "failure", "attempt", v.Attempt)); v.Action != "proceed" || r.Action != "delay" {
			t.Fatalf("after 4 failures and a success reported 5 times: check %s, report %s; want proceed, then delay", v.Action, r.Action)
		}
	})

	t.Run("an invisible spelling of an account is refused, not counted apart", func(t *testing.T) {
		c.t = t
		body := `{"flow":"login","account":"vic\u200btim@example.com","ip":"203.0.113.61"}`
		res, err := c.http.Post(c.base+"/v1/check", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || res.Header.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(string(out), "invalid-field") || !strings.Contains(string(out), `"field":"account"`) {
			t.Fatalf("zero-width space in the account: %d %s, want a 400 invalid-field problem for account", res.StatusCode, out)
		}
	})
	c.t = t

	code, metrics := c.get("/metrics")
	for _, want := range []string{
		`tollgate_verdicts_total{action="captcha",call="check",flow="login"} 1`,
		`tollgate_verdicts_total{action="delay",call="check",flow="login"} 1`,
	} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) lacks %s", code, want)
		}
	}

	// SIGTERM with a request in flight.
	slow := startSlowCheck(t, addr)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Once a new connection is refused, the shutdown has begun (or the
	// process is gone, which finish then shows).
	testkit.WaitFor(t, 10*time.Second, "tollgate refuses new connections after SIGTERM", func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case <-exited:
		t.Fatalf("tollgate exited with a request in flight: %v\n%s", p.waitErr, logs)
	default:
	}
	if got := slow.finish(t); got != "proceed" {
		t.Errorf("in-flight check answered %q", got)
	}
	select {
	case <-exited:
		if p.waitErr != nil {
			t.Fatalf("tollgate exited with %v\n%s", p.waitErr, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("tollgate did not exit after SIGTERM\n%s", logs)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"shutting down`, `"msg":"stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	for _, secret := range []string{"ictim@", "user11", "203.0.113.50", "192.0.2.66", "slow@example.com", "replay@", "203.0.113.61"} {
		if strings.Contains(out, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", out)
	}
}

// tollgateBinary builds the real binary once for the package's tests (with
// -race when the tests run under it).
func tollgateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary: runs in the full make test, not under -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	built.Do(func() {
		dir, err := os.MkdirTemp("", "tollgate-e2e-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "tollgate")
		args := []string{"build", "-o", built.bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

var built struct {
	sync.Once
	bin string
	err error
}

// process is a running tollgate.
type process struct {
	cmd     *exec.Cmd
	addr    string
	logs    *logLines
	exited  chan struct{} // closed when the process has exited
	waitErr error         // its exit status, once exited is closed
}

// startTollgate starts the binary with env (and TOLLGATE_LISTEN on a free
// loopback port) and waits until it listens; it is killed at cleanup.
func startTollgate(t *testing.T, env ...string) *process {
	t.Helper()
	cmd := exec.Command(tollgateBinary(t), "serve")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"TOLLGATE_LISTEN=127.0.0.1:0", // the kernel picks a free port; the log says which
	}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: &logLines{addr: make(chan string, 1)}, exited: make(chan struct{})}
	go func() {
		p.logs.read(stderr)
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case p.addr = <-p.logs.addr:
	case <-p.exited:
		t.Fatalf("tollgate exited at start: %v\n%s", p.waitErr, p.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("tollgate did not start:\n%s", p.logs)
	}
	return p
}
