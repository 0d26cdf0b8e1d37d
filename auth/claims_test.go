package auth

import (
	"encoding/json"
	"reflect"
	"testing"
)

// claimsSeeds are claims at the decoder's edges: escapes, repeats, nulls,
// nesting, every type in every claim, dates out of range, invalid UTF-8.
var claimsSeeds = []string{
	`{"iss":"https://acme.example","aud":["tollgate"],"sub":"alice","tenant":"acme","scope":"verdicts admin:read","iat":1700000000,"exp":1700000900}`,
	`{"iss":"i","sub":"s","aud":["a","b"],"exp":1.5,"nbf":-2,"iat":3,"tenant":"t","scope":"verdicts"}`,
	`{"a":{"tenant":"x"},"b":[1,{"c":"}"}],"ten\u0061nt":"y","e":"\"","aud":"z"}`,
	`{"tenant":"a","tenant":"b"}`,
	`{"tenant":null,"tenant":"b"}`,
	`{"tenant":"a","tenant":1}`,
	`{"x":1,"x":2,"y":{"z":1,"z":2}}`,
	`{"aud":[]}`, `{"aud":[null]}`, `{"aud":["a",1]}`, `{"aud":[["a"]]}`, `{"aud":1}`, `{"aud":{}}`, `{"aud":null}`,
	`{"exp":"1"}`, `{"exp":1e300,"nbf":-1e300}`, `{"exp":1e400}`, `{"exp":-0}`, `{"exp":0.9999999999}`, `{"exp":true}`, `{"exp":[1]}`,
	`{"iat":1099511627776.5}`, `{"iat":-1099511627777}`, `{"exp":12345678901234567890}`,
	`{"iss":"\ud800","sub":"\udc00\u00e9"}`,
	"{\"iss\":\"\xff\xfe\",\"sub\":\"a\xc3\"}",
	"{\"\xff\":1,\"scope\":\"\xe2\x82\"}",
	`{"scope":{"a":1}}`, `{"scope":["x"]}`, `{"scope":false}`,
	` { "sub" : "s" , "iss" : "i" } `,
	`{}`, `[]`, `null`, `"x"`, `1`, `true`,
}

// FuzzClaims checks that the claims decoder never panics, and that claims
// it decodes survive a round trip through encoding/json.
func FuzzClaims(f *testing.F) {
	for _, s := range claimsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c claims
		if err := json.Unmarshal(data, &c); err != nil {
			return
		}
		out, err := json.Marshal(&c)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", c, err)
		}
		var again claims
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("decoding %s (from %q): %v", out, data, err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("round trip of %q: %+v, then %+v", data, c, again)
		}
	})
}
