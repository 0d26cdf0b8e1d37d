package redisstore_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard/redisstore"
)

func TestNewClient(t *testing.T) {
	tests := []struct {
		name    string
		cfg     redisstore.ClientConfig
		cluster bool
		tls     bool
		wantErr bool
	}{
		{"url", redisstore.ClientConfig{URL: "redis://u:p@127.0.0.1:6379/2"}, false, false, false},
		{"tls url", redisstore.ClientConfig{URL: "rediss://127.0.0.1:6380"}, false, true, false},
		{"cluster", redisstore.ClientConfig{ClusterAddrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}}, true, false, false},
		{"cluster tls", redisstore.ClientConfig{ClusterAddrs: []string{"127.0.0.1:7000"}, TLS: true}, true, true, false},
		{"sentinel", redisstore.ClientConfig{SentinelAddrs: []string{"127.0.0.1:26379"}, SentinelMaster: "m"}, false, false, false},
		{"sentinel without master", redisstore.ClientConfig{SentinelAddrs: []string{"127.0.0.1:26379"}}, false, false, true},
		{"cluster and sentinel", redisstore.ClientConfig{ClusterAddrs: []string{"a:1"}, SentinelAddrs: []string{"b:2"}, SentinelMaster: "m"}, false, false, true},
		{"timeout too long", redisstore.ClientConfig{URL: "redis://x:1", Timeout: time.Minute}, false, false, true},
		{"neither", redisstore.ClientConfig{}, false, false, true},
		{"both", redisstore.ClientConfig{URL: "redis://x:1", ClusterAddrs: []string{"y:2"}}, false, false, true},
		{"bad url", redisstore.ClientConfig{URL: "http://x"}, false, false, true},
		{"bad cluster addr", redisstore.ClientConfig{ClusterAddrs: []string{"nohostport"}}, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redisstore.NewClient(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer c.Close()
			switch c := c.(type) {
			case *redis.Client:
				if tt.cluster || (c.Options().TLSConfig != nil) != tt.tls || c.Options().MaxRetries > 0 || c.Options().DialerRetries != 1 {
					t.Errorf("options %+v", c.Options())
				}
			case *redis.ClusterClient:
				if !tt.cluster || (c.Options().TLSConfig != nil) != tt.tls {
					t.Errorf("options %+v", c.Options())
				}
			}
		})
	}
}

func TestNewClient_ReachesRealServerAndCluster(t *testing.T) {
	needRedis(t)
	for _, cfg := range []redisstore.ClientConfig{{URL: "redis://" + server.Addr}, {ClusterAddrs: cluster.Addrs()}} {
		c, err := redisstore.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := redisstore.New(redisstore.Config{Client: c})
		if err := s.Ping(context.Background()); err != nil {
			t.Errorf("%+v: Ping: %v", cfg, err)
		}
		if err := s.Preload(context.Background()); err != nil {
			t.Errorf("%+v: Preload: %v", cfg, err)
		}
		s.Close()
	}
}

func TestSetLogger_GoRedisMessagesGoToSlog(t *testing.T) {
	var buf bytes.Buffer
	redisstore.SetLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer redisstore.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, _ := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://127.0.0.1:1", Timeout: 50 * time.Millisecond})
	defer c.Close()
	c.Ping(context.Background()) // nothing listens on port 1: go-redis logs the failed dial
	if out := buf.String(); !strings.Contains(out, `"level":"DEBUG","msg":"redis: `) {
		t.Errorf("go-redis message not in slog JSON: %s", out)
	}
}
