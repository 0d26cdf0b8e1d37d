package challenge

import (
	"context"
	"errors"
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
type MemoryStore struct {
	cfg MemoryConfig
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty memory store.
func NewMemoryStore(cfg MemoryConfig) *MemoryStore {
	return &MemoryStore{cfg: cfg}
}

// Spend implements Store.
func (m *MemoryStore) Spend(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return false, errors.New("challenge: not built yet")
}

// Put implements Store.
func (m *MemoryStore) Put(ctx context.Context, key string, blob []byte, ttl time.Duration) error {
	return errors.New("challenge: not built yet")
}

// Take implements Store.
func (m *MemoryStore) Take(ctx context.Context, key string) ([]byte, bool, error) {
	return nil, false, errors.New("challenge: not built yet")
}

// RedisStore is a Store on Redis (or a Redis Cluster), shared by every
// instance on it.
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

// Spend implements Store.
func (s *RedisStore) Spend(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return false, errors.New("challenge: not built yet")
}

// Put implements Store.
func (s *RedisStore) Put(ctx context.Context, key string, blob []byte, ttl time.Duration) error {
	return errors.New("challenge: not built yet")
}

// Take implements Store.
func (s *RedisStore) Take(ctx context.Context, key string) ([]byte, bool, error) {
	return nil, false, errors.New("challenge: not built yet")
}
