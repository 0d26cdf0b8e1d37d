package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBadInput_AnIdentifierAsAKeyIsNotEchoed: an e-mail address, an IP
// address or a phone number put where a key goes, in a body or in a query,
// is 400 unknown-field without being repeated in the problem; a key that
// is a field name of some request still is named.
func TestBadInput_AnIdentifierAsAKeyIsNotEchoed(t *testing.T) {
	h := newHarness(t)
	for _, key := range []string{"victim.person@example.com", "198.51.100.77", "2001:db8::77", "+447700900123", "447700900123"} {
		for _, where := range []string{"body", "query"} {
			t.Run(where+" "+key, func(t *testing.T) {
				var res *response
				if where == "body" {
					res = h.do(t, http.MethodPost, "/v1/check", "application/json", `{"flow":"login","`+key+`":1}`)
				} else {
					res = h.do(t, http.MethodGet, "/v1/admin/entries?"+url.QueryEscape(key)+"=1", "", "")
				}
				wantUnknownField(t, res, "")
				if strings.Contains(string(res.body), key) {
					t.Errorf("the problem repeats the key: %s", res.body)
				}
			})
		}
	}
	t.Run("a field of another request is named", func(t *testing.T) {
		wantUnknownField(t, h.do(t, http.MethodPost, "/v1/check", "application/json", `{"flow":"login","outcome":"failure"}`), "outcome")
		wantUnknownField(t, h.do(t, http.MethodGet, "/v1/admin/entries?account=1", "", ""), "account")
		wantUnknownField(t, h.do(t, http.MethodPost, "/v1/check", "application/json", `{"Flow":"login"}`), "Flow")
	})
}

// wantUnknownField checks that res is a 400 unknown-field problem, which
// openapi.yaml describes, naming field.
func wantUnknownField(t *testing.T, res *response, field string) {
	t.Helper()
	p := res.json(t)
	if res.status != http.StatusBadRequest || p["type"] != "https://tollgate.dev/problems/unknown-field" {
		t.Errorf("answer: %d %s, want 400 unknown-field", res.status, res.body)
	}
	if got, _ := p["field"].(string); got != field {
		t.Errorf("field = %q, want %q", got, field)
	}
	if d, _ := p["detail"].(string); d == "" {
		t.Errorf("no detail: %s", res.body)
	}
}
