package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// BenchmarkLogin is one full login (a check that proceeds, then a success
// report: two round trips on Redis) on each store, side by side in one run,
// serially and from 64 goroutines.
func BenchmarkLogin(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) authguard.Store
	}{
		{"memory", func(*testing.B) authguard.Store { return memstore.New(memstore.Config{}) }},
		{"redis", func(b *testing.B) authguard.Store { return benchRedis(b, singleClient(b)) }},
		{"cluster", func(b *testing.B) authguard.Store { return benchRedis(b, clusterClient(b)) }},
	}
	for _, st := range stores {
		for _, par := range []int{1, 64} {
			b.Run(fmt.Sprintf("store=%s/clients=%d", st.name, par), func(b *testing.B) {
				var storeErrs atomic.Int64
				e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: st.new(b), Secret: secret, Observe: func(ev authguard.Event) {
					if ev.StoreErr != nil {
						storeErrs.Add(1)
					}
				}})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				b.SetParallelism(par) // × GOMAXPROCS goroutines
				var n int64
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						i++
						acct, ip := fmt.Sprintf("user%d@example.com", i%4096), fmt.Sprintf("203.0.%d.%d", i/250%16, i%250)
						v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: ip})
						if err != nil {
							b.Error(err)
							return
						}
						if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: ip, Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
							b.Error(err)
							return
						}
					}
					_ = n
				})
				// Throughput is only meaningful if the store answered: a call
				// past its deadline is answered from the fallback, cheaply.
				b.ReportMetric(float64(storeErrs.Load())/float64(b.N), "store-errors/op")
			})
		}
	}
}

func benchRedis(b *testing.B, c redis.UniversalClient) authguard.Store {
	// A generous deadline: this measures throughput, not the timeout path
	// (BenchmarkOutage does).
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Preload(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}
