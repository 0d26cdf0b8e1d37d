package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// BenchmarkRedisCPU measures Redis's own CPU per call (redis-µs/op, from
// INFO commandstats) of a whole login check, next to the reference issue 9
// sets it against: one token-bucket take, one EVALSHA. Run it in one
// process so the ratio compares like with like on a noisy machine:
//
//	go test -run '^$' -bench BenchmarkRedisCPU -count 6 ./authguard/redisstore/
func BenchmarkRedisCPU(b *testing.B) {
	ctx := context.Background()
	b.Run("token_bucket", func(b *testing.B) {
		c := singleClient(b)
		s := benchRedis(b, c)
		c.ConfigResetStat(ctx)
		rate := authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: 50 * time.Millisecond, Limit: 200}
		for i := 0; b.Loop(); i++ {
			op := &authguard.RateOp{Key: fmt.Sprint("tg:t:login:iprate:", i%4096), Action: authguard.RateTake, Rate: rate, Cost: 1}
			if _, err := s.Do(ctx, []authguard.Op{op}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(evalshaMicros(b, c), "redis-µs/op")
	})
	checks := []struct {
		name string
		req  func(i int) authguard.CheckRequest
	}{
		// Every check proceeds: fresh accounts from many IPv4 addresses.
		{"check/ipv4", func(i int) authguard.CheckRequest {
			return authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("user", i%65536, "@example.com"),
				IP: fmt.Sprintf("203.0.%d.%d", i/250%256, i%250), PasswordFingerprint: fmt.Sprint("fp", i%997)}
		}},
		// The same from IPv6, where the /56 and /48 spray rules count too:
		// each check from another /48.
		{"check/ipv6", func(i int) authguard.CheckRequest {
			return authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("user", i%65536, "@example.com"),
				IP: fmt.Sprintf("2001:db8:%x:%x00::1", i%4096, i/4096%256), PasswordFingerprint: fmt.Sprint("fp", i%997)}
		}},
		// One account in backoff: every check is refused and undone.
		{"check/hot", func(i int) authguard.CheckRequest {
			return authguard.CheckRequest{Flow: "login", Account: "victim@example.com",
				IP: fmt.Sprintf("198.51.%d.%d", i/250%256, i%250), PasswordFingerprint: fmt.Sprint("fp", i%997)}
		}},
	}
	for _, ck := range checks {
		b.Run(ck.name, func(b *testing.B) {
			c := singleClient(b)
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: benchRedis(b, c), Secret: secret})
			if err != nil {
				b.Fatal(err)
			}
			if ck.name == "check/hot" {
				for i := range 8 {
					req := ck.req(i)
					v, err := e.Check(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: req.Account, IP: req.IP, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
						b.Fatal(err)
					}
				}
			}
			c.ConfigResetStat(ctx)
			proceeded := 0
			for i := 0; b.Loop(); i++ {
				v, err := e.Check(ctx, ck.req(i))
				if err != nil {
					b.Fatal(err)
				}
				if v.Action == authguard.Proceed {
					proceeded++
				}
			}
			b.ReportMetric(evalshaMicros(b, c), "redis-µs/op")
			b.ReportMetric(float64(proceeded)/float64(b.N), "proceeded/op")
		})
	}
}

// BenchmarkRedisCPULogin is a whole login on one node — a check and the
// failure report of its attempt, fresh subjects — with the report's ops sent
// as a pipeline of op scripts ("pipeline", as before) or as one call of the
// batch script ("script"). redis-µs/login is Redis's CPU in EVALSHA per
// login (the check's is the same in both).
//
//	go test -run '^$' -bench BenchmarkRedisCPULogin -count 6 ./authguard/redisstore/
func BenchmarkRedisCPULogin(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"pipeline", "script"} {
		b.Run(mode, func(b *testing.B) {
			c := singleClient(b)
			st := benchRedis(b, c)
			if mode == "pipeline" {
				st.(*redisstore.Store).PipelineBatches()
			}
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: st, Secret: secret})
			if err != nil {
				b.Fatal(err)
			}
			c.ConfigResetStat(ctx)
			for i := 0; b.Loop(); i++ {
				req := authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("user", i, "@example.com"),
					IP: fmt.Sprintf("203.0.%d.%d", i/250%256, i%250), PasswordFingerprint: fmt.Sprint("fp", i)}
				v, err := e.Check(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if v.Action != authguard.Proceed {
					b.Fatalf("check %d: %v", i, v.Action)
				}
				if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: req.Account, IP: req.IP,
					PasswordFingerprint: req.PasswordFingerprint, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(commandStats(b, c)["evalsha"]["usec"]/float64(b.N), "redis-µs/login")
		})
	}
}

// BenchmarkRedisCPUShapes is a fresh login check with every signal (the
// "check/ipv4" of BenchmarkRedisCPU) sent as the generic check script, every
// argument in each call, and as its shape (shape.go), side by side:
// redis-µs/op is Redis's own time in EVALSHA per check (INFO commandstats,
// which leaves out reading the call's arguments off the connection), and
// redis-cpu-µs/op its whole CPU per check (INFO cpu, which counts it and
// the round trip). Fresh keys for every check: FLUSHALL before each run.
//
//	go test -run '^$' -bench BenchmarkRedisCPUShapes -count 8 ./authguard/redisstore/
func BenchmarkRedisCPUShapes(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"generic", "shaped"} {
		b.Run(mode, func(b *testing.B) {
			c := singleClient(b)
			st := benchRedis(b, c)
			if mode == "generic" {
				redisstore.SetMaxShapes(st.(*redisstore.Store), 0)
			}
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: st, Secret: secret})
			if err != nil {
				b.Fatal(err)
			}
			// one check first, so that the shape is loaded before the count
			if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "warm@example.com", IP: "192.0.2.1"}); err != nil {
				b.Fatal(err)
			}
			c.ConfigResetStat(ctx)
			before := redisCPU(b, c)
			for i := 0; b.Loop(); i++ {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("user", i, "@example.com"),
					IP: fmt.Sprintf("203.0.%d.%d", i/250%256, i%250), PasswordFingerprint: fmt.Sprint("fp", i)})
				if err != nil {
					b.Fatal(err)
				}
				if v.Action != authguard.Proceed {
					b.Fatalf("check %d: %v", i, v.Action)
				}
			}
			b.ReportMetric(evalshaMicros(b, c), "redis-µs/op")
			b.ReportMetric((redisCPU(b, c)-before)/float64(b.N), "redis-cpu-µs/op")
		})
	}
}

// redisCPU is Redis's CPU so far in µs: INFO cpu's used_cpu_user and
// used_cpu_sys.
func redisCPU(b *testing.B, c *redis.Client) float64 {
	b.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, name := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(infoField(info, name), 64)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		total += v * 1e6
	}
	return total
}
