package memstore

import (
	"container/list"
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

type shard struct {
	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List // front: most recently used
	cap int
}

type entry struct {
	key     string
	state   any
	expires time.Time
}

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
		s.shards[i].m = make(map[string]*list.Element)
		s.shards[i].cap = per
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
	sh.mu.Lock()
	defer sh.mu.Unlock()

	var state any
	el, ok := sh.m[key]
	if ok {
		if e := el.Value.(*entry); now.Before(e.expires) {
			state = e.state
		}
	}
	next, ttl, r := authguard.Apply(op, state, now)
	switch {
	case ttl <= 0 || next == nil:
		if ok {
			sh.lru.Remove(el)
			delete(sh.m, key)
		}
	case ok:
		e := el.Value.(*entry)
		e.state, e.expires = next, now.Add(ttl)
		sh.lru.MoveToFront(el)
	default:
		for len(sh.m) >= sh.cap {
			s.evictOldest(sh, now)
		}
		sh.m[key] = sh.lru.PushFront(&entry{key: key, state: next, expires: now.Add(ttl)})
	}
	return r
}

// evictOldest removes the least recently used entry; it counts as an eviction
// only when that entry had not expired.
func (s *Store) evictOldest(sh *shard, now time.Time) {
	el := sh.lru.Back()
	e := el.Value.(*entry)
	if now.Before(e.expires) {
		s.evicted.Add(1)
	}
	sh.lru.Remove(el)
	delete(sh.m, e.key)
}

// Sweep drops every expired entry. Expired entries are also dropped when
// they are touched or reach the end of the LRU list, so calling Sweep is only
// needed to give memory back sooner.
func (s *Store) Sweep() {
	now := s.now()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for key, el := range sh.m {
			if !now.Before(el.Value.(*entry).expires) {
				sh.lru.Remove(el)
				delete(sh.m, key)
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
		st.Entries += len(sh.m)
		sh.mu.Unlock()
	}
	return st
}

// Keys returns every live key, for tests and the admin view.
func (s *Store) Keys() []string {
	now := s.now()
	var keys []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, el := range sh.m {
			if now.Before(el.Value.(*entry).expires) {
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
