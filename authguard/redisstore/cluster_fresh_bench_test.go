package redisstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
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
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: st, Secret: secret})
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

// BenchmarkClusterFreshCheckConcurrent is BenchmarkClusterFreshCheck's
// subject layout with 50 checks in flight at once, as a server under load
// sends them, each call a pipeline of its own on each master it needs
// ("alone") or in the shared round trips of each master ("shared",
// Config.SharedRoundTrips). writes/op is the replies the masters wrote per
// check (INFO stats total_writes_processed: a shared round trip's calls
// are answered in one), redis-cpu-µs/op the masters' CPU, cpu-µs/op this
// process's (the engine and store of every check, and the benchmark's
// own loop).
//
//	go test -run '^$' -bench BenchmarkClusterFreshCheckConcurrent -count 6 ./authguard/redisstore/
func BenchmarkClusterFreshCheckConcurrent(b *testing.B) {
	for _, mode := range []string{"alone", "shared"} {
		b.Run(mode, func(b *testing.B) {
			flush := clusterClient(b)
			flush.Close()
			uc, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: cluster.Addrs(), PoolSize: 128, Timeout: time.Second, ClusterKeyLayout: "subject"})
			if err != nil {
				b.Fatal(err)
			}
			c := uc.(*redis.ClusterClient)
			st, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second, SubjectTags: true, SharedRoundTrips: mode == "shared"})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			if err := st.Preload(context.Background()); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: st, Secret: secret})
			if err != nil {
				b.Fatal(err)
			}
			check := func(i int64) {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("user%d@example.com", i),
					IP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), PasswordFingerprint: fmt.Sprint("fp", i)})
				if err != nil {
					b.Error(err)
					return
				}
				if v.Action != authguard.Proceed {
					b.Errorf("check %d: %v, want proceed", i, v.Action)
				}
			}
			// Unmeasured: the scripts and shapes loaded on every master.
			for i := range 500 {
				check(-1 - int64(i))
			}
			var next atomic.Int64
			b.SetParallelism((50 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			w0, cpu0, self0 := clusterWrites(b), clusterCPU(b, c), selfCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					check(next.Add(1))
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(clusterWrites(b)-w0)/float64(b.N), "writes/op")
			b.ReportMetric((clusterCPU(b, c)-cpu0)/float64(b.N), "redis-cpu-µs/op")
			b.ReportMetric((selfCPU()-self0)/float64(b.N), "cpu-µs/op")
		})
	}
}

// clusterWrites is the replies every master of the test Cluster has
// written so far (INFO stats total_writes_processed).
func clusterWrites(b *testing.B) int {
	b.Helper()
	total := 0
	for _, addr := range cluster.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.Info(context.Background(), "stats").Result()
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
		n, err := strconv.Atoi(infoField(info, "total_writes_processed"))
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}

// selfCPU is this process's CPU so far, user and system, in µs.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
}
