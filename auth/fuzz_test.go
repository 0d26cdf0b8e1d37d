package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// FuzzVerify feeds arbitrary Authorization values to a Verifier with a
// fixed clock: Verify must not panic, and every refusal must be an
// *auth.Error with status 401 or 403 and a documented reason. The seeds are
// valid tokens of the deterministic keys (Ed25519, HS256) and the attacks.
func FuzzVerify(f *testing.F) {
	clock := testclock.New(time.Time{})
	now := clock.Now()
	k := testKeys()
	cfg := testConfig(clock)
	cfg.Keys = []auth.Key{cfg.Keys[0], cfg.Keys[3]} // ed, hs
	v := newVerifier(f, cfg)
	good := claimsAt(now)
	seeds := []string{
		forge(hdr("EdDSA", "ed"), good, jwt.SigningMethodEdDSA, k.ed),
		forge(hdr("HS256", "hs"), good, jwt.SigningMethodHS256, k.hs),
		forge(hdr("HS256", "hs"), with(good, "scope", "admin:write admin:read"), jwt.SigningMethodHS256, k.hs),
		forge(hdr("none", "ed"), good, nil, nil),
		forge(hdr("HS256", "ed"), good, jwt.SigningMethodHS256, k.hs),
		forge(hdr("EdDSA", ""), good, jwt.SigningMethodEdDSA, k.ed),
		forge(hdr("EdDSA", "ed"), with(good, "exp", drop), jwt.SigningMethodEdDSA, k.ed),
		forge(hdr("EdDSA", "ed"), with(good, "exp", "1"), jwt.SigningMethodEdDSA, k.ed),
		forge(hdr("EdDSA", "ed"), with(good, "exp", 1e300, "nbf", -1e300), jwt.SigningMethodEdDSA, k.ed),
		forge(hdr("EdDSA", "ed"), with(good, "aud", []any{1, nil}), jwt.SigningMethodEdDSA, k.ed),
		forge(with(hdr("EdDSA", "ed"), "typ", "JOSE", "crit", []string{"x"}), good, jwt.SigningMethodEdDSA, k.ed),
		forge(with(hdr("EdDSA", "ed"), "jwk", map[string]any{"kty": "OKP"}), good, jwt.SigningMethodEdDSA, k.evilEd),
		forge(hdr("HS256", "hs"), `{"tenant":"acme","tenant":"globex"}`, jwt.SigningMethodHS256, k.hs),
		"a.b.c",
		"..",
	}
	for _, s := range seeds {
		f.Add("Bearer " + s)
	}
	for _, s := range []string{"", " ", "Bearer", "Bearer ", "bearer x", "Basic x", "Bearer  two spaces", "Bearer " + strings.Repeat("A", 9<<10)} {
		f.Add(s)
	}
	needs := []auth.Scope{auth.ScopeVerdicts, auth.ScopeAdminRead, auth.ScopeAdminWrite}
	f.Fuzz(func(t *testing.T, header string) {
		need := needs[len(header)%len(needs)]
		c, err := v.Verify(header, need)
		if err != nil {
			checkError(t, header, err)
			return
		}
		if c.Tenant != "acme" && c.Tenant != "globex" || !c.Has(need) {
			t.Fatalf("Verify(%q, %s) accepted caller %+v", header, need, c)
		}
	})
}

// FuzzParseJWKS checks that ParseJWKS never panics and that what it
// returns is a valid key set.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"b","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"c","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AA"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := auth.ParseJWKS(data)
		if err != nil {
			return
		}
		cfg := auth.Config{Audience: "a", Keys: keys, Tenants: []auth.Tenant{{Name: "t", Issuer: "i"}}}
		if _, err := auth.New(cfg); err != nil {
			t.Fatalf("ParseJWKS returned keys New refuses: %v", err)
		}
	})
}

// FuzzParsePEM checks that the PEM parsers never panic.
func FuzzParsePEM(f *testing.F) {
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = auth.ParsePublicKeyPEM(data)
		_, _ = auth.ParsePrivateKeyPEM(data)
	})
}
