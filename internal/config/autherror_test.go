package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/auth"
)

// An auth error is placed by its type, never by its words: one whose
// message starts otherwise (wrapped under another prefix) still says its
// Detail at the file's auth key and line, with the auth.ConfigError
// beneath for errors.As.
func TestParse_AnAuthErrorWordedOtherwiseStillSaysItsDetailAtTheAuthLine(t *testing.T) {
	defer func(f func(auth.Config) (*auth.Verifier, error)) { newVerifier = f }(newVerifier)
	ce := &auth.ConfigError{Field: "Tenants[0]", Detail: "tenants[0] (shop): an issuer is required"}
	newVerifier = func(auth.Config) (*auth.Verifier, error) { return nil, fmt.Errorf("verifier: %w", ce) }
	dir := t.TempDir()
	secret := filepath.Join(dir, "hs.key")
	os.WriteFile(secret, []byte(strings.Repeat("s", 32)), 0o600)
	yaml := fmt.Sprintf("listen: 0.0.0.0:8080\nauth:\n  audience: tollgate\n  keys: [{id: k, alg: HS256, secret_file: %q}]\n  tenants: [{name: shop, issuer: i}]\n", secret)

	_, err := Parse([]byte(yaml))
	if got, want := fmt.Sprint(err), "line 2: auth: tenants[0] (shop): an issuer is required"; got != want {
		t.Errorf("Parse = %q, want %q", got, want)
	}
	var e *Error
	var back *auth.ConfigError
	if !errors.As(err, &e) || e.Path != "auth" || e.Line != 2 || !errors.As(err, &back) || back != ce {
		t.Errorf("Parse = %#v, want a *config.Error at auth, line 2, with the auth.ConfigError beneath", err)
	}
}

// The auth section's errors read as they did before they were typed: the
// section's line, "auth: ", and auth's words or config's own.
func TestParse_AuthErrorsSayTheirWordsAtTheSectionsLine(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "hs.key")
	os.WriteFile(secret, []byte("0123456789ab\n"), 0o600)
	good := fmt.Sprintf("listen: 0.0.0.0:8080\nauth:\n  audience: tollgate\n  keys: [{id: k, alg: HS256, secret_file: %q}]\n  tenants: [{name: shop, issuer: \"https://auth.shop.example\"}]\n", secret)
	for _, tt := range []struct{ name, yaml, want string }{
		{"auth's, of the section", strings.Replace(good, "audience: tollgate", "audience: \"\"", 1),
			"line 2: auth: an audience is required"},
		{"auth's, of a key", good,
			`line 2: auth: keys[0] (kid "k"): the HS256 secret has 12 bytes; at least 32 are required`},
		{"auth's, of a tenant", strings.Replace(good, `issuer: "https://auth.shop.example"`, `issuer: ""`, 1),
			"line 2: auth: tenants[0] (shop): an issuer is required"},
		{"config's own", "auth:\n  audience: a\n  keys: [{id: k, alg: HS256}]\n  tenants: [{name: shop, issuer: i}]\n",
			"line 1: auth: keys[0]: give public_key_file (EdDSA, ES256, RS256) or secret_file (HS256)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Path != "auth" {
				t.Errorf("Parse = %#v, want a *config.Error at auth", err)
			}
		})
	}
}
