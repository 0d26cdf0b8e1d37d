package redisstore_test

import (
	"context"
	"testing"

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
