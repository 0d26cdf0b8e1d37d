package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// SigningKey is a key to sign tokens with, for `tollgate token` (local use)
// and tests. Production tokens come from the tenants' own issuers.
type SigningKey struct {
	// ID is the kid written in the token's header; none when empty.
	ID string
	// Alg is "EdDSA", "ES256", "RS256" or "HS256". When empty, it follows
	// from the type of Private, or is HS256 when Secret is set.
	Alg string
	// Private is the key for the asymmetric algorithms: an
	// ed25519.PrivateKey, an *ecdsa.PrivateKey on P-256 or an
	// *rsa.PrivateKey of at least 2048 bits.
	Private crypto.PrivateKey
	// Secret is the key for HS256: at least 32 bytes.
	Secret []byte
}

// Sign returns a signed JWT with header typ "JWT", alg k.Alg and kid k.ID
// (if any), and claims iss, aud (an array of one), sub (if not empty),
// tenant, scope (the scopes, space-separated, if any), iat (now) and exp
// (now + lifetime), dates in whole seconds. It refuses what no Verifier
// would accept: a weak or mismatched key, an empty issuer or audience, an
// invalid tenant name, an unknown scope, or a lifetime that is not within
// (0, 24h].
func Sign(k SigningKey, issuer, audience, tenant, subject string, scopes []Scope, lifetime time.Duration, now time.Time) (string, error) {
	switch {
	case issuer == "":
		return "", errors.New("auth: sign: an issuer is required")
	case audience == "":
		return "", errors.New("auth: sign: an audience is required")
	case !wire.ValidTenant(tenant):
		return "", fmt.Errorf("auth: sign: %q is not a tenant name (^[a-z0-9][a-z0-9_-]{0,63}$)", tenant)
	case lifetime <= 0 || lifetime > maxMaxLifetime:
		return "", fmt.Errorf("auth: sign: lifetime %v is not within (0, %v]", lifetime, maxMaxLifetime)
	}
	var list []string
	for _, s := range scopes {
		if !knownScope(s) {
			return "", fmt.Errorf("auth: sign: unknown scope %q (known: %s, %s, %s)", s, ScopeVerdicts, ScopeAdminRead, ScopeAdminWrite)
		}
		if !slices.Contains(list, string(s)) {
			list = append(list, string(s))
		}
	}
	method, key, err := signingKey(k)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	t := jwt.NewWithClaims(method, &claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   subject,
			Audience:  jwt.ClaimStrings{audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(lifetime)),
		},
		Tenant: tenant,
		Scope:  strings.Join(list, " "),
	})
	if k.ID != "" {
		t.Header["kid"] = k.ID
	}
	s, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}

// signingKey checks k and returns its jwt/v5 method and the key that method
// signs with.
func signingKey(k SigningKey) (jwt.SigningMethod, any, error) {
	alg := k.Alg
	if alg == "" {
		switch k.Private.(type) {
		case ed25519.PrivateKey:
			alg = algEdDSA
		case *ecdsa.PrivateKey:
			alg = algES256
		case *rsa.PrivateKey:
			alg = algRS256
		case nil:
			if len(k.Secret) > 0 {
				alg = algHS256
			}
		}
	}
	var (
		key any
		pub crypto.PublicKey
	)
	switch alg {
	case algHS256:
		if k.Private != nil {
			return nil, nil, errors.New("HS256 takes a secret, not a private key")
		}
		if len(k.Secret) < minSecretBytes {
			return nil, nil, fmt.Errorf("the HS256 secret has %d bytes; at least %d are required", len(k.Secret), minSecretBytes)
		}
		return jwt.SigningMethodHS256, k.Secret, nil
	case algEdDSA:
		pk, ok := k.Private.(ed25519.PrivateKey)
		if !ok || len(pk) != ed25519.PrivateKeySize {
			return nil, nil, fmt.Errorf("EdDSA needs an ed25519.PrivateKey, not %s", typeName(k.Private))
		}
		key, pub = pk, pk.Public()
	case algES256:
		pk, ok := k.Private.(*ecdsa.PrivateKey)
		if !ok || pk == nil {
			return nil, nil, fmt.Errorf("ES256 needs an *ecdsa.PrivateKey, not %s", typeName(k.Private))
		}
		key, pub = pk, &pk.PublicKey
	case algRS256:
		pk, ok := k.Private.(*rsa.PrivateKey)
		if !ok || pk == nil {
			return nil, nil, fmt.Errorf("RS256 needs an *rsa.PrivateKey, not %s", typeName(k.Private))
		}
		key, pub = pk, &pk.PublicKey
	case "":
		return nil, nil, errors.New("the algorithm (alg) is required")
	default:
		return nil, nil, fmt.Errorf("algorithm %q is not one of EdDSA, ES256, RS256, HS256", alg)
	}
	if len(k.Secret) > 0 {
		return nil, nil, fmt.Errorf("%s takes a private key, not a secret", alg)
	}
	if err := checkPublic(alg, pub); err != nil {
		return nil, nil, err
	}
	return jwt.GetSigningMethod(alg), key, nil
}
