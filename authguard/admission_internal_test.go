package authguard

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

// recordStore holds records (a peek of another member is Over when the
// record is there) and answers peeks of them only. It holds its first
// call until open is closed, and keeps the ops of every call.
type recordStore struct {
	there    map[string]bool
	entered  chan struct{}
	open     chan struct{}
	first    atomic.Bool
	inflight atomic.Int64
	most     atomic.Int64 // the most calls at once
	mu       sync.Mutex
	calls    [][]Op
}

func (s *recordStore) Do(_ context.Context, ops []Op) ([]Result, error) {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	if s.first.CompareAndSwap(false, true) {
		s.entered <- struct{}{}
		<-s.open
	}
	s.mu.Lock()
	s.calls = append(s.calls, ops)
	s.mu.Unlock()
	res := make([]Result, len(ops))
	for i, op := range ops {
		l, ok := op.(*LogOp)
		if !ok || l.Action != LogPeek {
			return nil, fmt.Errorf("test: %T %v is no peek", op, op)
		}
		res[i].Over = s.there[l.Key]
	}
	return res, nil
}

func (s *recordStore) Ping(context.Context) error { return nil }
func (s *recordStore) Close() error               { return nil }

// An attacker who rotates networks during a flood makes each of his
// checks one the engine cannot rule out, as the owner's is on an instance
// that never saw her record. What he can force is bounded: the look-ups
// run one round at a time, in one call slot (here the slot kept for
// priority calls, every other being taken), and the checks that arrive
// meanwhile share the rounds that wait, the owner's included, at most
// lookupRoundKeys records a round and lookupRounds rounds waiting; a
// check that finds them all full is told so at once (and is shed, neither
// answered from memory nor run in the store). Each call's ops are of one
// record window, 1, 4, 16 or 64 of them, so a Redis store compiles few
// shapes for them.
func TestFlood_AnAttackersFreshNetworksShareOneLookUpARoundWithTheOwner(t *testing.T) {
	netWindows := spraydetect.Windows{{Length: 90 * 24 * time.Hour, Limit: 1}}
	otherWindows := spraydetect.Windows{{Length: 30 * 24 * time.Hour, Limit: 1}} // another flow's records
	record := func(key string, w spraydetect.Windows) *plan {
		return &plan{ops: []Op{&LogOp{Key: key, Action: LogPeek, Member: "?", Windows: w}}, meta: []meta{{role: roleVerified}}}
	}
	st := &recordStore{there: map[string]bool{"net:owner": true, "other:2": true}, entered: make(chan struct{}, 1), open: make(chan struct{})}
	e := &Engine{store: st, now: time.Now, wait: time.Minute, slots: make(chan struct{}, 3), priority: make(chan struct{}, 1),
		records: newRecall(1 << 20), lookups: lookups{absent: newRecall(1 << 20)}}
	for range cap(e.slots) {
		e.slots <- struct{}{} // the flood holds every ordinary slot
	}
	var wg sync.WaitGroup
	var looked atomic.Int64
	lookUp := func(p *plan) {
		wg.Go(func() {
			if e.lookUp(p) {
				looked.Add(1)
			}
		})
	}
	waiting := func() (n int) {
		e.lookups.mu.Lock()
		defer e.lookups.mu.Unlock()
		for _, r := range e.lookups.waiting {
			n += len(r.ops)
		}
		return n
	}
	gathered := func(want int) {
		t.Helper()
		for i := 0; waiting() < want && i < 10_000_000; i++ {
			runtime.Gosched()
		}
		if n := waiting(); n != want {
			t.Fatalf("%d records wait to be read, want %d", n, want)
		}
	}
	lookUp(record("net:first", netWindows))
	<-st.entered // the first round is in the store, in the kept slot
	if n := len(e.priority); n != 1 {
		t.Errorf("%d kept slots taken by the round, want 1", n)
	}
	// The next round: the owner's network among 60 of the attacker's, and
	// 3 records of another window.
	keys := []string{"net:owner"}
	for i := range 60 {
		keys = append(keys, fmt.Sprint("net:attacker", i))
	}
	for _, k := range keys {
		lookUp(record(k, netWindows))
	}
	for i := range 3 {
		lookUp(record(fmt.Sprint("other:", i), otherWindows))
	}
	gathered(lookupRoundKeys)
	// And every round after it.
	for i := range (lookupRounds - 1) * lookupRoundKeys {
		k := fmt.Sprint("net:rotated", i)
		keys = append(keys, k)
		lookUp(record(k, netWindows))
	}
	gathered(lookupRounds * lookupRoundKeys)
	full := make(chan bool, 1) // what a look-up of one more record says
	go func() { full <- e.lookUp(record("net:one-too-many", netWindows)) }()
	var joined bool
wait:
	for i := 0; i < 10_000_000; i++ {
		select {
		case joined = <-full:
			break wait
		default:
			if joined = waiting() > lookupRounds*lookupRoundKeys; joined {
				break wait
			}
			runtime.Gosched()
		}
	}
	if joined {
		t.Error("a look-up joined when every round was full")
	}
	close(st.open)
	wg.Wait()

	if n, want := looked.Load(), int64(1+len(keys)+3); n != want {
		t.Errorf("%d look-ups done, want every one of %d", n, want)
	}
	if n := st.most.Load(); n != 1 {
		t.Errorf("%d look-ups in the store at once, want 1", n)
	}
	var sizes []int
	for _, c := range st.calls {
		sizes = append(sizes, len(c))
	}
	slices.Sort(sizes)
	want := []int{1, 4}
	for range lookupRounds {
		want = append(want, 64)
	}
	if !slices.Equal(sizes, want) {
		t.Errorf("the store calls carried %v ops, want %v: the first round, the next one's 61 networks padded to 64 and 3 records of another window padded to 4, and 15 rounds of 64", sizes, want)
	}
	ms := time.Now().UnixMilli()
	for _, tt := range []struct {
		key            string
		known, missing bool
	}{
		{"net:owner", true, false},
		{"other:2", true, false},
		{"net:attacker7", false, true},
		{"other:0", false, true},
		{"net:first", false, true},
		{"net:rotated959", false, true},
		{"net:one-too-many", false, false},
	} {
		if known, missing := e.records.remembers(tt.key, ms), e.lookups.absent.remembers(tt.key, ms); known != tt.known || missing != tt.missing {
			t.Errorf("%s: remembered as there %v, as missing %v; want %v, %v", tt.key, known, missing, tt.known, tt.missing)
		}
	}
	if n := len(e.priority); n != 0 {
		t.Errorf("%d kept slots taken after the look-ups, want 0", n)
	}
}
