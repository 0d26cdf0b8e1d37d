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

var (
	//go:embed held.lua
	heldLua    string
	heldScript = redis.NewScript(heldLua)
)

var _ authguard.HeldStore = (*Store)(nil)

// held runs held.lua on a tenant's index. Like the entry calls, the
// index's are the write-behind's and an administrator's, never a
// verdict's: a longer timeout than a batch, and no circuit breaker.
func (s *Store) held(ctx context.Context, base, action string, now time.Time, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	keys := []string{base + ":e", base + ":x", base + ":b"}
	return heldScript.Run(ctx, s.client, keys, append([]any{action, strconv.FormatInt(now.UnixMilli(), 10)}, args...)...)
}

// PutHeld implements authguard.HeldStore in one script call: the index's
// three keys of the tenant, on one node of a Cluster.
func (s *Store) PutHeld(ctx context.Context, base string, recs []authguard.HeldRecord, maxBytes int64, now time.Time) (int, error) {
	args := make([]any, 0, 1+3*len(recs))
	args = append(args, strconv.FormatInt(maxBytes, 10))
	for _, r := range recs {
		args = append(args, r.Field, r.Value, strconv.FormatInt(r.Until.UnixMilli(), 10))
	}
	n, err := s.held(ctx, base, "put", now, args...).Int()
	if err != nil {
		return 0, unavailable(fmt.Errorf("put held: %w", err))
	}
	return n, nil
}

// ListHeld implements authguard.HeldStore.
func (s *Store) ListHeld(ctx context.Context, base string, now time.Time) ([]authguard.HeldRecord, error) {
	vals, err := s.held(ctx, base, "list", now).Slice()
	if err != nil {
		return nil, unavailable(fmt.Errorf("list held: %w", err))
	}
	out := make([]authguard.HeldRecord, 0, len(vals)/3)
	for i := 0; i+2 < len(vals); i += 3 {
		f, _ := vals[i].(string)
		v, _ := vals[i+1].(string)
		u, _ := vals[i+2].(string)
		ms, err := strconv.ParseFloat(u, 64)
		if err != nil {
			continue
		}
		out = append(out, authguard.HeldRecord{Field: f, Value: []byte(v), Until: time.UnixMilli(int64(ms))})
	}
	return out, nil
}

// DeleteHeld implements authguard.HeldStore.
func (s *Store) DeleteHeld(ctx context.Context, base string, fields []string) error {
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	if err := s.held(ctx, base, "delete", time.Time{}, args...).Err(); err != nil {
		return unavailable(fmt.Errorf("delete held: %w", err))
	}
	return nil
}
