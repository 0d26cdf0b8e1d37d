package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// TestCheckScript_DecidesEveryCombinationAsBlocked: on one node check.lua,
// as the store sends it (shaped, and generic past the shapes kept), decides
// whether a check is blocked as authguard.Blocked does, for every gate and
// every result a gate reads (a wait or not, over or not), with a CAPTCHA
// solved or not, and each op undone on a block or not (a spare allowance,
// peeked, left out or applied): every batch of one op and of two in either
// order, and random batches of three to six. Each op is a peek of a leaky
// bucket whose state gives the result wanted, so nothing is written and
// every call reads the same. TestCheckScript_ReadsGatesByAuthguardsVerdictRule
// holds check.lua's text to the rule; this holds what Redis makes of it.
func TestCheckScript_DecidesEveryCombinationAsBlocked(t *testing.T) {
	c := singleClient(t)
	clock := testclock.New(time.Time{})
	s := newStore(t, c, clock.Now)
	ctx := context.Background()
	now := clock.Now().UnixMilli()
	// A result of each kind, by the bucket's state (its drain time) and the
	// peek's cost: kind&1 a wait, kind&2 over.
	type kind struct {
		tat  int64 // 0: no state
		cost int
	}
	kinds := [4]kind{{0, 1}, {now + 1000, 1}, {0, 3}, {now + 2000, 1}}
	const maxOps = 6
	key := func(pos, k int) string { return fmt.Sprintf("tg:t:v:q:%d.%d", pos, k) }
	for pos := range maxOps {
		for k, kd := range kinds {
			if kd.tat != 0 {
				if err := c.Set(ctx, key(pos, k), strconv.FormatInt(kd.tat, 10), 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	rate := authguard.RateLimit{Algorithm: authguard.LeakyBucket, Interval: time.Second, Limit: 2}
	blocks := authguard.Blocks()
	type op struct {
		block authguard.Block
		kind  int
		undo  bool
	}
	var blocked, proceeded int
	run := func(batch []op, solved bool) {
		t.Helper()
		ops := make([]authguard.Op, len(batch))
		gates := make([]authguard.Gate, len(batch))
		for i, o := range batch {
			ops[i] = &authguard.RateOp{Key: key(i, o.kind), Action: authguard.RatePeek, Rate: rate, Cost: kinds[o.kind].cost}
			gates[i] = authguard.Gate{Block: o.block, Undo: o.undo}
		}
		res, undone, err := s.DoCheck(ctx, ops, gates, solved)
		if err != nil {
			t.Fatalf("%+v, solved %v: %v", batch, solved, err)
		}
		for i, o := range batch {
			got := 0
			if res[i].Wait > 0 {
				got |= 1
			}
			if res[i].Over {
				got |= 2
			}
			// a spare allowance the script did not run reads as zero
			if got != o.kind && !(gates[i].Spare() && got == 0) {
				t.Fatalf("%+v: op %d read as kind %d, want %d: the test does not test what it says", batch, i, got, o.kind)
			}
		}
		if want := authguard.Blocked(gates, res, solved); undone != want {
			t.Fatalf("ops %+v, solved %v, results %+v: check.lua blocked %v, authguard.Blocked %v", batch, solved, res, undone, want)
		}
		if undone {
			blocked++
		} else {
			proceeded++
		}
	}
	var all []op // every gate, result and undo
	for _, b := range blocks {
		for k := range kinds {
			for _, undo := range []bool{false, true} {
				all = append(all, op{b, k, undo})
			}
		}
	}
	for _, solved := range []bool{false, true} {
		for _, a := range all {
			run([]op{a}, solved)
			for _, b := range all {
				run([]op{a, b}, solved)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 8))
	for range 2000 {
		batch := make([]op, 3+rng.IntN(maxOps-2))
		for i := range batch {
			batch[i] = all[rng.IntN(len(all))]
		}
		run(batch, rng.IntN(2) == 0)
	}
	if blocked < 1000 || proceeded < 1000 {
		t.Errorf("%d checks blocked, %d proceeded: want many of each", blocked, proceeded)
	}
}
