package authguard

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// TestWriteBackOf_QueuesCopiesNotThePlansOps: what the write-back queues
// while the store is down is a copy of each op, never a pointer into its
// plan's planOps, which would keep the whole buffer for as long as the op
// waits.
func TestWriteBackOf_QueuesCopiesNotThePlansOps(t *testing.T) {
	p := newPlan()
	tests := []struct {
		name string
		op   Op
		res  Result
	}{
		{"a settled backoff", setBackoff(p.backoffOp(), BackoffSucceed), Result{}},
		{"a failure counted", setBackoff(p.backoffOp(), BackoffFail), Result{Charged: true}},
		{"a charge", setBackoff(p.backoffOp(), BackoffCharge), Result{Charged: true}},
		{"a log add", setLog(p.logOp(), LogAdd), Result{}},
		{"a log removal", setLog(p.logOp(), LogRemove), Result{}},
		{"a log admission", setLog(p.logOp(), LogAdmit), Result{Charged: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := writeBackOf(tt.op, tt.res)
			if got == nil {
				t.Fatal("writeBackOf = nil, want an op")
			}
			if got == tt.op {
				t.Errorf("writeBackOf returned the plan's op %p itself, want a copy", tt.op)
			}
			if got.StoreKey() != tt.op.StoreKey() {
				t.Errorf("the copy's key = %q, want %q", got.StoreKey(), tt.op.StoreKey())
			}
		})
	}
}

func setBackoff(o *BackoffOp, a BackoffAction) Op {
	*o = BackoffOp{Key: "k:backoff", Action: a, Attempt: "a"}
	return o
}

func setLog(o *LogOp, a LogAction) Op {
	*o = LogOp{Key: "k:log", Action: a, Member: "m"}
	return o
}

// queuedKeys is what w queues, key by key in carry order: each key's
// ops as action words (with the attempt or member).
func queuedKeys(w *writeBack) []string {
	var out []string
	for c := 1; c >= 0; c-- {
		for k := w.lists[c].head; k != nil; k = k.next {
			s := k.key + ":"
			for _, op := range k.ops {
				switch op := op.(type) {
				case *BackoffOp:
					s += " " + op.Action.String() + "(" + op.Attempt + ")"
				case *LogOp:
					s += " " + op.Action.String() + "(" + op.Member + ")"
				}
			}
			out = append(out, s)
		}
	}
	return out
}

var wbPolicy = backoff.Policy{Free: 5}

func wbFail(key, attempt string, count int) ([]Op, []Result) {
	return []Op{&BackoffOp{Key: key, Action: BackoffCharge, Policy: wbPolicy, Attempt: attempt}}, []Result{{Charged: true, Count: count}}
}

func wbSettle(key string, a BackoffAction, attempt string, count int) ([]Op, []Result) {
	return []Op{&BackoffOp{Key: key, Action: a, Policy: wbPolicy, Attempt: attempt}}, []Result{{Count: count}}
}

func wbAdd(key, member string, count int) ([]Op, []Result) {
	return []Op{&LogOp{Key: key, Action: LogAdmit, Member: member, Windows: spraydetect.Windows{{Length: time.Hour, Limit: 10}}}}, []Result{{Charged: true, Count: count}}
}

// One entry per key: ops on a key already queued merge when the store
// then holds the same, so that what is queued does not grow with the
// calls on one key but with what it must write.
func TestWriteBack_MergesOpsOnAKeyQueuedAlready(t *testing.T) {
	var w writeBack
	w.add(wbFail("acct", "a1", 1))
	w.add(wbSettle("acct", BackoffConfirm, "a1", 1)) // a failure for good
	w.add(wbFail("acct", "a2", 2))
	w.add(wbSettle("acct", BackoffSucceed, "a2", 1)) // refunded: nothing
	w.add(wbFail("acct", "a3", 2))                   // still pending
	w.add(wbSettle("acct", BackoffConfirm, "a0", 2)) // an attempt written before
	w.add(wbAdd("log", "m1", 1))
	w.add(wbAdd("log", "m2", 2))
	w.add([]Op{&LogOp{Key: "log", Action: LogRemove, Member: "m1"}}, []Result{{Count: 1}})
	want := []string{
		"acct: fail() fail(a3) confirm(a0)",
		"log: remove(m1) add(m2)",
	}
	if got := queuedKeys(&w); !slices.Equal(got, want) {
		t.Errorf("queued:\n%q\nwant\n%q", got, want)
	}
	if st := w.stats(); st.Queued != 5 || st.Merged != 4 {
		t.Errorf("%+v, want 5 queued and 4 merged", st)
	}
}

// Past its bound the queue sheds the ordinary keys queued least recently
// first, and a key that holds its subject back (a counter at Free, a log at
// a limit, a key the recall remembers) only when no ordinary one is left.
func TestWriteBack_ShedsKeysThatHoldNobodyBackFirst(t *testing.T) {
	w := writeBack{recall: newRecall(1 << 20)}
	w.recall.put(recalled{key: "remembered", count: 9, expires: 1 << 62})
	for i := range 4 {
		w.add(wbFail("victim", fmt.Sprint("v", i), i+1)) // below Free
	}
	w.add(wbFail("held", "h", 5))
	w.add(wbFail("remembered", "r", 1))
	w.add(wbAdd("full-log", "m", 10))
	w.limit = w.bytes + 4000 // room for a dozen more keys
	for i := range 200 {
		w.add(wbFail(fmt.Sprint("fresh", i), "f", 1))
		if i == 100 {
			w.add(wbFail("victim", "v4", 5)) // now at Free: held from here
		}
	}
	st := w.stats()
	if st.Dropped == 0 || st.Lost != 0 {
		t.Errorf("%+v, want ordinary keys dropped and nothing lost", st)
	}
	for _, key := range []string{"held", "remembered", "full-log", "victim"} {
		if k := w.keys[key]; k == nil || !k.held {
			t.Errorf("%s: %+v, want it queued as held", key, k)
		}
	}
	// The victim's first 4 failures were shed with his entry before his
	// 5th: his new entry carries the fallback's count, 5.
	if got, want := queuedKeys(&w)[3], "victim: fail() fail() fail() fail() fail(v4)"; got != want {
		t.Errorf("the victim's entry: %q, want %q", got, want)
	}
	if w.bytes > w.limit {
		t.Errorf("%d bytes queued, past the bound of %d", w.bytes, w.limit)
	}
	// With only held keys left, a new one sheds the one queued least
	// recently, counted as lost.
	var held int64
	for k := w.lists[1].head; k != nil; k = k.next {
		held += k.bytes
	}
	w.limit = held
	w.shedPast(nil)
	w.add(wbAdd("full-lo2", "m", 10))
	if st := w.stats(); st.Lost != 1 || w.keys["held"] != nil || w.keys["full-lo2"] == nil {
		t.Errorf("%+v, want the held key queued first lost (1 op) for the new one", st)
	}
}

// A carry the store did not answer puts its ops back first, before what
// was queued for their keys since; a written one leaves nothing, and no
// bytes, behind.
func TestWriteBack_ACarryThatFailedGoesBackFirst(t *testing.T) {
	var w writeBack
	for i := range 70 {
		w.add(wbFail("acct", fmt.Sprint("a", i), i+1))
	}
	w.add(wbAdd("log", "m1", 1))
	ops := w.carry()
	if len(ops) != writeBackCarry {
		t.Fatalf("carried %d ops, want %d", len(ops), writeBackCarry)
	}
	if w.carry() != nil {
		t.Fatal("a second carry while one is in flight")
	}
	w.add(wbAdd("log", "m2", 2))
	w.settle(ops, false, false)
	keys := queuedKeys(&w)
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "acct: fail(a0) fail(a1)") || keys[1] != "log: add(m1) add(m2)" {
		t.Errorf("after a failed carry: %q", keys)
	}
	for w.stats().Queued > 0 {
		w.settle(w.carry(), true, false)
	}
	if st := w.stats(); st.Written != 72 || st.Bytes != 0 || w.keys != nil {
		t.Errorf("%+v, keys %v: want all 72 written and nothing left", st, w.keys)
	}
}

// The bound holds the queue's heap: filled far past it with fresh
// subjects, what it keeps costs no more than the bound and a fifth.
func TestWriteBack_TheBoundHoldsItsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const limit = 8 << 20
	w := &writeBack{limit: limit}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 60_000 { // 3 × 8 MiB's worth
		w.add([]Op{
			&BackoffOp{Key: fmt.Sprintf("tg:default:login:acct:%022d", i), Action: BackoffCharge, Policy: wbPolicy, Attempt: fmt.Sprintf("%040d", i)},
			&LogOp{Key: fmt.Sprintf("tg:default:login:ipspray:%022d", i), Action: LogAdmit, Member: fmt.Sprintf("%022d", i)},
			&LogOp{Key: fmt.Sprintf("tg:default:login:ipfail:%022d", i), Action: LogAdmit, Member: fmt.Sprintf("%040d", i)},
		}, []Result{{Charged: true, Count: 1}, {Charged: true, Count: 1}, {Charged: true, Count: 1}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	st := w.stats()
	t.Logf("%d keys, %d ops queued, %d dropped; %d bytes accounted, %d of heap", len(w.keys), st.Queued, st.Dropped, st.Bytes, heap)
	if st.Bytes > limit || st.Dropped == 0 {
		t.Errorf("%+v: want the bound of %d reached and kept", st, limit)
	}
	if heap > limit*6/5 {
		t.Errorf("the queue holds %d bytes of heap, more than its bound of %d and a fifth", heap, limit)
	}
	runtime.KeepAlive(w)
}

// freshChecks are n fresh checks' ops to write back (an account's charge,
// two address logs' admissions), with the fallback's results.
func freshChecks(n int) ([][]Op, []Result) {
	out := make([][]Op, n)
	for i := range out {
		out[i] = []Op{
			&BackoffOp{Key: fmt.Sprintf("tg:default:login:acct:%022d", i), Action: BackoffCharge, Policy: wbPolicy, Attempt: fmt.Sprintf("%040d", i)},
			&LogOp{Key: fmt.Sprintf("tg:default:login:ipspray:%022d", i), Action: LogAdmit, Member: fmt.Sprintf("%022d", i)},
			&LogOp{Key: fmt.Sprintf("tg:default:login:ipfail:%022d", i), Action: LogAdmit, Member: fmt.Sprintf("%040d", i)},
		}
	}
	return out, []Result{{Charged: true, Count: 1}, {Charged: true, Count: 1}, {Charged: true, Count: 1}}
}

// A fresh check's ops queued during an outage flood, the queue at its
// bound: each sheds the keys queued least recently.
func BenchmarkWriteBack_AddAtTheBound(b *testing.B) {
	checks, res := freshChecks(1 << 16)
	w := &writeBack{limit: 4 << 20}
	for _, ops := range checks {
		w.add(ops, res)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		w.add(checks[i&(1<<16-1)], res)
	}
}

// A carry of 64 ops out of a queue at its bound, written.
func BenchmarkWriteBack_CarryAtTheBound(b *testing.B) {
	checks, res := freshChecks(1 << 16)
	w := &writeBack{limit: 4 << 20}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if w.stats().Queued < writeBackCarry {
			b.StopTimer()
			for j := range 22 {
				w.add(checks[(i+j)&(1<<16-1)], res)
			}
			b.StartTimer()
		}
		w.settle(w.carry(), true, false)
	}
}
