package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// seeCmds is a go-redis hook that shows a function every command a client
// sends, alone or in a pipeline, before it goes.
type seeCmds func(redis.Cmder)

func (f seeCmds) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f seeCmds) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}

func (f seeCmds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			f(cmd)
		}
		return next(ctx, cmds)
	}
}

// evalArgs is a go-redis hook that keeps the arguments of every EVALSHA
// and EVAL after the keys.
type evalArgs struct {
	mu    sync.Mutex
	calls [][]string
}

func (h *evalArgs) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *evalArgs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.keep(cmd)
		return next(ctx, cmd)
	}
}

func (h *evalArgs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.keep(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *evalArgs) keep(cmd redis.Cmder) {
	a := cmd.Args()
	if name := strings.ToLower(fmt.Sprint(a[0])); name != "evalsha" && name != "eval" {
		return
	}
	nkeys, _ := strconv.Atoi(fmt.Sprint(a[2]))
	var args []string
	for _, v := range a[3+nkeys:] {
		args = append(args, fmt.Sprint(v))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, args)
}

func (h *evalArgs) last(t *testing.T) []string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) == 0 {
		t.Fatal("no script was sent")
	}
	return h.calls[len(h.calls)-1]
}

// TestShapes_ACheckSendsOnlyWhatVaries: a login check with every signal on
// the built-in policy sends solved, deferred, now and expire, and per op
// only its member, fingerprint, attempt or bypass, not the windows, limits
// and backoff parameters of its policy, which the shape holds; and every
// check of that shape shares one script.
func TestShapes_ACheckSendsOnlyWhatVaries(t *testing.T) {
	c := singleClient(t)
	hook := &evalArgs{}
	c.AddHook(hook)
	s := newStore(t, c, nil)
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 20 {
		v, err := e.Check(ctx, authguard.CheckRequest{
			Flow: "login", Account: fmt.Sprintf("user%d@example.com", i), IP: fmt.Sprintf("192.0.2.%d", i+1),
			PasswordFingerprint: fmt.Sprintf("%032x", i),
		})
		if err != nil || v.Action != authguard.Proceed {
			t.Fatalf("check %d: %+v, %v; want a proceed", i, v, err)
		}
	}
	args := hook.last(t)
	// Seven ops: the known network, the account's counter, the address's
	// bucket, spray, failure and credential-stuffing logs, the password's
	// spray log.
	if len(args) > 18 {
		t.Errorf("a login check sent %d arguments %q; want at most 18 (4, and one or two per op)", len(args), args)
	}
	for _, constant := range []string{"86400000", "3600000", "token_bucket", "admit"} {
		for _, a := range args {
			if a == constant {
				t.Errorf("a login check sent its policy's %q; the shape should hold it: %q", constant, args)
			}
		}
	}
	if n := redisstore.Shapes(s); n < 1 || n > 3 {
		t.Errorf("20 login checks of one kind made %d shapes; want one or two (deferred spares and not)", n)
	}
}

// TestShapes_AFloodOfShapesCannotGrowRedisScriptCache: an instance keeps
// at most so many shapes, and sends any other check with the generic
// script, so checks whose ops differ in every policy argument (here 40
// flows of different windows, against a bound of 5) add at most that many
// scripts to Redis's script cache, and are answered the same.
func TestShapes_AFloodOfShapesCannotGrowRedisScriptCache(t *testing.T) {
	srv := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	s := newStore(t, c, nil)
	redisstore.SetMaxShapes(s, 5)
	ctx := context.Background()
	scripts := func() int { return infoInt(t, c, "memory", "number_of_cached_scripts") }
	before := scripts()
	for i := range 40 {
		window := time.Duration(i+1) * time.Minute
		key := fmt.Sprintf("tg:t:flood:%d", i)
		gates := []authguard.Gate{{Block: authguard.BlockCaptcha, Undo: true}, {Block: authguard.BlockCaptcha, Undo: true}}
		for j, want := range []bool{false, true} {
			member := fmt.Sprint("m", j) // a distinct member each time: a log of limit 1 admits one
			ops := []authguard.Op{
				&authguard.LogOp{Key: key + ":a", Action: authguard.LogAdmit, Member: member, Windows: spraydetect.Windows{{Length: window, Limit: 1}}},
				&authguard.LogOp{Key: key + ":b", Action: authguard.LogAdmit, Member: member, Windows: spraydetect.Windows{{Length: window, Limit: 1}}},
			}
			res, undone, err := s.DoCheck(ctx, ops, gates, false)
			if err != nil {
				t.Fatalf("flow %d, check %d: %v", i, j, err)
			}
			if res[0].Over != want || undone != want {
				t.Fatalf("flow %d, check %d: over %v, undone %v; want %v", i, j, res[0].Over, undone, want)
			}
		}
	}
	if n := redisstore.Shapes(s); n != 5 {
		t.Errorf("the instance keeps %d shapes; want its bound, 5", n)
	}
	if grown := scripts() - before; grown > 6 {
		t.Errorf("Redis's script cache grew by %d scripts for 40 shapes; want at most 6 (5 shapes and the generic script)", grown)
	}
}

// TestShapes_LoadedAgainAfterScriptFlush: a node that lost its scripts
// (restart, failover, SCRIPT FLUSH) gets a shape again by EVAL, and the
// check is answered, not failed.
func TestShapes_LoadedAgainAfterScriptFlush(t *testing.T) {
	c := singleClient(t)
	s := newStore(t, c, nil)
	var storeErrs []error
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret,
		Observe: func(ev authguard.Event) {
			if ev.StoreErr != nil || ev.Source != authguard.SourceStore {
				storeErrs = append(storeErrs, fmt.Errorf("%v from %v", ev.StoreErr, ev.Source))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "ada@example.com", IP: "192.0.2.1"})
		if err != nil || v.Action != authguard.Proceed {
			t.Fatalf("check %d after SCRIPT FLUSH: %+v, %v; want a proceed", i, v, err)
		}
	}
	if len(storeErrs) > 0 {
		t.Errorf("checks after SCRIPT FLUSH were not answered by Redis: %v", storeErrs)
	}
}

// TestLuaQuote_EveryByteComesBackAsItWent: a policy's value written into a
// shape is the same string in Lua whatever its bytes, so none can end the
// literal or change the script.
func TestLuaQuote_EveryByteComesBackAsItWent(t *testing.T) {
	c := singleClient(t)
	var all []byte
	for b := range 256 {
		all = append(all, byte(b))
	}
	for _, v := range []string{"", "86400000", "token_bucket", `"]] end redis.call('FLUSHALL') --`, "\\", "\x00\n\r", "a\x001", "1\\0012", string(all)} {
		got, err := c.Eval(context.Background(), "return "+redisstore.LuaQuote(v), nil).Text()
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got != v {
			t.Errorf("%q came back as %q", v, got)
		}
	}
}

// TestShapes_AnACLWithoutEVALStillAnswers: a Redis user whose ACL refuses
// EVAL (but allows EVALSHA and SCRIPT LOAD) still gets every check answered
// by Redis, alone or sharing round trips: a shape new to the instance, and
// one the node lost (SCRIPT FLUSH), is loaded with SCRIPT LOAD and run by
// its hash when EVAL answers NOPERM, instead of every new shape falling to
// the fail mode.
func TestShapes_AnACLWithoutEVALStillAnswers(t *testing.T) {
	srv := redistest.Server(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">limited-secret", "~*", "&*", "+@all", "-eval").Err(); err != nil {
		t.Fatal(err)
	}
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "limited", Password: "limited-secret", MaxRetries: -1})
			defer c.Close()
			if err := c.Eval(ctx, "return 1", nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
				t.Fatalf("EVAL as the limited user: %v; want NOPERM", err)
			}
			s, err := redisstore.New(redisstore.Config{Client: c, Timeout: 5 * time.Second, SharedRoundTrips: shared})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var mu sync.Mutex
			var failed []error
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret,
				Observe: func(ev authguard.Event) {
					if ev.StoreErr != nil || ev.Source != authguard.SourceStore {
						mu.Lock()
						defer mu.Unlock()
						failed = append(failed, fmt.Errorf("%v from %v", ev.StoreErr, ev.Source))
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if err := admin.ScriptFlush(ctx).Err(); err != nil { // the node lost them
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				for i := range 8 { // more than sharedAfter at once
					wg.Go(func() {
						v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("u%d-%d@example.com", round, i),
							IP: fmt.Sprintf("192.0.%d.%d", round, i+1), PasswordFingerprint: fmt.Sprint("fp", i%2)})
						if err != nil || v.Action != authguard.Proceed {
							mu.Lock()
							defer mu.Unlock()
							failed = append(failed, fmt.Errorf("check %d: %+v, %v", i, v, err))
						}
					})
				}
				wg.Wait()
			}
			if len(failed) > 0 {
				t.Errorf("%d checks not answered by Redis, the first: %v", len(failed), failed[0])
			}
		})
	}
}
