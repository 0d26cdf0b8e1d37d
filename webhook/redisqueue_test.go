package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

var queueSecret = []byte("0123456789abcdef0123456789abcdef")

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	srv := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func redisQueue(t *testing.T, c redis.UniversalClient, consumer string, claimAfter time.Duration) Queue {
	t.Helper()
	q, err := NewRedisQueue(c, RedisQueueConfig{Secret: queueSecret, Consumer: consumer, ClaimAfter: claimAfter})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestRedis_ReceiverDownThenBack_NoEventLostAcrossTwoInstances(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	r.down.Store(true)
	ep := r.endpoint("ops", "acme", "/hook")
	a, regA := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "a", time.Minute)})
	b, regB := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "b", time.Minute)})
	run(t, a)
	run(t, b)
	ids := emitN(a, "acme", 30)
	for i := range 30 {
		id := fmt.Sprintf("msg_b_%d", i)
		ids[id] = true
		b.Emit(Event{ID: id, Type: "login.new_device", Tenant: "acme", Data: json.RawMessage(`{}`)})
	}
	eventually(t, "every event tried and refused at least once", func() bool {
		return metric(t, regA, "tollgate_webhook_retried_total")+metric(t, regB, "tollgate_webhook_retried_total") >= 60
	})
	r.down.Store(false)
	checkAllDelivered(t, r, "/hook", ids)
	eventually(t, "the streams and retries empty", func() bool {
		n, err := a.q.Depth(context.Background(), []Lane{{"acme", "ops"}})
		return err == nil && n == 0
	})
}

// diesMidDelivery runs an instance "a" on c for ep that emits an event id
// and stops while r holds its POST: the delivery stays leased by a.
func diesMidDelivery(t *testing.T, c redis.UniversalClient, r *receiver, ep Endpoint, id string) {
	t.Helper()
	r.hold.Store(true)
	a, _ := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "a", 300*time.Millisecond)})
	stopA := run(t, a)
	a.Emit(Event{ID: id, Type: "login.new_device", Tenant: "acme"})
	select {
	case <-r.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver never got the request")
	}
	stopA() // the instance dies while the receiver holds the request
	r.hold.Store(false)
}

func TestRedis_InstanceStoppedMidDelivery_AnotherInstanceDeliversIt(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	ep := r.endpoint("ops", "acme", "/hook")
	diesMidDelivery(t, c, r, ep, "msg_crash")
	stream := "tollgate:webhook:{acme}:s:ops"
	pending, err := c.XPending(context.Background(), stream, redisGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pending.Count != 1 || pending.Consumers["a"] != 1 {
		t.Fatalf("after the stop, pending = %+v, want the one entry unacknowledged, leased by a", pending)
	}
	if n := len(r.deliveries("")); n != 0 {
		t.Fatalf("%d deliveries accepted before the second instance started", n)
	}

	b, _ := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "b", 300*time.Millisecond)})
	run(t, b)
	eventually(t, "the second instance delivers it", func() bool { return r.ids("")["msg_crash"] >= 1 })
	eventually(t, "acknowledged", func() bool {
		p, err := c.XPending(context.Background(), stream, redisGroup).Result()
		return err == nil && p.Count == 0 && c.XLen(context.Background(), stream).Val() == 0
	})
	if got := r.ids(""); len(got) != 1 {
		t.Errorf("delivered %v, want only msg_crash", got)
	}
}

// An attempt cut off by its instance's death is an attempt: the instance
// that claims the delivery counts it (the entry's delivery count in the
// pending list), so a delivery's attempts, its backoff and its dead letter
// say how often it was really sent. Here the instance dies while the
// receiver holds the POST, the next one's POST fails past the age limit,
// and the dead letter says 2 attempts, not 1.
func TestRedis_AnAttemptCutOffByACrashIsCounted(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	ep := r.endpoint("ops", "acme", "/hook")
	diesMidDelivery(t, c, r, ep, "msg_cut")
	r.down.Store(true)
	b, _ := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "b", 300*time.Millisecond), MaxAge: time.Millisecond})
	run(t, b)
	var dead []DeadLetter
	eventually(t, "the delivery is dead-lettered", func() bool {
		dead, _ = b.DeadLetters(context.Background(), "acme", 10)
		return len(dead) == 1
	})
	if dead[0].Attempts != 2 {
		t.Errorf("the dead letter says %d attempts, want 2: the one cut off by the crash and the failed one", dead[0].Attempts)
	}
}

// dumpRedis reads every key and every value, stream entries included.
func dumpRedis(t *testing.T, c *redis.Client) (dump string, types map[string]int) {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	types = map[string]int{}
	iter := c.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		b.WriteString(k + "\n")
		typ := c.Type(ctx, k).Val()
		switch typ {
		case "string":
			b.WriteString(c.Get(ctx, k).Val())
			types[typ]++
		case "stream":
			for _, m := range c.XRange(ctx, k, "-", "+").Val() {
				fmt.Fprint(&b, m.ID, m.Values)
				types[typ]++
			}
		case "zset":
			for _, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
				fmt.Fprint(&b, z.Member, z.Score)
				types[typ]++
			}
		case "hash":
			fmt.Fprint(&b, c.HGetAll(ctx, k).Val())
			types[typ]++
		case "list":
			fmt.Fprint(&b, c.LRange(ctx, k, 0, -1).Val())
			types[typ]++
		case "set":
			fmt.Fprint(&b, c.SMembers(ctx, k).Val())
			types[typ]++
		default:
			t.Errorf("key %s has type %s, which the dump does not read", k, typ)
		}
		b.WriteString("\n")
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String(), types
}

func TestRedis_DumpAndLogsRevealNoIdentifierFromEventData(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	r.down.Store(true)
	clock := testclock.New(time.Time{})
	r.now = clock.Now
	q := redisQueue(t, c, "a", time.Minute)
	logs := &syncBuffer{}
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: q, Now: clock.Now,
		MaxAge: time.Hour, MinBackoff: time.Second, MaxBackoff: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	stop := run(t, d)
	raw := []string{"alice@example.com", "+14155550123", "203.0.113.77", "alice"}
	data := json.RawMessage(`{"account":"alice@example.com","destination":"+14155550123","ip":"203.0.113.77"}`)

	d.Emit(Event{ID: "msg_1", Type: "login.new_device", Tenant: "acme", Data: data})
	eventually(t, "a failed attempt", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") == 1 })
	clock.Advance(2 * time.Hour)
	eventually(t, "dead-lettered", func() bool { return metric(t, reg, "tollgate_webhook_dead_lettered_total") == 1 })
	d.Emit(Event{ID: "msg_2", Type: "account.under_attack", Tenant: "acme", Data: data, Coalesce: "k:9c2e51", CoalesceWindow: time.Hour})
	eventually(t, "msg_2 waiting to be retried", func() bool { return metric(t, reg, "tollgate_webhook_retried_total") == 2 })
	stop()
	if err := q.Push(context.Background(), Delivery{Event: Event{ID: "msg_3", Type: "x", Tenant: "acme", Time: clock.Now(), Data: data}, Endpoint: "ops", Since: clock.Now()}); err != nil {
		t.Fatal(err)
	}

	dump, types := dumpRedis(t, c)
	if types["stream"] < 1 || types["zset"] < 2 || types["string"] < 1 {
		t.Fatalf("the dump holds %v; the test needs a stream entry, a retry, a dead letter and a coalescing key", types)
	}
	for _, s := range raw {
		if strings.Contains(dump, s) {
			t.Errorf("the Redis dump holds %q", s)
		}
		if strings.Contains(logs.String(), s) {
			t.Errorf("the logs hold %q", s)
		}
	}
	if !strings.Contains(logs.String(), "dead-lettered") {
		t.Errorf("the logs do not show the dead letter, so they were not captured: %s", logs.String())
	}

	// The encrypted dead letter is still listed and replayed.
	dead, err := d.DeadLetters(context.Background(), "acme", 10)
	if err != nil || len(dead) != 1 || dead[0].ID != "msg_1" || dead[0].LastError != "HTTP 503" {
		t.Fatalf("DeadLetters = %+v, %v", dead, err)
	}
	r.down.Store(false)
	if err := d.Replay(context.Background(), "acme", "msg_1"); err != nil {
		t.Fatal(err)
	}
	d2, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: q, Now: clock.Now, MinBackoff: time.Second, MaxBackoff: time.Second})
	run(t, d2)
	clock.Advance(time.Minute) // msg_2's retry is due
	eventually(t, "all three delivered", func() bool { return len(r.ids("")) == 3 })
	for _, g := range r.deliveries("") {
		if !strings.Contains(g.Raw, "alice@example.com") {
			t.Errorf("delivery %s lost its data: %s", g.ID, g.Raw)
		}
	}
}

func TestRedis_CoalescingHoldsAcrossInstances(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	ep := r.endpoint("sec", "acme", "/hook")
	a, regA := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "a", time.Minute)})
	b, regB := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: redisQueue(t, c, "b", time.Minute)})
	run(t, a)
	run(t, b)
	const window = 3 * time.Second
	attack := func() {
		for i := range 10000 {
			d := a
			if i%2 == 1 {
				d = b
			}
			d.Emit(Event{Type: "account.under_attack", Tenant: "acme", Coalesce: "account.under_attack:5f1c0e", CoalesceWindow: window})
		}
	}
	attack()
	eventually(t, "one alert", func() bool { return len(r.deliveries("")) == 1 })
	eventually(t, "9999 coalesced", func() bool {
		return metric(t, regA, "tollgate_webhook_coalesced_total")+metric(t, regB, "tollgate_webhook_coalesced_total") == 9999
	})
	if n := len(r.deliveries("")); n != 1 {
		t.Fatalf("%d alerts in one window from two instances, want 1", n)
	}
	// Redis's own clock ends the window: its key (SET NX PX) expires.
	eventually(t, "the coalescing window's key expired", func() bool {
		keys, err := c.Keys(context.Background(), "*:c:*").Result()
		return err == nil && len(keys) == 0
	})
	attack()
	eventually(t, "a second alert after the window", func() bool { return len(r.deliveries("")) == 2 })
}

func TestRedisCluster_TwoTenantsInDifferentSlotsAreBothDelivered(t *testing.T) {
	cl := redistest.Cluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	q, err := NewRedisQueue(c, RedisQueueConfig{Secret: queueSecret, Consumer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rq := q.(*RedisQueue)
	s1, s2 := c.ClusterKeySlot(ctx, rq.stream(Lane{"acme", "ops"})).Val(), c.ClusterKeySlot(ctx, rq.stream(Lane{"hooli", "ops2"})).Val()
	if s1/5461 == s2/5461 {
		t.Fatalf("the tenants' slots %d and %d are on one master; pick other tenants", s1, s2)
	}
	if d := c.ClusterKeySlot(ctx, rq.dead("acme")).Val(); d != s1 {
		t.Fatalf("acme's dead letters are in slot %d, its stream in %d: a tenant's keys must share a slot", d, s1)
	}
	r := newReceiver(t)
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/acme"), r.endpoint("ops2", "hooli", "/hooli")}, Queue: q})
	run(t, d)
	checkAll := map[string]map[string]bool{"/acme": emitN(d, "acme", 20), "/hooli": emitN(d, "hooli", 20)}
	for path, ids := range checkAll {
		checkAllDelivered(t, r, path, ids)
	}
}

func TestRedis_InstanceWithAnotherSecretNeitherReadsNorDestroysEntries(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	ep := r.endpoint("ops", "acme", "/hook")
	good := redisQueue(t, c, "good", 200*time.Millisecond)
	wrong, err := NewRedisQueue(c, RedisQueueConfig{Secret: []byte("another secret, 32 bytes long..."), Consumer: "wrong", ClaimAfter: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w, regW := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: wrong})
	stopW := run(t, w)
	if err := good.Push(context.Background(), Delivery{Event: Event{ID: "msg_k", Type: "x", Tenant: "acme", Time: time.Now(), Data: json.RawMessage(`{}`)}, Endpoint: "ops", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the wrong instance counts the entry it cannot read", func() bool { return metric(t, regW, "tollgate_webhook_undecryptable_total") >= 1 })
	stopW()
	g, _ := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: good})
	run(t, g)
	eventually(t, "an instance with the right secret delivers it", func() bool { return r.ids("")["msg_k"] == 1 })
}

func TestNewRedisQueue_RefusesAShortSecret(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := NewRedisQueue(c, RedisQueueConfig{Secret: []byte("short")}); err == nil {
		t.Error("NewRedisQueue took a 5-byte secret")
	}
	if _, err := NewRedisQueue(c, RedisQueueConfig{Secret: queueSecret, Prefix: "x{y}"}); err == nil {
		t.Error("NewRedisQueue took a prefix with a hash tag")
	}
}

// FuzzOpenQueueEntry feeds arbitrary Redis values to the entry decoder: a
// value someone with write access to Redis planted must be refused, never
// panic, never decode.
func FuzzOpenQueueEntry(f *testing.F) {
	q, err := NewRedisQueue(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), RedisQueueConfig{Secret: queueSecret})
	if err != nil {
		f.Fatal(err)
	}
	rq := q.(*RedisQueue)
	good, err := rq.seal(Delivery{Event: Event{ID: "msg_1", Tenant: "acme", Data: json.RawMessage(`{}`)}, Endpoint: "ops"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "acme", "ops")
	f.Add(good, "acme", "other") // another lane's entry
	f.Add("\x01", "acme", "ops")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, blob, tenant, endpoint string) {
		d, err := rq.open(Lane{Tenant: tenant, Endpoint: endpoint}, blob)
		if err == nil && (tenant != "acme" || endpoint != "ops" || d.Event.ID != "msg_1") {
			t.Fatalf("open accepted a value it did not seal for lane %q/%q", tenant, endpoint)
		}
	})
}

// countingQueue counts the Next calls of one lane.
type countingQueue struct {
	Queue
	lane  Lane
	nexts atomic.Int64
}

func (q *countingQueue) Next(ctx context.Context, l Lane, now time.Time, max int, r Rate) ([]Delivery, error) {
	ds, err := q.Queue.Next(ctx, l, now, max, r)
	if l == q.lane {
		q.nexts.Add(1)
	}
	return ds, err
}

// waitRounds waits until every queue has been asked for the lane n more times.
func waitRounds(t *testing.T, n int64, qs ...*countingQueue) {
	t.Helper()
	for _, q := range qs {
		target := q.nexts.Load() + n
		eventually(t, "the dispatcher polls the lane again", func() bool { return q.nexts.Load() >= target })
	}
}

func TestRedis_RateLimitIsSharedByAllInstances(t *testing.T) {
	c := redisClient(t)
	r := newReceiver(t)
	clock := testclock.New(time.Time{})
	r.now = clock.Now
	limited := r.endpoint("slow", "acme", "/slow")
	limited.RatePerSecond, limited.Burst = 2, 3
	lane := Lane{"acme", "slow"}
	qa := &countingQueue{Queue: redisQueue(t, c, "a", time.Minute), lane: lane}
	qb := &countingQueue{Queue: redisQueue(t, c, "b", time.Minute), lane: lane}
	a, _ := newDispatcher(t, Config{Endpoints: []Endpoint{limited}, Queue: qa, Now: clock.Now})
	b, _ := newDispatcher(t, Config{Endpoints: []Endpoint{limited}, Queue: qb, Now: clock.Now})
	run(t, a)
	run(t, b)
	emitN(a, "acme", 5)
	emitN(b, "acme", 5) // the same ids: b's are duplicates to deliver as well
	for i := range 5 {
		b.Emit(Event{ID: fmt.Sprintf("msg_b%d", i), Type: "x", Tenant: "acme"})
	}
	eventually(t, "the burst delivered", func() bool { return len(r.deliveries("/slow")) == 3 })
	waitRounds(t, 3, qa, qb)
	if got := len(r.deliveries("/slow")); got != 3 {
		t.Fatalf("two instances, the clock still: %d deliveries, want the one burst of 3", got)
	}
	clock.Advance(time.Second)
	eventually(t, "two more", func() bool { return len(r.deliveries("/slow")) == 5 })
	waitRounds(t, 3, qa, qb)
	if got := len(r.deliveries("/slow")); got != 5 {
		t.Fatalf("one second later: %d deliveries, want 3 + 2", got)
	}
}

func TestRedis_AnOutageHoldsEventsUntilRedisReturns(t *testing.T) {
	srv := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	r := newReceiver(t)
	logs := &syncBuffer{}
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: redisQueue(t, c, "a", time.Minute),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	run(t, d)
	d.Emit(Event{ID: "msg_before", Type: "x", Tenant: "acme"})
	eventually(t, "the first event delivered", func() bool { return r.ids("")["msg_before"] == 1 })

	srv.Stop() // Redis down, then back empty: its consumer group is gone too
	ids := emitN(d, "acme", 10)
	eventually(t, "the push refused while Redis is down", func() bool { return strings.Contains(logs.String(), `op=push`) })
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	ids["msg_before"] = true
	checkAllDelivered(t, r, "", ids)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// An endpoint taken out of the config leaves its lane in Redis: the
// deliveries queued for it, its retries and its bucket, which no instance
// reads again. Once the lane has been idle for the age limit (every
// delivery in it past the limit), an instance without the endpoint deletes
// it and counts its deliveries as dropped (endpoint_removed). It keeps a
// configured endpoint's lane however old, the same endpoint name under
// another tenant is not configured, and a removed lane still in use (a
// rolling config change) is not idle. On one node and on a Cluster.
func TestRedis_ARemovedEndpointsQueueIsDeletedOnceIdleForTheAgeLimit(t *testing.T) {
	for _, tt := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"single", func(t *testing.T) redis.UniversalClient { return redisClient(t) }},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.Cluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client(t)
			ctx := context.Background()
			q := redisQueue(t, c, "a", time.Minute)
			rq := q.(*RedisQueue)
			// an idle lane: one entry and one retry from 1970, and its bucket
			old := func(l Lane) {
				if err := c.XAdd(ctx, &redis.XAddArgs{Stream: rq.stream(l), ID: "1000-0", Values: []string{"d", "x"}}).Err(); err != nil {
					t.Fatal(err)
				}
				c.ZAdd(ctx, rq.retries(l), redis.Z{Score: 2000, Member: "y"})
				c.HSet(ctx, rq.bucket(l), "t", "1", "ts", "2000")
			}
			configured, removed, otherTenant, busy := Lane{"acme", "ops"}, Lane{"acme", "gone"}, Lane{"hooli", "ops"}, Lane{"acme", "busy"}
			old(configured)
			old(removed)
			old(otherTenant)
			for range 3 {
				if err := q.Push(ctx, Delivery{Event: Event{ID: "msg_b", Type: "x", Tenant: "acme", Time: time.Now(), Data: json.RawMessage(`{}`)}, Endpoint: "busy", Since: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			r := newReceiver(t)
			d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: q, MaxAge: time.Hour})
			d.sweepRemoved(ctx)
			exists := func(l Lane) bool {
				return c.Exists(ctx, rq.stream(l)).Val()+c.Exists(ctx, rq.retries(l)).Val()+c.Exists(ctx, rq.bucket(l)).Val() > 0
			}
			for _, l := range []Lane{removed, otherTenant} {
				if exists(l) {
					t.Errorf("lane %v: still in Redis after idling past the age limit without an endpoint", l)
				}
			}
			for _, l := range []Lane{configured, busy} {
				if !exists(l) {
					t.Errorf("lane %v: deleted, but it is configured or was used just now", l)
				}
			}
			if n := c.XLen(ctx, rq.stream(busy)).Val(); n != 3 {
				t.Errorf("the busy lane holds %d deliveries, want its 3", n)
			}
			if got := metric(t, reg, "tollgate_webhook_dropped_total", "reason", "endpoint_removed"); got != 4 {
				t.Errorf("dropped (endpoint_removed): %v, want 4 (an entry and a retry of each deleted lane)", got)
			}
			// One walk of the key space per sweep interval for the whole
			// fleet: another instance sweeping just after skips, until the
			// sweep key expires.
			late := Lane{"acme", "late"}
			old(late)
			other, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: redisQueue(t, c, "c", time.Minute), MaxAge: time.Hour})
			other.sweepRemoved(ctx)
			if !exists(late) {
				t.Error("a second instance walked the key space within the sweep interval")
			}
			c.Del(ctx, rq.cfg.Prefix+"sweep")
			other.sweepRemoved(ctx)
			if exists(late) {
				t.Error("once the sweep key expired, the next sweep left an idle removed lane")
			}
			// An instance that had the deleted lane's consumer group in
			// hand before the sweep gets its next delivery there through.
			q2 := redisQueue(t, c, "b", time.Minute)
			push := func() {
				if err := q2.Push(ctx, Delivery{Event: Event{ID: "msg_n", Type: "x", Tenant: "acme", Time: time.Now(), Data: json.RawMessage(`{}`)}, Endpoint: "gone", Since: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			q2.(*RedisQueue).groups.Store(rq.stream(removed), struct{}{})
			push()
			var got []Delivery
			for range 2 { // the first may meet NOGROUP and make the group again
				if ds, err := q2.Next(ctx, removed, time.Now(), 10, Rate{}); err == nil {
					got = append(got, ds...)
				}
			}
			if len(got) != 1 || got[0].Event.ID != "msg_n" {
				t.Errorf("after the sweep, a delivery pushed to the lane was leased as %v, want msg_n once", got)
			}
		})
	}
}

// Run sweeps on its own: a removed endpoint's idle lane is gone soon after
// it starts (here its first sweep is lowered from a minute to 10 ms).
func TestRedis_RunSweepsRemovedEndpointsQueues(t *testing.T) {
	first := laneSweepFirst
	laneSweepFirst = 10 * time.Millisecond
	t.Cleanup(func() { laneSweepFirst = first })
	c := redisClient(t)
	ctx := context.Background()
	q := redisQueue(t, c, "a", time.Minute)
	stream := q.(*RedisQueue).stream(Lane{"acme", "gone"})
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: "1000-0", Values: []string{"d", "x"}}).Err(); err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t)
	d, reg := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: q})
	run(t, d)
	eventually(t, "the removed endpoint's lane is deleted and its delivery counted", func() bool {
		return c.Exists(ctx, stream).Val() == 0 && metric(t, reg, "tollgate_webhook_dropped_total", "reason", "endpoint_removed") == 1
	})
}

// The sweep finds lanes under a key prefix with characters a Redis glob
// reads (*, ?, [ ]): SCAN's pattern escapes them, or it would match no key
// of the queue's, and a removed endpoint's lane would stay for good.
func TestRedis_TheSweepFindsLanesUnderAPrefixWithGlobCharacters(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	q, err := NewRedisQueue(c, RedisQueueConfig{Prefix: "q[1]*?:", Secret: queueSecret, Consumer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	stream := q.(*RedisQueue).stream(Lane{"acme", "gone"})
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: "1000-0", Values: []string{"d", "x"}}).Err(); err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t)
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: q})
	d.sweepRemoved(ctx)
	if c.Exists(ctx, stream).Val() != 0 {
		t.Errorf("the removed endpoint's lane %s is still there", stream)
	}
}
