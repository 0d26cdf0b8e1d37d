package auth_test

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

type equaler interface{ Equal(crypto.PublicKey) bool }

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestParsePublicKeyPEM_RoundTrip(t *testing.T) {
	k := testKeys()
	for _, pub := range []crypto.PublicKey{k.ed.Public(), k.ec.Public(), k.rsa.Public()} {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		got, err := auth.ParsePublicKeyPEM(append([]byte("a comment before the block\n"), pemOf("PUBLIC KEY", der)...))
		if err != nil {
			t.Fatalf("ParsePublicKeyPEM(%T): %v", pub, err)
		}
		if !pub.(equaler).Equal(got) {
			t.Errorf("ParsePublicKeyPEM(%T) = %T, not the key marshalled", pub, got)
		}
	}
}

func TestParsePublicKeyPEM_Refuses(t *testing.T) {
	k := testKeys()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der := func(pub crypto.PublicKey) []byte {
		b, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	edPEM := pemOf("PUBLIC KEY", der(k.ed.Public()))
	tests := []struct {
		name string
		data []byte
	}{
		{"Empty", nil},
		{"NotPEM", []byte("-----BEGIN nothing")},
		{"P384", pemOf("PUBLIC KEY", der(p384.Public()))},
		{"X25519", pemOf("PUBLIC KEY", der(x25519.PublicKey()))},
		{"PKCS1RSAPublicKey", pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey))},
		{"Certificate", pemOf("CERTIFICATE", der(k.ed.Public()))},
		{"Garbage", pemOf("PUBLIC KEY", []byte("garbage"))},
		{"TwoBlocks", append(append([]byte(nil), edPEM...), edPEM...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := auth.ParsePublicKeyPEM(tt.data); err == nil {
				t.Errorf("ParsePublicKeyPEM = %T, want an error", got)
			}
		})
	}
}

func TestParsePrivateKeyPEM_RoundTrip(t *testing.T) {
	k := testKeys()
	ecDER, err := x509.MarshalECPrivateKey(k.ec)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		pub  crypto.PublicKey
	}{
		{"PKCS8Ed25519", pkcs8(t, k.ed), k.ed.Public()},
		{"PKCS8ECDSA", pkcs8(t, k.ec), k.ec.Public()},
		{"PKCS8RSA", pkcs8(t, k.rsa), k.rsa.Public()},
		{"SEC1EC", pemOf("EC PRIVATE KEY", ecDER), k.ec.Public()},
		{"PKCS1RSA", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.rsa)), k.rsa.Public()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := auth.ParsePrivateKeyPEM(tt.data)
			if err != nil {
				t.Fatalf("ParsePrivateKeyPEM: %v", err)
			}
			signer, ok := got.(crypto.Signer)
			if !ok || !tt.pub.(equaler).Equal(signer.Public()) {
				t.Errorf("ParsePrivateKeyPEM = %T, not the key marshalled", got)
			}
		})
	}
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("PRIVATE KEY", der)
}

func TestParsePrivateKeyPEM_Refuses(t *testing.T) {
	k := testKeys()
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(k.ed.Public())
	if err != nil {
		t.Fatal(err)
	}
	legacy := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}, Bytes: []byte("x")})
	tests := []struct {
		name string
		data []byte
	}{
		{"Empty", nil},
		{"PublicKey", pemOf("PUBLIC KEY", pubDER)},
		{"X25519", pkcs8(t, x25519)},
		{"P384", pkcs8(t, p384)},
		{"EncryptedPKCS8", pemOf("ENCRYPTED PRIVATE KEY", []byte("x"))},
		{"EncryptedLegacy", legacy},
		{"Garbage", pemOf("PRIVATE KEY", []byte("garbage"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := auth.ParsePrivateKeyPEM(tt.data); err == nil {
				t.Errorf("ParsePrivateKeyPEM = %T, want an error", got)
			}
		})
	}
}

// jwk returns the public JWK members of pub.
func jwk(t *testing.T, pub crypto.PublicKey) map[string]any {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	switch pk := pub.(type) {
	case ed25519.PublicKey:
		return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": enc(pk)}
	case *ecdsa.PublicKey:
		b, err := pk.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		size := (len(b) - 1) / 2
		return map[string]any{"kty": "EC", "crv": pk.Params().Name, "x": enc(b[1 : 1+size]), "y": enc(b[1+size:])}
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "n": enc(pk.N.Bytes()), "e": enc(big.NewInt(int64(pk.E)).Bytes())}
	}
	t.Fatalf("jwk: %T", pub)
	return nil
}

func jwks(t *testing.T, keys ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseJWKS_ThreeKinds parses a set with a key of each kind, with alg
// given or inferred, skips what is not for signing with a supported
// algorithm, and verifies tokens with the result.
func TestParseJWKS_ThreeKinds(t *testing.T) {
	k := testKeys()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data := jwks(t,
		with(jwk(t, k.ed.Public()), "kid", "ed", "use", "sig"),              // alg inferred
		with(jwk(t, k.ec.Public()), "kid", "ec", "alg", "ES256"),            // alg given
		with(jwk(t, k.rsa.Public()), "kid", "rsa", "x5c", []string{"MIIB"}), // alg inferred, x5c ignored
		with(jwk(t, k.rsa.Public()), "kid", "rsa-enc", "use", "enc", "alg", "RSA-OAEP"),
		with(jwk(t, k.rsa.Public()), "kid", "rsa-pss", "alg", "PS256"),
		with(jwk(t, p384.Public()), "kid", "p384"),
	)
	keys, err := auth.ParseJWKS(data)
	if err != nil {
		t.Fatalf("ParseJWKS: %v", err)
	}
	want := map[string]string{"ed": "EdDSA", "ec": "ES256", "rsa": "RS256"}
	if len(keys) != len(want) {
		t.Fatalf("ParseJWKS returned %d keys, want %d: %+v", len(keys), len(want), keys)
	}
	for _, key := range keys {
		if want[key.ID] != key.Alg {
			t.Errorf("key %q has alg %q, want %q", key.ID, key.Alg, want[key.ID])
		}
	}
	clock := testclock.New(time.Time{})
	cfg := testConfig(clock)
	cfg.Keys = keys
	for i := range cfg.Keys {
		cfg.Keys[i].Tenants = []string{"acme"}
	}
	v := newVerifier(t, cfg)
	for _, sk := range []auth.SigningKey{{ID: "ed", Private: k.ed}, {ID: "ec", Private: k.ec}, {ID: "rsa", Private: k.rsa}} {
		tok, err := auth.Sign(sk, acmeIssuer, audience, "acme", "alice", []auth.Scope{auth.ScopeVerdicts}, time.Minute, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify("Bearer "+tok, auth.ScopeVerdicts); err != nil {
			t.Errorf("token of key %q: %v", sk.ID, err)
		}
	}
}

func TestParseJWKS_Refuses(t *testing.T) {
	k := testKeys()
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ed := with(jwk(t, k.ed.Public()), "kid", "ed")
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"PrivateMemberD", jwks(t, with(ed, "d", "AAAA")), `"d"`},
		{"PrivateRSA", jwks(t, with(jwk(t, k.rsa.Public()), "kid", "rsa", "d", "AAAA", "p", "AA")), "private"},
		{"PrivateKeyForEncryption", jwks(t, with(ed, "use", "enc", "d", "AAAA")), "private"},
		{"Symmetric", jwks(t, map[string]any{"kty": "oct", "kid": "hs", "k": "c2VjcmV0", "alg": "HS256"}), "oct"},
		{"MissingKid", jwks(t, jwk(t, k.ed.Public())), `"kid" is required`},
		{"AlgDoesNotMatchKty", jwks(t, with(ed, "alg", "ES256")), "does not match"},
		{"RS256OnECKey", jwks(t, with(jwk(t, k.ec.Public()), "kid", "ec", "alg", "RS256")), "does not match"},
		{"BadBase64", jwks(t, with(ed, "x", "not base64!")), "base64url"},
		{"PaddedBase64", jwks(t, with(ed, "x", base64.URLEncoding.EncodeToString(k.ed.Public().(ed25519.PublicKey)))), "base64url"},
		{"ShortEd25519", jwks(t, with(ed, "x", "AAAA")), "bytes"},
		{"ECPointNotOnCurve", jwks(t, with(jwk(t, k.ec.Public()), "kid", "ec", "y", base64.RawURLEncoding.EncodeToString(make([]byte, 32)))), "P-256"},
		{"RSA1024", jwks(t, with(jwk(t, rsa1024.Public()), "kid", "rsa")), "2048"},
		{"RSAEvenExponent", jwks(t, with(jwk(t, k.rsa.Public()), "kid", "rsa", "e", "Ag")), "exponent"},
		{"DuplicateKid", jwks(t, ed, ed), "twice"},
		{"NoUsableKey", jwks(t, with(ed, "use", "enc")), "no EdDSA"},
		{"NoKeys", []byte(`{"keys":[]}`), "no EdDSA"},
		{"KeysMissing", []byte(`{"Keys":[]}`), `"keys"`},
		{"NotJSON", []byte(`keys`), "JSON"},
		{"KeyNotObject", []byte(`{"keys":[1]}`), `"keys"`},
		{"KeyNull", []byte(`{"keys":[null]}`), "not a JSON object"},
		{"KidNotString", jwks(t, with(ed, "kid", 1)), "not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := auth.ParseJWKS(tt.data)
			if err == nil {
				t.Fatalf("ParseJWKS = %+v, want an error", keys)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseJWKS error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}
