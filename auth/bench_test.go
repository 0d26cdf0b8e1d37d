package auth_test

import (
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// BenchmarkVerify verifies a valid token of each algorithm.
func BenchmarkVerify(b *testing.B) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	v := newVerifier(b, testConfig(clock))
	for _, bb := range []struct {
		name string
		key  auth.SigningKey
	}{
		{"EdDSA", auth.SigningKey{ID: "ed", Private: k.ed}},
		{"HS256", auth.SigningKey{ID: "hs", Secret: k.hs}},
		{"ES256", auth.SigningKey{ID: "ec", Private: k.ec}},
		{"RS256", auth.SigningKey{ID: "rsa", Private: k.rsa}},
	} {
		tok, err := auth.Sign(bb.key, acmeIssuer, audience, "acme", "alice", []auth.Scope{auth.ScopeVerdicts}, 15*time.Minute, clock.Now())
		if err != nil {
			b.Fatal(err)
		}
		h := "Bearer " + tok
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(h, auth.ScopeVerdicts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("RefusedMalformed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify("Bearer a.b.c", auth.ScopeVerdicts); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}
