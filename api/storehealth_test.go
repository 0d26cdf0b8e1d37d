package api_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// TestReadyz_StoreFull: a full Redis still answers PING, so /readyz also asks
// StoreHealth, and answers the store-full problem.
func TestReadyz_StoreFull(t *testing.T) {
	h := newHarness(t)
	var health error
	var err error
	h.api, err = api.New(api.Config{
		Engine: h.engine, Store: h.store, Metrics: h.metrics,
		Logger:      slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		StoreHealth: func() error { return health },
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		health     error
		closed     bool
		wantStatus int
		wantType   string // the problem type's slug
		wantDetail string // a part of the problem's detail
	}{
		{"healthy", nil, false, 200, "", ""},
		{"full", fmt.Errorf("the store answered full 1s ago: %w", authguard.ErrStoreFull), false, 503, "store-full", "out of memory"},
		{"failing otherwise", errors.New("the store fails calls"), false, 503, "store-unavailable", "fails calls"},
		{"another secret on the store", fmt.Errorf("TOLLGATE_SECRET: %w", authguard.ErrSecretMismatch), false, 503, "secret-mismatch", "another TOLLGATE_SECRET"},
		{"an evicting store under -strict-store", authguard.ErrStoreEvicts, false, 503, "store-evicts", "noeviction"},
		{"a store without persistence under -strict-store", authguard.ErrStoreUnpersisted, false, 503, "store-unpersisted", "append-only file"},
		{"a store without a password under -strict-store", authguard.ErrStoreUnauthenticated, false, 503, "store-unauthenticated", "without a password"},
		{"healthy again", nil, false, 200, "", ""},
		{"no ping answer comes first", fmt.Errorf("x: %w", authguard.ErrStoreFull), true, 503, "store-unavailable", "does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			health = tt.health
			if tt.closed {
				h.store.Close()
			}
			res := h.do(t, http.MethodGet, "/readyz", "", "")
			if res.status != tt.wantStatus {
				t.Fatalf("/readyz = %d %s, want %d", res.status, res.body, tt.wantStatus)
			}
			body := res.json(t)
			if tt.wantStatus == 200 {
				if body["status"] != "ready" {
					t.Errorf("/readyz body %s", res.body)
				}
				return
			}
			if body["type"] != "https://tollgate.dev/problems/"+tt.wantType || !strings.Contains(fmt.Sprint(body["detail"]), tt.wantDetail) {
				t.Errorf("/readyz body %s, want a %s problem whose detail says %q", res.body, tt.wantType, tt.wantDetail)
			}
			if strings.Contains(string(res.body), "answered full 1s ago") || strings.Contains(string(res.body), "x:") || strings.Contains(string(res.body), "TOLLGATE_SECRET:") {
				t.Errorf("/readyz body %s repeats the error's text", res.body)
			}
		})
	}
}

// TestReadyz_StoreWarnings: a store that answers but is set up against
// README (a Redis that may evict keys) is ready, and the answer says why it
// should not be so.
func TestReadyz_StoreWarnings(t *testing.T) {
	h := newHarness(t)
	var warnings []string
	var err error
	h.api, err = api.New(api.Config{Engine: h.engine, Store: h.store, Metrics: h.metrics, StoreWarnings: func() []string { return warnings }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		warnings []string
		want     string
	}{
		{"none", nil, `{"status":"ready"}`},
		{"an evicting Redis", []string{"Redis's maxmemory-policy allkeys-lru may evict tollgate's keys"}, `{"status":"ready","warnings":["Redis's maxmemory-policy allkeys-lru may evict tollgate's keys"]}`},
		{"a Redis that forgets, without a password", []string{"Redis keeps neither an append-only file nor snapshots", "Redis answers without a password"},
			`{"status":"ready","warnings":["Redis keeps neither an append-only file nor snapshots","Redis answers without a password"]}`},
	} {
		warnings = tt.warnings
		res := h.do(t, http.MethodGet, "/readyz", "", "")
		if res.status != 200 || strings.TrimSpace(string(res.body)) != tt.want {
			t.Errorf("%s: /readyz = %d %s, want 200 %s", tt.name, res.status, res.body, tt.want)
		}
	}
}

// TestMetrics_StoreErrorsAndEvictions: every store error kind has a series
// from the start, and the memory stores' evictions are read at each scrape.
func TestMetrics_StoreErrorsAndEvictions(t *testing.T) {
	h := newHarness(t)
	scrape := func() string {
		t.Helper()
		return string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	}
	body := scrape()
	for _, kind := range authguard.StoreErrorKinds() {
		for _, call := range []string{"check", "report"} {
			if want := fmt.Sprintf(`tollgate_store_errors_total{call=%q,flow="login",kind=%q} 0`, call, kind); !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	if strings.Contains(body, "tollgate_store_evictions_total{") {
		t.Errorf("eviction series before any store was added")
	}

	mainStore := memstore.New(memstore.Config{MaxEntries: 2, Shards: 1})
	h.metrics.AddMemoryStore("main", mainStore)
	h.metrics.AddMemoryStore("fallback", memstore.New(memstore.Config{}))
	ctx := context.Background()
	charge := func(k string) {
		mainStore.Do(ctx, []authguard.Op{&authguard.BackoffOp{Key: k, Action: authguard.BackoffCharge, Policy: config.DefaultPolicy().Flow("login").Rule("account_backoff").Backoff}})
	}
	for range 5 { // a counter in backoff: protected
		charge("victim")
	}
	for i := range 4 { // 3 ordinary counters evicted, each by the next
		charge(fmt.Sprint("made-up-", i))
	}
	body = scrape()
	for _, want := range []string{
		`tollgate_store_evictions_total{class="probation",store="main"} 3`,
		`tollgate_store_evictions_total{class="protected",store="main"} 0`,
		`tollgate_store_evictions_total{class="probation",store="fallback"} 0`,
		`tollgate_store_evictions_total{class="protected",store="fallback"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`# HELP tollgate_store_errors_total .*`).FindString(body); !strings.Contains(m, "full") {
		t.Errorf("store errors help does not name full: %s", m)
	}
}
