package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// short are the flags of a short bench: one round of 200 requests with 4
// workers (the minute is a bound, not a wait). What these tests count holds
// for any number of requests, and a count ends the round as soon as they
// are answered.
var short = []string{"-n", "200", "-duration", "1m", "-rounds", "1", "-c", "4"}

// timed are the flags of a short bench that measures CPU time: one round
// of 300ms with 4 workers, long enough for the kernel's clock ticks.
var timed = []string{"-duration", "300ms", "-rounds", "1", "-c", "4"}

// runBench runs `tollgate-bench args...` and returns its exit status and
// output.
func runBench(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr testkit.SyncBuffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// benchJSON runs `tollgate-bench -json args...`, which must succeed, and
// decodes its output.
func benchJSON(t *testing.T, args ...string) benchReport {
	t.Helper()
	code, out, errOut := runBench(t, context.Background(), append([]string{"-json"}, args...)...)
	if code != 0 {
		t.Fatalf("bench %v: exit %d\n%s%s", args, code, out, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench -json output does not parse: %v\n%s", err, out)
	}
	return rep
}

// fakeTollgate answers checks as tollgate's wire format does: every 3rd
// check is delayed, every 5th other one answered 503, the rest proceed
// with an attempt token naming the subject. It records the subjects it saw
// and checks that every report carries its check's token.
type fakeTollgate struct {
	checks, reports, badReports atomic.Int64

	mu       sync.Mutex
	accounts map[string]bool
	ips      map[string]bool
}

// newFakeTollgate starts a fakeTollgate; its figures are final once the
// server is closed.
func newFakeTollgate(t *testing.T) (*fakeTollgate, *httptest.Server) {
	f := &fakeTollgate{accounts: map[string]bool{}, ips: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeTollgate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct{ Flow, Account, IP, Outcome, Attempt string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Flow != "login" || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	token := `tok"` + body.Account + "|" + body.IP // a quote the report must escape
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/check":
		f.mu.Lock()
		f.accounts[body.Account], f.ips[body.IP] = true, true
		f.mu.Unlock()
		n := f.checks.Add(1)
		switch {
		case n%3 == 0:
			fmt.Fprint(w, `{"action":"delay","delay_ms":975,"retry_after":1,"reasons":["account_backoff"],"attempt":"","device_token":""}`)
		case n%5 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":503}`)
		default:
			tok, _ := json.Marshal(token)
			fmt.Fprintf(w, `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":%s,"device_token":""}`, tok)
		}
	case "/v1/report":
		f.reports.Add(1)
		if body.Attempt != token || (body.Outcome != "failure" && body.Outcome != "success") {
			f.badReports.Add(1)
		}
		fmt.Fprint(w, `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}`)
	default:
		http.NotFound(w, r)
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// checkRunCounts checks what holds for every run: the statuses add up to
// the calls, the actions to the 200 answers of checks, and something was
// measured.
func checkRunCounts(t *testing.T, r benchRun, load benchLoad) {
	t.Helper()
	if r.Requests <= 0 || r.ReqPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.Errors != 0 {
		t.Errorf("%s: requests %d, req/s %v, p50 %vµs, p99 %vµs, errors %d; want requests, a rate and latencies, no errors",
			r.URL, r.Requests, r.ReqPerSec, r.P50us, r.P99us, r.Errors)
	}
	if got := sum(r.Statuses); got != r.Calls {
		t.Errorf("%s: statuses %v add up to %d, want the %d calls", r.URL, r.Statuses, got, r.Calls)
	}
	proceeds := r.Actions["proceed"]
	switch load {
	case loadCheck:
		if got := sum(r.Actions); r.Calls != r.Requests || got != r.Statuses["200"] {
			t.Errorf("%s: %d requests, %d calls, actions %v (%d) for statuses %v; want one call per request and an action per 200",
				r.URL, r.Requests, r.Calls, r.Actions, got, r.Statuses)
		}
	case loadCycle:
		// A cycle is one call, or two when its check proceeds; a cycle cut
		// short by the end of the run counts its check but not itself, and
		// it was cut in its report, so the identity holds for it too.
		if r.Calls != r.Requests+proceeds {
			t.Errorf("%s: %d cycles, %d proceeds, %d calls; want a call per cycle plus a report per proceed",
				r.URL, r.Requests, proceeds, r.Calls)
		}
	}
}

// TestBench_CeilingAndDelayingServer runs a round against the ceiling and
// against a server that delays some checks and fails others.
func TestBench_CeilingAndDelayingServer(t *testing.T) {
	ceiling := httptest.NewServer(ceilingHandler())
	defer ceiling.Close()
	fake, fakeSrv := newFakeTollgate(t)
	fakeURL := fakeSrv.URL

	rep := benchJSON(t, append(short, ceiling.URL, fakeURL+"/")...)
	if len(rep.Runs) != 2 || rep.Runs[0].URL != ceiling.URL || rep.Runs[1].URL != fakeURL || rep.Interrupted {
		t.Fatalf("runs %+v, want one per URL, in order, without the trailing slash", rep.Runs)
	}
	for _, r := range rep.Runs {
		checkRunCounts(t, r, loadCheck)
		if r.ServerCPU != nil || r.RedisCPU != nil || r.BenchCPU == nil {
			t.Errorf("%s: server CPU %v, Redis CPU %v, bench CPU %v; want only the bench's own", r.URL, r.ServerCPU, r.RedisCPU, r.BenchCPU)
		}
	}
	c, f := rep.Runs[0], rep.Runs[1]
	if c.Actions["proceed"] != c.Requests || c.Statuses["200"] != c.Requests {
		t.Errorf("ceiling: statuses %v, actions %v; want every check to proceed", c.Statuses, c.Actions)
	}
	if f.Actions["proceed"] == 0 || f.Actions["delay"] == 0 || f.Statuses["503"] == 0 {
		t.Errorf("delaying server: statuses %v, actions %v; want proceed, delay and 503", f.Statuses, f.Actions)
	}
	// The server also saw the probe and the checks cut short at the end.
	if got := fake.checks.Load(); got < f.Requests+1 {
		t.Errorf("the server answered %d checks, fewer than the %d counted and the probe", got, f.Requests)
	}
	if len(rep.Summary) != 2 || rep.Summary[0].ReqPerSecRatio != 1 || rep.Summary[1].ReqPerSecRatio <= 0 ||
		rep.Summary[1].ReqPerSec != f.ReqPerSec || rep.Summary[1].Rounds != 1 {
		t.Errorf("summary %+v, want the runs' figures and ratios to the first URL", rep.Summary)
	}
}

func TestBench_TextOutput(t *testing.T) {
	ceiling := httptest.NewServer(ceilingHandler())
	defer ceiling.Close()
	_, fakeSrv := newFakeTollgate(t)
	fakeURL := fakeSrv.URL

	code, out, errOut := runBench(t, context.Background(), append(short, ceiling.URL, fakeURL)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"ROUND  URL", "REQ/S", "P50", "P99", "SERVER CPU", "STATUSES", "ACTIONS", "proceed:",
		"median over rounds",
		fmt.Sprintf("ratio %s / %s: median req/s ", fakeURL, ceiling.URL),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "ROUND  URL") != 2 {
		t.Errorf("want one table per run:\n%s", out)
	}
}

// TestBench_CycleReportsEachProceedWithItsToken: a cycle reports every
// proceed with the check's subject and attempt token, and counts as one
// request.
func TestBench_CycleReportsEachProceedWithItsToken(t *testing.T) {
	fake, srv := newFakeTollgate(t)
	rep := benchJSON(t, append(short, "-load", "cycle", srv.URL)...)
	srv.Close()
	r := rep.Runs[0]
	checkRunCounts(t, r, loadCycle)
	if r.Calls <= r.Requests || r.CallsPerSec <= r.ReqPerSec {
		t.Errorf("%d cycles in %d calls (%v/s, %v/s); want the reports counted as calls only", r.Requests, r.Calls, r.ReqPerSec, r.CallsPerSec)
	}
	if fake.reports.Load() == 0 || fake.badReports.Load() != 0 {
		t.Errorf("%d reports, %d without their check's subject and token", fake.reports.Load(), fake.badReports.Load())
	}
}

func TestBench_Subjects(t *testing.T) {
	t.Run("hot: one account and address", func(t *testing.T) {
		fake, srv := newFakeTollgate(t)
		benchJSON(t, append(short, "-subjects", "hot", srv.URL)...)
		srv.Close()
		if len(fake.accounts) != 1 || len(fake.ips) != 1 || !fake.accounts[hotAccount] {
			t.Errorf("%d accounts, %d addresses; want %s alone", len(fake.accounts), len(fake.ips), hotAccount)
		}
	})
	t.Run("random: a new account for every check", func(t *testing.T) {
		fake, srv := newFakeTollgate(t)
		benchJSON(t, append(short, "-subjects", "random", srv.URL)...)
		srv.Close()
		n := int(fake.checks.Load())
		if len(fake.accounts) != n || len(fake.ips) < n/2 || n < 2 {
			t.Errorf("%d accounts and %d addresses in %d checks; want one account per check and about as many addresses", len(fake.accounts), len(fake.ips), n)
		}
	})
}

// TestBench_EnvoyReference drives a fake of envoy's ratelimit HTTP API
// next to a fake tollgate in one bench: envoy gets POST /json with the
// request's address as its one descriptor, tollgate its checks, each with
// a password fingerprint.
func TestBench_EnvoyReference(t *testing.T) {
	var calls, bad, over atomic.Int64
	envoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Domain      string
			Descriptors []struct{ Entries []struct{ Key, Value string } }
		}
		err := json.NewDecoder(r.Body).Decode(&req)
		if err != nil || r.URL.Path != "/json" || req.Domain != "tollgate_bench" || len(req.Descriptors) != 1 ||
			len(req.Descriptors[0].Entries) != 1 || req.Descriptors[0].Entries[0].Key != "ip" ||
			net.ParseIP(req.Descriptors[0].Entries[0].Value) == nil {
			bad.Add(1)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if calls.Add(1)%2 == 0 {
			over.Add(1)
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"overallCode":"OVER_LIMIT"}`)
			return
		}
		fmt.Fprint(w, `{"overallCode":"OK"}`)
	}))
	defer envoy.Close()
	var fingerprints atomic.Int64
	tollgate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			PasswordFingerprint string `json:"password_fingerprint"`
		}
		if json.NewDecoder(r.Body).Decode(&body) == nil && len(body.PasswordFingerprint) == 32 {
			fingerprints.Add(1)
		}
		fmt.Fprint(w, `{"action":"proceed"}`)
	}))
	defer tollgate.Close()

	rep := benchJSON(t, append(short, tollgate.URL, "envoy+"+envoy.URL)...)
	envoy.Close()
	tollgate.Close()
	if len(rep.Runs) != 2 || rep.Runs[1].URL != envoy.URL {
		t.Fatalf("runs %+v; want tollgate's, then envoy's at %s", rep.Runs, envoy.URL)
	}
	e := rep.Runs[1]
	if bad.Load() != 0 || e.Requests == 0 || e.Statuses["200"] == 0 || e.Statuses["429"] == 0 || e.Statuses["429"] > over.Load() {
		t.Errorf("envoy: %d bad requests, run %+v, %d answered over limit", bad.Load(), e, over.Load())
	}
	if tg := rep.Runs[0]; tg.Requests == 0 || fingerprints.Load() < tg.Requests {
		t.Errorf("tollgate: %d checks, %d with a password fingerprint", tg.Requests, fingerprints.Load())
	}
}

// TestBench_ServerAndRedisCPU measures this process (which serves the
// URL) and a real Redis.
func TestBench_ServerAndRedisCPU(t *testing.T) {
	ceiling := httptest.NewServer(ceilingHandler())
	defer ceiling.Close()
	args := append(timed, "-pid", strconv.Itoa(os.Getpid()))
	t.Run("pid", func(t *testing.T) {
		r := benchJSON(t, append(args, ceiling.URL)...).Runs[0]
		if r.ServerCPU == nil || *r.ServerCPU <= 0 {
			t.Errorf("server CPU per request = %v, want > 0", r.ServerCPU)
		}
	})
	t.Run("redis", func(t *testing.T) {
		redis := redistest.Server(t)
		for _, addr := range []string{redis.Addr, "redis://" + redis.Addr + "/0"} {
			rep := benchJSON(t, append(args, "-redis", addr, ceiling.URL)...)
			if r := rep.Runs[0]; r.RedisCPU == nil || *r.RedisCPU < 0 || rep.Summary[0].RedisCPU == nil {
				t.Errorf("-redis %s: Redis CPU per request = %v, want a figure", addr, r.RedisCPU)
			}
		}
	})
	// Once per URL, each URL's runs read its own Redis: "" gives a URL
	// none, whichever place it has.
	t.Run("redis per URL", func(t *testing.T) {
		a, b := redistest.Server(t), redistest.Server(t)
		other := httptest.NewServer(ceilingHandler())
		defer other.Close()
		for _, tt := range []struct{ first, second string }{{a.Addr, b.Addr}, {a.Addr, ""}, {"", b.Addr}} {
			rep := benchJSON(t, append(short, "-redis", tt.first, "-redis", tt.second, ceiling.URL, other.URL)...)
			for i, addr := range []string{tt.first, tt.second} {
				got := rep.Summary[i].RedisCPU
				if (got != nil) != (addr != "") {
					t.Errorf("-redis %q -redis %q: URL %d's Redis CPU per request = %v, want a figure just when its -redis names one", tt.first, tt.second, i+1, got)
				}
			}
		}
		// One -redis measures that Redis for every URL.
		rep := benchJSON(t, append(short, "-redis", a.Addr, ceiling.URL, other.URL)...)
		for i := range 2 {
			if rep.Summary[i].RedisCPU == nil {
				t.Errorf("one -redis: URL %d has no Redis CPU per request, want one for every URL", i+1)
			}
		}
	})
}

func TestBench_UsageErrors(t *testing.T) {
	url := "http://127.0.0.1:1"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no URL", []string{}, "no URL"},
		{"no duration", []string{"-duration", "0s", url}, "-duration"},
		{"duration over 10m", []string{"-duration", "11m", url}, "-duration"},
		{"no rounds", []string{"-rounds", "0", url}, "-rounds"},
		{"21 rounds", []string{"-rounds", "21", url}, "-rounds"},
		{"no workers", []string{"-c", "0", url}, "-c"},
		{"4097 workers", []string{"-c", "4097", url}, "-c"},
		{"unknown load", []string{"-load", "login", url}, "-load"},
		{"unknown subjects", []string{"-subjects", "cold", url}, "-subjects"},
		{"a -pid short", []string{"-pid", "1", url, url}, "1 -pid for 2 URLs"},
		{"-redis neither one nor one per URL", []string{"-redis", "a:1", "-redis", "b:1", "-redis", "c:1", url, url}, "3 -redis for 2 URLs"},
		{"negative -pid", []string{"-pid", "-1", url}, "-pid"},
		{"unknown flag", []string{"-x", "5", url}, "-x"},
		{"negative -n", []string{"-n", "-1", url}, "-n"},
		{"not http", []string{"ftp://127.0.0.1/"}, "not an http"},
		{"no host", []string{"http://"}, "not an http"},
		{"a query", []string{url + "/?x=1"}, "not an http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runBench(t, context.Background(), tt.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "usage: tollgate-bench") {
				t.Errorf("bench %v: exit %d, stdout %q, stderr:\n%s\nwant exit 2 with %q and the usage", tt.args, code, out, errOut, tt.want)
			}
		})
	}
	if code, out, _ := runBench(t, context.Background(), "-h"); code != 0 || !strings.Contains(out, "usage: tollgate-bench") {
		t.Errorf("bench -h: exit %d, stdout %q; want 0 and the usage", code, out)
	}
}

// TestBench_UnreachableFailsAtOnce: a URL nobody serves, a process that is
// not there and a Redis that does not answer fail before the first run.
func TestBench_UnreachableFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ceiling := httptest.NewServer(ceilingHandler())
	defer ceiling.Close()
	tests := []struct {
		name string
		args []string
	}{
		{"no server", []string{"-duration", "10m", "http://" + closed}},
		{"no process", []string{"-duration", "10m", "-pid", "999999999", ceiling.URL}},
		{"no Redis", []string{"-duration", "10m", "-redis", closed, ceiling.URL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runBench(t, context.Background(), tt.args...)
			if code != 1 || out != "" || errOut == "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and an error", code, out, errOut)
			}
		})
	}
}

// TestBench_InterruptStops: SIGINT (ctx cancelled) in the middle of a 10
// minute run stops the bench, which prints the summary of the runs done
// (none) and exits 1.
func TestBench_InterruptStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var served atomic.Int64
	h := ceilingHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 50 {
			cancel()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		code, _, errOut = runBench(t, ctx, "-duration", "10m", "-rounds", "20", "-c", "4", srv.URL)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("bench did not stop within a minute of the interrupt")
	}
	if code != 1 || !strings.Contains(errOut, "interrupted after 0 of 20 runs") {
		t.Errorf("exit %d, stderr %q; want 1 and interrupted", code, errOut)
	}
}

func TestProcCPU_GrowsWithWork(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	after := before
	sum := sha256.Sum256(nil)
	// Burn CPU until the counter moves (one tick is 10ms), for at most 10s.
	for deadline := time.Now().Add(10 * time.Second); after <= before && time.Now().Before(deadline); {
		for range 10000 {
			sum = sha256.Sum256(sum[:])
		}
		if after, err = procCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Errorf("CPU time %v after burning CPU, %v before; want more", after, before)
	}
}

func TestParseProcStat(t *testing.T) {
	fields := " S 1 1 1 0 -1 4194304 99 0 0 0 %s %s 0 0 20 0 1 0 915332 3133440 417\n"
	tests := []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{"plain", "42 (tollgate)" + fmt.Sprintf(fields, "250", "50"), 3 * time.Second, true},
		{"spaces and parentheses in the name", "42 (a) S 1 (b c))" + fmt.Sprintf(fields, "1", "2"), 30 * time.Millisecond, true},
		{"no name", "42 tollgate S 1 1", 0, false},
		{"too few fields", "42 (tollgate) S 1 1 1 0 -1 4194304 99 0 0 0 1", 0, false},
		{"not a number", "42 (tollgate)" + fmt.Sprintf(fields, "x", "1"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.stat))
			if got != tt.want || (err == nil) != tt.ok {
				t.Errorf("parseProcStat(%q) = %v, %v; want %v, ok %v", tt.stat, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestParseRedisCPU(t *testing.T) {
	tests := []struct {
		name string
		info string
		want time.Duration
		ok   bool
	}{
		{"INFO cpu", "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500001\r\nused_cpu_sys_children:9.000000\r\n", 1750001 * time.Microsecond, true},
		{"no user time", "# CPU\r\nused_cpu_sys:1.25\r\n", 0, false},
		{"not a number", "used_cpu_sys:x\r\nused_cpu_user:1\r\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRedisCPU(tt.info)
			if got != tt.want || (err == nil) != tt.ok {
				t.Errorf("parseRedisCPU(%q) = %v, %v; want %v, ok %v", tt.info, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestLatencyHist(t *testing.T) {
	for _, us := range []uint64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 4321, 99999, 1 << 20, 1<<32 - 1} {
		lo, width := histBucket(histIndex(us))
		if us < lo || us >= lo+width || (us >= histSub && width*histSub > lo) {
			t.Errorf("%dµs in bucket [%d, %d), want a bucket holding it at most 1/64 wide", us, lo, lo+width)
		}
	}
	var h latencyHist
	if got := h.quantile(0.5); got != 0 {
		t.Errorf("empty quantile = %v, want 0", got)
	}
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, tt := range []struct{ q, want float64 }{{0.5, 50_000}, {0.99, 99_000}} {
		if got := h.quantile(tt.q); got < tt.want*0.98 || got > tt.want*1.02 {
			t.Errorf("quantile(%v) of 1..100ms = %vµs, want %vµs within 2%%", tt.q, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		vs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, tt := range tests {
		if got := median(tt.vs); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.vs, got, tt.want)
		}
	}
}

func TestBenchCeiling_ServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr testkit.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ceiling", "-listen", "127.0.0.1:0"}, pw, &stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no address printed; stderr %q", stderr.String())
	}
	first := lines.Text()
	var addr string
	var pid int
	if _, err := fmt.Sscanf(first, "bench-ceiling: listening on %s pid %d", &addr, &pid); err != nil || pid != os.Getpid() {
		t.Fatalf("first line %q: %v; want the address and this process's id", first, err)
	}
	base := "http://" + strings.TrimSuffix(addr, ",")
	go io.Copy(io.Discard, pr)

	tests := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/v1/check", `{"flow":"login","account":"a@example.com","ip":"192.0.2.1"}`, 200, `"attempt":"x"`},
		{"POST", "/v1/report", `{"flow":"login","account":"a@example.com","ip":"192.0.2.1","outcome":"failure","attempt":"x"}`, 200, `"action":"proceed"`},
		{"POST", "/v1/check", `{"flow":`, 400, `"status":400`},
		{"POST", "/v1/check", `{}`, 400, `"status":400`},
		{"GET", "/v1/check", ``, 405, ``},
		{"POST", "/v1/other", `{}`, 404, ``},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s %s %s: %d %s, want %d with %s", tt.method, tt.path, tt.body, res.StatusCode, b, tt.status, tt.want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after the interrupt, want 0; stderr %q", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("bench-ceiling did not stop")
	}
}

func TestBenchCeiling_RefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "example.com:80", "nonsense"} {
		var stdout, stderr testkit.SyncBuffer
		code := run(context.Background(), []string{"ceiling", "-listen", addr}, &stdout, &stderr)
		if code != 2 || stdout.String() != "" || stderr.String() == "" {
			t.Errorf("-listen %s: exit %d, stdout %q, stderr %q; want 2 and a refusal", addr, code, stdout.String(), stderr.String())
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("42 (a b) S 1 1 1 0 -1 4194304 99 0 0 0 250 50 0 0 20"))
	f.Add([]byte("1 ()) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := parseProcStat(b); err == nil && d < 0 {
			t.Errorf("parseProcStat(%q) = %v", b, d)
		}
	})
}

// TestBench_RequestCount: with -n a run ends once n requests have been
// answered, long before its -duration.
func TestBench_RequestCount(t *testing.T) {
	ceiling := httptest.NewServer(ceilingHandler())
	defer ceiling.Close()
	start := time.Now()
	rep := benchJSON(t, "-n", "300", "-c", "7", "-duration", "5m", "-rounds", "2", ceiling.URL)
	if elapsed := time.Since(start); elapsed > time.Minute {
		t.Errorf("two runs of 300 requests took %v", elapsed)
	}
	for _, r := range rep.Runs {
		if r.Requests != 300 || r.Calls != 300 || r.Errors != 0 {
			t.Errorf("round %d: %d requests, %d calls, %d errors; want 300, 300, 0", r.Round, r.Requests, r.Calls, r.Errors)
		}
	}
}
