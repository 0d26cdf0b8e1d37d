package proxy_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
	"github.com/tollgate-auth/tollgate/proxy"
)

// A login whose account waits an hour after 5 failures: long enough that
// the test's own pace never lets a delay run out.
const hourPolicy = `
flows:
  login:
    rules:
      - name: account_backoff
        base: 1h
        max: 2h
`

// Two proxy instances on one Redis share the counters: an attacker who
// spreads his guesses over both is delayed after the same five failures
// as on one.
func TestProxy_TwoInstancesOnOneRedisShareTheCounters(t *testing.T) {
	srv := redistest.Server(t)
	cfg, err := config.Parse([]byte(hourPolicy))
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t)
	upURL, _ := url.Parse(up.URL)
	instance := func() *harness {
		client, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + srv.Addr})
		if err != nil {
			t.Fatal(err)
		}
		store, err := redisstore.New(redisstore.Config{Client: client})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		eng, err := authguard.New(authguard.Config{Policy: cfg.Policy, Store: store, Secret: testSecret})
		if err != nil {
			t.Fatal(err)
		}
		p, err := proxy.New(proxy.Config{Upstream: upURL, Secret: testSecret, Routes: []proxy.Route{formRoute()},
			Cookie: proxy.CookieConfig{Insecure: true}}, eng)
		if err != nil {
			t.Fatal(err)
		}
		return &harness{t: t, proxy: p, up: up}
	}
	a, b := instance(), instance()
	for i := range 5 {
		via := a
		if i%2 == 1 {
			via = b
		}
		resp := via.post(attackerAddr, owner, guess(i))
		body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("guess %d answered %d, want the upstream's form", i+1, resp.StatusCode)
		}
	}
	for _, via := range []*harness{a, b} {
		resp := via.post(attackerAddr, owner, guess(9))
		body(t, resp)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("the 6th guess answered %d, want 429 on either instance", resp.StatusCode)
		}
	}
	if n := up.logins("/login"); n != 5 {
		t.Errorf("the upstream checked %d passwords, want 5", n)
	}
}
