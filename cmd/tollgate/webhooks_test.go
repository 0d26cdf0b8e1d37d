package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	tgclient "github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a webhook endpoint that verifies every delivery as a
// receiver would (tgclient.VerifyWebhook) and keeps the events, one per
// webhook-id.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []tgclient.WebhookEvent
	ids    map[string]int // deliveries per webhook-id
	forged int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{ids: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := tgclient.VerifyWebhook(hookSecret, r.Header, body, time.Now())
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err != nil {
			rc.forged++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if rc.ids[ev.ID]++; rc.ids[ev.ID] == 1 {
			rc.events = append(rc.events, ev)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// of returns the events of type typ received so far.
func (rc *receiver) of(typ string) []tgclient.WebhookEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []tgclient.WebhookEvent
	for _, e := range rc.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// wait waits, at most 20 s, until n events of type typ have come, and
// returns them.
func (rc *receiver) wait(t *testing.T, typ string, n int) []tgclient.WebhookEvent {
	t.Helper()
	var got []tgclient.WebhookEvent
	if !testkit.Eventually(20*time.Second, func() bool { got = rc.of(typ); return len(got) >= n }) {
		t.Fatalf("%d %s events after 20 s, want %d", len(got), typ, n)
	}
	return got
}

// settled waits, at most 20 s, until everything the instances at bases
// emitted has come: no event is left in an Emit buffer, and as many
// deliveries were answered 2xx (by any instance: a Redis queue is shared)
// as were queued. An event coalescing kept back is never queued, so what
// comes after this is a bug, not a slow delivery.
func settled(t *testing.T, bases ...string) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "every queued webhook delivered", func() bool {
		buffered, queued, delivered := 0.0, 0.0, 0.0
		for _, base := range bases {
			code, scrape := (&e2eClient{t: t, base: base, http: http.DefaultClient}).get("/metrics")
			if code != http.StatusOK {
				return false
			}
			buffered += seriesSum(scrape, "tollgate_webhook_buffer_depth")
			queued += seriesSum(scrape, "tollgate_webhook_queued_total")
			delivered += seriesSum(scrape, "tollgate_webhook_delivered_total")
		}
		return buffered == 0 && delivered > 0 && queued == delivered
	})
}

// seriesSum is the sum of every series of metric name in a scrape.
func seriesSum(scrape, name string) float64 {
	sum := 0.0
	for line := range strings.Lines(scrape) {
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
			if len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				sum += v
			}
		}
	}
	return sum
}

// webhookConfig writes a config file sending every event to rc.
func webhookConfig(t *testing.T, rc *receiver) string {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "hook-secret")
	if err := os.WriteFile(secret, []byte(hookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tollgate.yaml")
	cfg := fmt.Sprintf("webhooks:\n  endpoints:\n    - name: security\n      url: %s/events\n      secret_file: %s\n", rc.srv.URL, secret)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// call POSTs body to path of base and decodes the answer.
func call(t *testing.T, base, path string, body map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]any{}
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, data)
	}
	json.Unmarshal(data, &out)
	return out
}

// signIn checks and reports a success for account from ip, with the device
// token when given; it returns the report's new device token.
func signIn(t *testing.T, base, account, ref, device string) string {
	t.Helper()
	req := map[string]any{"flow": "login", "account": account, "ip": "203.0.113.7", "ref": ref}
	if device != "" {
		req["device_token"] = device
	}
	v := call(t, base, "/v1/check", req)
	if v["action"] != "proceed" {
		t.Fatalf("the owner's check: %v", v)
	}
	req["outcome"], req["attempt"] = "success", v["attempt"]
	r := call(t, base, "/v1/report", req)
	tok, _ := r["device_token"].(string)
	return tok
}

// A real tollgate process tells a real receiver, signed, of a sign-in from
// a new device, with the account as the caller sent it and its ref, and
// not of a sign-in with the account's device token; an attack of many
// failures on one account is one account.under_attack.
func TestWebhooks_ARealProcessTellsTheOwnerOfANewDeviceAndOfAnAttackOnce(t *testing.T) {
	rc := newReceiver(t)
	p := startTollgate(t, "TOLLGATE_CONFIG="+webhookConfig(t, rc), "TOLLGATE_SECRET=webhook-test-secret-of-at-least-32-bytes!")
	base := "http://" + p.addr

	device := signIn(t, base, "Alice@Example.com", "user-42", "")
	ev := rc.wait(t, tgclient.WebhookLoginNewDevice, 1)[0]
	if ev.Data.Subject != "Alice@Example.com" || ev.Data.Ref != "user-42" || ev.Tenant != "default" || ev.Data.Flow != "login" {
		t.Errorf("login.new_device = %+v, want alice as sent, her ref, the default tenant and login", ev)
	}
	if device == "" {
		t.Fatal("the success report gave no device token")
	}
	signIn(t, base, "alice@example.com", "user-42", device) // her known device: nothing to tell
	signIn(t, base, "bob@example.com", "user-7", "")        // a new device of bob's
	got := rc.wait(t, tgclient.WebhookLoginNewDevice, 2)
	if got[1].Data.Ref != "user-7" {
		t.Errorf("second login.new_device is %+v, want bob's (alice's known device tells nothing)", got[1])
	}

	for i := range 40 {
		ip := fmt.Sprintf("198.51.100.%d", 1+i)
		v := call(t, base, "/v1/check", map[string]any{"flow": "login", "account": "victim@example.com", "ip": ip})
		call(t, base, "/v1/report", map[string]any{"flow": "login", "account": "victim@example.com", "ip": ip,
			"outcome": "failure", "attempt": v["attempt"]})
	}
	attack := rc.wait(t, tgclient.WebhookAccountUnderAttack, 1)
	if attack[0].Data.Subject != "victim@example.com" {
		t.Errorf("account.under_attack = %+v", attack[0])
	}
	settled(t, base) // what else the attack caused has come
	if n := len(rc.of(tgclient.WebhookAccountUnderAttack)); n != 1 {
		t.Errorf("%d account.under_attack events for one attack, want 1", n)
	}
	if n := len(rc.of(tgclient.WebhookLoginNewDevice)); n != 2 {
		t.Errorf("%d login.new_device events, want 2 (alice's and bob's new devices)", n)
	}
	if rc.forged != 0 {
		t.Errorf("%d deliveries did not verify", rc.forged)
	}
	code, body := (&e2eClient{t: t, base: base, http: http.DefaultClient}).get("/v1/admin/webhooks/dead-letters")
	if code != http.StatusOK || !strings.Contains(body, `"dead_letters":[]`) {
		t.Errorf("GET dead-letters = %d %s", code, body)
	}
	if strings.Contains(p.logs.String(), "Alice@Example.com") || strings.Contains(p.logs.String(), "victim@example.com") {
		t.Error("the server's log holds an account name")
	}
}

// Two instances on one real Redis share the queue: a success on either is
// delivered once, and an attack spread over both is one account.under_attack
// (coalesced in Redis), the entries encrypted so that Redis holds no account.
func TestWebhooks_TwoInstancesOnRedisTellOnceAndStoreNoAccount(t *testing.T) {
	rs := redistest.Server(t)
	rc := newReceiver(t)
	cfg := webhookConfig(t, rc)
	env := []string{"TOLLGATE_CONFIG=" + cfg, "TOLLGATE_SECRET=webhook-test-secret-of-at-least-32-bytes!", "TOLLGATE_REDIS_URL=redis://" + rs.Addr}
	a, b := startTollgate(t, env...), startTollgate(t, env...)
	bases := []string{"http://" + a.addr, "http://" + b.addr}

	signIn(t, bases[1], "Carol@Example.com", "user-9", "")
	ev := rc.wait(t, tgclient.WebhookLoginNewDevice, 1)[0]
	if ev.Data.Subject != "Carol@Example.com" || ev.Data.Ref != "user-9" {
		t.Errorf("login.new_device = %+v", ev)
	}
	for i := range 40 {
		base, ip := bases[i%2], fmt.Sprintf("198.51.100.%d", 1+i)
		v := call(t, base, "/v1/check", map[string]any{"flow": "login", "account": "victim@example.com", "ip": ip})
		call(t, base, "/v1/report", map[string]any{"flow": "login", "account": "victim@example.com", "ip": ip,
			"outcome": "failure", "attempt": v["attempt"]})
	}
	rc.wait(t, tgclient.WebhookAccountUnderAttack, 1)
	settled(t, bases...)
	if n := len(rc.of(tgclient.WebhookAccountUnderAttack)); n != 1 {
		t.Errorf("%d account.under_attack events from two instances, want 1", n)
	}
	rc.mu.Lock()
	for id, n := range rc.ids {
		if n != 1 {
			t.Errorf("event %s delivered %d times with nothing failing", id, n)
		}
	}
	rc.mu.Unlock()
	for _, raw := range dumpRedis(t, rs.Addr) {
		if strings.Contains(strings.ToLower(raw), "carol@example.com") || strings.Contains(strings.ToLower(raw), "victim@example.com") || strings.Contains(raw, "user-9") {
			t.Fatalf("Redis holds an account or ref in clear: %.200q", raw)
		}
	}
}

// dumpRedis reads every key's name and value from the Redis at addr, as
// text: what a dump of it would show.
func dumpRedis(t *testing.T, addr string) []string {
	t.Helper()
	ctx := t.Context()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	var out []string
	iter := c.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		var v any
		var err error
		switch typ := c.Type(ctx, k).Val(); typ {
		case "string":
			v, err = c.Get(ctx, k).Result()
		case "hash":
			v, err = c.HGetAll(ctx, k).Result()
		case "zset":
			v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "list":
			v, err = c.LRange(ctx, k, 0, -1).Result()
		case "set":
			v, err = c.SMembers(ctx, k).Result()
		case "stream":
			v, err = c.XRange(ctx, k, "-", "+").Result()
		case "none": // it expired since the scan (a rate's key lives seconds)
			continue
		default:
			t.Fatalf("key %q of type %q", k, typ)
		}
		if errors.Is(err, redis.Nil) { // it expired between TYPE and the read
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %v", k, v))
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("Redis holds no key: the dump shows nothing")
	}
	return out
}

// Found by a red team: a server on Redis queued the store.degraded that
// says Redis is down in that Redis, and nobody heard of the outage while
// it lasted. A real process on a real redis-server that the test stops
// tells a real receiver store.degraded while Redis is still down (the
// event waits in the process, not in Redis), and store.recovered once it
// answers again.
func TestWebhooks_StoreDegradedReachesTheReceiverWhileRedisIsDown(t *testing.T) {
	rs := redistest.Server(t)
	rc := newReceiver(t)
	p := startTollgate(t, "TOLLGATE_CONFIG="+webhookConfig(t, rc), "TOLLGATE_SECRET=webhook-test-secret-of-at-least-32-bytes!", "TOLLGATE_REDIS_URL=redis://"+rs.Addr)
	base := "http://" + p.addr
	i := 0
	poke := func() { // a check, answered by the store or by the fail mode: its status does not matter here
		i++
		b, _ := json.Marshal(map[string]any{"flow": "login", "account": fmt.Sprintf("judy%d@example.com", i), "ip": "203.0.113.9"})
		if res, err := http.Post(base+"/v1/check", "application/json", bytes.NewReader(b)); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	signIn(t, base, "carol@example.com", "user-9", "")
	rc.wait(t, tgclient.WebhookLoginNewDevice, 1) // delivered through the Redis queue

	rs.Stop()
	stopped := time.Now()
	poke()
	rc.wait(t, "store.degraded", 1)
	t.Logf("store.degraded received %v after Redis stopped", time.Since(stopped).Round(time.Millisecond))
	if c := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1}); c.Ping(t.Context()).Err() == nil {
		c.Close()
		t.Fatal("Redis answered: the test did not stop it")
	} else {
		c.Close()
	}

	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	for range 200 { // the store's breaker lets a call through after its cooldown
		if len(rc.of("store.recovered")) > 0 {
			break
		}
		poke()
		<-time.After(50 * time.Millisecond)
	}
	rc.wait(t, "store.recovered", 1)
	if n := len(rc.of("store.degraded")); n != 1 {
		t.Errorf("%d store.degraded events for one outage, want 1", n)
	}
	if rc.forged != 0 {
		t.Errorf("%d deliveries did not verify", rc.forged)
	}
}
