// Package storetest is the conformance suite every authguard.Store must pass:
// step tables for each operation, batches, expiry, concurrency, and a property
// test that runs long random sequences of operations at random times against
// the reference semantics (authguard.Apply) and requires identical results.
package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// NewStore returns an empty store whose clock is clock. The suite calls it
// once per subtest; the store is closed by the suite.
type NewStore func(t *testing.T, clock *testclock.Clock) authguard.Store

// Policies used by the suite.
var (
	Backoff = backoff.Policy{Free: 2, Base: time.Second, Factor: 2, Max: 8 * time.Second, ForgetAfter: time.Minute}
	Seen    = 30 * time.Second
	Windows = spraydetect.Windows{{Length: 10 * time.Second, Limit: 2}, {Length: time.Minute, Limit: 3}}
	// Rates has one rate limit per algorithm, on a scale of seconds.
	Rates = []authguard.RateLimit{
		{Algorithm: authguard.FixedWindow, Window: 10 * time.Second, Limit: 3},
		{Algorithm: authguard.SlidingLog, Window: 10 * time.Second, Limit: 3},
		{Algorithm: authguard.SlidingCounter, Window: 10 * time.Second, Limit: 4},
		{Algorithm: authguard.TokenBucket, Interval: time.Second, Limit: 3},
		{Algorithm: authguard.LeakyBucket, Interval: time.Second, Limit: 3},
		{Algorithm: authguard.Conversion, Window: 10 * time.Second, Limit: 3, MinPercent: 50},
	}
)

// Run runs the whole suite.
func Run(t *testing.T, newStore NewStore) {
	t.Run("BackoffSteps", func(t *testing.T) { testBackoffSteps(t, newStore) })
	t.Run("LogSteps", func(t *testing.T) { testLogSteps(t, newStore) })
	t.Run("RateSteps", func(t *testing.T) { testRateSteps(t, newStore) })
	t.Run("RateRefundSteps", func(t *testing.T) { testRateRefundSteps(t, newStore) })
	t.Run("BatchAppliesInOrder", func(t *testing.T) { testBatchOrder(t, newStore) })
	t.Run("KeysAreIndependent", func(t *testing.T) { testIndependentKeys(t, newStore) })
	t.Run("ConcurrentChargesCannotOutrunFree", func(t *testing.T) { testConcurrentCharges(t, newStore) })
	t.Run("RandomSequencesMatchReference", func(t *testing.T) { testRandom(t, newStore) })
	t.Run("EntrySteps", func(t *testing.T) { testEntrySteps(t, newStore) })
}

// step is one operation at an offset from the start, with the result it must give.
type step struct {
	name string
	at   time.Duration
	op   authguard.Op
	want authguard.Result
}

func runSteps(t *testing.T, newStore NewStore, steps []step) {
	t.Helper()
	clock := testclock.New(time.Time{})
	start := clock.Now()
	s := newStore(t, clock)
	defer s.Close()
	for _, st := range steps {
		clock.Set(start.Add(st.at))
		res, err := s.Do(context.Background(), []authguard.Op{st.op})
		if err != nil {
			t.Fatalf("%s: Do: %v", st.name, err)
		}
		if got := res[0]; got != st.want {
			t.Errorf("%s: got %+v, want %+v", st.name, got, st.want)
		}
	}
}

func bo(key string, a authguard.BackoffAction, fp string) authguard.Op {
	return &authguard.BackoffOp{Key: key, Action: a, Policy: Backoff, Fingerprint: fp, SeenWindow: Seen}
}

func lg(key string, a authguard.LogAction, member string, bypass bool) authguard.Op {
	return &authguard.LogOp{Key: key, Action: a, Member: member, Windows: Windows, Bypass: bypass}
}

type res = authguard.Result

const (
	charge  = authguard.BackoffCharge
	refund  = authguard.BackoffRefund
	confirm = authguard.BackoffConfirm
	fail    = authguard.BackoffFail
	clear   = authguard.BackoffClear
	succeed = authguard.BackoffSucceed
	peekb   = authguard.BackoffPeek
)

// ba is a backoff op on behalf of one attempt.
func ba(key string, a authguard.BackoffAction, attempt string) authguard.Op {
	op := bo(key, a, "").(*authguard.BackoffOp)
	op.Attempt = attempt
	return op
}

func testBackoffSteps(t *testing.T, newStore NewStore) {
	const k = "tg:t:login:acct:k"
	s := time.Second
	runSteps(t, newStore, []step{
		{"t=0: first charge is free", 0, bo(k, charge, ""), res{Charged: true, Count: 1}},
		{"t=0: second charge is free", 0, bo(k, charge, ""), res{Charged: true, Count: 2}},
		{"t=0: third is refused: wait 1s", 0, bo(k, charge, ""), res{Wait: s, Count: 2}},
		{"t=+500ms: still refused, the wait is not extended", 500 * time.Millisecond, bo(k, charge, ""), res{Wait: 500 * time.Millisecond, Count: 2}},
		{"t=+1s: goes ahead", s, bo(k, charge, ""), res{Charged: true, Count: 3}},
		{"t=+1s: refund puts it back", s, bo(k, refund, ""), res{Count: 2}},
		{"t=+1s: goes ahead again", s, bo(k, charge, ""), res{Charged: true, Count: 3}},
		{"t=+1s: confirm with fingerprint A", s, bo(k, confirm, "A"), res{Wait: 2 * s, Count: 3}},
		{"t=+3s: charge", 3 * s, bo(k, charge, ""), res{Charged: true, Count: 4}},
		{"t=+7s: fingerprint A again goes ahead uncharged", 7 * s, bo(k, charge, "A"), res{Count: 4}},
		{"t=+7s: failure with A is not counted again", 7 * s, bo(k, fail, "A"), res{Count: 4}},
		{"t=+7s: failure with B without a charge counts", 7 * s, bo(k, fail, "B"), res{Charged: true, Wait: 8 * s, Count: 5}},
		{"t=+8s: refused, capped wait", 8 * s, bo(k, charge, ""), res{Wait: 7 * s, Count: 5}},
		{"t=+8s: clear forgets everything", 8 * s, bo(k, clear, ""), res{}},
		{"t=+8s: fresh after clear", 8 * s, bo(k, charge, "A"), res{Charged: true, Count: 1}},
		{"t=+9s: a failure", 9 * s, bo(k, fail, "C"), res{Charged: true, Wait: s, Count: 2}},
		{"t=+69s: forgotten after a quiet minute; attempt a1 charged", 69 * s, ba(k, charge, "a1"), res{Charged: true, Count: 1}},
		{"t=+69s: attempt a2 charged", 69 * s, ba(k, charge, "a2"), res{Charged: true, Count: 2}},
		{"t=+69s: a2 succeeds: its own charge is refunded, a1's stays", 69 * s, ba(k, succeed, "a2"), res{Count: 1}},
		{"t=+69s: a2's success reported again changes nothing", 69 * s, ba(k, succeed, "a2"), res{Count: 1}},
		{"t=+69s: a1 fails: confirmed, it stays counted", 69 * s, ba(k, confirm, "a1"), res{Count: 1}},
		{"t=+69s: a settled attempt cannot be refunded", 69 * s, ba(k, refund, "a1"), res{Count: 1}},
		{"t=+69s: a success without a pending attempt changes nothing", 69 * s, ba(k, succeed, ""), res{Count: 1}},
		{"t=+70s: attempt a3 charged", 70 * s, ba(k, charge, "a3"), res{Charged: true, Count: 2}},
		{"t=+70s: peek tells the wait and changes nothing", 70 * s, ba(k, peekb, ""), res{Wait: s, Count: 2}},
		{"t=+70s: a3 refunded", 70 * s, ba(k, refund, "a3"), res{Count: 1}},
		{"t=+70s: a3 refunded again changes nothing", 70 * s, ba(k, refund, "a3"), res{Count: 1}},
		{"t=+70s: peek of the same counter", 70 * s, ba(k, peekb, ""), res{Count: 1}},
		// A fallback's charges written back (authguard's write-back): a
		// failure that holds its attempt, once however often it is sent.
		{"t=+70s: charge w1 written back: counted, w1 held", 70 * s, ba(k, fail, "w1"), res{Charged: true, Wait: s, Count: 2}},
		{"t=+70s: w1 written back again counts nothing", 70 * s, ba(k, fail, "w1"), res{Wait: s, Count: 2}},
		{"t=+70s: w1's failure report settles it, counted once", 70 * s, ba(k, confirm, "w1"), res{Wait: s, Count: 2}},
		{"t=+70s: charge w2 written back", 70 * s, ba(k, fail, "w2"), res{Charged: true, Wait: 2 * s, Count: 3}},
		{"t=+70s: w2's success refunds it as a charge's would", 70 * s, ba(k, succeed, "w2"), res{Wait: s, Count: 2}},
	})
}

func testLogSteps(t *testing.T, newStore NewStore) {
	const k = "tg:t:login:ipspray:k"
	s := time.Second
	admit, add, remove, peek := authguard.LogAdmit, authguard.LogAdd, authguard.LogRemove, authguard.LogPeek
	runSteps(t, newStore, []step{
		{"t=0: a admitted", 0, lg(k, admit, "a", false), res{Charged: true, Count: 1}},
		{"t=1: b admitted", s, lg(k, admit, "b", false), res{Charged: true, Count: 2}},
		{"t=2: c refused (2 in 10s)", 2 * s, lg(k, admit, "c", false), res{Over: true, Count: 2}},
		{"t=2: a again is admitted, not added", 2 * s, lg(k, admit, "a", false), res{Count: 2}},
		{"t=2: peek c says over", 2 * s, lg(k, peek, "c", false), res{Over: true, Count: 2}},
		{"t=2: c with a solved CAPTCHA is recorded", 2 * s, lg(k, admit, "c", true), res{Charged: true, Over: true, Count: 3}},
		{"t=2: remove c", 2 * s, lg(k, remove, "c", false), res{Over: true, Count: 2}},
		{"t=5: d refused, a and b still in 10s", 5 * s, lg(k, admit, "d", false), res{Over: true, Count: 2}},
		{"t=9: admitting a again did not refresh it: add does", 9 * s, lg(k, add, "a", false), res{Count: 2}},
		{"t=11: b slid out of 10s, a (at 9) not: d refused by neither", 11 * s, lg(k, peek, "d", false), res{Count: 2}},
		{"t=19: a exactly 10s old is out of the window: d admitted", 19 * s, lg(k, admit, "d", false), res{Charged: true, Count: 3}},
		{"t=30: e refused by the minute window (b, a, d)", 30 * s, lg(k, admit, "e", false), res{Over: true, Count: 3}},
		{"t=30: add records e anyway, cap keeps 4", 30 * s, lg(k, add, "e", false), res{Charged: true, Over: true, Count: 4}},
		{"t=30: add f drops the oldest (cap is 4)", 30 * s, lg(k, add, "f", false), res{Charged: true, Over: true, Count: 4}},
		{"t=200: everything expired", 200 * s, lg(k, peek, "z", false), res{}},
		{"t=200: remove of a missing member is harmless", 200 * s, lg(k, remove, "z", false), res{}},
	})
}

func rt(key string, r authguard.RateLimit, a authguard.RateAction, cost int) authguard.Op {
	return &authguard.RateOp{Key: key, Action: a, Rate: r, Cost: cost}
}

func testRateSteps(t *testing.T, newStore NewStore) {
	take, peek, refund, credit := authguard.RateTake, authguard.RatePeek, authguard.RateRefund, authguard.RateCredit
	fixed, leaky, conv := Rates[0], Rates[4], Rates[5]
	const fk, lk, vk = "tg:t:api:rate:fixed", "tg:t:api:rate:leaky", "tg:t:api:rate:conversion"
	s := time.Second
	runSteps(t, newStore, []step{
		// The epoch is a whole multiple of 10s: a fixed window starts at t=0.
		{"fixed t=0: take 2 of 3", 0, rt(fk, fixed, take, 2), res{Charged: true, Remaining: 1, Reset: 10 * s}},
		{"fixed t=1: 2 more refused until the next window", s, rt(fk, fixed, take, 2), res{Over: true, Wait: 9 * s, Remaining: 1, Reset: 9 * s}},
		{"fixed t=1: peek 1 would go ahead, leaving 0", s, rt(fk, fixed, peek, 1), res{Remaining: 0, Reset: 9 * s}},
		{"fixed t=1: a cost above the limit never goes ahead", s, rt(fk, fixed, take, 4), res{Over: true, Remaining: 1, Reset: 9 * s}},
		{"fixed t=10: a new window, all 3", 10 * s, rt(fk, fixed, take, 3), res{Charged: true, Remaining: 0, Reset: 10 * s}},
		{"leaky t=0: first goes at once", 0, rt(lk, leaky, take, 1), res{Charged: true, Remaining: 2, Reset: s}},
		{"leaky t=0: second waits 1s in the queue", 0, rt(lk, leaky, take, 1), res{Charged: true, Wait: s, Remaining: 1, Reset: 2 * s}},
		{"leaky t=0: third waits 2s", 0, rt(lk, leaky, take, 1), res{Charged: true, Wait: 2 * s, Remaining: 0, Reset: 3 * s}},
		{"leaky t=0: fourth refused: the queue is full for 1s", 0, rt(lk, leaky, take, 1), res{Over: true, Wait: s, Remaining: 0, Reset: 3 * s}},
		{"leaky t=1: one left the queue: goes, after the 2 ahead", s, rt(lk, leaky, take, 1), res{Charged: true, Wait: 2 * s, Remaining: 0, Reset: 3 * s}},
		{"leaky t=1: delete forgets it", s, &authguard.DeleteOp{Key: lk}, res{}},
		{"leaky t=1: a fresh queue", s, rt(lk, leaky, take, 1), res{Charged: true, Remaining: 2, Reset: s}},
		{"fixed t=10: delete forgets the window", 10 * s, &authguard.DeleteOp{Key: fk}, res{}},
		{"fixed t=10: all 3 again", 10 * s, rt(fk, fixed, take, 3), res{Charged: true, Remaining: 0, Reset: 10 * s}},
		{"t=10: delete of a key that holds nothing is harmless", 10 * s, &authguard.DeleteOp{Key: "tg:t:api:rate:none"}, res{}},
	})
	// Conversion: windows of 10s from t=0; judged from 3 sends, at least 50%
	// verified. A store of its own: the steps above ended at t=10.
	runSteps(t, newStore, []step{
		{"conversion t=0: a send is counted", 0, rt(vk, conv, take, 1), res{Charged: true, Remaining: 1, Reset: 20 * s}},
		{"conversion t=1: a second", s, rt(vk, conv, take, 1), res{Charged: true, Remaining: 2, Reset: 19 * s}},
		{"conversion t=2: a third: now enough to judge", 2 * s, rt(vk, conv, take, 1), res{Charged: true, Remaining: 3, Reset: 18 * s}},
		{"conversion t=2: a fourth refused: none of 3 verified", 2 * s, rt(vk, conv, take, 1), res{Over: true, Remaining: 3, Reset: 18 * s}},
		{"conversion t=3: one verified", 3 * s, rt(vk, conv, credit, 1), res{Remaining: 3, Reset: 17 * s}},
		{"conversion t=3: 1 of 3 is below half: peek says refused", 3 * s, rt(vk, conv, peek, 1), res{Over: true, Remaining: 3, Reset: 17 * s}},
		{"conversion t=3: a second verified", 3 * s, rt(vk, conv, credit, 1), res{Remaining: 3, Reset: 17 * s}},
		{"conversion t=3: 2 of 3: the send goes", 3 * s, rt(vk, conv, take, 1), res{Charged: true, Remaining: 4, Reset: 17 * s}},
		{"conversion t=3: given back", 3 * s, rt(vk, conv, refund, 1), res{Remaining: 3, Reset: 17 * s}},
		{"conversion t=15: the first window weighs half: 1.5 sent, below 3", 15 * s, rt(vk, conv, take, 1), res{Charged: true, Remaining: 2, Reset: 15 * s}},
		{"t=15: fixed: take 2 of 3", 15 * s, rt(fk, fixed, take, 2), res{Charged: true, Remaining: 1, Reset: 5 * s}},
		{"t=15: a credit on another algorithm changes nothing", 15 * s, rt(fk, fixed, credit, 1), res{Remaining: 1, Reset: 5 * s}},
		{"conversion t=40: all forgotten: a send would be the first", 40 * s, rt(vk, conv, peek, 1), res{Remaining: 1, Reset: 0}},
	})
}

func testRateRefundSteps(t *testing.T, newStore NewStore) {
	take, refund := authguard.RateTake, authguard.RateRefund
	fixed, log, counter, token, leaky := Rates[0], Rates[1], Rates[2], Rates[3], Rates[4]
	const fk, sk, ck, tk, lk = "tg:t:api:refund:fixed", "tg:t:api:refund:log", "tg:t:api:refund:counter", "tg:t:api:refund:token", "tg:t:api:refund:leaky"
	s, ms := time.Second, time.Millisecond
	runSteps(t, newStore, []step{
		// Fixed windows of 10s from t=0, limit 3.
		{"fixed t=0: take 2", 0, rt(fk, fixed, take, 2), res{Charged: true, Remaining: 1, Reset: 10 * s}},
		{"fixed t=1: refund 1", s, rt(fk, fixed, refund, 1), res{Remaining: 2, Reset: 9 * s}},
		{"fixed t=1: a refund above the limit gives back nothing", s, rt(fk, fixed, refund, 4), res{Remaining: 2, Reset: 9 * s}},
		{"fixed t=2: take 2 fills the window", 2 * s, rt(fk, fixed, take, 2), res{Charged: true, Remaining: 0, Reset: 8 * s}},
		{"fixed t=2: refund 3: empty, not below", 2 * s, rt(fk, fixed, refund, 3), res{Remaining: 3}},
		{"fixed t=2: refund of an empty key", 2 * s, rt(fk, fixed, refund, 1), res{Remaining: 3}},
		{"fixed t=9: take 3", 9 * s, rt(fk, fixed, take, 3), res{Charged: true, Remaining: 0, Reset: s}},
		{"fixed t=10: the window is over: nothing to give back", 10 * s, rt(fk, fixed, refund, 3), res{Remaining: 3}},
		{"fixed t=10: a fresh window", 10 * s, rt(fk, fixed, take, 3), res{Charged: true, Remaining: 0, Reset: 10 * s}},
		// A log of the last 10s, limit 3.
		{"log t=0: take 1", 0, rt(sk, log, take, 1), res{Charged: true, Remaining: 2, Reset: 10 * s}},
		{"log t=2: take 2", 2 * s, rt(sk, log, take, 2), res{Charged: true, Remaining: 0, Reset: 10 * s}},
		{"log t=2: refund 2: the entry of t=0 is left", 2 * s, rt(sk, log, refund, 2), res{Remaining: 2, Reset: 8 * s}},
		{"log t=4: take 1", 4 * s, rt(sk, log, take, 1), res{Charged: true, Remaining: 1, Reset: 10 * s}},
		{"log t=5: refund 1: the newest entry goes", 5 * s, rt(sk, log, refund, 1), res{Remaining: 2, Reset: 5 * s}},
		{"log t=5: take 2", 5 * s, rt(sk, log, take, 2), res{Charged: true, Remaining: 0, Reset: 10 * s}},
		{"log t=11: t=0 has left; one entry of t=5 goes", 11 * s, rt(sk, log, refund, 1), res{Remaining: 2, Reset: 4 * s}},
		{"log t=11: refund 2: only 1 is left to go", 11 * s, rt(sk, log, refund, 2), res{Remaining: 3}},
		{"log t=11: all 3", 11 * s, rt(sk, log, take, 3), res{Charged: true, Remaining: 0, Reset: 10 * s}},
		// Windows of 10s, limit 4: prev×(10−elapsed)/10 + curr + cost ≤ 4.
		{"counter t=0: take 3", 0, rt(ck, counter, take, 3), res{Charged: true, Remaining: 1, Reset: 20 * s}},
		{"counter t=5: take 1", 5 * s, rt(ck, counter, take, 1), res{Charged: true, Remaining: 0, Reset: 15 * s}},
		{"counter t=5: refund 1", 5 * s, rt(ck, counter, refund, 1), res{Remaining: 1, Reset: 15 * s}},
		// Rolled over: prev 3 → 2; 2×8/10 = 1.6, so 2 remain; held until
		// the window of t=0 has left, at t=20.
		{"counter t=12: refund 1 comes off the previous window", 12 * s, rt(ck, counter, refund, 1), res{Remaining: 2, Reset: 8 * s}},
		{"counter t=12: take 1", 12 * s, rt(ck, counter, take, 1), res{Charged: true, Remaining: 1, Reset: 18 * s}},
		// curr 1 → 0, prev 2 → 1: 1×8/10 = 0.8, so 3 remain.
		{"counter t=12: refund 2: the current window first", 12 * s, rt(ck, counter, refund, 2), res{Remaining: 3, Reset: 8 * s}},
		{"counter t=15: refund 4: empty, not below", 15 * s, rt(ck, counter, refund, 4), res{Remaining: 4}},
		// A token bucket of 3, one token a second.
		{"token t=0: take 3", 0, rt(tk, token, take, 3), res{Charged: true, Remaining: 0, Reset: 3 * s}},
		{"token t=0.5: refund 1: 1.5 tokens", 500 * ms, rt(tk, token, refund, 1), res{Remaining: 1, Reset: 1500 * ms}},
		{"token t=0.5: take 1", 500 * ms, rt(tk, token, take, 1), res{Charged: true, Remaining: 0, Reset: 2500 * ms}},
		{"token t=2: refund 2: full, not more", 2 * s, rt(tk, token, refund, 2), res{Remaining: 3}},
		{"token t=2: the whole burst", 2 * s, rt(tk, token, take, 3), res{Charged: true, Remaining: 0, Reset: 3 * s}},
		// A queue of 3, one unit leaving a second.
		{"leaky t=0: take 1 goes at once", 0, rt(lk, leaky, take, 1), res{Charged: true, Remaining: 2, Reset: s}},
		{"leaky t=0: take 2 waits 1s", 0, rt(lk, leaky, take, 2), res{Charged: true, Wait: s, Remaining: 0, Reset: 3 * s}},
		{"leaky t=0: refund 2: they leave the queue", 0, rt(lk, leaky, refund, 2), res{Remaining: 2, Reset: s}},
		{"leaky t=0.5: take 1 waits 0.5s", 500 * ms, rt(lk, leaky, take, 1), res{Charged: true, Wait: 500 * ms, Remaining: 1, Reset: 1500 * ms}},
		{"leaky t=0.5: refund 3: empty, not below", 500 * ms, rt(lk, leaky, refund, 3), res{Remaining: 3}},
		{"leaky t=0.5: a refund above the limit gives back nothing", 500 * ms, rt(lk, leaky, refund, 4), res{Remaining: 3}},
	})
}

func testBatchOrder(t *testing.T, newStore NewStore) {
	clock := testclock.New(time.Time{})
	s := newStore(t, clock)
	defer s.Close()
	const k = "tg:t:login:acct:batch"
	ops := []authguard.Op{bo(k, charge, ""), bo(k, charge, ""), bo(k, charge, ""), bo(k, charge, ""), bo(k, refund, ""), lg("tg:t:login:ipspray:b", authguard.LogAdmit, "x", false)}
	got, err := s.Do(context.Background(), ops)
	if err != nil {
		t.Fatal(err)
	}
	want := []res{{Charged: true, Count: 1}, {Charged: true, Count: 2}, {Wait: time.Second, Count: 2}, {Wait: time.Second, Count: 2}, {Count: 1}, {Charged: true, Count: 1}}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("op %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func testIndependentKeys(t *testing.T, newStore NewStore) {
	clock := testclock.New(time.Time{})
	s := newStore(t, clock)
	defer s.Close()
	ctx := context.Background()
	for range 3 {
		if _, err := s.Do(ctx, []authguard.Op{bo("tg:t:login:acct:one", charge, "")}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Do(ctx, []authguard.Op{bo("tg:t:login:acct:two", charge, ""), bo("tg:t:otp_verify:acct:one", charge, "")})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r != (res{Charged: true, Count: 1}) {
			t.Errorf("op %d on a fresh key: got %+v, want a first charge", i, r)
		}
	}
}

func testConcurrentCharges(t *testing.T, newStore NewStore) {
	clock := testclock.New(time.Time{})
	s := newStore(t, clock)
	defer s.Close()
	const workers, each = 50, 10
	var mu sync.Mutex
	charged := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				res, err := s.Do(context.Background(), []authguard.Op{bo("tg:t:login:acct:race", charge, "")})
				if err != nil {
					t.Error(err)
					return
				}
				if res[0].Charged {
					mu.Lock()
					charged++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	// At a frozen clock exactly Free attempts go ahead.
	if want := Backoff.Free; charged != want {
		t.Errorf("%d concurrent charges went ahead, want exactly %d", charged, want)
	}
}

// reference is the model the random test compares a store with: a map of
// states with expiry, driven by authguard.Apply.
type reference struct {
	state   map[string]any
	expires map[string]time.Time
}

func (r *reference) do(op authguard.Op, now time.Time) authguard.Result {
	k := op.StoreKey()
	var st any
	if exp, ok := r.expires[k]; ok && now.Before(exp) {
		st = r.state[k]
	}
	next, ttl, res := authguard.Apply(op, st, now)
	if ttl <= 0 || next == nil {
		delete(r.state, k)
		delete(r.expires, k)
	} else {
		r.state[k], r.expires[k] = next, now.Add(ttl)
	}
	return res
}

// RandomOps returns n random operations over a few keys of each kind, for
// property tests that compare stores.
func RandomOps(rng *rand.Rand, n int) []authguard.Op {
	return randomOps(rng, n, false)
}

// randomOps is RandomOps; wide draws from more members, fingerprints and
// attempts than a log, a counter's seen list (backoff.MaxSeen) and its
// pending list (backoff.MaxPending) hold, so their caps are reached too.
func randomOps(rng *rand.Rand, n int, wide bool) []authguard.Op {
	ops := make([]authguard.Op, n)
	members := []string{"a", "b", "c", "d", "e"}
	fps := []string{"", "", "F1", "F2", "F3"}
	attempts := []string{"", "A1", "A2", "A3", "A4"}
	if wide {
		members = append(members, "f", "g", "h")
		for i := 4; i <= 11; i++ {
			fps = append(fps, fmt.Sprint("F", i))
			attempts = append(attempts, fmt.Sprint("A", i+1))
		}
	}
	for i := range ops {
		key := fmt.Sprint(rng.IntN(3))
		if rng.IntN(40) == 0 { // a reset of any key
			kinds := []string{"acct", "ipspray", "iprate"}
			ops[i] = &authguard.DeleteOp{Key: "tg:t:login:" + kinds[rng.IntN(len(kinds))] + ":" + key}
			continue
		}
		if rng.IntN(4) == 0 { // a rate limit; each key has one algorithm
			alg := rng.IntN(len(Rates))
			r := Rates[alg]
			cost := 1 + rng.IntN(2)
			switch rng.IntN(10) {
			case 0:
				cost = 0 // never allowed
			case 1:
				cost = r.Limit + 1 // never allowed
			case 2:
				cost = r.Limit
			}
			action := authguard.RateTake
			switch rng.IntN(5) {
			case 0:
				action = authguard.RatePeek
			case 1:
				action = authguard.RateRefund
			case 2:
				action = authguard.RateCredit // a verification on a conversion; a peek elsewhere
			}
			ops[i] = rt(fmt.Sprintf("tg:t:api:rate:%d:%s", alg, key), r, action, cost)
			continue
		}
		switch rng.IntN(3) {
		case 0:
			op := bo("tg:t:login:acct:"+key, authguard.BackoffAction(1+rng.IntN(7)), fps[rng.IntN(len(fps))]).(*authguard.BackoffOp)
			op.Attempt = attempts[rng.IntN(len(attempts))]
			ops[i] = op
		case 1:
			ops[i] = lg("tg:t:login:ipspray:"+key, authguard.LogAction(1+rng.IntN(5)), members[rng.IntN(len(members))], rng.IntN(4) == 0)
		default:
			ops[i] = rt("tg:t:login:iprate:"+key, Rates[3], authguard.RateTake, 1)
		}
	}
	return ops
}

// RandomStep returns how far to move the clock before the next batch: often
// not at all, sometimes a little, now and then past every window.
func RandomStep(rng *rand.Rand) time.Duration {
	switch rng.IntN(10) {
	case 0, 1, 2, 3:
		return 0
	case 9:
		return time.Duration(rng.IntN(120_000)) * time.Millisecond
	default:
		return time.Duration(rng.IntN(3000)) * time.Millisecond
	}
}

// boundaryStep moves the clock in whole half-seconds, so that it lands
// exactly where a window, a delay or a forget period of the suite's
// policies ends (each is a whole number of seconds) as often as near it.
func boundaryStep(rng *rand.Rand) time.Duration {
	switch rng.IntN(10) {
	case 0, 1, 2:
		return 0
	case 3:
		return time.Millisecond
	case 9:
		return time.Duration(1+rng.IntN(6)) * 10 * time.Second
	default:
		return time.Duration(1+rng.IntN(10)) * time.Second
	}
}

// attemptOps returns n backoff ops on two account counters, each on behalf
// of one of a few attempts: charges, and their settlements in any order
// (refund, confirm, succeed), with failures no charge held. Interleaved
// attempts settled out of order are how an owner's success could move an
// attacker's wait (backoff.Refund); the general mix draws them too rarely
// to catch a twin that gets it wrong.
func attemptOps(rng *rand.Rand, n int) []authguard.Op {
	ops := make([]authguard.Op, n)
	actions := []authguard.BackoffAction{
		authguard.BackoffCharge, authguard.BackoffCharge, authguard.BackoffCharge,
		authguard.BackoffRefund, authguard.BackoffConfirm, authguard.BackoffConfirm,
		authguard.BackoffSucceed, authguard.BackoffSucceed, authguard.BackoffFail, authguard.BackoffPeek,
	}
	for i := range ops {
		op := bo(fmt.Sprint("tg:t:login:acct:", rng.IntN(2)), actions[rng.IntN(len(actions))], "").(*authguard.BackoffOp)
		if rng.IntN(8) > 0 {
			op.Attempt = fmt.Sprint("A", 1+rng.IntN(4))
		}
		ops[i] = op
	}
	return ops
}

// attemptStep moves the clock by about one of Backoff's delays (1 s, 2 s,
// 4 s) or less, so that charges go ahead past free, several are pending at
// once, and a later op lands inside the wait a settlement left.
func attemptStep(rng *rand.Rand) time.Duration {
	switch rng.IntN(3) {
	case 0:
		return 0
	case 1:
		return time.Duration(rng.IntN(1000)) * time.Millisecond
	}
	return time.Duration(1000+rng.IntN(3000)) * time.Millisecond
}

func testRandom(t *testing.T, newStore NewStore) {
	if testing.Short() {
		t.Skip("60 random sequences of 300 operations (seconds on a scripted store): runs in the full make test, not under -short")
	}
	t.Run("AnyTime", func(t *testing.T) {
		testRandomWith(t, newStore, RandomStep, func(rng *rand.Rand, n int) []authguard.Op { return randomOps(rng, n, false) })
	})
	t.Run("AtBoundariesPastCaps", func(t *testing.T) {
		testRandomWith(t, newStore, boundaryStep, func(rng *rand.Rand, n int) []authguard.Op { return randomOps(rng, n, true) })
	})
	t.Run("AttemptsSettledOutOfOrder", func(t *testing.T) { testRandomWith(t, newStore, attemptStep, attemptOps) })
}

func testRandomWith(t *testing.T, newStore NewStore, next func(*rand.Rand) time.Duration, ops func(*rand.Rand, int) []authguard.Op) {
	const seqs, length = 20, 300
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 42))
		clock := testclock.New(time.Time{})
		s := newStore(t, clock)
		ref := &reference{state: map[string]any{}, expires: map[string]time.Time{}}
		for i := 0; i < length; {
			clock.Advance(next(rng))
			batch := ops(rng, 1+rng.IntN(4))
			i += len(batch)
			got, err := s.Do(context.Background(), batch)
			if err != nil {
				t.Fatalf("seq %d: Do: %v", seq, err)
			}
			for j, op := range batch {
				if want := ref.do(op, clock.Now()); got[j] != want {
					t.Fatalf("seq %d op %d (%T %+v) at %v: store %+v, reference %+v", seq, i, op, op, clock.Now().Sub(testclock.Epoch), got[j], want)
				}
			}
		}
		s.Close()
	}
}
