package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// TestSign_VerifyRoundTrip signs with each algorithm and verifies.
func TestSign_VerifyRoundTrip(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	v := newVerifier(t, testConfig(clock))
	tests := []struct {
		name string
		key  auth.SigningKey
	}{
		{"EdDSA", auth.SigningKey{ID: "ed", Alg: "EdDSA", Private: k.ed}},
		{"ES256", auth.SigningKey{ID: "ec", Alg: "ES256", Private: k.ec}},
		{"RS256", auth.SigningKey{ID: "rsa", Alg: "RS256", Private: k.rsa}},
		{"HS256", auth.SigningKey{ID: "hs", Alg: "HS256", Secret: k.hs}},
		{"EdDSAInferred", auth.SigningKey{ID: "ed", Private: k.ed}},
		{"HS256Inferred", auth.SigningKey{ID: "hs", Secret: k.hs}},
	}
	scopes := []auth.Scope{auth.ScopeAdminWrite, auth.ScopeVerdicts, auth.ScopeAdminWrite}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := auth.Sign(tt.key, globexIssuer, audience, "globex", "ops@globex", scopes, time.Hour, clock.Now())
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			c, err := v.Verify("Bearer "+tok, auth.ScopeAdminWrite)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if c.Tenant != "globex" || c.Subject != "ops@globex" || !slices.Equal(c.Scopes, []auth.Scope{auth.ScopeAdminWrite, auth.ScopeVerdicts}) {
				t.Errorf("Verify = %+v", c)
			}
		})
	}
}

// TestSign_Claims checks the header and claims Sign writes.
func TestSign_Claims(t *testing.T) {
	now := testclock.At(1500 * time.Millisecond)
	tok, err := auth.Sign(auth.SigningKey{ID: "ed", Private: testKeys().ed}, acmeIssuer, audience, "acme", "", []auth.Scope{auth.ScopeVerdicts, auth.ScopeAdminRead}, 10*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	got := func(seg string) string {
		b, err := base64.RawURLEncoding.DecodeString(seg)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(m) // sorted keys
		return string(out)
	}
	if g, w := got(parts[0]), `{"alg":"EdDSA","kid":"ed","typ":"JWT"}`; g != w {
		t.Errorf("header = %s, want %s", g, w)
	}
	sec := testclock.Epoch.Unix() + 1
	w := `{"aud":["tollgate"],"exp":` + itoa(sec+600) + `,"iat":` + itoa(sec) + `,"iss":"https://acme.example/","scope":"verdicts admin:read","tenant":"acme"}`
	if g := got(parts[1]); g != w {
		t.Errorf("claims = %s, want %s", g, w)
	}
}

func TestSign_Refuses(t *testing.T) {
	k := testKeys()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ed := auth.SigningKey{ID: "ed", Private: k.ed}
	tests := []struct {
		name                     string
		key                      auth.SigningKey
		issuer, audience, tenant string
		scopes                   []auth.Scope
		lifetime                 time.Duration
	}{
		{"NoIssuer", ed, "", audience, "acme", nil, time.Minute},
		{"NoAudience", ed, acmeIssuer, "", "acme", nil, time.Minute},
		{"BadTenant", ed, acmeIssuer, audience, "Acme", nil, time.Minute},
		{"UnknownScope", ed, acmeIssuer, audience, "acme", []auth.Scope{"admin:wirte"}, time.Minute},
		{"ZeroLifetime", ed, acmeIssuer, audience, "acme", nil, 0},
		{"LifetimeOver24h", ed, acmeIssuer, audience, "acme", nil, 25 * time.Hour},
		{"ShortSecret", auth.SigningKey{Alg: "HS256", Secret: make([]byte, 16)}, acmeIssuer, audience, "acme", nil, time.Minute},
		{"AlgMismatch", auth.SigningKey{Alg: "RS256", Private: k.ed}, acmeIssuer, audience, "acme", nil, time.Minute},
		{"AlgNone", auth.SigningKey{Alg: "none"}, acmeIssuer, audience, "acme", nil, time.Minute},
		{"NoKey", auth.SigningKey{}, acmeIssuer, audience, "acme", nil, time.Minute},
		{"P384", auth.SigningKey{Alg: "ES256", Private: p384}, acmeIssuer, audience, "acme", nil, time.Minute},
		{"SecretAndPrivate", auth.SigningKey{Private: k.ed, Secret: k.hs}, acmeIssuer, audience, "acme", nil, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := auth.Sign(tt.key, tt.issuer, tt.audience, tt.tenant, "", tt.scopes, tt.lifetime, testclock.Epoch); err == nil {
				t.Errorf("Sign = %q, want an error", tok)
			}
		})
	}
}
