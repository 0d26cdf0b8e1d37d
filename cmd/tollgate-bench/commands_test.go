package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// TestCommands_AreAFreshChecksCommands: the table's commands row is the
// floor of tollgate's key layout only while commands.lua sends what a fresh
// check's script does. One fresh login check with every signal (the
// table's load: account, IPv4 address and password fingerprint never
// seen), through the engine with the built-in policy on a real Redis, and
// one call of commands.lua, each counted from a CONFIG RESETSTAT: the same
// commands, each as many times. A check whose layout changed (a key more
// or less, another command) fails here until commands.lua follows it.
func TestCommands_AreAFreshChecksCommands(t *testing.T) {
	redistest.Require(t)
	in := redistest.Server(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	store, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: store, Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	check := func(i int) {
		t.Helper()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("user%d@example.com", i),
			IP: fmt.Sprintf("198.%d.%d.7", 18+i, i), PasswordFingerprint: fmt.Sprintf("fp-%d", i)})
		if err != nil || v.Action != authguard.Proceed {
			t.Fatalf("fresh check %d: %+v, %v; want proceed", i, v, err)
		}
	}
	check(1) // loads the check's script: the next one is its EVALSHA alone
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	check(2)
	fresh := commandCalls(t, c)
	if fresh["time"] != 1 || fresh["zadd"] == 0 {
		t.Fatalf("a fresh check ran %v: want one TIME and a ZADD at least", fresh)
	}

	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// commandsArgs as redis-benchmark would send them, __rand_int__ made one
	// number: numkeys, the keys, then the script's arguments.
	var sent []any
	for _, a := range commandsArgs {
		sent = append(sent, strings.ReplaceAll(a, "__rand_int__", "000000000001"))
	}
	n, err := strconv.Atoi(commandsArgs[0])
	if err != nil || 1+n > len(commandsArgs) {
		t.Fatalf("commandsArgs %q: numkeys %q", commandsArgs, commandsArgs[0])
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = sent[1+i].(string)
	}
	if err := c.Eval(ctx, commandsScript, keys, sent[1+n:]...).Err(); err != nil {
		t.Fatal(err)
	}
	floor := commandCalls(t, c)

	if !maps.Equal(fresh, floor) {
		t.Errorf("a fresh check ran %v; commands.lua runs %v", fresh, floor)
	}
}

// commandCalls is each command's calls in INFO commandstats, but for the
// script calls themselves and the test's own CONFIG.
func commandCalls(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch cmd, _, _ := strings.Cut(name, "|"); cmd {
		case "eval", "evalsha", "config", "info", "script", "hello", "client", "ping":
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls[name], _ = strconv.ParseInt(n, 10, 64)
	}
	return calls
}
