package auth

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzClaims checks that the claims decoder never panics, and that claims
// it decodes survive a round trip through encoding/json.
func FuzzClaims(f *testing.F) {
	f.Add([]byte(`{"iss":"i","sub":"s","aud":["a","b"],"exp":1.5,"nbf":-2,"iat":3,"tenant":"t","scope":"verdicts"}`))
	f.Add([]byte(`{"a":{"tenant":"x"},"b":[1,{"c":"}"}],"ten\u0061nt":"y","e":"\"","aud":"z"}`))
	f.Add([]byte(`{"tenant":"a","tenant":"b"}`))
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
