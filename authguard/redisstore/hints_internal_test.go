package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// An attacker who puts ever more accounts in backoff (or reports failures
// on them) cannot grow an instance's hints past maxHints: they are dropped
// at once and rebuilt, and the newest hint still holds.
func TestHints_AFloodOfBlockedAccountsCannotGrowThemPastTheirCap(t *testing.T) {
	var h hints
	now := time.Unix(1_800_000_000, 0)
	gates := []authguard.Gate{{Block: authguard.BlockDelay}}
	blocked := []authguard.Result{{Wait: time.Minute}}
	var last []authguard.Op
	for i := range 3*maxHints + 7 {
		key := fmt.Sprint("tg:t:login:acct:", i)
		if i%2 == 0 { // a refused check
			last = []authguard.Op{&authguard.BackoffOp{Key: key, Action: authguard.BackoffCharge}}
			h.learn(last, gates, blocked, false, now)
		} else { // a failure report that leaves its counter waiting
			last = []authguard.Op{&authguard.BackoffOp{Key: key, Action: authguard.BackoffFail}}
			h.learnFailures(last, blocked, now)
		}
		if n := len(h.until); n > maxHints {
			t.Fatalf("after %d blocked accounts: %d hints, want at most %d", i+1, n, maxHints)
		}
	}
	if h.blocker(last, gates, false, now) != 0 {
		t.Error("the newest blocked account has no hint")
	}
	if h.blocker(last, gates, false, now.Add(time.Minute)) != -1 {
		t.Error("a hint outlived its wait")
	}
}
