package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds are bodies for both routes: valid ones and every bad-input
// shape of TestBadInput.
var fuzzSeeds = []string{
	`{"flow":"login","account":"alice@example.com","ip":"203.0.113.7"}`,
	`{"flow":"login","account":"alice@example.com","ip":"203.0.113.7","outcome":"failure"}`,
	`{"flow":"otp_verify","account":"+14155550123","ip":"2001:db8::1","device_token":null,"captcha_solved":true,"password_fingerprint":"x"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"success","attempt":"eyJhbGciOiJIUzI1NiJ9.e30.x"}`,
	`{"flow":"login",`,
	``,
	`[]`,
	`null`,
	`"flow"`,
	`{"flow":"login","account":"a","ip":"192.0.2.1"} {}`,
	"{\"flow\":\"login\",\"account\":\"\xff\",\"ip\":\"192.0.2.1\"}",
	`{"flow":1,"account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","captcha_solved":"yes"}`,
	`{"account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":null,"ip":"192.0.2.1"}`,
	`{"flow":"login","account":"","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a\u0000","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"fe80::1%eth0"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1:80"}`,
	`{"flow":"signup","account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"maybe"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","extra":1}`,
	`{"flow":"login","account":"a","account":"b","ip":"192.0.2.1"}`,
	`{"Flow":"login","account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"ＡＬＩＣＥ@example.com","ip":"::ffff:192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","device_token":"` + strings.Repeat("x", 1025) + `"}`,
	`{"flow":"login","account":"` + strings.Repeat("ß", 200) + `","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","password_fingerprint":"` + strings.Repeat("x", 9000) + `"}`,
	`{"flow":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]],"account":"a","ip":"192.0.2.1"}`,
}

// fuzzRoute sends body to path through the router and checks that the
// answer is never a 500, is described by openapi.yaml, and that a rejected
// request left the store as it was.
func fuzzRoute(f *testing.F, path string) {
	h := newHarness(f)
	// A real attempt token, so the fuzzer can mutate one.
	v := h.check(f, login("seed@example.com", "192.0.2.200"))
	f.Add(`{"flow":"login","account":"seed@example.com","ip":"192.0.2.200","outcome":"failure","attempt":"` + v.Attempt + `"}`)
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		before := h.keys()
		res := h.do(t, http.MethodPost, path, "application/json", body)
		if res.status >= 500 {
			t.Fatalf("status %d for body %q: %s", res.status, body, res.body)
		}
		var m map[string]any
		if err := json.Unmarshal(res.body, &m); err != nil {
			t.Fatalf("response %q is not a JSON object: %v", res.body, err)
		}
		if res.status == http.StatusOK {
			if res.specErr != nil && !strings.Contains(body, `\u`) {
				// The server accepted what the spec forbids. (Escapes are
				// exempt: the spec counts characters after decoding too,
				// but kin-openapi and the engine may disagree on
				// surrogates.)
				t.Errorf("the server accepted a request openapi.yaml rejects: %v", res.specErr)
			}
			return
		}
		if after := h.keys(); !slices.Equal(before, after) {
			t.Fatalf("rejected request (%d) changed the store: %d keys before, %d after", res.status, len(before), len(after))
		}
	})
}

func FuzzCheckRequest(f *testing.F)  { fuzzRoute(f, "/v1/check") }
func FuzzReportRequest(f *testing.F) { fuzzRoute(f, "/v1/report") }
