package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// BenchmarkBackoff is one backoff step on Redis (one round trip) over 4,096
// account counters: a charge and its settlement as a failure, the steps
// every login makes. redis-µs/op is Redis's own CPU per script call.
func BenchmarkBackoff(b *testing.B) {
	c := singleClient(b)
	s := benchRedis(b, c)
	ctx := context.Background()
	c.ConfigResetStat(ctx)
	policy := builtinpolicy.Policy().Flow("login").Rule("account_backoff").Backoff
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key, attempt := fmt.Sprint("tg:t:login:acct:", i%4096), fmt.Sprint("a", i)
		action := authguard.BackoffCharge
		if i%2 == 1 {
			key, attempt, action = fmt.Sprint("tg:t:login:acct:", (i-1)%4096), fmt.Sprint("a", i-1), authguard.BackoffConfirm
		}
		op := &authguard.BackoffOp{Key: key, Action: action, Policy: policy, Attempt: attempt, Fingerprint: "fp", SeenWindow: 3600e9}
		if _, err := s.Do(ctx, []authguard.Op{op}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(evalshaMicros(b, c), "redis-µs/op")
}
