package webhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// eachQueue runs f on a memory queue (capacity 0: the default) and on a
// Redis queue on a real redis-server, as subtests.
func eachQueue(t *testing.T, f func(t *testing.T, q Queue)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) { f(t, NewMemoryQueue(0)) })
	t.Run("redis", func(t *testing.T) { f(t, redisQueue(t, redisClient(t), "a", time.Minute)) })
}

// defaultRate is an endpoint of r at the default rate (10/s, burst 20).
func defaultRate(r *receiver, name, tenant, path string) Endpoint {
	ep := r.endpoint(name, tenant, path)
	ep.RatePerSecond, ep.Burst = 0, 0
	return ep
}

// Attack: a flood of sign-in notices (10,000 accounts the attacker owns,
// each told of a new device) fills the lane of the endpoint that also
// takes the security alerts; then a victim's account.under_attack comes.
// At the default rate (10/s) the lane holds some 15 minutes of notices.
// The alert is leased ahead of every one of them: with the clock still,
// the burst of 20 notices goes out, and the next token, a tenth of a
// second later, is spent on the alert.
func TestLanes_AnAlertIsLeasedAheadOfTenThousandQueuedNotices(t *testing.T) {
	eachQueue(t, func(t *testing.T, q Queue) {
		clock := testclock.New(time.Time{})
		r := newReceiver(t)
		r.now = clock.Now
		d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{defaultRate(r, "sec", "acme", "/hook")}, Queue: q, Now: clock.Now})
		run(t, d)
		const n = 10_000
		for i := range n {
			d.Emit(Event{ID: fmt.Sprintf("msg_n%d", i), Type: "login.new_device", Tenant: "acme", Class: Notice})
		}
		settled := func(want float64) func() bool {
			return func() bool {
				return metric(t, reg, "tollgate_webhook_queued_total")+metric(t, reg, "tollgate_webhook_dropped_total") == want
			}
		}
		eventually(t, "every notice queued or dropped", settled(n))
		eventually(t, "the burst of 20 delivered", func() bool { return len(r.deliveries("")) == 20 })
		dropped := metric(t, reg, "tollgate_webhook_dropped_total")
		t.Logf("%d notices queued, %v refused as the queue neared its bound", n-int(dropped), dropped)

		d.Emit(Event{ID: "msg_alert", Type: "account.under_attack", Tenant: "acme", Class: Alert})
		eventually(t, "the alert queued", settled(n+1))
		if got := metric(t, reg, "tollgate_webhook_dropped_total"); got != dropped {
			t.Fatalf("the alert was dropped (%v drops, %v before it)", got, dropped)
		}
		clock.Advance(100 * time.Millisecond) // one token
		eventually(t, "a 21st delivery", func() bool { return len(r.deliveries("")) == 21 })
		if got := r.deliveries("")[20].ID; got != "msg_alert" {
			t.Fatalf("the first delivery after the alert was queued is %s, want the alert ahead of %d notices", got, n-20)
		}
		clock.Advance(100 * time.Millisecond)
		eventually(t, "a notice again", func() bool { return len(r.deliveries("")) == 22 })
		r.checkSignatures()
	})
}

// A queue near its bound refuses notices and still takes alerts: a flood
// of notices cannot crowd out the alert that follows it.
func TestLanes_AFullQueueRefusesNoticesBeforeAlerts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		queue func(t *testing.T) Queue
	}{
		{"memory", func(t *testing.T) Queue { return NewMemoryQueue(100) }},
		{"redis", func(t *testing.T) Queue {
			q, err := NewRedisQueue(redisClient(t), RedisQueueConfig{Secret: queueSecret, MaxLen: 100})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.queue(t)
			ctx := context.Background()
			push := func(id string, c Class) error {
				now := time.Now()
				return q.Push(ctx, Delivery{Event: Event{ID: id, Type: "x", Tenant: "acme", Time: now, Data: []byte(`{}`), Class: c}, Endpoint: "sec", Since: now})
			}
			accepted := 0
			for i := range 200 {
				if err := push(fmt.Sprint("msg_n", i), Notice); err == nil {
					accepted++
				} else if !errors.Is(err, ErrQueueFull) {
					t.Fatal(err)
				}
			}
			if accepted != 90 {
				t.Errorf("%d of 200 notices accepted by a queue bounded at 100, want 90: the last tenth is the alerts'", accepted)
			}
			for i := range 10 {
				if err := push(fmt.Sprint("msg_a", i), Alert); err != nil {
					t.Fatalf("alert %d refused by a queue full of notices: %v", i, err)
				}
			}
			if err := push("msg_a10", Alert); !errors.Is(err, ErrQueueFull) {
				t.Errorf("an alert past the bound: %v, want ErrQueueFull", err)
			}
			if n, err := q.Depth(ctx, []Lane{{"acme", "sec"}}); err != nil || n != 100 {
				t.Errorf("Depth = %d, %v; want 100", n, err)
			}
		})
	}
}

// A flood of notices that fills Emit's buffer (a queue that is slow, or
// not yet started) leaves room for an alert, and the alert goes into the
// queue, and out, first.
func TestEmit_ANoticeFloodInTheBufferDropsNoAlert(t *testing.T) {
	r := newReceiver(t)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("sec", "acme", "/hook")}, Buffer: 5, Workers: 1})
	emitN(d, "acme", 10)
	d.Emit(Event{ID: "msg_alert", Type: "account.under_attack", Tenant: "acme", Class: Alert})
	if got := metric(t, reg, "tollgate_webhook_dropped_total", "reason", "buffer_full"); got != 5 {
		t.Errorf("dropped_total{buffer_full} = %v, want the 5 notices past the buffer, not the alert", got)
	}
	run(t, d)
	eventually(t, "the alert and 5 notices delivered", func() bool { return len(r.deliveries("")) == 6 })
	if got := r.deliveries("")[0].ID; got != "msg_alert" {
		t.Errorf("first delivery %s, want the alert", got)
	}
}

// Attack: an administrator of one tenant lists the dead letters of
// another, or replays one of its events by a webhook-id they learnt (a
// receiver's log, a guess). Neither listing nor replay crosses tenants,
// on either queue, and a dead store.degraded (kept in this process) is
// its tenant's too.
func TestDeadLetters_ATenantCannotListOrReplayAnothersEntries(t *testing.T) {
	eachQueue(t, func(t *testing.T, q Queue) {
		r := newReceiver(t)
		r.down.Store(true)
		d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/acme"), r.endpoint("ops2", "globex", "/globex")},
			Queue: q, MaxAge: time.Millisecond})
		run(t, d)
		d.Emit(Event{ID: "msg_acme", Type: "account.under_attack", Tenant: "acme", Class: Alert})
		d.Emit(Event{ID: "msg_acme_store", Type: "store.degraded", Tenant: "acme", Class: Local})
		d.Emit(Event{ID: "msg_globex", Type: "login.new_device", Tenant: "globex"})
		eventually(t, "three dead letters", func() bool { return metric(t, reg, "tollgate_webhook_dead_lettered_total") == 3 })
		ctx := context.Background()
		ids := func(tenant string) []string {
			t.Helper()
			l, err := d.DeadLetters(ctx, tenant, 100)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, x := range l {
				if x.Tenant != tenant {
					t.Errorf("tenant %s's listing holds %+v", tenant, x)
				}
				out = append(out, x.ID)
			}
			slices.Sort(out)
			return out
		}
		if got := ids("globex"); !slices.Equal(got, []string{"msg_globex"}) {
			t.Errorf("globex lists %v, want only its own msg_globex", got)
		}
		if got := ids("acme"); !slices.Equal(got, []string{"msg_acme", "msg_acme_store"}) {
			t.Errorf("acme lists %v, want msg_acme and msg_acme_store", got)
		}
		r.down.Store(false)
		for _, id := range []string{"msg_acme", "msg_acme_store"} {
			if err := d.Replay(ctx, "globex", id); !errors.Is(err, ErrNotFound) {
				t.Errorf("globex replaying acme's %s: %v, want ErrNotFound", id, err)
			}
		}
		if err := d.Replay(ctx, "acme", "msg_globex"); !errors.Is(err, ErrNotFound) {
			t.Errorf("acme replaying globex's msg_globex: %v, want ErrNotFound", err)
		}
		if got := ids("acme"); len(got) != 2 {
			t.Errorf("after another tenant's replays acme lists %v, want its 2 dead letters still there", got)
		}
		if n := len(r.deliveries("")); n != 0 {
			t.Errorf("%d deliveries after replays refused", n)
		}
		if err := d.Replay(ctx, "acme", "msg_acme_store"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "acme's own replay delivered to acme", func() bool { return r.ids("/acme")["msg_acme_store"] == 1 })
		if got := r.ids("/globex"); len(got) != 0 {
			t.Errorf("globex's endpoint got %v", got)
		}
	})
}

// An alert whose receiver fails is retried as an alert: when its retry
// and the notices' are due together, the alert goes first, and once
// delivered nothing of it is left in the queue (on Redis: acknowledged in
// the alerts' stream its lease names).
func TestLanes_AFailedAlertIsRetriedAheadOfNotices(t *testing.T) {
	eachQueue(t, func(t *testing.T, q Queue) {
		clock := testclock.New(time.Time{})
		r := newReceiver(t)
		r.now = clock.Now
		r.down.Store(true)
		d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("sec", "acme", "/hook")}, Queue: q, Workers: 1, Now: clock.Now,
			MinBackoff: time.Second, MaxBackoff: time.Second})
		run(t, d)
		d.Emit(Event{ID: "msg_alert", Type: "account.under_attack", Tenant: "acme", Class: Alert})
		eventually(t, "the alert tried and refused", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") == 1 })
		emitN(d, "acme", 20)
		eventually(t, "the notices tried and refused", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") == 21 })
		r.down.Store(false)
		clock.Advance(time.Second) // every retry due
		eventually(t, "all delivered", func() bool { return len(r.ids("")) == 21 })
		if first := r.deliveries("")[0].ID; first != "msg_alert" {
			t.Errorf("first delivery once the retries were due: %s, want the alert", first)
		}
		eventually(t, "the queue empty", func() bool {
			n, err := q.Depth(context.Background(), []Lane{{"acme", "sec"}})
			return err == nil && n == 0
		})
	})
}

// Deliveries queued in Redis before alerts had a stream of their own (in
// the lane's one stream, whatever their type) are still delivered and
// acknowledged after the upgrade.
func TestRedis_EntriesQueuedBeforeTheAlertStreamAreDelivered(t *testing.T) {
	c := redisClient(t)
	q := redisQueue(t, c, "a", time.Minute)
	rq := q.(*RedisQueue)
	ctx := context.Background()
	now := time.Now()
	old := Delivery{Event: Event{ID: "msg_old", Type: "account.under_attack", Tenant: "acme", Time: now, Data: []byte(`{}`)}, Endpoint: "sec", Since: now}
	blob, err := rq.seal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: rq.stream(Lane{"acme", "sec"}), Values: []string{redisField, blob}}).Err(); err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t)
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("sec", "acme", "/hook")}, Queue: q})
	run(t, d)
	eventually(t, "the old entry delivered", func() bool { return r.ids("")["msg_old"] == 1 })
	eventually(t, "and acknowledged", func() bool {
		n, err := q.Depth(ctx, []Lane{{"acme", "sec"}})
		return err == nil && n == 0
	})
}
