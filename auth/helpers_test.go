package auth_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

const (
	audience     = "tollgate"
	acmeIssuer   = "https://acme.example/"
	globexIssuer = "https://globex.example/"
)

// keys are the test keys, generated once: RSA generation is slow.
type keys struct {
	ed     ed25519.PrivateKey
	ec     *ecdsa.PrivateKey
	rsa    *rsa.PrivateKey
	hs     []byte
	evilEd ed25519.PrivateKey // an attacker's key
}

var testKeys = sync.OnceValue(func() keys {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return keys{
		ed:     ed25519.NewKeyFromSeed([]byte("tollgate test ed25519 key seed..")),
		ec:     ec,
		rsa:    rk,
		hs:     []byte("tollgate test HS256 secret of 32+ bytes"),
		evilEd: ed25519.NewKeyFromSeed([]byte("an attacker's own ed25519 seed..")),
	}
})

// testConfig is a Config with one key of each algorithm (kids "ed", "ec",
// "rsa", "hs"), each shared on purpose by tenants acme and globex, and
// clock's time.
func testConfig(clock *testclock.Clock) auth.Config {
	k := testKeys()
	both := []string{"acme", "globex"}
	return auth.Config{
		Audience: audience,
		Keys: []auth.Key{
			{ID: "ed", Alg: "EdDSA", Public: k.ed.Public(), Tenants: both},
			{ID: "ec", Alg: "ES256", Public: k.ec.Public(), Tenants: both},
			{ID: "rsa", Alg: "RS256", Public: k.rsa.Public(), Tenants: both},
			{ID: "hs", Alg: "HS256", Secret: k.hs, Tenants: both},
		},
		Tenants: []auth.Tenant{
			{Name: "acme", Issuer: acmeIssuer},
			{Name: "globex", Issuer: globexIssuer},
		},
		Now: clock.Now,
	}
}

func newVerifier(t testing.TB, cfg auth.Config) *auth.Verifier {
	t.Helper()
	v, err := auth.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

// b64 is the base64url JSON encoding of v, or of the string v as is.
func b64(v any) string {
	if s, ok := v.(string); ok {
		return base64.RawURLEncoding.EncodeToString([]byte(s))
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// forge builds a JWS from a header and claims (maps, or raw JSON strings)
// signed with method and key; unsigned (an empty signature) when method is
// nil.
func forge(header, claims any, method jwt.SigningMethod, key any) string {
	input := b64(header) + "." + b64(claims)
	if method == nil {
		return input + "."
	}
	sig, err := method.Sign(input, key)
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// hdr is a JOSE header with alg, typ JWT and kid (none when empty).
func hdr(alg, kid string) map[string]any {
	h := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	return h
}

// claimsAt are valid claims of acme's alice for now: 15 minutes of
// verdicts and admin:read.
func claimsAt(now time.Time) map[string]any {
	return map[string]any{
		"iss":    acmeIssuer,
		"aud":    []string{audience},
		"sub":    "alice",
		"tenant": "acme",
		"scope":  "verdicts admin:read",
		"iat":    now.Unix(),
		"exp":    now.Add(15 * time.Minute).Unix(),
	}
}

// drop marks a member with to delete.
type dropT struct{}

var drop dropT

// with returns a copy of m with the members of kv (name, value pairs) set,
// or deleted when the value is drop.
func with(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == drop {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// reasons are the documented reasons of an auth.Error.
var reasons = []string{"missing", "malformed", "algorithm", "unknown_key", "signature", "expired", "lifetime",
	"not_yet_valid", "audience", "issuer", "tenant", "type", "scope"}

// wantRefusal checks that err is an *auth.Error with status and reason.
func wantRefusal(t testing.TB, err error, status int, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Verify accepted the token, want %d %s", status, reason)
	}
	var e *auth.Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify error %v (%T) is not an *auth.Error", err, err)
	}
	if e.Status != status || e.Reason != reason {
		t.Errorf("Verify = %d %s (%s), want %d %s", e.Status, e.Reason, e.Detail, status, reason)
	}
}

// checkError checks what any refusal must be: an *auth.Error (not wrapped)
// with status 401, or 403 for reason scope, a documented reason, and a
// message without the token in it.
func checkError(t testing.TB, header string, err error) {
	t.Helper()
	e, ok := err.(*auth.Error)
	switch {
	case !ok || e == nil:
		t.Fatalf("Verify(%q) error %v (%T) is not an *auth.Error", header, err, err)
	case !slices.Contains(reasons, e.Reason):
		t.Fatalf("Verify(%q) reason %q is not documented", header, e.Reason)
	case e.Status != http.StatusUnauthorized && e.Status != http.StatusForbidden:
		t.Fatalf("Verify(%q) status %d, want 401 or 403", header, e.Status)
	case (e.Status == http.StatusForbidden) != (e.Reason == "scope"):
		t.Fatalf("Verify(%q) = %d %s: 403 goes with scope and scope with 403 only", header, e.Status, e.Reason)
	}
	if tok, ok := strings.CutPrefix(header, "Bearer "); ok && len(tok) >= 16 && strings.Contains(e.Error(), tok) {
		t.Fatalf("Verify(%q) error %q echoes the token", header, e.Error())
	}
}
