package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// Two tollgate processes on one Redis (and on one Redis Cluster) share one
// truth: 200 concurrent clients hitting one account through both get no more
// attempts through than one instance would allow. The policy's first delay
// is an hour, so exactly `free` (5) may proceed however long the burst
// takes; the flow fails closed, so a store error could only refuse.
func TestManyInstances_OneLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := func(redis string) string {
		path := filepath.Join(t.TempDir(), "tollgate.yaml")
		err := os.WriteFile(path, []byte(`
store:
  redis:
    url: redis://placeholder:1   # the environment names the real store
    timeout: 2s`+redis+`
flows:
  login:
    fail_mode: closed
    rules:
      - {name: account_backoff, free: 5, base: 1h, max: 2h, forget_after: 3h}
`), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The same race with each instance's checks in round trips of their
	// own (shared round trips, the default, turned off).
	for _, kind := range []string{"redis", "redis, round trips of their own", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			var store string
			config := file("")
			switch kind {
			case "redis":
				store = "TOLLGATE_REDIS_URL=redis://" + redistest.Server(t).Addr
			case "redis, round trips of their own":
				store = "TOLLGATE_REDIS_URL=redis://" + redistest.Server(t).Addr
				config = file("\n    shared_round_trips: false")
			default:
				store = "TOLLGATE_REDIS_CLUSTER_ADDRS=" + strings.Join(redistest.Cluster(t).Addrs(), ",")
			}
			env := []string{store, "TOLLGATE_CONFIG=" + config, "TOLLGATE_SECRET=many-instances-test-secret-at-least-32-bytes"}
			a, b := startTollgate(t, env...), startTollgate(t, env...)

			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
			var proceeded, other atomic.Int64
			var wg sync.WaitGroup
			for i := range 200 {
				wg.Go(func() {
					base := a.addr
					if i%2 == 1 {
						base = b.addr
					}
					v, err := postCheck(client, base, fmt.Sprintf(`{"flow":"login","account":"shared@example.com","ip":"198.51.100.%d"}`, i%250))
					switch {
					case err != nil:
						t.Error(err)
					case v.Action == "proceed":
						proceeded.Add(1)
					case v.Action != "delay" || v.Reasons[0] != "account_backoff":
						other.Add(1)
					}
				})
			}
			wg.Wait()
			if got := proceeded.Load(); got != 5 {
				t.Errorf("%d of 200 concurrent checks on two instances proceeded, want exactly 5 (one instance's budget)", got)
			}
			if n := other.Load(); n != 0 {
				t.Errorf("%d answers were neither proceed nor an account_backoff delay (store errors?)", n)
			}

			// An attempt checked on one instance settles on the other.
			c := &e2eClient{t: t, base: "http://" + a.addr, http: client}
			owner := map[string]any{"flow": "login", "account": "owner@example.com", "ip": "192.0.2.1"}
			v := c.post("/v1/check", owner)
			c.base = "http://" + b.addr
			if r := c.post("/v1/report", testkit.With(owner, "outcome", "failure", "attempt", v.Attempt)); r.Action != "proceed" {
				t.Errorf("report on the other instance: %+v", r)
			}
			if code, body := c.get("/readyz"); code != 200 {
				t.Errorf("/readyz: %d %s", code, body)
			}
		})
	}
}

func postCheck(c *http.Client, addr, body string) (e2eVerdict, error) {
	var v e2eVerdict
	res, err := c.Post("http://"+addr+"/v1/check", "application/json", strings.NewReader(body))
	if err != nil {
		return v, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return v, fmt.Errorf("status %d", res.StatusCode)
	}
	return v, json.NewDecoder(res.Body).Decode(&v)
}

// TestManyInstances_SeeEachOthersEntries: a block added on one tollgate
// process applies on another sharing its Redis (node, then Cluster) within
// entries_refresh, and its removal likewise.
func TestManyInstances_SeeEachOthersEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	config := filepath.Join(t.TempDir(), "tollgate.yaml")
	if err := os.WriteFile(config, []byte("entries_refresh: 200ms\nstore:\n  redis:\n    url: redis://placeholder:1\n    timeout: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"redis", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			var store string
			if kind == "redis" {
				store = "TOLLGATE_REDIS_URL=redis://" + redistest.Server(t).Addr
			} else {
				store = "TOLLGATE_REDIS_CLUSTER_ADDRS=" + strings.Join(redistest.Cluster(t).Addrs(), ",")
			}
			env := []string{store, "TOLLGATE_CONFIG=" + config, "TOLLGATE_SECRET=many-instances-test-secret-at-least-32-bytes"}
			a, b := startTollgate(t, env...), startTollgate(t, env...)
			client := &http.Client{Timeout: 5 * time.Second}
			// until polls b's verdict for a check from the range for up to 5s.
			until := func(want string) string {
				t.Helper()
				var got string
				var err error
				testkit.Eventually(5*time.Second, func() bool {
					var v e2eVerdict
					if v, err = postCheck(client, b.addr, `{"flow":"login","account":"x@example.com","ip":"203.0.113.40"}`); err != nil {
						return true
					}
					got = v.Action
					return got == want
				})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			res, err := client.Post("http://"+a.addr+"/v1/admin/deny", "application/json",
				strings.NewReader(`{"ip_range":"203.0.113.0/24","expires_in":"1h","reason":"incident 7"}`))
			if err != nil {
				t.Fatal(err)
			}
			var x struct{ ID string }
			json.NewDecoder(res.Body).Decode(&x)
			res.Body.Close()
			if res.StatusCode != http.StatusCreated || x.ID == "" {
				t.Fatalf("deny on a: %d", res.StatusCode)
			}
			if got := until("delay"); got != "delay" {
				t.Errorf("b within 5s of a's block: %s, want delay", got)
			}
			res, err = client.Post("http://"+a.addr+"/v1/admin/remove", "application/json", strings.NewReader(`{"id":"`+x.ID+`","reason":"closed"}`))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := until("proceed"); got != "proceed" {
				t.Errorf("b within 5s of a's removal: %s, want proceed", got)
			}
		})
	}
}
