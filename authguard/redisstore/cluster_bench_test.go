package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// BenchmarkClusterRefusedCheck is credential stuffing against one account in
// backoff on a 3-master Cluster: every check is refused. "reserve" answers
// each with Reserve (reserve everything, then undo: two pipelines); "hinted"
// with the store's hint that the account blocks (one pipeline of peeks,
// hints.go). redis-µs/op is the Redis CPU of the scripts on every master per
// check (INFO commandstats), pipelines/op the round trips per check.
//
//	go test -run '^$' -bench BenchmarkClusterRefusedCheck -count 6 ./authguard/redisstore/
func BenchmarkClusterRefusedCheck(b *testing.B) {
	for _, mode := range []string{"reserve", "hinted"} {
		b.Run(mode, func(b *testing.B) {
			c := clusterClient(b)
			counter := &pipelineCounter{}
			c.AddHook(counter)
			st := benchRedis(b, c)
			if mode == "reserve" {
				st.(*redisstore.Store).WithoutHints()
			}
			ctx := context.Background()
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: st, Secret: secret})
			if err != nil {
				b.Fatal(err)
			}
			for range 12 { // 12 failures: about two minutes of delay
				if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.9", Outcome: authguard.Failure}); err != nil {
					b.Fatal(err)
				}
			}
			resetStats(b, c)
			p0 := counter.pipelines.Load()
			for i := 0; b.Loop(); i++ {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com",
					IP: fmt.Sprintf("198.51.%d.%d", i/250%256, i%250), PasswordFingerprint: fmt.Sprint("fp", i%997)})
				if err != nil {
					b.Fatal(err)
				}
				if v.Action != authguard.Delay {
					b.Fatalf("check %d: %v, want delay", i, v.Action)
				}
			}
			stats := commandStats(b, c) // every master
			b.ReportMetric((stats["evalsha"]["usec"]+stats["eval"]["usec"])/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(counter.pipelines.Load()-p0)/float64(b.N), "pipelines/op")
		})
	}
}

func resetStats(b *testing.B, c *redis.ClusterClient) {
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error { return n.ConfigResetStat(ctx).Err() })
	if err != nil {
		b.Fatal(err)
	}
}
