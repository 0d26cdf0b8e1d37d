package webhook

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// alertWatch is the engine's notifier: it hands every notice to a
// Dispatcher's Notifier and notes, when the first account.under_attack
// goes in, the time and how many deliveries the receiver had accepted.
type alertWatch struct {
	Notifier
	r *receiver

	mu        sync.Mutex
	at        time.Time
	before    int
	newDevice int
}

// fired reports whether an account.under_attack went in.
func (w *alertWatch) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.at.IsZero()
}

func (w *alertWatch) Notify(no authguard.Notice) {
	w.mu.Lock()
	switch {
	case no.Type == authguard.NoticeNewDevice:
		w.newDevice++
	case no.Type == authguard.NoticeUnderAttack && w.at.IsZero():
		w.at, w.before = time.Now(), len(w.r.deliveries(""))
	}
	w.mu.Unlock()
	w.Notifier.Notify(no)
}

// Attack (measured by a red team): an attacker signs in 10,000 times to
// accounts of their own (check, then a success report, from fresh
// addresses, no device token), each a login.new_device to the endpoint
// that also takes account.under_attack, at its default rate (10/s, burst
// 20); then a real attack puts a victim's account in backoff. The
// victim's alert must not wait behind the sign-ins: it is delivered
// before any delivery that was not already in flight (at most the
// dispatcher's 4 workers) when it was emitted. With one account the cap
// on new-device notices keeps the lane short; with 10,000 accounts the
// lane holds 10,000 notices, 15 minutes at 10/s, and the alert goes ahead
// of them. The time from the alert's notice to its delivery is logged
// (real time, loopback).
func TestAlerts_AnAttackersSignInsDoNotDelayTheVictimsAlert(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 2_000 // a lane of 2,000 notices, 200 s at 10/s: still far past the 4 in flight
	}
	for _, attacker := range []struct {
		name    string
		account func(i int) string
	}{
		{"one account", func(int) string { return "mallory@example.com" }},
		{fmt.Sprintf("%d accounts", n), func(i int) string { return fmt.Sprintf("mallory%d@example.com", i) }},
	} {
		t.Run(attacker.name, func(t *testing.T) {
			eachQueue(t, func(t *testing.T, q Queue) {
				r := newReceiver(t)
				ep := defaultRate(r, "sec", "default", "/hook")
				ep.Types = []string{authguard.NoticeNewDevice, authguard.NoticeUnderAttack}
				d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{ep}, Queue: q, Poll: 250 * time.Millisecond})
				run(t, d)
				w := &alertWatch{Notifier: Notifier{D: d}, r: r}
				e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{}),
					Fallback: memstore.New(memstore.Config{}), Secret: []byte("0123456789abcdef0123456789abcdef"), Notifier: w})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				attempt := func(account, ip string, outcome authguard.Outcome) {
					v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: outcome, Attempt: v.Attempt}); err != nil {
						t.Fatal(err)
					}
				}
				for i := range n {
					attempt(attacker.account(i), fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255), authguard.Success)
				}
				for i := 0; i < 100 && !w.fired(); i++ {
					attempt("victim@example.com", fmt.Sprintf("198.51.100.%d", i+1), authguard.Failure)
				}
				w.mu.Lock()
				at, before, newDevice := w.at, w.before, w.newDevice
				w.mu.Unlock()
				if at.IsZero() {
					t.Fatal("100 failures did not put the victim's account under attack")
				}
				const inFlight = 4 // the default Workers
				var after int
				eventually(t, "the alert delivered", func() bool {
					got := r.deliveries("")
					for i := before; i < len(got); i++ {
						if got[i].Body.Type == authguard.NoticeUnderAttack {
							after = i - before
							return true
						}
					}
					if len(got)-before > inFlight+1 {
						t.Fatalf("%d deliveries after the alert was emitted, none of them the alert", len(got)-before)
					}
					return false
				})
				took := time.Since(at)
				t.Logf("%d login.new_device notices from %d sign-ins; the alert delivered %v after it was emitted, after %d other deliveries", newDevice, n, took.Round(time.Millisecond), after)
				if after > inFlight {
					t.Errorf("the alert came after %d deliveries that began after it, want at most the %d in flight", after, inFlight)
				}
			})
		})
	}
}

// ofType returns the types of the deliveries r accepted, in order.
func ofType(r *receiver) []string {
	var out []string
	for _, g := range r.deliveries("") {
		out = append(out, g.Body.Type)
	}
	return out
}

// Found by a red team: with the Redis queue, the event that says Redis is
// down was queued in that Redis, and nobody heard of the outage while it
// lasted. store.degraded and store.recovered wait in this process (Local)
// with a delivery loop of their own: store.degraded reaches the receiver
// while the real redis-server is stopped, and store.recovered after it is
// back. An alert emitted during the outage waits for Redis (Emit's
// buffer, then its stream) and is delivered once Redis answers.
func TestRedis_StoreDegradedReachesTheReceiverWhileRedisIsDown(t *testing.T) {
	srv := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	r := newReceiver(t)
	d, _ := newDispatcher(t, Config{Endpoints: []Endpoint{r.endpoint("ops", "acme", "/hook")}, Queue: redisQueue(t, c, "a", time.Minute)})
	run(t, d)
	n := Notifier{D: d}
	notice := func(typ, reason string) {
		n.Notify(authguard.Notice{Type: typ, Tenant: "acme", Flow: "login", Reason: reason, Time: time.Now()})
	}
	has := func(typ string) bool { return slices.Contains(ofType(r), typ) }
	notice(authguard.NoticeNewDevice, "no_device_token")
	eventually(t, "a notice delivered through Redis", func() bool { return has(authguard.NoticeNewDevice) })

	srv.Stop()
	notice(authguard.NoticeUnderAttack, "backoff")
	notice(authguard.NoticeStoreDegraded, "unavailable")
	eventually(t, "store.degraded delivered while Redis is down", func() bool { return has(authguard.NoticeStoreDegraded) })
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("Redis answered: the test did not stop it")
	}
	if has(authguard.NoticeUnderAttack) {
		t.Fatal("an alert queued in Redis was delivered while Redis was down")
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	notice(authguard.NoticeStoreRecovered, "answering")
	eventually(t, "store.recovered and the alert delivered once Redis is back", func() bool {
		return has(authguard.NoticeStoreRecovered) && has(authguard.NoticeUnderAttack)
	})
	got := ofType(r)
	if i, j := slices.Index(got, authguard.NoticeStoreDegraded), slices.Index(got, authguard.NoticeStoreRecovered); i > j {
		t.Errorf("deliveries %v: store.recovered before store.degraded", got)
	}
	r.checkSignatures()
}
