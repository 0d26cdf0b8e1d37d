package auth

import "testing"

// BenchmarkDecodeClaims decodes a token's claims with the library decoder
// and with the scanning one it replaced.
func BenchmarkDecodeClaims(b *testing.B) {
	data := []byte(`{"iss":"https://acme.example","aud":["tollgate"],"sub":"alice","tenant":"acme","scope":"verdicts admin:read","iat":1700000000,"exp":1700000900}`)
	for _, d := range []struct {
		name   string
		decode func([]byte, *claims) error
	}{{"library", decodeClaims}, {"scan", scanClaims}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var c claims
				if err := d.decode(data, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
