package redisstore_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// TestAccountKeys_FindEveryKeyOfAnAccount: after two accounts used every
// kind of rule — the account's counter, a device's allowance, slot and
// shared counter, a compound account+ip limit — the engine's AccountKeys
// pattern matches exactly one account's keys in Redis, and every key that
// is not an address's or a password's belongs to one of the two accounts.
// An administrator's reset can therefore find everything to delete.
func TestAccountKeys_FindEveryKeyOfAnAccount(t *testing.T) {
	c := singleClient(t)
	p, err := policyfile.LoadPolicy([]byte(`
flows:
  api:
    rules:
      - {name: pair, subject: account+ip, algorithm: fixed_window, window: 1h, limit: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: newStore(t, c, nil), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, acct := range []string{"ann@example.com", "bob@example.com"} {
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "192.0.2.1", PasswordFingerprint: "pw"})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.1", Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "pw"})
		ok, _ := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.1", Outcome: authguard.Success})
		v, _ = e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "192.0.2.1", DeviceToken: ok.DeviceToken})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.1", Outcome: authguard.Failure, Attempt: v.Attempt, DeviceToken: ok.DeviceToken})
		e.Check(ctx, authguard.CheckRequest{Flow: "api", Account: acct, IP: "192.0.2.1"})
	}
	rule := func(key string) string { return strings.Split(key, ":")[3] }
	mine := map[string][]string{}
	for _, acct := range []string{"ann@example.com", "bob@example.com"} {
		pattern, err := e.AccountKeys("", " "+strings.ToUpper(acct))
		if err != nil {
			t.Fatal(err)
		}
		keys := c.Keys(ctx, pattern).Val()
		var rules []string
		for _, k := range keys {
			rules = append(rules, rule(k))
		}
		slices.Sort(rules)
		if got, want := strings.Join(rules, " "), "acct dev dev.dev dev.slots pair"; got != want {
			t.Errorf("%s: the pattern %s matches the keys of %s, want %s", acct, pattern, got, want)
		}
		mine[acct] = keys
	}
	for _, k := range mine["ann@example.com"] {
		if slices.Contains(mine["bob@example.com"], k) {
			t.Errorf("key %s matches both accounts", k)
		}
	}
	for _, k := range c.Keys(ctx, "*").Val() {
		owned := slices.Contains(mine["ann@example.com"], k) || slices.Contains(mine["bob@example.com"], k)
		switch r := rule(k); {
		case owned:
		case r == "iprate" || r == "ipfail" || r == "ipspray" || r == "pwspray":
		default:
			t.Errorf("key %s (rule %s) belongs to no account's pattern", k, r)
		}
	}
}

// TestAccountKeys_SubjectTagsPutAnAccountsKeysInOneSlot: on a Cluster with
// subject hash tags, every key of an account — its counter, a device's
// allowance, slot and shared counter, a compound account+ip limit, the
// device generation when the policy keeps one — is in one slot, so a check's ops on the account are
// one call; AccountKeys' pattern (SCAN MATCH on every master, braces being
// literal in a glob) matches them all but the generation, which a reset
// leaves; and an address's keys are in the address's slot.
func TestAccountKeys_SubjectTagsPutAnAccountsKeysInOneSlot(t *testing.T) {
	c := clientOf(t, "subject").(*redis.ClusterClient)
	p, err := policyfile.LoadPolicy([]byte(`
flows:
  api:
    rules:
      - {name: pair, subject: account+ip, algorithm: fixed_window, window: 1h, limit: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: newStore(t, c, nil), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const acct = "ann@example.com"
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "192.0.2.1", PasswordFingerprint: "pw"})
	e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.1", Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "pw"})
	ok, _ := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.1", Outcome: authguard.Success})
	v, _ = e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "192.0.2.1", DeviceToken: ok.DeviceToken})
	e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.1", Outcome: authguard.Failure, Attempt: v.Attempt, DeviceToken: ok.DeviceToken})
	e.Check(ctx, authguard.CheckRequest{Flow: "api", Account: acct, IP: "192.0.2.1"})

	scan := func(pattern string) []string {
		var keys []string
		var mu sync.Mutex
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			ks, err := n.Keys(ctx, pattern).Result()
			mu.Lock()
			keys = append(keys, ks...)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	pattern, err := e.AccountKeys("", acct)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pattern, "{") {
		t.Fatalf("the pattern %s has no hash tag", pattern)
	}
	rule := func(key string) string { return strings.Split(key, ":")[3] }
	var rules []string
	slots := map[int64][]string{}
	for _, k := range scan(pattern) {
		rules = append(rules, rule(k))
		slots[c.ClusterKeySlot(ctx, k).Val()] = append(slots[c.ClusterKeySlot(ctx, k).Val()], k)
	}
	slices.Sort(rules)
	if got, want := strings.Join(rules, " "), "acct dev dev.dev dev.slots pair"; got != want {
		t.Errorf("the pattern %s matches the keys of %s, want %s", pattern, got, want)
	}
	if len(slots) != 1 {
		t.Errorf("the account's keys are in %d slots, want 1: %v", len(slots), slots)
	}
	byRule := map[string][]int64{}
	for _, k := range scan("*") {
		byRule[rule(k)] = append(byRule[rule(k)], c.ClusterKeySlot(ctx, k).Val())
	}
	for slot := range slots {
		for _, s := range byRule["trust.gen"] {
			if s != slot {
				t.Errorf("the device generation is in slot %d, the account in %d", s, slot)
			}
		}
		if ip := byRule["iprate"]; len(ip) == 0 || ip[0] == slot || !slices.Equal(byRule["ipfail"][:1], ip[:1]) {
			t.Errorf("the address's keys are in slots iprate %v, ipfail %v (the account's %d): want one of its own", ip, byRule["ipfail"], slot)
		}
	}
}
