package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
)

// rateLimits are the algorithms at the size an operator might use them:
// 100 a minute, on a scale where a benchmark never runs out.
var rateLimits = []authguard.RateLimit{
	{Algorithm: authguard.FixedWindow, Window: time.Minute, Limit: 100},
	{Algorithm: authguard.SlidingLog, Window: time.Minute, Limit: 100},
	{Algorithm: authguard.SlidingCounter, Window: time.Minute, Limit: 100},
	{Algorithm: authguard.TokenBucket, Interval: 600 * time.Millisecond, Limit: 100},
	{Algorithm: authguard.LeakyBucket, Interval: 600 * time.Millisecond, Limit: 100},
}

// BenchmarkRate is one rate-limit decision (a RateOp take, one round trip)
// per algorithm on the memory store and on Redis, over 4,096 subjects.
func BenchmarkRate(b *testing.B) {
	for _, st := range []string{"memory", "redis"} {
		for _, r := range rateLimits {
			b.Run(fmt.Sprintf("store=%s/%v", st, r.Algorithm), func(b *testing.B) {
				var s authguard.Store = memstore.New(memstore.Config{})
				ctx := context.Background()
				var c *redis.Client
				if st == "redis" {
					c = singleClient(b)
					s = benchRedis(b, c)
					c.ConfigResetStat(ctx)
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					op := &authguard.RateOp{Key: fmt.Sprint("tg:t:api:rate:", i%4096), Action: authguard.RateTake, Rate: r, Cost: 1}
					if _, err := s.Do(ctx, []authguard.Op{op}); err != nil {
						b.Fatal(err)
					}
				}
				if c != nil { // Redis's own CPU per script call, from INFO commandstats
					b.ReportMetric(evalshaMicros(b, c), "redis-µs/op")
				}
			})
		}
	}
}

// TestMemoryPerRateKey measures Redis MEMORY USAGE of one key per algorithm
// holding a full limit of 100 (a sliding log at its largest). Run with -v
// for the figures in BENCHMARKS.md; the bounds catch a state that grows
// without limit.
func TestMemoryPerRateKey(t *testing.T) {
	c := singleClient(t)
	s := newStore(t, c, nil)
	ctx := context.Background()
	for _, r := range rateLimits {
		key := fmt.Sprint("tg:t:api:rate:", r.Algorithm)
		for range 100 {
			if _, err := s.Do(ctx, []authguard.Op{&authguard.RateOp{Key: key, Action: authguard.RateTake, Rate: r, Cost: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := c.MemoryUsage(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-16v MEMORY USAGE %5d bytes", r.Algorithm, n)
		if bound := int64(2048); r.Algorithm == authguard.SlidingLog && n > bound || r.Algorithm != authguard.SlidingLog && n > 128 {
			t.Errorf("%v key uses %d bytes", r.Algorithm, n)
		}
	}
}
