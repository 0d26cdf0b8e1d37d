package authguard

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestSigner_SignsAsGolangJWT holds sign's bytes to golang-jwt's
// SignedString, which it replaces: device tokens issued before and after
// the change are the same tokens.
func TestSigner_SignsAsGolangJWT(t *testing.T) {
	key := deriveKey([]byte("0123456789abcdef0123456789abcdef"), "device")
	now := time.Date(2026, 12, 2, 3, 4, 5, 600, time.UTC)
	s := newSigner(key, func() time.Time { return now })
	tests := []struct {
		name   string
		claims deviceClaims
	}{
		{"typical", deviceClaims{Tenant: "default", Trust: "login", Account: "8Xw3-Kq_0aZ9bC1dE2fG3h", Device: "device-id",
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(now, 90*24*time.Hour)}}},
		{"empty strings", deviceClaims{RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(now, time.Second)}}},
		{"characters JSON escapes", deviceClaims{Tenant: "t<&>\"\\\u2028", Trust: "g\x00\n", Account: "ü", Device: "d",
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(now, time.Hour)}}},
		{"every registered claim", deviceClaims{Tenant: "t", Trust: "g", Account: "a", Device: "d",
			RegisteredClaims: jwt.RegisteredClaims{Issuer: "i", Subject: "s", Audience: jwt.ClaimStrings{"x", "y"},
				ExpiresAt: expiry(now, time.Hour), NotBefore: jwt.NewNumericDate(now), IssuedAt: jwt.NewNumericDate(now), ID: "j"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := jwt.NewWithClaims(jwt.SigningMethodHS256, &tt.claims).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second from a pooled HMAC
				if got := s.sign(&tt.claims); got != want {
					t.Errorf("sign = %s, want %s", got, want)
				}
			}
			var back deviceClaims
			if !s.parse(want, &back) {
				t.Errorf("parse(sign(…)) = false")
			}
		})
	}
}
