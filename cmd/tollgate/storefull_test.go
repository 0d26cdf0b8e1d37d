package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// TestStoreFull_RealRedis: a Redis at maxmemory with the noeviction policy
// answers PING but OOM to every write. A flood of checks on fresh accounts
// fills it; then the full-store errors are counted, the log has one line for
// the episode however much it flaps, and /readyz answers the store-full problem. Once Redis
// has room again and has answered for the settling period, one more line
// ends the episode and /readyz is ready.
func TestStoreFull_RealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs redis-server")
	}
	rd := redistest.Server(t, "--maxmemory-policy", "noeviction")
	cfg := testConfig()
	// A timeout would start the episode with another kind: give it room.
	cfg.Redis = &config.RedisConfig{URL: "redis://" + rd.Addr, Timeout: 2 * time.Second}
	addr, logs := startServe(t, cfg)
	c := &e2eClient{t: t, base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	if code, body := c.get("/readyz"); code != 200 {
		t.Fatalf("/readyz before the flood: %d %s", code, body)
	}
	if got := fullErrors(t, c); got != 0 {
		t.Fatalf("full errors before the flood = %d", got)
	}
	// Redis is the main store: only the fallback is a memory store.
	if _, metrics := c.get("/metrics"); !strings.Contains(metrics, `tollgate_store_evictions_total{class="protected",store="fallback"} 0`) ||
		strings.Contains(metrics, `store="main"`) {
		t.Errorf("/metrics: want eviction series for the fallback store only:\n%s", metrics)
	}

	const maxChecks = 20_000
	n := 0
	check := func() map[string]any {
		n++
		acct := map[string]any{"flow": "login", "account": fmt.Sprintf("made-up-%d@example.com", n), "ip": fmt.Sprintf("2001:db8:%x::1", n)} // a /48 each: no IP rule applies
		// login fails open: the fallback store answers while Redis is full.
		v := c.post("/v1/check", acct)
		if v.Action != "proceed" {
			t.Fatalf("check %d = %+v, want proceed", n, v)
		}
		return testkit.With(acct, "attempt", v.Attempt)
	}
	for range 100 { // warm up: the connections and their buffers count in Redis's used memory
		check()
	}
	// Room for a few hundred checks beyond what Redis holds now: each
	// writes four keys.
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rc.Close()
	used := usedMemory(t, rc)
	if err := rc.ConfigSet(context.Background(), "maxmemory", strconv.FormatInt(used+256<<10, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	warm := n
	for n < maxChecks && !strings.Contains(logs.String(), `"msg":"store failing`) {
		check()
	}
	if n == maxChecks {
		t.Fatalf("Redis (maxmemory %d) did not fill in %d checks", used+256<<10, maxChecks)
	}
	t.Logf("Redis (maxmemory: used_memory %d + 256 KiB) full after %d checks", used, n-warm)
	// The store flaps: checks fail with OOM, while success reports, which
	// only delete, are answered (and keep the breaker closed): 200 flaps,
	// one line per change before. Readiness says full all along, and the
	// log says nothing more.
	for range 200 {
		attempt := check()
		c.post("/v1/report", testkit.With(attempt, "outcome", "success"))
		if code, body := c.get("/readyz"); code != 503 || !strings.Contains(body, "problems/store-full") {
			t.Fatalf("/readyz with Redis full = %d %s, want the 503 store-full problem", code, body)
		}
	}
	if got := fullErrors(t, c); got == 0 {
		t.Errorf(`tollgate_store_errors_total{kind="full"} did not rise`)
	}
	_, metrics := c.get("/metrics")
	reports, fallback := metricValue(t, metrics, `tollgate_verdicts_total{action="proceed",call="report",flow="login"}`), metricValue(t, metrics, `tollgate_fallback_answers_total{call="report",flow="login"}`)
	if reports-fallback == 0 {
		t.Errorf("no success report was answered by Redis while it was full: the store did not flap, so the test shows less than it should")
	}
	starts := logLinesWith(t, logs.String(), "store failing")
	if len(starts) != 1 || starts[0]["kind"] != "full" {
		t.Errorf("%d 'store failing' lines %v, want one of kind full", len(starts), starts)
	}

	// Redis has room again: after storeSettle of answers the episode ends.
	if err := rc.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(storeSettle + 10*time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(logs.String(), `"msg":"store answering again"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no 'store answering again' within %v of Redis having room", storeSettle+10*time.Second)
		}
		<-tick.C
		check()
	}
	ends := logLinesWith(t, logs.String(), "store answering again")
	if len(ends) != 1 {
		t.Fatalf("%d 'answering again' lines, want 1", len(ends))
	}
	byKind, _ := ends[0]["failed_calls_by_kind"].(map[string]any)
	if failed, _ := ends[0]["failed_calls"].(float64); failed < 1 || byKind["full"] == nil {
		t.Errorf("end of episode %v, want its failed calls with some of kind full", ends[0])
	}
	if got := len(logLinesWith(t, logs.String(), "store failing")); got != 1 {
		t.Errorf("%d 'store failing' lines in all, want 1", got)
	}
	if code, body := c.get("/readyz"); code != 200 {
		t.Errorf("/readyz after the episode: %d %s", code, body)
	}
}

var fullErrorsRE = regexp.MustCompile(`(?m)^tollgate_store_errors_total\{call="check",flow="login",kind="full"\} (\d+)`)

// fullErrors scrapes the checks that failed on a full store.
func fullErrors(t *testing.T, c *e2eClient) int {
	t.Helper()
	code, body := c.get("/metrics")
	m := fullErrorsRE.FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("/metrics (%d) has no full-store series", code)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// metricValue returns the value of one series in a scrape.
func metricValue(t *testing.T, scrape, series string) int {
	t.Helper()
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no series %s", series)
	return 0
}

func usedMemory(t *testing.T, rc *redis.Client) int64 {
	t.Helper()
	info, err := rc.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no used_memory in INFO memory")
	return 0
}

// logLinesWith returns the JSON log lines whose message starts with msg.
func logLinesWith(t *testing.T, logs, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(logs) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if s, _ := m["msg"].(string); strings.HasPrefix(s, msg) {
			out = append(out, m)
		}
	}
	return out
}
