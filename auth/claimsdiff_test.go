package auth

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// claimsDiffSeeds are claims for the scanning and the library decoders'
// edges.
var claimsDiffSeeds = []string{
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

// claimsOutcome names the sentinel err is, for comparing two decoders.
func claimsOutcome(err error) string {
	for _, e := range []error{errClaimsNotObject, errDuplicateClaim, errClaimType, errNumericDate} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other error"
	}
	return "ok"
}

// FuzzClaimsDifferential decodes each valid JSON text (what encoding/json
// hands an UnmarshalJSON method) with the scanning claims decoder and the
// go-json-experiment one, and requires the same outcome: the same error,
// or the same claims.
func FuzzClaimsDifferential(f *testing.F) {
	for _, s := range claimsDiffSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var scan, lib claims
		scanErr := scanClaims(data, &scan)
		libErr := decodeClaims(data, &lib)
		if a, b := claimsOutcome(scanErr), claimsOutcome(libErr); a != b {
			t.Fatalf("claims %q: scan %s (%v), library %s (%v)", data, a, scanErr, b, libErr)
		}
		if scanErr == nil && !reflect.DeepEqual(scan, lib) {
			t.Fatalf("claims %q: scan %+v, library %+v", data, scan, lib)
		}
	})
}
