package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// TestClusterKeyLayout_AnUpgradeForgetsNoBackoff: a Cluster switched to
// subject hash tags renames every key, so an instance on the new names
// would let an account in backoff guess again at once. With the migration
// (MigrateKeyLayout) run before the switch, an account held by today's
// names is still held by the new ones; one whose failures the instances
// not yet switched kept counting under the old names, while a switched one
// checked it under the new, is held once the migration runs again after
// the switch (the counter with more failures wins over the fresher one).
// Without the migration the first account would go free: the attack.
func TestClusterKeyLayout_AnUpgradeForgetsNoBackoff(t *testing.T) {
	c := clusterClient(t)
	ctx := context.Background()
	engine := func(tags bool) (*authguard.Engine, *redisstore.Store) {
		s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, SubjectTags: tags})
		if err != nil {
			t.Fatal(err)
		}
		e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		return e, s
	}
	check := func(e *authguard.Engine, acct string) authguard.Action {
		t.Helper()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "198.51.100.7"})
		if err != nil {
			t.Fatal(err)
		}
		return v.Action
	}
	// hold reports failures of acct (each from an address of its own)
	// until a check of it is delayed.
	hold := func(e *authguard.Engine, acct string) {
		t.Helper()
		for i := range 30 {
			if check(e, acct) == authguard.Delay {
				return
			}
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: fmt.Sprintf("192.0.2.%d", i), Outcome: authguard.Failure}); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("%s is not held after 30 failures", acct)
	}

	before, _ := engine(false)
	hold(before, "victim@example.com")
	after, tagged := engine(true)
	if got := check(after, "someone@example.com"); got != authguard.Proceed {
		t.Fatalf("a fresh account on the new names: %v, want proceed", got)
	}

	// 1. The migration, while every instance writes today's names.
	st, err := tagged.MigrateKeyLayout(ctx, redisstore.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first run: %+v", st)
	if st.Copied == 0 {
		t.Fatalf("the first run copied nothing: %+v", st)
	}
	// 2. The switch: an instance on the new names holds the account.
	if got := check(after, "victim@example.com"); got != authguard.Delay {
		t.Errorf("the account in backoff before the switch, checked on the new names: %v, want delay", got)
	}
	// Meanwhile an instance not yet switched counts another account's
	// failures under the old names, after a switched one checked it.
	if got := check(after, "second@example.com"); got != authguard.Proceed {
		t.Fatalf("second@example.com on the new names: %v, want proceed", got)
	}
	hold(before, "second@example.com")
	if got := check(after, "second@example.com"); got != authguard.Proceed {
		t.Fatalf("second@example.com, held on the old names only, on the new: %v; the test wants it not held yet", got)
	}
	// 3. The migration again, after the switch, removing the old names.
	st, err = tagged.MigrateKeyLayout(ctx, redisstore.MigrateOptions{RemoveOld: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second run: %+v", st)
	for _, acct := range []string{"victim@example.com", "second@example.com"} {
		if got := check(after, acct); got != authguard.Delay {
			t.Errorf("%s after the second run: %v, want delay", acct, got)
		}
	}
	// The old names are gone; what is left is tagged or not a subject's.
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		for _, k := range m.Keys(ctx, "tg:*").Val() {
			if _, old := authguard.SubjectTaggedKey(k); old {
				t.Errorf("old name %s left after RemoveOld", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
