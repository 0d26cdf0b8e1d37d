package redisstore_test

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
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// noticeRecorder is a Notifier that keeps what it is told.
type noticeRecorder struct {
	mu    sync.Mutex
	notes []authguard.Notice
}

func (r *noticeRecorder) Notify(n authguard.Notice) {
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
}

// Attack on a real Redis shared by two instances: 2,000 failed guesses at
// one account, in three spellings, alternating between the instances. Each
// instance tells of it once, and both notices carry the same coalescing key
// (so the delivery de-duplicates them into one) and the spelling of the
// call that emitted them.
func TestFullRedis_AttackOnOneAccountIsOneUnderAttackPerInstance(t *testing.T) {
	in := redistest.Server(t)
	s := storeOn(t, redisstore.ClientConfig{URL: "redis://" + in.Addr, Timeout: 5 * time.Second})
	p, err := policyfile.LoadPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec [2]noticeRecorder
	var e [2]*authguard.Engine
	for i := range e {
		if e[i], err = authguard.New(authguard.Config{Policy: p, Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret, Notifier: &rec[i]}); err != nil {
			t.Fatal(err)
		}
	}
	spellings := []string{"victim@example.com", "VICTIM@example.com", "ｖｉｃｔｉｍ@example.com"}
	ctx := context.Background()
	for i := range 2000 {
		ip := fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
		v, err := e[i%2].Report(ctx, authguard.ReportRequest{Flow: "login", Account: spellings[i%3], IP: ip, Outcome: authguard.Failure, Ref: "u-9"})
		if err != nil {
			t.Fatal(err)
		}
		if i >= 5 && v.Action != authguard.Delay {
			t.Fatalf("failure %d: %v %v, want the account held back", i, v.Action, v.Reasons)
		}
	}
	var keys []string
	for i := range rec {
		var under []authguard.Notice
		for _, n := range rec[i].notes {
			if n.Type == authguard.NoticeUnderAttack {
				under = append(under, n)
			}
		}
		if len(under) != 1 {
			t.Fatalf("instance %d emitted %d account.under_attack notices, want 1", i, len(under))
		}
		n := under[0]
		if n.Flow != "login" || n.Rule != "account_backoff" || n.Reason != "backoff" || n.Ref != "u-9" || n.Coalesce == "" {
			t.Errorf("instance %d: notice %+v, want login's account_backoff, reason backoff, the ref and a key", i, n)
		}
		if n.Subject != spellings[0] && n.Subject != spellings[1] && n.Subject != spellings[2] {
			t.Errorf("instance %d: subject %q is none of the spellings sent", i, n.Subject)
		}
		keys = append(keys, n.Coalesce)
	}
	if keys[0] != keys[1] {
		t.Errorf("the instances' coalescing keys differ (%q, %q): the delivery could not de-duplicate them", keys[0], keys[1])
	}
}

// Redis stops while logins go on, its breaker opens, and Redis comes back:
// the instance tells of the outage once, however many calls fail and
// however the breaker turns, and of the recovery once.
func TestOutage_ARealRedisOutageIsOneDegradedAndOneRecovered(t *testing.T) {
	in := redistest.Server(t)
	clock := testclock.New(time.Time{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: 5 * time.Second})
	s, err := redisstore.New(redisstore.Config{Client: c, Clock: clock.Now, BreakAfter: 3, Cooldown: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var rec noticeRecorder
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret, Notifier: &rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	check := func() { // each a fresh account: a check that proceeds charges its account
		t.Helper()
		n++
		if v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("judy%d@example.com", n), IP: "192.0.2.1"}); err != nil || v.Action != authguard.Proceed {
			t.Fatalf("check: %v %v %v", v.Action, v.Reasons, err)
		}
	}
	count := func(typ string) int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, x := range rec.notes {
			if x.Type == typ {
				n++
			}
		}
		return n
	}
	check()
	in.Stop()
	for range 6 { // 3 failures open the breaker; 3 more fail at once
		check()
	}
	if !s.Open() {
		t.Fatal("the breaker did not open")
	}
	if got := count(authguard.NoticeStoreDegraded); got != 1 {
		t.Fatalf("%d store.degraded notices during the outage, want 1", got)
	}
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for count(authguard.NoticeStoreRecovered) == 0 && time.Now().Before(deadline) {
		check()
	}
	for range 3 {
		check()
	}
	if down, up := count(authguard.NoticeStoreDegraded), count(authguard.NoticeStoreRecovered); down != 1 || up != 1 {
		t.Errorf("%d degraded and %d recovered notices, want one each", down, up)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, n := range rec.notes {
		if n.Type == authguard.NoticeStoreDegraded && (!slices.Contains(authguard.StoreErrorKinds(), n.Reason) || n.Details["fallback"] != true || n.Flow != "login") {
			t.Errorf("degraded notice %+v, want a store error's kind as its reason, fallback true, flow login", n)
		}
	}
}
