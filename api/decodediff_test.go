package api_test

import (
	"slices"
	"testing"

	"github.com/tollgate-auth/tollgate/api"
)

// diffSeeds are bodies for the scanning and the strict decoders' edges:
// escapes, lone surrogates, nulls, nesting, duplicates below the top level,
// white space and every way of being not quite an object.
var diffSeeds = []string{
	`{"fl\u006fw":"login","\u0061ccount":"a"}`,
	`{"flow":"\ud800","account":"\udc00\ud800x"}`,
	`{"flow":"login","\ud800":1}`,
	`{"flow":"login","Ac\u0063ount":1}`,
	`{"flow":null}`,
	`{"flow":"login","account":null,"account":"a"}`,
	`{"flow":{"a":1,"a":2},"extra":1}`,
	`{"flow":{"a":1,"a":2}}`,
	`{"flow":1,"extra":1}`,
	`{"flow":1,"account":2}`,
	`{"flow":"x","captcha_solved":1,"account":true}`,
	`{"flow":"x","captcha_solved":null}`,
	`{"flow":"x","captcha_solved":false,"action":"block","reason":"r","expires_in":"1h"}`,
	` { "flow" : "x" , "ip" : "1" } `,
	`{}`,
	`{"":1}`,
	`{"flow":1e999}`,
	`{"flow":-0.0e-1}`,
	`{"flow":"a\"b\\c\/d\b\f\n\r\t"}`,
	`{"flow":["x"]}`,
	`{"flow":"x","reason":"r","id":[{"a":[1,{"b":null}]}]}`,
	`{"expires_in":"1h","reason":"r","ip_range":"x","destination_prefix":"y","country":"z","flow":"f"}`,
	`{"flow":"x","outcome":"failure","attempt":null}`,
	`{"flow":"x","ref":"\u0000","\u0072ef":1}`,
	`{"flow":"x","ref":1}`,
	`{"flow":"x","ref":null,"ref":"y"}`,
	`{"flow":"x","Ref":"y"}`,
	"\t{\"flow\":\"x\"}\r\n",
	`true`,
	`1`,
	` `,
}

// FuzzDecodeDifferential decodes each body as every route's request with
// the scanning decoder and the strict one, and requires the same outcome:
// the same keys present and value, or the same problem (kind, field and
// detail).
func FuzzDecodeDifferential(f *testing.F) {
	for _, s := range slices.Concat(fuzzSeeds, adminSeeds, diffSeeds) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for i := range api.DecodeRoutes {
			scan, strict := api.DecodeOutcomes(i, body)
			if scan != strict {
				t.Fatalf("body %q:\nscan:   %s\nstrict: %s", body, scan, strict)
			}
		}
	})
}
