package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// BenchmarkClusterFreshCheck is a login check with every signal (account,
// address, password fingerprint) on subjects never seen, on a 3-master
// Cluster: each proceeds. With today's key names ("names") its keys lie in
// as many slots, so each op is a call of its own; with subject hash tags
// ("subject", Config.SubjectTags) they lie in one slot per subject, each
// one call. calls/op is the script calls (EVALSHA and EVAL, every master)
// per check, redis-µs/op their Redis CPU without the network (INFO
// commandstats: the scripts' run only), redis-cpu-µs/op the masters'
// whole CPU (INFO cpu: reading, parsing and answering each call too),
// pipelines/op the round trips; -cpuprofile shows where
// this process's CPU goes.
//
//	go test -run '^$' -bench BenchmarkClusterFreshCheck -count 6 ./authguard/redisstore/
func BenchmarkClusterFreshCheck(b *testing.B) {
	for _, layout := range []string{"names", "subject"} {
		b.Run(layout, func(b *testing.B) {
			c := clusterClient(b)
			counter := &pipelineCounter{}
			c.AddHook(counter)
			st, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, SubjectTags: layout == "subject"})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Preload(context.Background()); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			e, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: st, Secret: secret})
			if err != nil {
				b.Fatal(err)
			}
			check := func(i int) {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("user%d@example.com", i),
					IP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), PasswordFingerprint: fmt.Sprint("fp", i)})
				if err != nil {
					b.Fatal(err)
				}
				if v.Action != authguard.Proceed {
					b.Fatalf("check %d: %v, want proceed", i, v.Action)
				}
			}
			// Unmeasured: the scripts loaded on every master, as in a server
			// that has been up a while.
			for i := range 500 {
				check(-1 - i)
			}
			resetStats(b, c)
			p0, cpu0 := counter.pipelines.Load(), clusterCPU(b, c)
			for i := 0; b.Loop(); i++ {
				check(i)
			}
			b.ReportMetric((clusterCPU(b, c)-cpu0)/float64(b.N), "redis-cpu-µs/op")
			stats := commandStats(b, c) // every master
			b.ReportMetric((stats["evalsha"]["calls"]+stats["eval"]["calls"])/float64(b.N), "calls/op")
			b.ReportMetric((stats["evalsha"]["usec"]+stats["eval"]["usec"])/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(counter.pipelines.Load()-p0)/float64(b.N), "pipelines/op")
		})
	}
}

// clusterCPU is the CPU of every master of c so far, in µs (redisCPU).
func clusterCPU(b *testing.B, c *redis.ClusterClient) float64 {
	b.Helper()
	var mu sync.Mutex
	var total float64
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		v := redisCPU(b, n)
		mu.Lock()
		total += v
		mu.Unlock()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}
