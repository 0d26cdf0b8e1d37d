package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
)

// Algorithms a Key may have.
const (
	algEdDSA = "EdDSA"
	algES256 = "ES256"
	algRS256 = "RS256"
	algHS256 = "HS256"
)

// checkKey checks that k has a known algorithm and key material of the
// right type and strength for it, and nothing else.
func checkKey(k Key) error {
	switch k.Alg {
	case algEdDSA, algES256, algRS256:
		if len(k.Secret) > 0 {
			return fmt.Errorf("%s takes a public key, not a secret", k.Alg)
		}
		return checkPublic(k.Alg, k.Public)
	case algHS256:
		if k.Public != nil {
			return errors.New("HS256 takes a secret, not a public key")
		}
		if len(k.Secret) < minSecretBytes {
			return fmt.Errorf("the HS256 secret has %d bytes; at least %d are required", len(k.Secret), minSecretBytes)
		}
		return nil
	case "":
		return errors.New("the algorithm (alg) is required")
	default:
		return fmt.Errorf("algorithm %q is not one of EdDSA, ES256, RS256, HS256", k.Alg)
	}
}

// checkPublic checks that pub is a valid key for alg.
func checkPublic(alg string, pub crypto.PublicKey) error {
	switch alg {
	case algEdDSA:
		pk, ok := pub.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("EdDSA needs an ed25519.PublicKey, not %s", typeName(pub))
		}
		if len(pk) != ed25519.PublicKeySize {
			return fmt.Errorf("the Ed25519 key has %d bytes, not %d", len(pk), ed25519.PublicKeySize)
		}
	case algES256:
		pk, ok := pub.(*ecdsa.PublicKey)
		if !ok || pk == nil {
			return fmt.Errorf("ES256 needs an *ecdsa.PublicKey, not %s", typeName(pub))
		}
		if pk.Curve != elliptic.P256() {
			return fmt.Errorf("ES256 needs a P-256 key, not %s", curveName(pk.Curve))
		}
		if !validECPoint(pk) {
			return errors.New("the P-256 key is not a point on the curve")
		}
	case algRS256:
		pk, ok := pub.(*rsa.PublicKey)
		if !ok || pk == nil || pk.N == nil {
			return fmt.Errorf("RS256 needs an *rsa.PublicKey, not %s", typeName(pub))
		}
		if bits := pk.N.BitLen(); bits < minRSABits {
			return fmt.Errorf("the RSA key has %d bits; at least %d are required", bits, minRSABits)
		}
		if pk.E < 3 || pk.E%2 == 0 || pk.E > 1<<31-1 {
			return fmt.Errorf("the RSA public exponent %d is not an odd number in [3, 2^31)", pk.E)
		}
	}
	return nil
}

// validECPoint reports whether pk is a point on its curve. PublicKey.Bytes
// checks that, but panics on missing coordinates.
func validECPoint(pk *ecdsa.PublicKey) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := pk.Bytes()
	return err == nil
}

func typeName(v any) string {
	if v == nil {
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

func curveName(c elliptic.Curve) string {
	if c == nil || c.Params() == nil {
		return "an unknown curve"
	}
	return c.Params().Name
}

// ParsePublicKeyPEM parses one PEM block of type "PUBLIC KEY" (PKIX,
// SubjectPublicKeyInfo) holding an Ed25519, ECDSA P-256 or RSA key, and
// returns an ed25519.PublicKey, *ecdsa.PublicKey or *rsa.PublicKey. Text
// before the block is ignored; a second PEM block is refused, so a file
// holds one key. New checks the key's strength (RSA of at least 2048 bits).
func ParsePublicKeyPEM(pemBytes []byte) (crypto.PublicKey, error) {
	block, err := onePEMBlock(pemBytes)
	if err != nil {
		return nil, err
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("auth: PEM block is %q, not \"PUBLIC KEY\"", block.Type)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("auth: public key: %w", err)
	}
	switch pk := pub.(type) {
	case ed25519.PublicKey, *rsa.PublicKey:
		return pk, nil
	case *ecdsa.PublicKey:
		if pk.Curve != elliptic.P256() {
			return nil, fmt.Errorf("auth: ECDSA key on %s: only P-256 is supported", curveName(pk.Curve))
		}
		return pk, nil
	default:
		return nil, fmt.Errorf("auth: public key of type %T: only Ed25519, ECDSA P-256 and RSA are supported", pub)
	}
}

// ParsePrivateKeyPEM parses one PEM block holding an Ed25519, ECDSA P-256
// or RSA private key: "PRIVATE KEY" (PKCS #8), "EC PRIVATE KEY" (SEC 1) or
// "RSA PRIVATE KEY" (PKCS #1). It returns an ed25519.PrivateKey,
// *ecdsa.PrivateKey or *rsa.PrivateKey. Encrypted keys are refused.
func ParsePrivateKeyPEM(pemBytes []byte) (crypto.PrivateKey, error) {
	block, err := onePEMBlock(pemBytes)
	if err != nil {
		return nil, err
	}
	if _, ok := block.Headers["Proc-Type"]; ok {
		return nil, errors.New("auth: encrypted PEM keys are not supported")
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		return nil, errors.New("auth: encrypted PEM keys are not supported")
	default:
		return nil, fmt.Errorf("auth: PEM block is %q, not \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\"", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: private key: %w", err)
	}
	switch pk := key.(type) {
	case ed25519.PrivateKey, *rsa.PrivateKey:
		return pk, nil
	case *ecdsa.PrivateKey:
		if pk.Curve != elliptic.P256() {
			return nil, fmt.Errorf("auth: ECDSA key on %s: only P-256 is supported", curveName(pk.Curve))
		}
		return pk, nil
	default:
		return nil, fmt.Errorf("auth: private key of type %T: only Ed25519, ECDSA P-256 and RSA are supported", key)
	}
}

// onePEMBlock returns the only PEM block in data.
func onePEMBlock(data []byte) (*pem.Block, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("auth: no PEM block found")
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, errors.New("auth: more than one PEM block; give one key per file")
	}
	return block, nil
}

// privateJWKMembers are the members of private or symmetric JWKs (RFC 7518
// section 6).
var privateJWKMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// ParseJWKS parses a JWK Set (RFC 7517) into verification keys:
//
//   - kty "OKP" with crv "Ed25519" (alg EdDSA), kty "EC" with crv "P-256"
//     (alg ES256) and kty "RSA" (alg RS256);
//   - every key needs a kid; alg, when absent, is inferred from kty and crv
//     as above, and when present must agree with them;
//   - a key whose "use" is present and not "sig" is skipped (an encryption
//     key), and so is a signing key of an algorithm tollgate does not
//     verify (PS256, ES384, RS512, Ed448, ...);
//   - a set holding any private key material ("d" and the other private
//     RSA members) or a symmetric "oct" key is refused as a whole: such a
//     file is a secret, and must not be published or configured as one;
//   - member names are case-sensitive; x5c, x5t and x5u are ignored (no
//     certificate is checked).
//
// The keys returned pass New's checks; at least one is returned, with
// unique kids.
func ParseJWKS(data []byte) ([]Key, error) {
	var set map[string]json.RawMessage
	if err := json.Unmarshal(data, &set); err != nil || set == nil {
		return nil, errJWKS("not a JSON object")
	}
	var raws []map[string]json.RawMessage
	if err := json.Unmarshal(set["keys"], &raws); err != nil || raws == nil {
		return nil, errJWKS(`"keys" is not an array of JSON objects`)
	}
	var keys []Key
	seen := make(map[string]bool, len(raws))
	for i, m := range raws {
		k, ok, err := parseJWK(m)
		if err != nil {
			return nil, errJWKS("keys[%d]: %w", i, err)
		}
		if !ok {
			continue
		}
		if seen[k.ID] {
			return nil, errJWKS("keys[%d]: kid %q appears twice", i, k.ID)
		}
		seen[k.ID] = true
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errJWKS("no EdDSA, ES256 or RS256 signing key")
	}
	return keys, nil
}

// parseJWK parses one JWK; ok is false when it is to be skipped.
func parseJWK(m map[string]json.RawMessage) (k Key, ok bool, err error) {
	if m == nil {
		return Key{}, false, errors.New("not a JSON object")
	}
	kty, err := jwkString(m, "kty", true)
	if err != nil {
		return Key{}, false, err
	}
	if kty == "oct" {
		return Key{}, false, errors.New(`symmetric ("oct") keys are refused: an HS256 secret is configured as a secret file`)
	}
	for _, name := range privateJWKMembers {
		if _, has := m[name]; has {
			return Key{}, false, fmt.Errorf("holds private key material (%q): publish and configure public keys only", name)
		}
	}
	if use, err := jwkString(m, "use", false); err != nil {
		return Key{}, false, err
	} else if use != "" && use != "sig" {
		return Key{}, false, nil
	}
	if k.ID, err = jwkString(m, "kid", true); err != nil {
		return Key{}, false, err
	}
	if k.Alg, err = jwkString(m, "alg", false); err != nil {
		return Key{}, false, err
	}
	crv := ""
	if kty == "OKP" || kty == "EC" {
		if crv, err = jwkString(m, "crv", true); err != nil {
			return Key{}, false, err
		}
	}
	inferred := ""
	switch {
	case kty == "OKP" && crv == "Ed25519":
		inferred = algEdDSA
	case kty == "EC" && crv == "P-256":
		inferred = algES256
	case kty == "RSA":
		inferred = algRS256
	}
	switch {
	case k.Alg == "" && inferred == "":
		return Key{}, false, nil // a key type tollgate does not verify
	case k.Alg == "":
		k.Alg = inferred
	case k.Alg != algEdDSA && k.Alg != algES256 && k.Alg != algRS256:
		return Key{}, false, nil // an algorithm tollgate does not verify
	case k.Alg != inferred:
		return Key{}, false, fmt.Errorf("alg %s does not match kty %q crv %q", k.Alg, kty, crv)
	}
	switch k.Alg {
	case algEdDSA:
		x, err := jwkBytes(m, "x")
		if err != nil {
			return Key{}, false, err
		}
		if len(x) != ed25519.PublicKeySize {
			return Key{}, false, fmt.Errorf("x has %d bytes, not %d", len(x), ed25519.PublicKeySize)
		}
		k.Public = ed25519.PublicKey(x)
	case algES256:
		x, err := jwkBytes(m, "x")
		if err != nil {
			return Key{}, false, err
		}
		y, err := jwkBytes(m, "y")
		if err != nil {
			return Key{}, false, err
		}
		if len(x) != 32 || len(y) != 32 {
			return Key{}, false, errors.New("x and y of a P-256 key must have 32 bytes each")
		}
		pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return Key{}, false, fmt.Errorf("not a P-256 public key: %w", err)
		}
		k.Public = pk
	case algRS256:
		n, err := jwkBytes(m, "n")
		if err != nil {
			return Key{}, false, err
		}
		e, err := jwkBytes(m, "e")
		if err != nil {
			return Key{}, false, err
		}
		if len(e) == 0 || len(e) > 4 {
			return Key{}, false, errors.New("e is not a public exponent of at most 32 bits")
		}
		exp := int(new(big.Int).SetBytes(e).Int64())
		k.Public = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	}
	if err := checkKey(k); err != nil {
		return Key{}, false, err
	}
	return k, true, nil
}

// jwkString returns the string member name of m; "" when it is absent and
// not required.
func jwkString(m map[string]json.RawMessage, name string, required bool) (string, error) {
	raw, ok := m[name]
	if !ok || bytes.Equal(raw, []byte("null")) {
		if required {
			return "", fmt.Errorf("%q is required", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q is not a string", name)
	}
	if s == "" && required {
		return "", fmt.Errorf("%q is empty", name)
	}
	return s, nil
}

// jwkBytes returns the base64url member name of m, decoded.
func jwkBytes(m map[string]json.RawMessage, name string) ([]byte, error) {
	s, err := jwkString(m, name, true)
	if err != nil {
		return nil, err
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not unpadded base64url", name)
	}
	return b, nil
}
