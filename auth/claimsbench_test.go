package auth

import "testing"

// BenchmarkDecodeClaims decodes a token's claims with the library decoder.
func BenchmarkDecodeClaims(b *testing.B) {
	data := []byte(`{"iss":"https://acme.example","aud":["tollgate"],"sub":"alice","tenant":"acme","scope":"verdicts admin:read","iat":1700000000,"exp":1700000900}`)
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c claims
			if err := decodeClaims(data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
