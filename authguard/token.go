package authguard

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Tokens are HS256 JWTs signed with keys derived from the service's secret,
// one key per kind of token so that one can never pass for the other. Only
// HS256 is accepted when they are parsed: "none" and algorithm confusion are
// rejected by golang-jwt's WithValidMethods.

// attemptClaims name one attempt that a check let go ahead.
type attemptClaims struct {
	Tenant  string `json:"t"`
	Flow    string `json:"f"`
	Account string `json:"a"` // subject hash
	Device  string `json:"d"` // device id whose counter was charged, or ""
	ID      string `json:"i"` // attempt id
	Charged int    `json:"c"` // 1 when the check charged the counter (a repeated wrong password is not charged)
	Shadow  bool   `json:"s"` // shadow mode would have refused it: the report changes nothing
	jwt.RegisteredClaims
}

// deviceClaims bind a device to one account of one tenant.
type deviceClaims struct {
	Tenant  string `json:"t"`
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
