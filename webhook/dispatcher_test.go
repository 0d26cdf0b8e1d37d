package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// emitN emits n events of tenant and returns their ids.
func emitN(d *Dispatcher, tenant string, n int) map[string]bool {
	ids := map[string]bool{}
	for i := range n {
		id := fmt.Sprintf("msg_%s_%d", tenant, i)
		ids[id] = true
		d.Emit(Event{ID: id, Type: "login.new_device", Tenant: tenant, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	return ids
}

// checkAllDelivered fails unless every id was accepted at least once and
// every accepted delivery is one of the ids, repeats carrying the same body.
func checkAllDelivered(t *testing.T, r *receiver, path string, ids map[string]bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("all %d events delivered to %s", len(ids), path), func() bool {
		return len(r.ids(path)) == len(ids)
	})
	bodies := map[string]string{}
	for _, g := range r.deliveries(path) {
		if !ids[g.ID] {
			t.Errorf("delivered an unknown webhook-id %q", g.ID)
		}
		body, _ := json.Marshal(g.Body)
		if prev, ok := bodies[g.ID]; ok && prev != string(body) {
			t.Errorf("webhook-id %s was delivered twice with different bodies: %s and %s", g.ID, prev, body)
		}
		bodies[g.ID] = string(body)
	}
	r.checkSignatures()
}

func TestMemory_ReceiverDownThenBack_NoEventLost(t *testing.T) {
	r := newReceiver(t)
	r.down.Store(true)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}})
	run(t, d)
	ids := emitN(d, "acme", 50)
	eventually(t, "every event tried and refused at least once", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") >= 50 })
	r.down.Store(false)
	checkAllDelivered(t, r, "/hook", ids)
	eventually(t, "delivered_total counts 50", func() bool {
		return metric(t, reg, "tollgate_webhook_delivered_total", "endpoint", "ops") >= 50
	})
	if got := metric(t, reg, "tollgate_webhook_dead_lettered_total"); got != 0 {
		t.Errorf("dead_lettered_total = %v within the age limit", got)
	}
}

func TestDelivery_BodyAndHeadersAreStandardWebhooks(t *testing.T) {
	r := newReceiver(t)
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}})
	run(t, d)
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	d.Emit(Event{Type: "account.under_attack", Tenant: "acme", Time: at, Data: json.RawMessage(`{"failures":10000}`)})
	eventually(t, "one delivery", func() bool { return len(r.deliveries("")) == 1 })
	g := r.deliveries("")[0]
	if !strings.HasPrefix(g.ID, "msg_") || len(g.ID) < 4+26 {
		t.Errorf("webhook-id = %q, want msg_ and ≥128 random bits", g.ID)
	}
	want := `{"type":"account.under_attack","timestamp":"2026-12-02T04:00:00Z","tenant":"acme","data":{"failures":10000}}`
	if g.Raw != want {
		t.Errorf("body = %s, want %s", g.Raw, want)
	}
	r.checkSignatures()
}

func TestDelivery_EndpointGetsOnlyItsTenantAndTypes(t *testing.T) {
	r := newReceiver(t)
	only := r.endpoint("sec", "acme", "/sec")
	only.Types = []string{"account.under_attack"}
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{only, r.endpoint("all", "acme", "/all"), r.endpoint("other", "globex", "/globex")}})
	run(t, d)
	d.Emit(Event{ID: "msg_1", Type: "login.new_device", Tenant: "acme"})
	d.Emit(Event{ID: "msg_2", Type: "account.under_attack", Tenant: "acme"})
	eventually(t, "three deliveries", func() bool { return len(r.deliveries("")) == 3 })
	if got := r.ids("/sec"); len(got) != 1 || got["msg_2"] != 1 {
		t.Errorf("/sec got %v, want only msg_2", got)
	}
	if got := r.ids("/all"); len(got) != 2 {
		t.Errorf("/all got %v, want msg_1 and msg_2", got)
	}
	if got := r.ids("/globex"); len(got) != 0 {
		t.Errorf("another tenant's endpoint got %v", got)
	}
}

func TestCoalesce_TenThousandFailuresOnOneAccountMakeOneAlertPerWindow(t *testing.T) {
	r := newReceiver(t)
	clock := testclock.New(time.Time{})
	r.now = clock.Now
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("sec", "acme", "/hook")}, Now: clock.Now})
	run(t, d)
	attack := func() {
		for range 10000 {
			d.Emit(Event{Type: "account.under_attack", Tenant: "acme", Data: json.RawMessage(`{}`),
				Coalesce: "account.under_attack:5f1c0e", CoalesceWindow: 10 * time.Minute})
		}
	}
	attack()
	eventually(t, "one alert", func() bool { return len(r.deliveries("")) == 1 })
	eventually(t, "the queue empty", func() bool { return metric(t, reg, "tollgate_webhook_queue_depth") == 0 })
	if got := metric(t, reg, "tollgate_webhook_coalesced_total"); got != 9999 {
		t.Errorf("coalesced_total = %v, want 9999", got)
	}
	clock.Advance(9 * time.Minute)
	attack()
	clock.Advance(time.Minute + time.Second)
	attack()
	eventually(t, "a second alert after the window", func() bool { return len(r.deliveries("")) == 2 })
	eventually(t, "queued_total counts the second", func() bool { return metric(t, reg, "tollgate_webhook_queued_total") >= 2 })
	if got := metric(t, reg, "tollgate_webhook_queued_total"); got != 2 {
		t.Errorf("queued_total = %v, want 2 (one per window)", got)
	}
	if got := metric(t, reg, "tollgate_webhook_dropped_total"); got != 0 {
		t.Errorf("dropped_total = %v: coalesced events must not fill the buffer", got)
	}
}

// stuckQueue is a Queue whose Push never returns until the test ends.
type stuckQueue struct {
	Queue
	stuck chan struct{}
}

func (q stuckQueue) Push(ctx context.Context, d Delivery) error {
	select {
	case <-q.stuck:
	case <-ctx.Done():
	}
	return ctx.Err()
}

func TestEmit_FullBufferDropsInsteadOfBlockingTheVerdict(t *testing.T) {
	q := stuckQueue{Queue: NewMemoryQueue(10), stuck: make(chan struct{})}
	defer close(q.stuck)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{{Name: "ops", Tenant: "acme", URL: "http://127.0.0.1:1/", Secret: testSecret}}, Queue: q, Buffer: 4})
	run(t, d)
	done := make(chan struct{})
	go func() {
		for i := range 1000 {
			d.Emit(Event{Type: "login.new_device", Tenant: "acme", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Emit blocked behind a queue that never answers")
	}
	// At most the buffer and the one event the mover holds got through.
	if got := metric(t, reg, "tollgate_webhook_dropped_total", "reason", "buffer_full"); got < 1000-4-1 {
		t.Errorf("dropped_total{buffer_full} = %v, want ≥ %d", got, 1000-4-1)
	}
}

func TestEmit_BeforeRunBuffersThenDrops(t *testing.T) {
	r := newReceiver(t)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Buffer: 3})
	emitN(d, "acme", 10)
	if got := metric(t, reg, "tollgate_webhook_dropped_total", "reason", "buffer_full"); got != 7 {
		t.Errorf("dropped_total{buffer_full} = %v, want 7", got)
	}
	run(t, d)
	eventually(t, "the 3 buffered events delivered", func() bool { return len(r.ids("")) == 3 })
}

func TestAgeLimit_DeadLettersThenReplayDelivers(t *testing.T) {
	r := newReceiver(t)
	r.down.Store(true)
	clock := testclock.New(time.Time{})
	r.now = clock.Now
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Now: clock.Now,
		MaxAge: time.Hour, MinBackoff: time.Second, MaxBackoff: time.Minute})
	run(t, d)
	d.Emit(Event{ID: "msg_dead", Type: "sms.pumping_hold", Tenant: "acme"})
	eventually(t, "a first failed attempt", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") == 1 })
	clock.Advance(30 * time.Minute)
	eventually(t, "a second failed attempt", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") == 2 })
	clock.Advance(31 * time.Minute) // past the age limit
	eventually(t, "dead-lettered", func() bool { return metric(t, reg, "tollgate_webhook_dead_lettered_total") == 1 })

	dead, err := d.DeadLetters(context.Background(), "acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].ID != "msg_dead" || dead[0].Endpoint != "ops" || dead[0].Attempts != 3 || dead[0].LastError != "HTTP 503" || !dead[0].DeadAt.Equal(clock.Now()) {
		t.Fatalf("DeadLetters = %+v, want msg_dead to ops after 3 attempts, HTTP 503, dead now", dead)
	}
	if other, _ := d.DeadLetters(context.Background(), "globex", 10); len(other) != 0 {
		t.Errorf("another tenant's DeadLetters = %+v", other)
	}
	if err := d.Replay(context.Background(), "acme", "msg_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Replay of an unknown id = %v, want ErrNotFound", err)
	}
	if err := d.Replay(context.Background(), "globex", "msg_dead"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Replay under another tenant = %v, want ErrNotFound", err)
	}
	r.down.Store(false)
	if err := d.Replay(context.Background(), "acme", "msg_dead"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replayed event delivered", func() bool { return r.ids("")["msg_dead"] == 1 })
	if dead, _ := d.DeadLetters(context.Background(), "acme", 10); len(dead) != 0 {
		t.Errorf("DeadLetters after Replay = %+v", dead)
	}
}

func TestRateLimit_EndpointGetsNoMoreThanItsBucketUntilTimeMoves(t *testing.T) {
	r := newReceiver(t)
	clock := testclock.New(time.Time{})
	r.now = clock.Now
	limited := r.endpoint("slow", "acme", "/slow")
	limited.RatePerSecond, limited.Burst = 2, 3
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{limited, r.endpoint("probe", "globex", "/probe")}, Now: clock.Now})
	run(t, d)
	emitN(d, "acme", 10)
	eventually(t, "the burst delivered", func() bool { return len(r.deliveries("/slow")) == 3 })
	// A delivery to another endpoint, queued after, shows the loop went
	// round the limited lane again while the clock stood still.
	probe := func(id string) {
		d.Emit(Event{ID: id, Type: "probe", Tenant: "globex"})
		eventually(t, "the probe delivered", func() bool { return r.ids("/probe")[id] == 1 })
	}
	probe("msg_p1")
	probe("msg_p2")
	if got := len(r.deliveries("/slow")); got != 3 {
		t.Fatalf("with the clock still, %d deliveries, want the burst of 3", got)
	}
	clock.Advance(time.Second) // 2 more tokens
	eventually(t, "two more", func() bool { return len(r.deliveries("/slow")) == 5 })
	probe("msg_p3")
	probe("msg_p4")
	if got := len(r.deliveries("/slow")); got != 5 {
		t.Fatalf("one second later, %d deliveries, want 3 + 2", got)
	}
	clock.Advance(time.Hour) // the bucket refills to its burst, no further
	eventually(t, "three more", func() bool { return len(r.deliveries("/slow")) == 8 })
	probe("msg_p5")
	probe("msg_p6")
	if got := len(r.deliveries("/slow")); got != 8 {
		t.Fatalf("after an hour idle, %d deliveries, want 5 + the burst of 3", got)
	}
}

func TestNew_RefusesEndpointsThatCannotBeSignedOrReached(t *testing.T) {
	good := Endpoint{Name: "ops", Tenant: "acme", URL: "https://hooks.example/x", Secret: testSecret}
	tests := []struct {
		name string
		edit func(*Endpoint)
		want string
	}{
		{"no name", func(e *Endpoint) { e.Name = "" }, "Name is empty"},
		{"no tenant", func(e *Endpoint) { e.Tenant = "" }, "Tenant is empty"},
		{"ftp", func(e *Endpoint) { e.URL = "ftp://hooks.example/x" }, "http or https"},
		{"relative", func(e *Endpoint) { e.URL = "/x" }, "http or https"},
		{"credentials in the URL", func(e *Endpoint) { e.URL = "https://u:p@hooks.example/x" }, "user name or password"},
		{"secret not base64", func(e *Endpoint) { e.Secret = "whsec_not base64!" }, "standard base64"},
		{"secret too short", func(e *Endpoint) { e.Secret = "whsec_c2hvcnQ=" }, "at least 16"},
		{"negative rate", func(e *Endpoint) { e.RatePerSecond = -1 }, "RatePerSecond"},
		{"negative burst", func(e *Endpoint) { e.Burst = -1 }, "Burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good
			tt.edit(&e)
			_, err := New(Config{Endpoints: []Endpoint{e}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error about %q", err, tt.want)
			}
		})
	}
	if _, err := New(Config{Endpoints: []Endpoint{good, good}}); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("two endpoints named alike: New = %v", err)
	}
	if _, err := New(Config{Endpoints: []Endpoint{good}}); err != nil {
		t.Errorf("a good endpoint: New = %v", err)
	}
}

func TestEmit_AnUntypedEventOrDataThatIsNotAnObjectIsDroppedNotSent(t *testing.T) {
	r := newReceiver(t)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}})
	run(t, d)
	d.Emit(Event{ID: "msg_bad", Type: "x", Tenant: "acme", Data: json.RawMessage(`{"a":`)})
	d.Emit(Event{ID: "msg_arr", Type: "x", Tenant: "acme", Data: json.RawMessage(`[1]`)})
	d.Emit(Event{ID: "msg_untyped", Tenant: "acme"})
	d.Emit(Event{ID: "msg_ok", Type: "x", Tenant: "acme"})
	eventually(t, "the good event delivered", func() bool { return r.ids("")["msg_ok"] == 1 })
	eventually(t, "three dropped", func() bool { return metric(t, reg, "tollgate_webhook_dropped_total", "reason", "invalid") == 3 })
	if got := r.ids(""); len(got) != 1 {
		t.Errorf("delivered %v, want only msg_ok", got)
	}
}

func TestMemory_ADeliveryCutOffByStopIsSentAfterRestart(t *testing.T) {
	r := newReceiver(t)
	r.hold.Store(true)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}})
	stop := run(t, d)
	d.Emit(Event{ID: "msg_cut", Type: "x", Tenant: "acme"})
	select {
	case <-r.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver never got the request")
	}
	stop()
	r.hold.Store(false)
	if got := metric(t, reg, "tollgate_webhook_retried_total") + metric(t, reg, "tollgate_webhook_dead_lettered_total"); got != 0 {
		t.Errorf("a delivery cut off by the stop counted as a failure (%v)", got)
	}
	run(t, d)
	eventually(t, "delivered after the restart", func() bool { return r.ids("")["msg_cut"] == 1 })
}
