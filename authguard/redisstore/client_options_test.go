package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every kind of client NewClient builds carries the same settings (NewClient
// sets them in one place), and a URL's own go-redis options are kept.
func TestNewClient_EveryKindHasTheSameSettings(t *testing.T) {
	for _, cfg := range []ClientConfig{
		{URL: "rediss://u:p@127.0.0.1:6380/2?client_name=tg&max_idle_conns=3&dial_timeout=9s", PoolSize: 7, Timeout: 80 * time.Millisecond, TLSServerName: "redis.internal"},
		{ClusterAddrs: []string{"127.0.0.1:7000"}, PoolSize: 7, Timeout: 80 * time.Millisecond, TLS: true, TLSServerName: "redis.internal", Username: "u", Password: "p"},
		{SentinelAddrs: []string{"127.0.0.1:26379"}, SentinelMaster: "m", PoolSize: 7, Timeout: 80 * time.Millisecond, TLS: true, TLSServerName: "redis.internal", Username: "u", Password: "p"},
	} {
		c, err := NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		type settings struct {
			user, password, serverName                          string
			pool, maxRetries, dialerRetries                     int
			dial, read, write, poolWait, minBackoff, maxBackoff time.Duration
			ctxTimeout                                          bool
		}
		var got settings
		switch c := c.(type) {
		case *redis.Client:
			o := c.Options()
			got = settings{o.Username, o.Password, o.TLSConfig.ServerName, o.PoolSize, o.MaxRetries, o.DialerRetries,
				o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout, o.MinRetryBackoff, o.MaxRetryBackoff, o.ContextTimeoutEnabled}
			if cfg.URL != "" && (o.DB != 2 || o.ClientName != "tg" || o.MaxIdleConns != 3) {
				t.Errorf("%+v: the URL's db, client_name and max_idle_conns are lost: %+v", cfg, o)
			}
		case *redis.ClusterClient:
			o := c.Options()
			got = settings{o.Username, o.Password, o.TLSConfig.ServerName, o.PoolSize, o.MaxRetries, o.DialerRetries,
				o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout, o.MinRetryBackoff, o.MaxRetryBackoff, o.ContextTimeoutEnabled}
		default:
			t.Fatalf("%+v: client %T", cfg, c)
		}
		// go-redis turns -1 into 0 (none) as it builds a client
		want := settings{"u", "p", "redis.internal", 7, 0, 1, 80 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond, 0, 0, true}
		if got.maxRetries < 0 {
			got.maxRetries = 0
		}
		got.minBackoff, got.maxBackoff = max(got.minBackoff, 0), max(got.maxBackoff, 0)
		if got != want {
			t.Errorf("%+v:\n got %+v\nwant %+v", cfg, got, want)
		}
		c.Close()
	}
}
