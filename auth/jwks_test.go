package auth_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// idp is an identity provider's JWKS endpoint serving the public halves of
// the keys it holds now, counting its fetches.
type idp struct {
	mu      sync.Mutex
	keys    map[string]ed25519.PrivateKey
	fetches atomic.Int64
	srv     *httptest.Server
}

func newIDP(t *testing.T, kids ...string) *idp {
	p := &idp{keys: map[string]ed25519.PrivateKey{}}
	p.rotate(t, kids...)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		defer p.mu.Unlock()
		var parts []string
		for kid, k := range p.keys {
			x := base64.RawURLEncoding.EncodeToString(k.Public().(ed25519.PublicKey))
			parts = append(parts, fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","x":%q,"kid":%q,"alg":"EdDSA","use":"sig"}`, x, kid))
		}
		fmt.Fprintf(w, `{"keys":[%s]}`, strings.Join(parts, ","))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// rotate replaces the provider's keys with new ones of these kids.
func (p *idp) rotate(t *testing.T, kids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = map[string]ed25519.PrivateKey{}
	for _, kid := range kids {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p.keys[kid] = k
	}
}

// token is a verdicts token of tenant "shop" signed by the provider's key kid.
func (p *idp) token(t *testing.T, kid string) string {
	p.mu.Lock()
	k := p.keys[kid]
	p.mu.Unlock()
	tok, err := auth.Sign(auth.SigningKey{ID: kid, Alg: "EdDSA", Private: k}, "https://idp.example", "tollgate", "shop", "svc",
		[]auth.Scope{auth.ScopeVerdicts}, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func jwksConfig(url string) auth.Config {
	return auth.Config{Audience: "tollgate", JWKSURL: url, Tenants: []auth.Tenant{{Name: "shop", Issuer: "https://idp.example"}}}
}

// TestJWKS_ProviderKeysAreTrustedAndRotationIsPickedUp: keys come from the
// provider's JWK Set; after the provider rotates, the first token with the
// new kid is refused as unknown_key and makes the verifier fetch the set
// again, after which the new key verifies and the retired one does not.
func TestJWKS_ProviderKeysAreTrustedAndRotationIsPickedUp(t *testing.T) {
	p := newIDP(t, "idp-1")
	v, err := auth.New(jwksConfig(p.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify("Bearer "+p.token(t, "idp-1"), auth.ScopeVerdicts); err != nil {
		t.Fatalf("a token of the provider's key: %v", err)
	}
	old := p.token(t, "idp-1")
	p.rotate(t, "idp-2")
	fresh := p.token(t, "idp-2")
	_, err = v.Verify("Bearer "+fresh, auth.ScopeVerdicts)
	wantRefusal(t, err, 401, "unknown_key")
	testkit.Eventually(5*time.Second, func() bool {
		_, err = v.Verify("Bearer "+fresh, auth.ScopeVerdicts)
		return err == nil
	})
	if err != nil {
		t.Fatalf("the rotated key after a refresh: %v", err)
	}
	_, err = v.Verify("Bearer "+old, auth.ScopeVerdicts)
	wantRefusal(t, err, 401, "unknown_key")
}

// TestJWKS_UnknownKidsCannotFloodTheProvider: a thousand tokens naming
// made-up kids cause at most one fetch beyond New's within the throttle.
func TestJWKS_UnknownKidsCannotFloodTheProvider(t *testing.T) {
	p := newIDP(t, "idp-1")
	v, err := auth.New(jwksConfig(p.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		_, rest, _ := strings.Cut(p.token(t, "idp-1"), ".")
		forged := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"alg":"EdDSA","typ":"JWT","kid":"made-up-%d"}`, i))) + "." + rest
		_, err := v.Verify("Bearer "+forged, auth.ScopeVerdicts)
		wantRefusal(t, err, 401, "unknown_key")
	}
	// The first unknown kid made the one background fetch.
	testkit.WaitFor(t, 5*time.Second, "the JWKS fetched again for an unknown kid", func() bool { return p.fetches.Load() >= 2 })
	if n := p.fetches.Load(); n > 2 {
		t.Errorf("%d fetches of the JWKS, want at most 2 (New's and one refresh)", n)
	}
}

// TestJWKS_Config: the URL must be https (http only on loopback); a
// provider that is down at start is an error without configured keys, and
// not with one.
func TestJWKS_Config(t *testing.T) {
	for _, url := range []string{"http://idp.example/jwks", "ftp://127.0.0.1/jwks", "::"} {
		if _, err := auth.New(jwksConfig(url)); err == nil {
			t.Errorf("JWKS URL %q accepted", url)
		}
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }))
	defer down.Close()
	if _, err := auth.New(jwksConfig(down.URL)); err == nil {
		t.Error("a provider down at start, with no configured key, was accepted")
	}
	cfg := jwksConfig(down.URL)
	cfg.Keys = []auth.Key{{ID: "local", Alg: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	if _, err := auth.New(cfg); err != nil {
		t.Errorf("a provider down at start, with a configured key: %v", err)
	}
}

// TestJWKS_ProviderKeysVerifyOnlyTheirTenants: the provider's keys serve
// shop (JWKSTenants); bank has a secret of its own. A provider key's token
// claiming bank and bank's issuer is refused, and so is bank's secret's
// claiming shop; each verifies its own tenant. Two tenants and no
// JWKSTenants is refused before anything is fetched.
func TestJWKS_ProviderKeysVerifyOnlyTheirTenants(t *testing.T) {
	p := newIDP(t, "idp-1")
	secret := auth.SigningKey{ID: "bank", Alg: "HS256", Secret: []byte("the bank's own secret of 32 bytes+")}
	cfg := jwksConfig(p.srv.URL)
	cfg.Tenants = append(cfg.Tenants, auth.Tenant{Name: "bank", Issuer: "https://login.bank.example"})
	cfg.Keys = []auth.Key{{ID: "bank", Alg: "HS256", Secret: secret.Secret, Tenants: []string{"bank"}}}
	if _, err := auth.New(cfg); err == nil || !strings.Contains(err.Error(), "JWKS: name the tenants") || p.fetches.Load() != 0 {
		t.Fatalf("New with two tenants and no JWKSTenants: %v after %d fetches, want a refusal before any", err, p.fetches.Load())
	}
	cfg.JWKSTenants = []string{"shop"}
	v, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k auth.SigningKey, iss, tenant string) string {
		tok, err := auth.Sign(k, iss, "tollgate", tenant, "svc", []auth.Scope{auth.ScopeVerdicts}, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	p.mu.Lock()
	provider := auth.SigningKey{ID: "idp-1", Alg: "EdDSA", Private: p.keys["idp-1"]}
	p.mu.Unlock()
	if c, err := v.Verify(sign(provider, "https://idp.example", "shop"), auth.ScopeVerdicts); err != nil || c.Tenant != "shop" {
		t.Errorf("the provider's key for shop: %+v, %v", c, err)
	}
	if c, err := v.Verify(sign(secret, "https://login.bank.example", "bank"), auth.ScopeVerdicts); err != nil || c.Tenant != "bank" {
		t.Errorf("bank's secret for bank: %+v, %v", c, err)
	}
	_, err = v.Verify(sign(provider, "https://login.bank.example", "bank"), auth.ScopeVerdicts)
	wantRefusal(t, err, 401, "issuer")
	_, err = v.Verify(sign(secret, "https://idp.example", "shop"), auth.ScopeVerdicts)
	wantRefusal(t, err, 401, "issuer")
}
