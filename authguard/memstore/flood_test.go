package memstore_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// floodSize returns the number of checks TOLLGATE_FLOOD names, and skips
// the test when it is unset. The flood measurements are not correctness
// tests: they measure what a flood of fresh subjects costs in memory, for
// BENCHMARKS.md, one process per measurement (peak RSS is the process's):
//
//	TOLLGATE_FLOOD=10000000 go test -run '^TestFlood_MainStore$' -v -timeout 2h ./authguard/memstore/
//	TOLLGATE_FLOOD=10000000 go test -run '^TestFlood_FallbackStore$' -v -timeout 2h ./authguard/memstore/
func floodSize(t *testing.T) int {
	v := os.Getenv("TOLLGATE_FLOOD")
	if v == "" {
		t.Skip("a measurement, not a test: set TOLLGATE_FLOOD=10000000 to run it")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("TOLLGATE_FLOOD=%q: want a number of checks", v)
	}
	return n
}

// TestFlood_MainStore floods an engine on a memory store of the default
// size with checks on fresh accounts from fresh IPv6 /64s, each in a /48
// of its own.
func TestFlood_MainStore(t *testing.T) {
	n := floodSize(t)
	mem := memstore.New(memstore.Config{})
	measureFlood(t, n, mem, mem, nil)
}

// TestFlood_FallbackStore is the same flood while the main store fails:
// the login flow (fail-open) answers from a fallback store of serve's size.
func TestFlood_FallbackStore(t *testing.T) {
	n := floodSize(t)
	mem := memstore.New(memstore.Config{MaxEntries: 100_000})
	measureFlood(t, n, mem, failingStore{}, mem)
}

type failingStore struct{}

func (failingStore) Do(context.Context, []authguard.Op) ([]authguard.Result, error) {
	return nil, errors.New("flood: the main store is down")
}
func (failingStore) Ping(context.Context) error { return nil }
func (failingStore) Close() error               { return nil }

func measureFlood(t *testing.T, n int, mem *memstore.Store, store, fallback authguard.Store) {
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: store, Fallback: fallback, Secret: []byte("flood-measurement-secret-32-bytes!!")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := procStatus(t, "VmRSS")
	start := time.Now()
	workers := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	verdicts := map[authguard.Action]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			counts := map[authguard.Action]int{}
			for i := w; i < n; i += workers {
				v, err := e.Check(ctx, authguard.CheckRequest{
					Flow:    "login",
					Account: fmt.Sprintf("made-up-%d@example.com", i),
					// A fresh /64 in a fresh /48 each, so that the IPv6
					// aggregate rules (/56, /48) refuse nothing and each check
					// writes the most keys, six. (Not in 2001::/32: Teredo
					// addresses count as the IPv4 address they embed.)
					IP: fmt.Sprintf("2a00:%x:%x::1", i>>16, i&0xffff),
				})
				if err != nil {
					t.Error(err)
					return
				}
				counts[v.Action]++
			}
			mu.Lock()
			for a, c := range counts {
				verdicts[a] += c
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	st := mem.Stats()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(mem)
	t.Logf("%d checks in %v (%.0f/s, %d goroutines); verdicts %v", n, took.Round(time.Second), float64(n)/took.Seconds(), workers, verdicts)
	t.Logf("store: %d entries (%d protected); evicted %d probation, %d protected; accounted %.1f MiB of its %.1f MiB MemoryLimit (%.0f B/entry)",
		st.Entries, st.Protected, st.EvictedProbation, st.EvictedProtected,
		float64(st.Bytes)/(1<<20), float64(st.MemoryLimit)/(1<<20), float64(st.Bytes)/float64(max(st.Entries, 1)))
	t.Logf("memory: RSS before %s; peak RSS (VmHWM) %s; RSS now %s; live heap after GC %.0f MiB (%.0f B/entry)",
		before, procStatus(t, "VmHWM"), procStatus(t, "VmRSS"), float64(ms.HeapAlloc)/(1<<20), float64(ms.HeapAlloc)/float64(max(st.Entries, 1)))
	if st.EvictedProtected != 0 {
		t.Errorf("fresh subjects evicted %d protected entries", st.EvictedProtected)
	}
}

// procStatus returns a line's value from /proc/self/status.
func procStatus(t *testing.T, field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}

// budgetSize returns the MemoryLimit MEMSTORE_MEASURE_MIB names, in MiB,
// and skips the test when it is unset. Like the flood measurements, these
// measure, one process each, what a store at its byte budget takes in
// RSS, for the fattest keys an attacker can make and for thin ones:
//
//	MEMSTORE_MEASURE_MIB=320 go test -run '^TestFlood_FatSprayLogsAtTheByteBudget$' -v -timeout 1h ./authguard/memstore/
//	MEMSTORE_MEASURE_MIB=320 go test -run '^TestFlood_FatDestinationLogsAtTheByteBudget$' -v -timeout 1h ./authguard/memstore/
//	MEMSTORE_MEASURE_MIB=320 go test -run '^TestFlood_ThinKeysAtTheByteBudget$' -v -timeout 1h ./authguard/memstore/
//
// (320 MiB is the default MemoryLimit.)
func budgetSize(t *testing.T) int64 {
	v := os.Getenv("MEMSTORE_MEASURE_MIB")
	if v == "" {
		t.Skip("a measurement, not a test: set MEMSTORE_MEASURE_MIB to a budget in MiB (320, the default) to run it")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("MEMSTORE_MEASURE_MIB=%q: want a number of MiB", v)
	}
	return int64(n) << 20
}

// TestFlood_FatSprayLogsAtTheByteBudget fills a store three times over
// with /48 spray logs at their limit: 201 accounts each, the fattest key
// of the login flow (about 10 KB), protected.
func TestFlood_FatSprayLogsAtTheByteBudget(t *testing.T) {
	limit := budgetSize(t)
	measureBudget(t, limit, 3*limit/9_900, fatLogFill("tg:default:login:ipspray48:", spray48))
}

// TestFlood_FatDestinationLogsAtTheByteBudget is the same with the
// otp_send flow's ip_destinations_48 logs at their limit: 801 destinations
// each (about 40 KB), the fattest key of the built-in policy.
func TestFlood_FatDestinationLogsAtTheByteBudget(t *testing.T) {
	limit := budgetSize(t)
	w := builtinpolicy.Policy().Flow("otp_send").Rule("ip_destinations_48").Windows
	measureBudget(t, limit, 3*limit/39_900, fatLogFill("tg:default:otp_send:ipdst48:", w))
}

// TestFlood_ThinKeysAtTheByteBudget fills the same budget three times over
// with checks on fresh subjects (four keys of 200 to 300 bytes each), with
// room for as many keys as it takes.
func TestFlood_ThinKeysAtTheByteBudget(t *testing.T) {
	limit := budgetSize(t)
	measureBudget(t, limit, 3*limit/1_000, func(s *memstore.Store, n uint64) error {
		_, err := s.Do(context.Background(), newSubject(n).check)
		return err
	})
}

// fatLogFill returns a fill that brings log n of keys with prefix to its
// cap of fresh 22-character members, as fatLog does.
func fatLogFill(prefix string, w spraydetect.Windows) func(*memstore.Store, uint64) error {
	return func(s *memstore.Store, n uint64) error {
		key := prefix + hash22('p', n)
		for m := range w.Cap() {
			op := &authguard.LogOp{Key: key, Action: authguard.LogAdd, Member: hash22('a', n<<16|uint64(m)), Windows: w}
			if _, err := s.Do(context.Background(), []authguard.Op{op}); err != nil {
				return err
			}
		}
		return nil
	}
}

// measureBudget runs fills 0 to n-1 from GOMAXPROCS goroutines on a store
// of MemoryLimit limit (and room for 100 million keys: the bytes bind).
func measureBudget(t *testing.T, limit, n int64, fill func(*memstore.Store, uint64) error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heapBefore := int64(ms.HeapAlloc)
	mem := memstore.New(memstore.Config{MemoryLimit: limit, MaxEntries: 100_000_000})
	before := procStatus(t, "VmRSS")
	start := time.Now()
	workers := int64(runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	var peak atomic.Int64 // accounted, sampled
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := fill(mem, uint64(i)); err != nil {
					t.Error(err)
					return
				}
				if i%64 == 0 {
					if b := mem.Bytes(); b > peak.Load() {
						peak.Store(b)
					}
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	st := mem.Stats()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(mem)
	heap := int64(ms.HeapAlloc) - heapBefore
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	t.Logf("%d fills in %v (%d goroutines, GOGC %s)", n, took.Round(time.Second), workers, cmp.Or(os.Getenv("GOGC"), "100"))
	t.Logf("store: %d entries (%d protected); evicted %d probation, %d protected; accounted %.1f MiB (peak sampled %.1f) of its %.1f MiB MemoryLimit",
		st.Entries, st.Protected, st.EvictedProbation, st.EvictedProtected, mib(st.Bytes), mib(peak.Load()), mib(st.MemoryLimit))
	t.Logf("memory: RSS before %s; peak RSS (VmHWM) %s; RSS now %s; the store's live heap after GC %.1f MiB (%.2f× the accounted)",
		before, procStatus(t, "VmHWM"), procStatus(t, "VmRSS"), mib(heap), float64(heap)/float64(st.Bytes))
	if st.Bytes > st.MemoryLimit || peak.Load() > st.MemoryLimit {
		t.Errorf("accounted %d bytes (peak sampled %d), MemoryLimit is %d", st.Bytes, peak.Load(), st.MemoryLimit)
	}
}
