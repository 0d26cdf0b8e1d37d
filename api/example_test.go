package api_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// A request the engine cannot use is answered with an RFC 9457 problem that
// names the field, and changes nothing.
func ExampleNew() {
	store := memstore.New(memstore.Config{})
	metrics := api.NewMetrics(nil)
	engine, _ := authguard.New(authguard.Config{Policy: config.DefaultPolicy(),
		Store:   store,
		Secret:  []byte("example-secret-of-at-least-32-bytes"),
		Observe: metrics.Observe,
	})
	handler, _ := api.New(api.Config{Engine: engine, Store: store, Metrics: metrics})

	req := httptest.NewRequest("POST", "/v1/check",
		strings.NewReader(`{"flow":"login","account":"alice@example.com","ip":"fe80::1%eth0"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "req-1")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)

	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Print(rec.Body.String())
	// Output:
	// 400 application/problem+json
	// {"type":"https://tollgate.dev/problems/invalid-field","title":"Invalid field","status":400,"detail":"ip must be an IPv4 or IPv6 address, without zone, port or prefix length","field":"ip","request_id":"req-1"}
}
