package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// commandStats reads INFO commandstats of c — of every master, summed, for
// a Cluster — as command name (lower case) → field (calls, usec,
// usec_per_call, ...) → value. usec_per_call is recomputed from the sums.
func commandStats(t testing.TB, c redis.UniversalClient) map[string]map[string]float64 {
	t.Helper()
	stats := map[string]map[string]float64{}
	var mu sync.Mutex // ForEachMaster calls on every master at once
	add := func(ctx context.Context, n redis.UniversalClient) error {
		info, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
			if !ok || strings.HasPrefix(line, "#") {
				continue
			}
			fields := stats[name]
			if fields == nil {
				fields = map[string]float64{}
				stats[name] = fields
			}
			for _, f := range strings.Split(rest, ",") {
				if k, v, ok := strings.Cut(f, "="); ok {
					x, _ := strconv.ParseFloat(v, 64)
					fields[k] += x
				}
			}
		}
		return nil
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error { return add(ctx, n) })
	} else {
		err = add(context.Background(), c)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, fields := range stats {
		if fields["calls"] > 0 {
			fields["usec_per_call"] = fields["usec"] / fields["calls"]
		}
	}
	return stats
}

// evalshaMicros is Redis's CPU per EVALSHA call since the last reset.
func evalshaMicros(b *testing.B, c redis.UniversalClient) float64 {
	s, ok := commandStats(b, c)["evalsha"]
	if !ok {
		b.Fatal("no cmdstat_evalsha in INFO commandstats")
	}
	return s["usec_per_call"]
}

// checkOnlyRateWrites fails t unless the commands Redis ran since the last
// reset wrote nothing but one ip_rate take (a SET) per refused check.
func checkOnlyRateWrites(t *testing.T, c redis.UniversalClient, checks int) {
	t.Helper()
	stats := commandStats(t, c)
	for _, write := range []string{"zadd", "zrem", "zremrangebyrank", "zremrangebyscore", "del", "pexpire"} {
		if n := stats[write]["calls"]; n != 0 {
			t.Errorf("%.0f %s calls for %d refused checks, want none", n, write, checks)
		}
	}
	if n := stats["set"]["calls"]; n != float64(checks) {
		t.Errorf("%.0f set calls, want %d: one ip_rate take per check", n, checks)
	}
}
