package api

import "testing"

// BenchmarkDecodeBody decodes a check body: one pass of the library, which
// refuses everything but a required member missing.
func BenchmarkDecodeBody(b *testing.B) {
	body := []byte(`{"flow":"login","account":"user42@example.com","ip":"10.0.0.42","device_token":null,"captcha_solved":false}`)
	b.ReportAllocs()
	for b.Loop() {
		var v checkBody
		if _, err := decodeJSON(body, checkFields, &v); err != nil {
			b.Fatal(err)
		}
	}
}
