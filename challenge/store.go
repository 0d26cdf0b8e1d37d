package challenge

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store keeps what must be shared by every instance that serves one set of
// users: the challenges spent, and the pending submissions. Keys are
// written by the Challenger and hold no identifier.
type Store interface {
	// Spend records key as spent for ttl: true when it was not spent yet
	// (SET NX PX on Redis), false when it was.
	Spend(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Put holds blob under key for ttl.
	Put(ctx context.Context, key string, blob []byte, ttl time.Duration) error
	// Take returns the blob under key and removes it, in one atomic step:
	// of two callers, only one gets it. false when there is none.
	Take(ctx context.Context, key string) ([]byte, bool, error)
}

// MemoryConfig configures a memory store.
type MemoryConfig struct {
	// MaxBytes bounds the bytes the pending submissions hold; past it Put
	// answers ErrStoreFull. The default is 32 MiB.
	MaxBytes int64
	// MaxSpent bounds the spent challenges remembered; past it Spend
	// answers ErrStoreFull (a solution is then refused, never let through
	// twice). The default is 1000000.
	MaxSpent int
	// Now is the store's clock. The default is time.Now.
	Now func() time.Time
}

// MemoryStore is a Store in this process's memory: for one instance.
// Expired entries are dropped as later calls pass them, oldest first.
type MemoryStore struct {
	cfg     MemoryConfig
	mu      sync.Mutex
	spent   map[string]time.Time
	pending map[string]memBlob
	bytes   int64
	expiry  expiryHeap // spent and pending keys by expiry
}

type memBlob struct {
	blob []byte
	exp  time.Time
}

// memOverhead is what one pending entry costs beyond its key and blob:
// map slot, heap entry and headers, roughly.
const memOverhead = 96

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty memory store.
func NewMemoryStore(cfg MemoryConfig) *MemoryStore {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 32 << 20
	}
	if cfg.MaxSpent <= 0 {
		cfg.MaxSpent = 1000000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MemoryStore{cfg: cfg, spent: map[string]time.Time{}, pending: map[string]memBlob{}}
}

// Bytes is what the pending submissions hold now, as MaxBytes counts it.
func (m *MemoryStore) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(m.cfg.Now())
	return m.bytes
}

// expire drops every entry whose time is up. m.mu is held.
func (m *MemoryStore) expire(now time.Time) {
	for len(m.expiry) > 0 && !m.expiry[0].exp.After(now) {
		e := heap.Pop(&m.expiry).(expiryEntry)
		if e.spent {
			if exp, ok := m.spent[e.key]; ok && !exp.After(now) {
				delete(m.spent, e.key)
			}
			continue
		}
		if b, ok := m.pending[e.key]; ok && !b.exp.After(now) {
			delete(m.pending, e.key)
			m.bytes -= int64(len(e.key) + len(b.blob) + memOverhead)
		}
	}
}

// Spend implements Store.
func (m *MemoryStore) Spend(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(now)
	if _, ok := m.spent[key]; ok {
		return false, nil
	}
	if len(m.spent) >= m.cfg.MaxSpent {
		return false, ErrStoreFull
	}
	exp := now.Add(ttl)
	m.spent[key] = exp
	heap.Push(&m.expiry, expiryEntry{exp: exp, key: key, spent: true})
	return true, nil
}

// Put implements Store.
func (m *MemoryStore) Put(ctx context.Context, key string, blob []byte, ttl time.Duration) error {
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(now)
	if _, ok := m.pending[key]; ok {
		return errors.New("challenge: a pending key is taken") // random keys: never
	}
	size := int64(len(key) + len(blob) + memOverhead)
	if m.bytes+size > m.cfg.MaxBytes {
		return ErrStoreFull
	}
	exp := now.Add(ttl)
	m.pending[key] = memBlob{blob: slices.Clone(blob), exp: exp}
	m.bytes += size
	heap.Push(&m.expiry, expiryEntry{exp: exp, key: key})
	return nil
}

// Take implements Store.
func (m *MemoryStore) Take(ctx context.Context, key string) ([]byte, bool, error) {
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(now)
	b, ok := m.pending[key]
	if !ok {
		return nil, false, nil
	}
	delete(m.pending, key)
	m.bytes -= int64(len(key) + len(b.blob) + memOverhead)
	return b.blob, true, nil
}

// expiryEntry is one key's expiry; the heap may hold entries of keys taken
// since, which expire finds gone.
type expiryEntry struct {
	exp   time.Time
	key   string
	spent bool
}

type expiryHeap []expiryEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].exp.Before(h[j].exp) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// RedisStore is a Store on Redis (or a Redis Cluster), shared by every
// instance on it. Its keys expire by Redis's clock (PX).
type RedisStore struct {
	c      redis.UniversalClient
	prefix string
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a Store on c whose keys start with prefix; the
// default prefix is "tg:challenge:".
func NewRedisStore(c redis.UniversalClient, prefix string) *RedisStore {
	if prefix == "" {
		prefix = "tg:challenge:"
	}
	return &RedisStore{c: c, prefix: prefix}
}

// unavailable wraps a Redis error as ErrStoreUnavailable.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrStoreUnavailable, op, err)
}

// Spend implements Store with SET NX PX: of every instance that spends a
// key, one is first.
func (s *RedisStore) Spend(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := s.c.SetNX(ctx, s.prefix+key, "1", ttl).Result()
	if err != nil {
		return false, unavailable("spend", err)
	}
	return ok, nil
}

// Put implements Store with SET NX PX.
func (s *RedisStore) Put(ctx context.Context, key string, blob []byte, ttl time.Duration) error {
	ok, err := s.c.SetNX(ctx, s.prefix+key, blob, ttl).Result()
	if err != nil {
		return unavailable("put", err)
	}
	if !ok {
		return errors.New("challenge: a pending key is taken") // random keys: never
	}
	return nil
}

// Take implements Store with GETDEL (Redis 6.2): of two instances that
// take a key, one gets it.
func (s *RedisStore) Take(ctx context.Context, key string) ([]byte, bool, error) {
	b, err := s.c.GetDel(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable("take", err)
	}
	return b, true, nil
}
