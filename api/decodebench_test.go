package api

import "testing"

// BenchmarkDecodeBody decodes a check body with the strict decoder and with
// the scanning one it replaced.
func BenchmarkDecodeBody(b *testing.B) {
	body := []byte(`{"flow":"login","account":"user42@example.com","ip":"10.0.0.42","device_token":null,"captcha_solved":false}`)
	for _, d := range []struct {
		name   string
		decode func([]byte, fields, any) (uint64, error)
	}{{"strict", decodeJSON}, {"scan", decodeJSONScan}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v checkBody
				if _, err := d.decode(body, checkFields, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
