package authguard

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Device tokens are HS256 JWTs (golang-jwt) signed with a key derived from
// the service's secret for them alone, so no other token can pass for one.
// They live in end users' cookies for months, so they use a standard format
// callers can inspect. Only HS256 is accepted when they are parsed: "none"
// and algorithm confusion are rejected by golang-jwt's WithValidMethods.
// Attempt tokens, which never leave the caller's back end, use a compact
// format of their own (attempt.go).

// deviceClaims bind a device to one account of one tenant, for the flows
// of one trust group (Flow.DeviceTrust).
type deviceClaims struct {
	Tenant  string `json:"t"`
	Trust   string `json:"g"`
	Account string `json:"a"`
	Device  string `json:"d"`
	jwt.RegisteredClaims
}

type signer struct {
	key    []byte
	parser *jwt.Parser
}

func newSigner(key []byte, now func() time.Time) *signer {
	return &signer{
		key: key,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(now),
		),
	}
}

func (s *signer) sign(claims jwt.Claims) string {
	t, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
	if err != nil {
		// HS256 with a []byte key cannot fail; a failure is a programming error.
		panic("authguard: signing token: " + err.Error())
	}
	return t
}

// parse verifies token into claims; false when it is malformed, forged or
// expired.
func (s *signer) parse(token string, claims jwt.Claims) bool {
	if token == "" || len(token) > MaxTokenBytes {
		return false
	}
	_, err := s.parser.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return s.key, nil })
	return err == nil
}

func expiry(now time.Time, ttl time.Duration) *jwt.NumericDate {
	return jwt.NewNumericDate(now.Add(ttl).Truncate(time.Second))
}
