package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// TestServe_EvictionSeries: on the embedded memory store, /metrics counts
// the evictions of the main store and of the fallback, by class, from zero.
func TestServe_EvictionSeries(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Secret = []byte(secret32)
	cfg.Policy = authguard.DefaultPolicy()
	ctx, cancel := context.WithCancel(context.Background())
	var logs testkit.SyncBuffer
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &logs, func(a net.Addr) { addrs <- a }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var addr string
	select {
	case a := <-addrs:
		addr = a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, store := range []string{"main", "fallback"} {
		for _, class := range []string{"probation", "protected"} {
			if want := `tollgate_store_evictions_total{class="` + class + `",store="` + store + `"} 0`; !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	if want := `tollgate_store_errors_total{call="check",flow="login",kind="full"} 0`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
