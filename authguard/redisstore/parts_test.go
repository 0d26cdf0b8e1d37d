package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// partsEngine is an engine with the built-in policy on a real Redis, with
// or without one key per subject.
func partsEngine(t *testing.T, c *redis.Client, perRule bool) *authguard.Engine {
	t.Helper()
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, PerRuleKeys: perRule})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: s, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rulesOf lists the rule field of every key in Redis, sorted.
func rulesOf(t *testing.T, c *redis.Client) []string {
	var rules []string
	for _, k := range c.Keys(context.Background(), "*").Val() {
		rules = append(rules, strings.Split(k, ":")[3])
	}
	slices.Sort(rules)
	return rules
}

// A fresh login check with every signal makes three keys on one node: the
// account's counter, the address's one sorted set (its bucket, spray log
// and failure log) and the password's spray log, where a key per rule
// makes five.
func TestParts_AFreshCheckMakesOneKeyPerSubject(t *testing.T) {
	c := singleClient(t)
	ctx := context.Background()
	for _, tt := range []struct {
		perRule bool
		want    string
	}{
		{false, "@ acct pwspray"},
		{true, "acct ipfail iprate ipspray pwspray"},
	} {
		c.FlushAll(ctx)
		e := partsEngine(t, c, tt.perRule)
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "ann@example.com", IP: "192.0.2.1", PasswordFingerprint: "pw"})
		if err != nil || v.Action != authguard.Proceed {
			t.Fatalf("per rule %v: %v %v", tt.perRule, v.Action, err)
		}
		if got := strings.Join(rulesOf(t, c), " "); got != tt.want {
			t.Errorf("per rule %v: keys of rules %s, want %s", tt.perRule, got, tt.want)
		}
	}
}

// An attacker floods an address with checks after its failures: every
// check writes the bucket's part. No such write may cut the key's life
// below the spray log's day, or the flood would erase the address's
// failed accounts an hour or a second later; and the spray limit still
// holds after the flood (a CAPTCHA for the eleventh account within an hour).
func TestParts_AFloodOfChecksDoesNotShortenTheSprayLog(t *testing.T) {
	c := singleClient(t)
	ctx := context.Background()
	e := partsEngine(t, c, false)
	const ip = "192.0.2.7"
	for i := range 10 {
		acct := fmt.Sprintf("user%d@example.com", i)
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: ip})
		if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
			t.Fatal(err)
		}
	}
	for range 50 {
		e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "user0@example.com", IP: ip})
	}
	keys := c.Keys(ctx, "*:@:*").Val()
	if len(keys) != 1 {
		t.Fatalf("address keys %v, want one", keys)
	}
	if ttl := c.PTTL(ctx, keys[0]).Val(); ttl < 23*time.Hour {
		t.Errorf("the address's key expires in %v after the flood, want the spray log's day", ttl)
	}
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "user10@example.com", IP: ip})
	if v.Action != authguard.Captcha {
		t.Errorf("an eleventh account from the address after the flood: %v, want captcha", v.Action)
	}
}

// An administrator's reset of an address clears every part of its key:
// the next check of a new account proceeds where it needed a CAPTCHA.
func TestParts_AResetOfAnAddressClearsItsParts(t *testing.T) {
	c := singleClient(t)
	ctx := context.Background()
	e := partsEngine(t, c, false)
	const ip = "192.0.2.8"
	for i := range 10 {
		acct := fmt.Sprintf("user%d@example.com", i)
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: ip})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
	}
	if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "new@example.com", IP: ip}); v.Action != authguard.Captcha {
		t.Fatalf("before the reset: %v, want captcha", v.Action)
	}
	if _, err := e.Reset(ctx, authguard.ResetRequest{Flow: "login", IP: ip, Reason: "support ticket"}); err != nil {
		t.Fatal(err)
	}
	if keys := c.Keys(ctx, "*:@:*").Val(); len(keys) != 0 {
		t.Errorf("the address's key %v is left after the reset, want every part gone", keys)
	}
	if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "new@example.com", IP: ip}); v.Action != authguard.Proceed {
		t.Errorf("after the reset: %v, want proceed", v.Action)
	}
}
