package authguard

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
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
//
// Signing writes golang-jwt's bytes without golang-jwt: its SignedString
// marshals the header map and sets up an HMAC on every call, about half of
// a success report's signing cost. The header
// segment is a constant and the HMAC comes from a pool;
// TestSigner_SignsAsGolangJWT holds the bytes equal to SignedString's.

// hs256Header is the first segment of every token: golang-jwt's header for
// HS256, {"alg":"HS256","typ":"JWT"} (json.Marshal sorts a map's keys),
// base64url without padding.
const hs256Header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

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
	mac    *macPool // HMAC-SHA-256 under key
	parser *jwt.Parser
}

func newSigner(key []byte, now func() time.Time) *signer {
	return &signer{
		key: key,
		mac: newMacPool(key),
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(now),
		),
	}
}

// sign returns claims as an HS256 JWT, byte for byte what golang-jwt's
// jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
// returns: header "." claims "." signature, each base64url without padding,
// the claims as json.Marshal writes them, the signature HMAC-SHA-256 of the
// first two segments.
func (s *signer) sign(claims jwt.Claims) string {
	c, err := json.Marshal(claims)
	if err != nil {
		// The claims are strings and a date; a failure is a programming error.
		panic("authguard: signing token: " + err.Error())
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 0, len(hs256Header)+1+enc.EncodedLen(len(c))+1+enc.EncodedLen(sha256.Size))
	b = append(b, hs256Header...)
	b = append(b, '.')
	b = enc.AppendEncode(b, c)
	sig := s.mac.sum(b)
	b = append(b, '.')
	b = enc.AppendEncode(b, sig[:])
	return string(b)
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
