package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

var _ authguard.EntryStore = (*Store)(nil)

var (
	//go:embed entries.lua
	entriesLua    string
	entriesScript = redis.NewScript(timeLua + entriesLua)
)

// entries runs entries.lua on key. Entry calls are an administrator's and
// the periodic refresh's, not the verdicts': they get a longer timeout
// than a batch and stay out of the circuit breaker.
func (s *Store) entries(ctx context.Context, key, action string, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	now := ""
	if s.now != nil {
		now = strconv.FormatInt(s.now().UnixMilli(), 10)
	}
	return entriesScript.Run(ctx, s.client, []string{key}, append([]any{action, now}, args...)...)
}

func entriesErr(op string, err error) error {
	switch {
	case redis.HasErrorPrefix(err, "TOOMANY"):
		return authguard.ErrTooManyEntries
	case redis.HasErrorPrefix(err, "OOM"):
		return fmt.Errorf("redisstore: %s: %w: %w", op, authguard.ErrStoreFull, err)
	}
	return unavailable(fmt.Errorf("%s: %w", op, err))
}

// PutEntry keeps value under id in the set at key (one hash) until ttl has
// passed; ErrTooManyEntries when the set holds max unexpired records and id
// is not one of them. The hash expires with its last record.
func (s *Store) PutEntry(ctx context.Context, key, id, value string, ttl time.Duration, max int) error {
	if err := s.entries(ctx, key, "put", id, value, ms(ttl), strconv.Itoa(max)).Err(); err != nil {
		return entriesErr("put entry", err)
	}
	return nil
}

// Entries returns the values of the set's unexpired records. It only reads,
// so it answers on a Redis at maxmemory too.
func (s *Store) Entries(ctx context.Context, key string) ([]string, error) {
	v, err := s.entries(ctx, key, "list").StringSlice()
	if err != nil {
		return nil, entriesErr("list entries", err)
	}
	return v, nil
}

// RemoveEntry deletes id from the set and reports whether it was there.
func (s *Store) RemoveEntry(ctx context.Context, key, id string) (bool, error) {
	n, err := s.entries(ctx, key, "del", id).Int64()
	if err != nil {
		return false, entriesErr("remove entry", err)
	}
	return n == 1, nil
}
