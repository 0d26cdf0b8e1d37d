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

// An auth error is placed by its type, never by its words: one that
// reaches config under another prefix, or whose text no longer starts
// "auth: ", still says its Detail at the file's auth key, and the cause
// stays beneath for errors.As.
func TestAuthError_IsReadAsAValueNotByItsPrefix(t *testing.T) {
	ce := &auth.ConfigError{Field: "Keys[0]", Detail: `keys[0] (kid "k"): the HS256 secret has 12 bytes; at least 32 are required`}
	for _, err := range []error{
		ce,
		fmt.Errorf("verifier: %w", ce), // a message that starts differently
	} {
		e := &Error{Line: 2, Path: "auth", Err: authError(err)}
		if got, want := e.Error(), `line 2: auth: keys[0] (kid "k"): the HS256 secret has 12 bytes; at least 32 are required`; got != want {
			t.Errorf("%q placed as %q, want %q", err, got, want)
		}
		var back *auth.ConfigError
		if !errors.As(e, &back) || back.Field != "Keys[0]" {
			t.Errorf("%q: errors.As finds %+v, want the auth.ConfigError beneath", err, back)
		}
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
