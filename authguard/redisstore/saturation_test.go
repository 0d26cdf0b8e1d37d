package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/internal/testkit/storetest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// flood sends n checks at once, each on a fresh account and address, through
// an engine (admitting maxInFlight calls at once; 0 for no bound) on a real
// Redis reached by a pool of 2 connections, and says how the checks were
// answered.
type floodResult struct {
	proceeded, fallback, shed, other int
	charged                          int // account counters Redis holds afterwards
}

func flood(t *testing.T, n, maxInFlight int) floodResult {
	t.Helper()
	return floodOn(t, n, maxInFlight, 2, false)
}

// floodOn is flood on a pool of pool connections, with the store's shared
// round trips on or off.
func floodOn(t *testing.T, n, maxInFlight, pool int, shared bool) floodResult {
	t.Helper()
	in := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: in.Addr, PoolSize: pool, PoolTimeout: 50 * time.Millisecond,
		ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond, ContextTimeoutEnabled: true, MaxRetries: -1})
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: 50 * time.Millisecond, BreakAfter: 1 << 30, SharedRoundTrips: shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Preload(context.Background()); err != nil { // as serve does at start-up
		t.Fatal(err)
	}
	var fallback atomic.Int64
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
		MaxInFlight: maxInFlight,
		Observe: func(ev authguard.Event) {
			if ev.Source == authguard.SourceFallback {
				if fallback.Add(1) <= 3 {
					t.Logf("answered from the fallback after %v: %v", ev.StoreDuration, ev.StoreErr)
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var r floodResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			v, err := e.Check(context.Background(), authguard.CheckRequest{
				Flow: "login", Account: fmt.Sprintf("user%d@example.com", i), IP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255),
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && v.Action == authguard.Delay && v.Reasons[0] == authguard.ReasonOverloaded:
				r.shed++
			case err == nil && v.Action == authguard.Proceed:
				r.proceeded++
			default:
				r.other++
			}
		})
	}
	close(start)
	wg.Wait()
	r.fallback = int(fallback.Load())
	r.charged = len(c.Keys(context.Background(), "*:acct:*").Val())
	return r
}

// Attack (or a busy Monday): a flood of checks beyond what this instance's
// Redis connections carry. Without a bound on calls in flight they queue for
// a connection, and for the CPU, inside their deadline, miss it, and a
// fail-open flow answers them from the local fallback store, never writing
// them to Redis. With the bound, the excess is shed before it does any work
// (a delay of reason overloaded, nothing counted), no check is answered from the fallback
// while Redis is healthy, and every check that proceeded is charged in
// Redis.
func TestSaturation_AFloodIsShedNotAnsweredFromTheFallback(t *testing.T) {
	const n = 6000
	r := flood(t, n, 2) // the pool's 2 connections
	t.Logf("bounded: %+v", r)
	if r.fallback != 0 {
		t.Errorf("%d checks answered from the fallback while Redis was healthy", r.fallback)
	}
	if r.proceeded+r.shed != n || r.other != 0 {
		t.Errorf("proceeded %d + shed %d of %d, %d otherwise", r.proceeded, r.shed, n, r.other)
	}
	if r.charged < r.proceeded {
		t.Errorf("Redis holds %d charged accounts, want every one of the %d that proceeded", r.charged, r.proceeded)
	}
	if r.proceeded == 0 {
		t.Error("nothing proceeded: the bound shed everything")
	}

	// The same flood with the bound lifted: the failure this guards against.
	u := flood(t, n, 0)
	t.Logf("unbounded: %+v", u)
	if u.fallback == 0 {
		t.Errorf("unbounded: no check answered from the fallback; the flood no longer shows what the bound prevents")
	}
}

// The same flood with the store's shared round trips on and 16 calls in
// flight: batches of checks must not miss their deadlines either. No check
// is answered from the fallback while Redis is healthy, and every check
// that proceeded is charged.
func TestSaturation_SharedRoundTripsShedNotFallBack(t *testing.T) {
	const n = 6000
	r := floodOn(t, n, 16, 16, true)
	t.Logf("shared: %+v", r)
	if r.fallback != 0 {
		t.Errorf("%d checks answered from the fallback while Redis was healthy", r.fallback)
	}
	if r.proceeded+r.shed != n || r.other != 0 {
		t.Errorf("proceeded %d + shed %d of %d, %d otherwise", r.proceeded, r.shed, n, r.other)
	}
	if r.charged < r.proceeded || r.proceeded == 0 {
		t.Errorf("Redis holds %d charged accounts, %d proceeded", r.charged, r.proceeded)
	}
}

// Attack: send checks and hang up at once, again and again, to make the
// store calls fail (cancelled with the request) until the circuit breaker
// opens and every instance answers from its local fallback store: a
// fail-open mode bought for the price of a few disconnects. A store call
// does not inherit the caller's cancellation, so the breaker only ever
// counts the store's own failures.
func TestBreaker_ClientsHangingUpCannotOpenIt(t *testing.T) {
	c := singleClient(t)
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, BreakAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	var last authguard.Event
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
		Observe: func(ev authguard.Event) { last = ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 20 {
		e.Check(gone, authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("hangup", i), IP: fmt.Sprintf("198.51.100.%d", i)})
	}
	if s.Open() {
		t.Fatal("20 checks whose callers hung up opened the breaker")
	}
	v, err := e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: "owner@example.com", IP: "192.0.2.2"})
	if err != nil || v.Action != authguard.Proceed || last.Source != authguard.SourceStore {
		t.Errorf("the next check: %v %v from %v (%v), want proceed from Redis", v.Action, err, last.Source, last.StoreErr)
	}
	if n := len(c.Keys(context.Background(), "*:acct:*").Val()); n != 21 {
		t.Errorf("Redis counts %d accounts, want the 20 hung-up checks and the owner's: a call once started completes", n)
	}
}

// TestBreaker_AStillDownRedisCostsOneTrialACooldown: Redis hangs (it
// accepts connections and never answers). Once the breaker's cooldown ends,
// every call waiting would try Redis and wait out its timeout, so that a
// flood of checks meets a wall of timeouts once a second. Half-open, the
// breaker lets one trial call through and fails the others at once until it
// ends; the trial's timeout opens it again.
func TestBreaker_AStillDownRedisCostsOneTrialACooldown(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out three 1 s timeouts on a Redis that never answers: runs in the full make test, not under -short")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var received atomic.Int64 // bytes the clients sent
	var held sync.WaitGroup
	held.Go(func() { // a Redis that accepts, reads and never answers
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			held.Go(func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					received.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
		}
	})
	defer held.Wait()
	defer ln.Close()
	clock := testclock.New(time.Time{})
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, BreakAfter: 2, Cooldown: time.Second, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	op := func(i int) error {
		_, err := s.Do(context.Background(), []authguard.Op{&authguard.BackoffOp{Key: fmt.Sprint("tg:t:login:acct:", i), Action: authguard.BackoffPeek, Policy: storetest.Backoff}})
		return err
	}
	for i := range 2 {
		if err := op(i); authguard.StoreErrorKind(err) != "timeout" {
			t.Fatalf("call %d on a hung Redis: %v, want a timeout", i, err)
		}
	}
	if !s.Open() {
		t.Fatal("two timeouts did not open the breaker")
	}
	clock.Advance(time.Second)
	sent := received.Load()
	trial := make(chan error, 1)
	go func() { trial <- op(99) }()
	// The trial is waiting on Redis (for 1 s) once Redis has its bytes.
	testkit.WaitFor(t, 5*time.Second, "the trial call reaching Redis", func() bool { return received.Load() > sent })
	var mu sync.Mutex
	kinds := map[string]int{}
	var calls sync.WaitGroup
	for i := range 20 {
		calls.Go(func() {
			kind := authguard.StoreErrorKind(op(100 + i))
			mu.Lock()
			kinds[kind]++
			mu.Unlock()
		})
	}
	calls.Wait()
	if err := <-trial; authguard.StoreErrorKind(err) != "timeout" {
		t.Errorf("the trial call: %v, want a timeout", err)
	}
	if kinds["circuit_open"] != 20 {
		t.Errorf("20 calls during the trial: %v, want every one failed at once (circuit_open)", kinds)
	}
	if !s.Open() {
		t.Error("the trial's timeout did not open the breaker again")
	}
}
