package api_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// gzipped returns s compressed with gzip.
func gzipped(tb testing.TB, s string) string {
	tb.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// TestDecode_ContentEncodingIsRefusedNotIgnored: a body labelled gzip was
// read as plain, so a plain body that claims gzip was counted (200, four
// keys) and a really gzipped one got a misleading malformed-json. Any
// coding but identity is now 415 and changes nothing.
func TestDecode_ContentEncodingIsRefusedNotIgnored(t *testing.T) {
	const (
		check = `{"flow":"login","account":"gz@example.com","ip":"192.0.2.7"}`
		deny  = `{"ip_range":"203.0.113.0/24","expires_in":"1h","reason":"incident 7"}`
	)
	tests := []struct {
		name     string
		path     string
		body     string
		encoding []string // one Content-Encoding header each
		want     int
	}{
		{name: "gzipped body", path: "/v1/check", body: gzipped(t, check), encoding: []string{"gzip"}, want: 415},
		{name: "plain body labelled gzip", path: "/v1/check", body: check, encoding: []string{"gzip"}, want: 415},
		{name: "plain body labelled deflate", path: "/v1/check", body: check, encoding: []string{"deflate"}, want: 415},
		{name: "gzip after identity", path: "/v1/check", body: check, encoding: []string{"identity, gzip"}, want: 415},
		{name: "gzip in a second header", path: "/v1/check", body: check, encoding: []string{"identity", "GZIP"}, want: 415},
		{name: "admin write labelled br", path: "/v1/admin/deny", body: deny, encoding: []string{"br"}, want: 415},
		{name: "identity", path: "/v1/check", body: check, encoding: []string{"Identity"}, want: 200},
		{name: "no Content-Encoding", path: "/v1/check", body: check, want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			for _, e := range tt.encoding {
				req.Header.Add("Content-Encoding", e)
			}
			res := h.serve(t, req, tt.body)
			if res.status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.want, truncate(res.body))
			}
			if tt.want != 415 {
				return
			}
			if got, want := res.json(t)["type"], "https://tollgate.dev/problems/unsupported-media-type"; got != want {
				t.Errorf("type = %v, want %s", got, want)
			}
			if got, want := res.header.Get("Accept-Encoding"), "identity"; got != want {
				t.Errorf("Accept-Encoding = %q, want %q", got, want)
			}
			if k := h.keys(); len(k) != 0 {
				t.Errorf("a refused body was counted: %d keys", len(k))
			}
			if l, _ := h.engine.ListEntries(t.Context(), "", ""); len(l) != 0 {
				t.Errorf("a refused deny was kept: %d entries", len(l))
			}
		})
	}
}

// TestRouter_UnknownMethodOnUnknownPathIsNotFound: chi sends a method it
// does not know to the 405 handler whatever the path, so FOO /no/such/route
// was a 405 with an empty Allow. A route that does not exist is 404 for
// every method; 405 stays for routes that do, with their Allow.
func TestRouter_UnknownMethodOnUnknownPathIsNotFound(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		method, path string
		want         int
		wantAllow    string
	}{
		{"FOO", "/no/such/route", 404, ""},
		{"PROPFIND", "/x", 404, ""},
		{"QUERY", "/v1/nope", 404, ""},
		{"DELETE", "/no/such/route", 404, ""},
		{"FOO", "/v1/check", 405, "POST"},
		{"PROPFIND", "/healthz", 405, "GET, HEAD"},
	}
	for _, tt := range tests {
		res := h.do(t, tt.method, tt.path, "", "")
		if res.status != tt.want || res.header.Get("Allow") != tt.wantAllow {
			t.Errorf("%s %s → %d, Allow %q; want %d, Allow %q", tt.method, tt.path, res.status, res.header.Get("Allow"), tt.want, tt.wantAllow)
		}
	}
}

// TestEntries_QueryIsParsedStrictly: r.URL.Query drops a pair it cannot
// parse and keeps the first of two, so ?ip=203.0.113.1; and ?ip=%zz
// listed every entry and ?flow=login&flow=otp_send listed login's. They
// are 400 now, and the problem repeats no submitted value.
func TestEntries_QueryIsParsedStrictly(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		query     string
		wantType  string
		wantField string
	}{
		{"?ip=203.0.113.1;", "invalid-field", ""},
		{"?ip=%zz", "invalid-field", ""},
		{"?flow=%zz", "invalid-field", ""},
		{"?flow=login;ip=1", "invalid-field", ""},
		{"?flow=login&flow=otp_send", "duplicate-field", "flow"},
		{"?flow=login&flow=login", "duplicate-field", "flow"},
		{"?flow=login&203.0.113.1=1", "unknown-field", ""},
	}
	for _, tt := range tests {
		res := h.do(t, http.MethodGet, "/v1/admin/entries"+tt.query, "", "")
		if res.status != http.StatusBadRequest {
			t.Errorf("%s → %d %s, want 400", tt.query, res.status, truncate(res.body))
			continue
		}
		p := res.json(t)
		if got, want := p["type"], "https://tollgate.dev/problems/"+tt.wantType; got != want {
			t.Errorf("%s: type = %v, want %s", tt.query, got, want)
		}
		if got, _ := p["field"].(string); got != tt.wantField {
			t.Errorf("%s: field = %q, want %q", tt.query, got, tt.wantField)
		}
		for _, v := range []string{"203.0.113", "otp_send", "%zz"} {
			if strings.Contains(string(res.body), v) {
				t.Errorf("%s: the problem repeats %q: %s", tt.query, v, res.body)
			}
		}
	}
	if res := h.do(t, http.MethodGet, "/v1/admin/entries?flow=login", "", ""); res.status != http.StatusOK {
		t.Errorf("?flow=login → %d %s", res.status, truncate(res.body))
	}
}

// TestExplain_EmptyAccountIsRefusedLikeCheck: the engine reads "" as a
// part left out, so explain answered 200 to {"account":""}, which
// openapi.yaml (minLength 1) and /v1/check refuse. It is refused as check
// refuses it: missing-field, naming the field.
func TestExplain_EmptyAccountIsRefusedLikeCheck(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, body, wantField string
	}{
		{"empty account", `{"flow":"login","account":""}`, "account"},
		{"empty account with an ip", `{"flow":"login","account":"","ip":"192.0.2.1"}`, "account"},
		{"empty ip", `{"flow":"login","ip":""}`, "ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.do(t, http.MethodPost, "/v1/admin/explain", "application/json", tt.body)
			if res.status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400: %s", res.status, truncate(res.body))
			}
			p := res.json(t)
			if got, want := p["type"], "https://tollgate.dev/problems/missing-field"; got != want {
				t.Errorf("type = %v, want %s", got, want)
			}
			if got := p["field"]; got != tt.wantField {
				t.Errorf("field = %v, want %s", got, tt.wantField)
			}
		})
	}
	c := h.do(t, http.MethodPost, "/v1/check", "application/json", `{"flow":"login","account":"","ip":"192.0.2.1"}`)
	if p := c.json(t); c.status != 400 || p["type"] != "https://tollgate.dev/problems/missing-field" || p["field"] != "account" {
		t.Errorf("check with an empty account: %d %s; the test assumes missing-field account", c.status, c.body)
	}
	for _, body := range []string{`{"flow":"login","account":"a@example.com"}`, `{"flow":"login","ip":"192.0.2.1","account":null}`} {
		if res := h.do(t, http.MethodPost, "/v1/admin/explain", "application/json", body); res.status != http.StatusOK {
			t.Errorf("%s → %d %s, want 200", body, res.status, truncate(res.body))
		}
	}
}

// TestDeny_SignedExpiresInIsRefused: strconv.Atoi and time.ParseDuration
// take a sign, so "+1d" blocked a range for a day though the documented
// forms are unsigned ("7d", "12h").
func TestDeny_SignedExpiresInIsRefused(t *testing.T) {
	h := newHarness(t)
	for _, e := range []string{"+1d", "+1h", "+90m", "-1d", "+0d", "d", "1 d", "0x1d", "1_0d", "99999d"} {
		before, _ := h.engine.ListEntries(t.Context(), "", "")
		res := h.post(t, "/v1/admin/deny", map[string]any{"ip_range": "203.0.113.0/24", "expires_in": e, "reason": "incident 7"})
		p := res.json(t)
		if res.status != http.StatusBadRequest || p["type"] != "https://tollgate.dev/problems/invalid-field" || p["field"] != "expires_in" {
			t.Errorf("expires_in %q → %d %s, want 400 invalid-field expires_in", e, res.status, truncate(res.body))
		}
		if after, _ := h.engine.ListEntries(t.Context(), "", ""); len(after) != len(before) {
			t.Errorf("expires_in %q: an entry was kept", e)
		}
	}
	for _, e := range []string{"1d", "07d", "90m", "12h"} {
		res := h.post(t, "/v1/admin/deny", map[string]any{"ip_range": "203.0.113.0/24", "expires_in": e, "reason": "incident 7"})
		if res.status != http.StatusCreated {
			t.Errorf("expires_in %q → %d %s, want 201", e, res.status, truncate(res.body))
		}
	}
}
