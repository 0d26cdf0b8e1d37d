package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
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
	e, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: store, Fallback: fallback, Secret: []byte("flood-measurement-secret-32-bytes!!")})
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
	t.Logf("store: %d entries (%d protected); evicted %d probation, %d protected",
		st.Entries, st.Protected, st.EvictedProbation, st.EvictedProtected)
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
