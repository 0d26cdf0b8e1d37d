package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// TestMain lets the table run this test binary as its children: as
// `tollgate-bench ceiling` (the table runs its own executable for the
// ceiling) and, through a script, as a stand-in for envoy's ratelimit.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "ceiling":
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		case "fake-ratelimit":
			os.Exit(fakeRatelimit())
		}
	}
	flag.Parse()
	if testing.Short() && os.Getenv("GOGC") == "" {
		// Collecting a quarter as often, as internal/testkit/lessgc does,
		// spends a tenth less CPU under -short (0.56 -> 0.50 CPU-s, 38 MB
		// resident rather than 27). Only under -short: the full run peaks
		// at 535 MB at the default.
		debug.SetGCPercent(400)
	}
	os.Exit(m.Run())
}

// fakeRatelimit stands in for envoy's ratelimit: it reads the same
// environment (HOST, PORT, REDIS_URL as host:port), answers POST /json
// with OK after an INCR in Redis of the descriptor's key, so that its
// server and Redis CPU are both above zero.
func fakeRatelimit() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_URL")})
	defer rdb.Close()
	srv := &http.Server{
		Addr: os.Getenv("HOST") + ":" + os.Getenv("PORT"),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/json" || r.Method != http.MethodPost {
				http.NotFound(w, r)
				return
			}
			if err := rdb.Incr(r.Context(), "fake-ratelimit").Err(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprint(w, `{"overallCode":"OK"}`)
		}),
	}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestTable_EveryRowAndRatio runs the whole table in a tiny configuration,
// one round, with the real tollgate on a real Redis, on a real 3-master
// Redis Cluster and on the memory store, the ceiling and a stand-in for
// envoy's ratelimit, and checks that it prints every row (the Cluster's
// with their own server and Redis figures) and every ratio with positive
// figures and leaves no process behind. No figure is compared with a
// target.
func TestTable_EveryRowAndRatio(t *testing.T) {
	redistest.Require(t)
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-benchmark is not installed (scripts/ensure-redis.sh)")
		}
		t.Skip("redis-benchmark is not installed (scripts/ensure-redis.sh)")
	}
	dir := t.TempDir()
	tollgate := filepath.Join(dir, "tollgate")
	if out, err := exec.Command("go", "build", "-o", tollgate, "github.com/tollgate-auth/tollgate/cmd/tollgate").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tollgate: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ratelimit := filepath.Join(dir, "ratelimit")
	script := "#!/bin/sh\nexec " + strconv.Quote(self) + " fake-ratelimit\n"
	if err := os.WriteFile(ratelimit, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr testkit.SyncBuffer
	code := run(context.Background(), []string{"table", "-rounds", "1", "-n", "1500", "-c", "8", "-floor-n", "2000",
		"-tollgate", tollgate, "-ratelimit", ratelimit, "-timeout", "2m"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())

	number := `([0-9]+\.[0-9])`
	for row, name := range rowNames {
		var want *regexp.Regexp
		switch row {
		case rowFloor3, rowCommands, rowScript:
			want = regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \| – \| ` + number + ` \|  \|$`)
		case rowMemory, rowCeiling:
			want = regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \| ` + number + ` \| – \| ` + number + ` \|$`)
		default:
			want = regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \| ` + number + ` \| ` + number + ` \| ` + number + ` \|$`)
		}
		m := want.FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no row %q with its figures in:\n%s", name, out)
			continue
		}
		for _, v := range m[1:] {
			if f, _ := strconv.ParseFloat(v, 64); f <= 0 {
				t.Errorf("row %q: figure %s, want above 0", name, v)
			}
		}
	}
	for _, q := range tableRatios {
		m := regexp.MustCompile(regexp.QuoteMeta("* "+q.name+": **") + `([0-9]+\.[0-9]+)×\*\*`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no ratio %q in:\n%s", q.name, out)
			continue
		}
		if f, _ := strconv.ParseFloat(m[1], 64); f <= 0 {
			t.Errorf("ratio %q = %s, want above 0", q.name, m[1])
		}
	}

	// The Cluster rows drove tollgate on the Cluster: its fresh checks
	// proceed and its hot ones are refused (delay), as on one node.
	for _, tt := range []struct{ label, action string }{{"cluster", "proceed"}, {"cl-hot", "delay"}, {"cluster6", "proceed"}} {
		m := regexp.MustCompile(`(?m)^  ` + tt.label + ` +([0-9]+) requests, .* actions .*\b` + tt.action + `:([0-9]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no verdicts line for %s with %s in:\n%s", tt.label, tt.action, out)
			continue
		}
		reqs, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if reqs < 1500 || n < reqs*9/10 {
			t.Errorf("%s: %d requests, %d answered %s; want 1500 or more, nearly all %s", tt.label, reqs, n, tt.action, tt.action)
		}
	}
	// Each Cluster row counts the script calls its checks made.
	for _, label := range []string{"cluster", "cl-hot", "cluster6"} {
		m := regexp.MustCompile(`(?m)^` + label + `: ([0-9]+\.[0-9]+) script calls per check`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no script calls per check for %s in:\n%s", label, out)
		} else if f, _ := strconv.ParseFloat(m[1], 64); f < 1 {
			t.Errorf("%s: %s script calls per check, want 1 or more", label, m[1])
		}
	}
	if !regexp.MustCompile(`(?m)^tollgate-cluster: pid [0-9]+ on `).MatchString(stderr.String()) ||
		strings.Count(stderr.String(), "redis-cluster-node") != clusterMasters {
		t.Errorf("stderr does not name tollgate-cluster and %d Cluster nodes:\n%s", clusterMasters, stderr.String())
	}

	// The script row is the check's own call: captured from the server,
	// a login check's keys.
	if m := regexp.MustCompile(`(?m)^script: EVALSHA [0-9a-f]{12}… with ([0-9]+) keys and ([0-9]+) arguments, captured from tollgate-redis$`).FindStringSubmatch(stderr.String()); m == nil {
		t.Errorf("stderr does not say which EVALSHA the script row sends:\n%s", stderr.String())
	} else if keys, _ := strconv.Atoi(m[1]); keys < 5 {
		t.Errorf("the script row's EVALSHA has %d keys; a fresh login check with every signal has 5 or more", keys)
	}

	// Every process the table started is gone.
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9-]+): pid ([0-9]+) on `).FindAllStringSubmatch(stderr.String(), -1) {
		pid, _ := strconv.Atoi(m[2])
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s (pid %d) still runs after the table", m[1], pid)
		}
	}
	if n, want := strings.Count(stderr.String(), ": pid "), 9+cluster6Masters+1; n != want {
		t.Errorf("stderr names %d processes, want %d (redis-server, 3 and 6 Cluster nodes, four tollgate, ceiling, ratelimit):\n%s", n, want, stderr.String())
	}
}

// TestTable_EnvoyAbsent: without envoy's ratelimit its row and its ratio
// say absent, and the other rows are printed as they are.
func TestTable_EnvoyAbsent(t *testing.T) {
	var rows [numRows]tableRow
	for i := range rows {
		rows[i].server = []float64{20, 40}
		rows[i].redis = []float64{10, 30}
	}
	rows[rowEnvoy] = tableRow{absent: "absent (no ratelimit on the PATH)"}
	rows[rowClusterFresh] = tableRow{server: []float64{40, 60}, redis: []float64{20, 40}}
	rows[rowFloor3] = tableRow{redis: []float64{10, 10}, usecPerCall: []float64{7, 8}}
	rows[rowCommands] = tableRow{redis: []float64{15, 25}, usecPerCall: []float64{12, 14}}
	rows[rowScript] = tableRow{redis: []float64{30, 30}, usecPerCall: []float64{20, 22}}
	rows[rowMemory].redis, rows[rowCeiling].redis = nil, nil
	var out strings.Builder
	writeTable(&out, &tableConfig{Rounds: 2, Requests: 10, Concurrency: 1, FloorCalls: 10}, rows)
	for _, want := range []string{
		"| " + rowNames[rowEnvoy] + " | absent (no ratelimit on the PATH) | – | – |",
		"| " + rowNames[rowFresh] + " | 30.0 | 20.0 | 50.0 |",
		"| " + rowNames[rowFloor3] + " | – | 10.0 |  |",
		"| " + rowNames[rowMemory] + " | 30.0 | – | 30.0 |",
		"* Redis CPU per fresh check ÷ floor3: **2.00×** (1.00–3.00; target ≤ 2×)",
		"| " + rowNames[rowCommands] + " | – | 20.0 |  |",
		"| " + rowNames[rowScript] + " | – | 30.0 |  |",
		"* a fresh check's script alone ÷ floor3: **3.00×** (3.00–3.00; for information, no target)",
		"* a fresh check's script alone ÷ its commands alone: **1.50×** (1.20–2.00; for information, no target)",
		"* a fresh check's commands alone ÷ floor3: **2.00×** (1.50–2.50; for information, no target)",
		"commands usec_per_call (INFO commandstats, without network, as scripts/bench-scripts.sh reports): 13.0 µs",
		"script usec_per_call (INFO commandstats, without network, as scripts/bench-scripts.sh reports): 21.0 µs",
		"* tollgate total per fresh check ÷ envoy total per request: absent (target ≤ 1.0×)",
		"* memory-store server CPU ÷ bare server CPU: **1.00×** (1.00–1.00; target ≤ 1.5×)",
		"| " + rowNames[rowClusterFresh] + " | 50.0 | 30.0 | 80.0 |",
		"* Cluster total per fresh check ÷ one-node total per fresh check: **1.60×** (1.43–2.00; target ≤ 1.5×)",
		"usec_per_call (INFO commandstats, without network, as scripts/bench-scripts.sh reports): 7.5 µs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTable_ClusterOff: under -cluster=false the Cluster rows and their
// ratio say so, and the other rows and ratios are printed as they are.
func TestTable_ClusterOff(t *testing.T) {
	var rows [numRows]tableRow
	for i := range rows {
		rows[i].server = []float64{20}
		rows[i].redis = []float64{10}
	}
	rows[rowClusterFresh] = tableRow{absent: notRunCluster}
	rows[rowClusterHot] = tableRow{absent: notRunCluster}
	rows[rowCluster6] = tableRow{absent: notRunCluster}
	rows[rowFloor3] = tableRow{redis: []float64{5}}
	rows[rowCommands] = tableRow{redis: []float64{8}}
	rows[rowScript] = tableRow{redis: []float64{12}}
	var out strings.Builder
	writeTable(&out, &tableConfig{Rounds: 1, Requests: 10, Concurrency: 1, FloorCalls: 10}, rows)
	for _, want := range []string{
		"| " + rowNames[rowClusterFresh] + " | not run (-cluster=false) | – | – |",
		"| " + rowNames[rowClusterHot] + " | not run (-cluster=false) | – | – |",
		"| " + rowNames[rowFresh] + " | 20.0 | 10.0 | 30.0 |",
		"* Redis CPU per fresh check ÷ floor3: **2.00×** (2.00–2.00; target ≤ 2×)",
		"* Cluster total per fresh check ÷ one-node total per fresh check: absent (target ≤ 1.5×)",
		"* 6-master Cluster Redis CPU per fresh check ÷ 3-master Cluster's: absent (target ≤ 1.1×)",
		"| " + rowNames[rowCluster6] + " | not run (-cluster=false) | – | – |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "  cluster ") || strings.Contains(out.String(), "  cl-hot ") {
		t.Errorf("verdicts printed for Cluster rows that did not run:\n%s", out.String())
	}
}

// TestParseTableArgs_Cluster: the Cluster rows are on by default and
// -cluster=false turns them off.
func TestParseTableArgs_Cluster(t *testing.T) {
	tollgate, err := exec.LookPath("true") // any executable stands in for tollgate
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"default", nil, true},
		{"-cluster=false", []string{"-cluster=false"}, false},
		{"-cluster", []string{"-cluster"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseTableArgs(append([]string{"-tollgate", tollgate}, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Cluster; got != tt.want {
				t.Errorf("parseTableArgs(%q).Cluster = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

func TestTable_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-rounds", "0"}, {"-rounds", "21"}, {"-n", "0"}, {"-c", "0"}, {"-floor-n", "0"},
		{"-timeout", "31m"}, {"-tollgate", "/nonexistent/tollgate"}, {"extra"}, {"-cluster=maybe"},
	} {
		var stdout, stderr testkit.SyncBuffer
		code := run(context.Background(), append([]string{"table"}, args...), &stdout, &stderr)
		if code != 2 || stdout.String() != "" || !strings.Contains(stderr.String(), "usage: tollgate-bench table") {
			t.Errorf("table %v: exit %d, stdout %q, stderr %q; want 2 and the usage", args, code, stdout.String(), stderr.String())
		}
	}
}

func TestEvalshaStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_config:calls=1,usec=5,usec_per_call=5.00\r\n" +
		"cmdstat_evalsha:calls=2000,usec=26000,usec_per_call=13.00,rejected_calls=0,failed_calls=3\r\n"
	if calls, failed, usec := evalshaStats(info); calls != 2000 || failed != 3 || usec != 13 {
		t.Errorf("evalshaStats = %d, %d, %v; want 2000, 3, 13", calls, failed, usec)
	}
	if calls, failed, usec := evalshaStats("# Commandstats\r\n"); calls != 0 || failed != 0 || usec != 0 {
		t.Errorf("evalshaStats of nothing = %d, %d, %v; want 0, 0, 0", calls, failed, usec)
	}
}
