package memstore

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

var _ authguard.Store = (*Store)(nil)

// Config configures a Store.
type Config struct {
	// MaxEntries caps the number of keys kept. The default is 1,000,000.
	MaxEntries int
	// Shards is the number of independently locked maps. The default is 64.
	Shards int
	// Now is the store's clock. The default is time.Now.
	Now func() time.Time
}

// Store is an authguard.Store in process memory. It is safe for concurrent use.
type Store struct {
	shards  []shard
	seed    maphash.Seed
	now     func() time.Time
	evicted atomic.Int64
	closed  atomic.Bool
}

// A shard keeps its entries in one slice, linked into an LRU list by index
// rather than by pointer: a million entries are then a few large objects
// for the garbage collector to scan instead of millions of small ones.
type shard struct {
	mu    sync.Mutex
	index map[string]int32
	slots []slot
	head  int32 // most recently used, or none
	tail  int32 // least recently used, or none
	free  int32 // first free slot (linked through next), or none
	cap   int
}

type slot struct {
	key        string
	state      any
	expires    int64 // Unix nanoseconds
	prev, next int32
}

const none = -1

// ErrClosed is returned by a closed Store.
var ErrClosed = errors.New("memstore: closed")

// New returns a Store.
func New(cfg Config) *Store {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 1_000_000
	}
	if cfg.Shards <= 0 {
		cfg.Shards = 64
	}
	cfg.Shards = min(cfg.Shards, cfg.MaxEntries)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{shards: make([]shard, cfg.Shards), seed: maphash.MakeSeed(), now: cfg.Now}
	per := (cfg.MaxEntries + cfg.Shards - 1) / cfg.Shards
	for i := range s.shards {
		s.shards[i] = shard{index: make(map[string]int32), head: none, tail: none, free: none, cap: per}
	}
	return s
}

// Do applies ops in order, each atomically on its own key, with the
// semantics of authguard.Apply.
func (s *Store) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	now := s.now()
	res := make([]authguard.Result, len(ops))
	for i, op := range ops {
		res[i] = s.apply(op, now)
	}
	return res, nil
}

func (s *Store) apply(op authguard.Op, now time.Time) authguard.Result {
	key := op.StoreKey()
	sh := &s.shards[maphash.String(s.seed, key)%uint64(len(s.shards))]
	ns := now.UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()

	var state any
	i, ok := sh.index[key]
	if ok && ns < sh.slots[i].expires {
		state = sh.slots[i].state
	}
	next, ttl, r := authguard.Apply(op, state, now)
	switch {
	case ttl <= 0 || next == nil:
		if ok {
			sh.remove(i)
		}
	case ok:
		sh.slots[i].state, sh.slots[i].expires = next, ns+int64(ttl)
		sh.unlink(i)
		sh.pushFront(i)
	default:
		for len(sh.index) >= sh.cap {
			if ns < sh.slots[sh.tail].expires {
				s.evicted.Add(1) // a live entry, not just an expired one
			}
			sh.remove(sh.tail)
		}
		sh.insert(key, next, ns+int64(ttl))
	}
	return r
}

func (sh *shard) insert(key string, state any, expires int64) {
	i := sh.free
	if i == none {
		i = int32(len(sh.slots))
		sh.slots = append(sh.slots, slot{})
	} else {
		sh.free = sh.slots[i].next
	}
	sh.slots[i] = slot{key: key, state: state, expires: expires}
	sh.index[key] = i
	sh.pushFront(i)
}

func (sh *shard) remove(i int32) {
	sh.unlink(i)
	delete(sh.index, sh.slots[i].key)
	sh.slots[i] = slot{next: sh.free} // drop the references for the GC
	sh.free = i
}

func (sh *shard) unlink(i int32) {
	sl := &sh.slots[i]
	if sl.prev != none {
		sh.slots[sl.prev].next = sl.next
	} else {
		sh.head = sl.next
	}
	if sl.next != none {
		sh.slots[sl.next].prev = sl.prev
	} else {
		sh.tail = sl.prev
	}
}

func (sh *shard) pushFront(i int32) {
	sh.slots[i].prev, sh.slots[i].next = none, sh.head
	if sh.head != none {
		sh.slots[sh.head].prev = i
	}
	sh.head = i
	if sh.tail == none {
		sh.tail = i
	}
}

// Sweep drops every expired entry. Expired entries are also dropped when
// they are touched or reach the end of the LRU list, so calling Sweep is only
// needed to give memory back sooner.
func (s *Store) Sweep() {
	ns := s.now().UnixNano()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, j := range sh.index {
			if ns >= sh.slots[j].expires {
				sh.remove(j)
			}
		}
		sh.mu.Unlock()
	}
}

// Stats describes the store's contents.
type Stats struct {
	// Entries is the number of keys held, expired ones included until they
	// are dropped.
	Entries int
	// Evicted counts live keys dropped because the store was full.
	Evicted int64
}

// Stats returns the store's current Stats.
func (s *Store) Stats() Stats {
	st := Stats{Evicted: s.evicted.Load()}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Entries += len(sh.index)
		sh.mu.Unlock()
	}
	return st
}

// Keys returns every live key, for tests and the admin view.
func (s *Store) Keys() []string {
	ns := s.now().UnixNano()
	var keys []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, j := range sh.index {
			if ns < sh.slots[j].expires {
				keys = append(keys, k)
			}
		}
		sh.mu.Unlock()
	}
	return keys
}

// Ping reports whether the store is open.
func (s *Store) Ping(context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Close marks the store closed; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
