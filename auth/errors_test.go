package auth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// TestNew_RefusalsAreConfigErrors: every Config New refuses is a
// *ConfigError naming the Go field at fault, whose Detail is the message
// without the package's prefix: config shows Detail under the file's auth
// key, so these words are what a person reads, and they stay as they were.
func TestNew_RefusalsAreConfigErrors(t *testing.T) {
	clock := testclock.New(time.Time{})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	tests := []struct {
		name              string
		mutate            func(*auth.Config)
		wantField, detail string
	}{
		{"NoAudience", func(c *auth.Config) { c.Audience = "" }, "Audience", "an audience is required"},
		{"NoKeys", func(c *auth.Config) { c.Keys = nil }, "Keys", "at least one key (or a JWKS URL) is required"},
		{"NoTenants", func(c *auth.Config) { c.Tenants = nil }, "Tenants", "at least one tenant is required"},
		{"TenantName", func(c *auth.Config) { c.Tenants[1].Name = "Globex" }, "Tenants[1]", `tenants[1]: name "Globex" is not a tenant name (^[a-z0-9][a-z0-9_-]{0,63}$)`},
		{"TenantWithoutIssuer", func(c *auth.Config) { c.Tenants[0].Issuer = "" }, "Tenants[0]", "tenants[0] (acme): an issuer is required"},
		{"DuplicateTenant", func(c *auth.Config) { c.Tenants[1].Name = "acme" }, "Tenants[1]", `tenants[1]: tenant "acme" is configured twice`},
		{"OneIssuerForTwo", func(c *auth.Config) { c.Tenants[1].Issuer = acmeIssuer }, "Tenants[1]",
			`tenants[1] (globex): issuer "https://acme.example/" already serves tenant "acme"; one issuer may serve one tenant only`},
		{"ShortSecret", func(c *auth.Config) { c.Keys[3].Secret = make([]byte, 12) }, "Keys[3]", `keys[3] (kid "hs"): the HS256 secret has 12 bytes; at least 32 are required`},
		{"MissingKid", func(c *auth.Config) { c.Keys[2].ID = "" }, "Keys[2]", "keys[2]: an ID (kid) is required when more than one key is configured"},
		{"DuplicateKid", func(c *auth.Config) { c.Keys[1].ID = "ed" }, "Keys[1]", `keys[1]: kid "ed" is configured twice`},
		{"KeyOfNoTenant", func(c *auth.Config) { c.Keys[1].Tenants = nil }, "Keys[1]", `keys[1] (kid "ec"): name the tenants whose tokens it verifies: with several tenants configured, a key serves only those it is listed for`},
		{"MaxLifetime", func(c *auth.Config) { c.MaxLifetime = 25 * time.Hour }, "MaxLifetime", "max lifetime 25h0m0s is not within (0, 24h0m0s]"},
		{"Leeway", func(c *auth.Config) { c.Leeway = 6 * time.Minute }, "Leeway", "leeway 6m0s is not within (0, 5m0s]"},
		{"JWKSNotAURL", func(c *auth.Config) { c.JWKSURL = "idp" }, "JWKSURL", `JWKS URL "idp" is not a URL`},
		{"JWKSOverHTTP", func(c *auth.Config) { c.JWKSURL = "http://idp.example/jwks" }, "JWKSURL", `JWKS URL must be https (http only on a loopback address), not "http"`},
		{"JWKSRefresh", func(c *auth.Config) { c.JWKSURL, c.JWKSRefresh = "https://idp.example/jwks", time.Second }, "JWKSRefresh", "the JWKS refresh must be at least 10s"},
		{"JWKSOfNoTenant", func(c *auth.Config) { c.JWKSURL = "https://idp.example/jwks" }, "JWKSTenants", "JWKS: name the tenants whose tokens it verifies: with several tenants configured, a key serves only those it is listed for"},
		{"JWKSDown", func(c *auth.Config) { c.Keys, c.JWKSURL, c.JWKSTenants = nil, down.URL, []string{"acme"} }, "JWKSURL", "JWKS: " + down.URL + " answered 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(clock)
			tt.mutate(&cfg)
			_, err := auth.New(cfg)
			var ce *auth.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New = %v, want a *ConfigError", err)
			}
			if ce.Field != tt.wantField || ce.Detail != tt.detail {
				t.Errorf("ConfigError{Field: %q, Detail: %q}, want {%q, %q}", ce.Field, ce.Detail, tt.wantField, tt.detail)
			}
			if got, want := err.Error(), "auth: "+tt.detail; got != want {
				t.Errorf("New error %q, want %q", got, want)
			}
		})
	}
}
