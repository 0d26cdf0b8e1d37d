package client_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/breached"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// stepCorpus holds breachedPass. A corpus is immutable, and each one
// allocates its range table (megabytes): the tests share one.
var stepCorpus = sync.OnceValues(func() (*breached.Corpus, error) {
	sum := sha1.Sum([]byte(breachedPass))
	return breached.Parse([]byte(strings.ToUpper(hex.EncodeToString(sum[:]))+":9659365\n"), 0)
})

// newEngineStepApp is a stepApp on the real tollgate (engine on its
// built-in policy, API, and a breached-password corpus holding
// breachedPass) instead of the stand-in.
func newEngineStepApp(t *testing.T) *stepApp {
	t.Helper()
	clock := testclock.New(testclock.Epoch)
	engine, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(),
		Store:  memstore.New(memstore.Config{Now: clock.Now}),
		Secret: []byte("guard-step-up-secret-of-32-bytes-or-more"),
		Now:    clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	corpus, err := stepCorpus()
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := breached.New(breached.Config{Corpus: corpus})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := api.New(api.Config{Engine: engine, Breached: ranges})
	if err != nil {
		t.Fatal(err)
	}
	s := &stepApp{tg: &standIn{}}
	s.tg.srv = httptest.NewServer(handler)
	t.Cleanup(s.tg.srv.Close)
	tc, err := client.New(client.Config{BaseURL: s.tg.srv.URL, Timeout: 5 * time.Second, BreachedTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.CloseIdleConnections)
	proxies, err := client.NewProxies(client.ProxyConfig{
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Header: client.HeaderXForwardedFor,
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	g, err := client.NewGuard(client.GuardConfig{
		Client: tc, AccountField: "username", Proxies: proxies,
		SendCode: func(_ context.Context, account, code string) error {
			mu.Lock()
			defer mu.Unlock()
			s.mu.Lock()
			defer s.mu.Unlock()
			if account == "bob" {
				s.codes = append(s.codes, code)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.app = httptest.NewServer(g.Middleware(http.HandlerFunc(s.login)))
	t.Cleanup(s.app.Close)
	return s
}

// On the real tollgate: a stolen breached password from a new device gets
// no session until the code; the code signs in with the device cookie
// tollgate issued for the step-up's pass; with that cookie the owner's next
// sign-in with the same password needs no second factor.
func TestGuardOnTollgate_AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor(t *testing.T) {
	s := newEngineStepApp(t)
	b := s.browser()
	got := b.post(t, bob(breachedPass))
	if b.signedIn() || b.cookies[client.StepUpCookieName] == "" || !strings.Contains(got.body, client.StepUpField) {
		t.Fatalf("a breached password from a new device: %s, cookies %v; want the code page and no session", got, b.cookies)
	}
	if got := b.post(t, code(s.lastCode(t))); !b.signedIn() || got.status != http.StatusSeeOther {
		t.Fatalf("the right code: %s", got)
	}
	device := b.cookies[client.DefaultDeviceCookieName]
	if device == "" {
		t.Fatal("no device cookie after the step-up's pass")
	}

	// TheOwnersKnownDeviceSignsInWithoutStepUp: the same browser, later.
	delete(b.cookies, sessionCookie)
	sent := len(s.codes)
	if got := b.post(t, bob(breachedPass)); !b.signedIn() || got.status != http.StatusSeeOther {
		t.Fatalf("the owner's known device with the same password: %s; want signed in at once", got)
	}
	if len(s.codes) != sent {
		t.Errorf("a code was sent to the owner's known device")
	}

	// A password that is not breached, from another new device, signs in
	// without a code.
	other := s.browser()
	if got := other.post(t, bob(unbreachedPass)); !other.signedIn() {
		t.Fatalf("an unbreached password: %s; want signed in", got)
	}
}

// On the real tollgate: wrong codes are counted on the step_up flow until
// its check delays the next try (429 with Retry-After), and none signs in.
func TestGuardOnTollgate_AWrongSecondFactorCodeIsReportedAndThrottled(t *testing.T) {
	s := newEngineStepApp(t)
	b := s.browser()
	for round := 0; round < 10; round++ {
		// Five wrong codes drop the pending login: sign in again for a
		// fresh one.
		if got := b.post(t, bob(breachedPass)); b.cookies[client.StepUpCookieName] == "" {
			t.Fatalf("round %d: no step-up: %s", round, got)
		}
		for range 4 {
			got := b.post(t, code("000000"))
			if b.signedIn() {
				t.Fatalf("a wrong code signed in: %s", got)
			}
			if got.status == http.StatusTooManyRequests {
				if got.header.Get("Retry-After") == "" {
					t.Errorf("a delayed try without Retry-After: %s", got)
				}
				// Even the right code waits now.
				if got := b.post(t, code(s.lastCode(t))); b.signedIn() || got.status != http.StatusTooManyRequests {
					t.Errorf("the right code while the step_up flow delays: %s", got)
				}
				return
			}
		}
	}
	t.Fatal("40 wrong codes and the step_up flow never delayed a try")
}
