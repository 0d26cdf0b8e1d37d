package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// BenchmarkOutage measures the answer time of a login check while Redis is
// down (stopped: connections refused) or stalled (CLIENT PAUSE: connections
// hang), for a fail-open flow answering from the local fallback. It reports
// p50, p99 and max in milliseconds; the goal is p99 under 100ms.
func BenchmarkOutage(b *testing.B) {
	for _, mode := range []string{"stopped", "stalled", "breaker-open"} {
		b.Run(mode, func(b *testing.B) {
			needRedis(b)
			in := redistest.Server(b)
			c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + in.Addr})
			if err != nil {
				b.Fatal(err)
			}
			// breaker-open: the default breaker; otherwise one so patient it
			// never opens, to measure every call against the dead Redis.
			cfg := redisstore.Config{Client: c, BreakAfter: 1 << 30}
			if mode == "breaker-open" {
				cfg.BreakAfter = 0
			}
			s, _ := redisstore.New(cfg)
			e, _ := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret})
			ctx := context.Background()
			e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "warm", IP: "192.0.2.1"})
			switch mode {
			case "stalled":
				admin := redis.NewClient(&redis.Options{Addr: in.Addr})
				defer admin.Close()
				if err := admin.Do(ctx, "CLIENT", "PAUSE", "600000", "ALL").Err(); err != nil {
					b.Fatal(err)
				}
				defer admin.Do(ctx, "CLIENT", "UNPAUSE")
			default:
				in.Stop()
			}
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("u", i%512), IP: "192.0.2.1"}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(q(1), "max-ms")
		})
	}
}
