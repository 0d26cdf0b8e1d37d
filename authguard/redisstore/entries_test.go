package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// TestEntries_EveryInstanceOnRedisAppliesThem: two instances, each with
// its own client of one Redis (a node, then a Cluster), on Redis's own
// clock: an entry one adds applies on the other once it refreshes, a
// removal likewise, and Redis holds no raw range.
func TestEntries_EveryInstanceOnRedisAppliesThem(t *testing.T) {
	for _, kind := range []string{"single", "cluster", "subject"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var engines [2]*authguard.Engine
			for i := range engines {
				e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: newStore(t, clientOf(t, kind), nil), Secret: []byte("0123456789abcdef0123456789abcdef")})
				if err != nil {
					t.Fatal(err)
				}
				engines[i] = e
			}
			a, b := engines[0], engines[1]
			check := func() authguard.Verdict {
				v, err := b.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "a", IP: "203.0.113.5"})
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			x, err := a.AddEntry(ctx, authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", TTL: time.Hour, Reason: "ticket 1", By: "desk"})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.RefreshEntries(ctx); err != nil {
				t.Fatal(err)
			}
			if v := check(); v.Action != authguard.Delay || v.Delay <= 59*time.Minute || v.Reasons[0] != authguard.ReasonBlocked {
				t.Errorf("the other instance, refreshed: %v %v %v, want delay of about 1h [blocked]", v.Action, v.Delay, v.Reasons)
			}
			l, err := b.ListEntries(ctx, "", "login")
			if err != nil || len(l) != 1 || l[0].ID != x.ID || l[0].By != "desk" || l[0].Length != 24 {
				t.Errorf("ListEntries on the other instance = %+v, %v", l, err)
			}
			if ok, err := a.RemoveEntry(ctx, "", x.ID); !ok || err != nil {
				t.Fatalf("RemoveEntry = %v, %v", ok, err)
			}
			if err := b.RefreshEntries(ctx); err != nil {
				t.Fatal(err)
			}
			if v := check(); v.Action != authguard.Proceed {
				t.Errorf("after the removal: %v, want proceed", v.Action)
			}
		})
	}
}

// TestEntries_RedisHoldsNoRawRange reads the hash behind a tenant's
// entries: keyed hashes and lengths, never the range or the prefix.
func TestEntries_RedisHoldsNoRawRange(t *testing.T) {
	c := singleClient(t)
	ctx := context.Background()
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: newStore(t, c, nil), Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []authguard.EntryRequest{
		{Kind: authguard.EntryAllow, IPRange: "198.51.100.0/24"},
		{Kind: authguard.EntryBlock, DestinationPrefix: "+4477009"},
	} {
		req.TTL, req.Reason = time.Hour, "r"
		if _, err := e.AddEntry(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.HGetAll(ctx, "tg:default:_admin:entries:v1").Result()
	if err != nil || len(all) != 2 {
		t.Fatalf("HGETALL = %d fields, %v; want 2", len(all), err)
	}
	for _, v := range all {
		for _, raw := range []string{"198.51.100", "4477009"} {
			if strings.Contains(v, raw) {
				t.Errorf("Redis holds %q: %s", raw, v)
			}
		}
	}
	if ttl := c.PTTL(ctx, "tg:default:_admin:entries:v1").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("the hash expires in %v, want with its last entry (1h)", ttl)
	}
}
