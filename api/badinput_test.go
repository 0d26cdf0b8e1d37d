package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestBadInput sends every kind of unusable request the issue lists (and a
// few more) and checks the problem, that the spec describes the answer,
// whether the spec itself already rejects the request, and that nothing in
// the store changed.
func TestBadInput(t *testing.T) {
	const (
		check  = "/v1/check"
		report = "/v1/report"
		send   = "/v1/otp/send"
		ctJSON = "application/json"
	)
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		chunked     bool // no Content-Length: the limit must hold while reading
		wantStatus  int
		wantType    string
		wantField   string
		// spec: "reject" when openapi.yaml itself rejects the request,
		// "accept" when only the server can tell (semantic checks), ""
		// when it does not matter.
		spec string
	}{
		{name: "malformed JSON", body: `{"flow":"login",`, wantStatus: 400, wantType: "malformed-json", spec: "reject"},
		{name: "not JSON at all", body: `flow=login`, wantStatus: 400, wantType: "malformed-json", spec: "reject"},
		{name: "empty body", body: ``, wantStatus: 400, wantType: "malformed-json", spec: "reject"},
		{name: "array instead of object", body: `[]`, wantStatus: 400, wantType: "malformed-json", spec: "reject"},
		{name: "trailing data after the object", body: `{"flow":"login","account":"a","ip":"192.0.2.1"} {}`, wantStatus: 400, wantType: "malformed-json"},
		{name: "invalid UTF-8", body: "{\"flow\":\"login\",\"account\":\"\xff\xfe\",\"ip\":\"192.0.2.1\"}", wantStatus: 400, wantType: "malformed-json"},
		{name: "wrong type: flow is a number", body: `{"flow":1,"account":"a","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "flow", spec: "reject"},
		{name: "wrong type: captcha_solved is a string", body: `{"flow":"login","account":"a","ip":"192.0.2.1","captcha_solved":"yes"}`, wantStatus: 400, wantType: "invalid-field", wantField: "captcha_solved", spec: "reject"},
		{name: "wrong type: account is an object", body: `{"flow":"login","account":{"x":1},"ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "account", spec: "reject"},
		{name: "wrong type: report attempt is a list", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"failure","attempt":[]}`, wantStatus: 400, wantType: "invalid-field", wantField: "attempt", spec: "reject"},
		{name: "missing flow", body: `{"account":"a","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "missing-field", wantField: "flow", spec: "reject"},
		{name: "missing ip, which login's rules count", body: `{"flow":"login","account":"a"}`, wantStatus: 400, wantType: "missing-field", wantField: "ip", spec: "accept"},
		{name: "missing outcome", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "missing-field", wantField: "outcome", spec: "reject"},
		{name: "null for an account login's rules count (null is absent)", body: `{"flow":"login","account":null,"ip":"192.0.2.1"}`, wantStatus: 400, wantType: "missing-field", wantField: "account", spec: "accept"},
		{name: "empty account", body: `{"flow":"login","account":"","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "missing-field", wantField: "account", spec: "reject"},
		{name: "blank account", body: `{"flow":"login","account":"  \t ","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "account", spec: "accept"},
		{name: "account with a control character", body: `{"flow":"login","account":"a\u0000b","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "account", spec: "accept"},
		{name: "account over the cap", body: `{"flow":"login","account":"` + long(257) + `","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "account", spec: "reject"},
		{name: "invalid IP", body: `{"flow":"login","account":"a","ip":"999.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip", spec: "accept"},
		{name: "IP with port", body: `{"flow":"login","account":"a","ip":"192.0.2.1:443"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip", spec: "accept"},
		{name: "IP with prefix length", body: `{"flow":"login","account":"a","ip":"192.0.2.0/24"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip", spec: "accept"},
		{name: "IPv6 with zone", body: `{"flow":"login","account":"a","ip":"fe80::1%eth0"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip", spec: "accept"},
		{name: "unknown flow", body: `{"flow":"signup","account":"a","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "flow", spec: "accept"},
		{name: "unknown outcome", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"maybe"}`, wantStatus: 400, wantType: "invalid-field", wantField: "outcome", spec: "reject"},
		{name: "device token over the cap", body: `{"flow":"login","account":"a","ip":"192.0.2.1","device_token":"` + long(1025) + `"}`, wantStatus: 400, wantType: "invalid-field", wantField: "device_token", spec: "reject"},
		{name: "attempt over the cap", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"failure","attempt":"` + long(1025) + `"}`, wantStatus: 400, wantType: "invalid-field", wantField: "attempt", spec: "reject"},
		{name: "fingerprint over the cap", body: `{"flow":"login","account":"a","ip":"192.0.2.1","password_fingerprint":"` + long(257) + `"}`, wantStatus: 400, wantType: "invalid-field", wantField: "password_fingerprint", spec: "reject"},
		{name: "unknown key", body: `{"flow":"login","account":"a","ip":"192.0.2.1","password":"hunter2"}`, wantStatus: 400, wantType: "unknown-field", spec: "reject"},
		{name: "key in another case", body: `{"Flow":"login","account":"a","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "unknown-field", wantField: "Flow", spec: "reject"},
		{name: "unknown key not echoed", body: `{"flow":"login","account":"a","ip":"192.0.2.1","alice@example.com":1}`, wantStatus: 400, wantType: "unknown-field", spec: "reject"},
		{name: "duplicate key", body: `{"flow":"login","account":"a","account":"b","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "duplicate-field", wantField: "account"},
		{name: "duplicate key, escaped", body: `{"flow":"login","account":"a","\u0061ccount":"b","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "duplicate-field", wantField: "account"},
		{name: "body over the limit", body: `{"flow":"login","account":"a","ip":"192.0.2.1","password_fingerprint":"` + long(9000) + `"}`, wantStatus: 413, wantType: "body-too-large"},
		{name: "body over the limit, chunked", chunked: true, body: `{"flow":"login","account":"a","ip":"192.0.2.1"` + strings.Repeat(" ", 9000) + `}`, wantStatus: 413, wantType: "body-too-large"},
		{name: "wrong content type", contentType: "text/plain", body: `{"flow":"login","account":"a","ip":"192.0.2.1"}`, wantStatus: 415, wantType: "unsupported-media-type", spec: "reject"},
		{name: "no content type", contentType: "-", body: `{"flow":"login","account":"a","ip":"192.0.2.1"}`, wantStatus: 415, wantType: "unsupported-media-type"},
		{name: "form content type", contentType: "application/x-www-form-urlencoded", body: `flow=login`, wantStatus: 415, wantType: "unsupported-media-type", spec: "reject"},
		{name: "JSON in another charset", contentType: "application/json; charset=latin1", body: `{"flow":"login","account":"a","ip":"192.0.2.1"}`, wantStatus: 415, wantType: "unsupported-media-type"},
		{name: "GET on a POST route", method: http.MethodGet, body: ``, contentType: "-", wantStatus: 405, wantType: "method-not-allowed"},
		{name: "PUT on a POST route", method: http.MethodPut, path: report, wantStatus: 405, wantType: "method-not-allowed"},
		{name: "POST on a GET route", method: http.MethodPost, path: "/healthz", wantStatus: 405, wantType: "method-not-allowed"},
		{name: "unknown route", method: http.MethodGet, path: "/v1/nope", contentType: "-", wantStatus: 404, wantType: "not-found"},
		{name: "send: number that does not parse", path: send, body: `{"destination":"+44 7400","channel":"sms","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "send: number without its country code", path: send, body: `{"destination":"07400 123456","channel":"sms","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "send: e-mail on sms", path: send, body: `{"destination":"a@example.com","channel":"sms","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "send: number on email", path: send, body: `{"destination":"+447400123456","channel":"email","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "send: e-mail with two @", path: send, body: `{"destination":"a@b@example.com","channel":"email","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "send: over-long e-mail", path: send, body: `{"destination":"` + long(250) + `@example.com","channel":"email","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "reject"},
		{name: "send: unknown channel", path: send, body: `{"destination":"+447400123456","channel":"pigeon","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "channel", spec: "reject"},
		{name: "send: missing channel", path: send, body: `{"destination":"+447400123456","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "missing-field", wantField: "channel", spec: "reject"},
		{name: "send: missing destination", path: send, body: `{"channel":"sms","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "missing-field", wantField: "destination", spec: "reject"},
		{name: "send: missing ip, which otp_send's rules count", path: send, body: `{"destination":"+447400123456","channel":"sms"}`, wantStatus: 400, wantType: "missing-field", wantField: "ip", spec: "accept"},
		{name: "send: on a login flow", path: send, body: `{"flow":"login","destination":"+447400123456","channel":"sms","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "flow", spec: "accept"},
		{name: "report: a destination on a flow that verifies no sends", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"success","destination":"+447400123456","channel":"sms"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "report: a destination without its channel", path: report, body: `{"flow":"otp_verify","account":"a","ip":"192.0.2.1","outcome":"success","destination":"+447400123456"}`, wantStatus: 400, wantType: "missing-field", wantField: "channel", spec: "accept"},
		{name: "check: a destination on a flow that verifies no sends", body: `{"flow":"login","account":"a","ip":"192.0.2.1","destination":"+447400123456","channel":"sms"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "check: a destination that does not parse", body: `{"flow":"otp_verify","account":"a","ip":"192.0.2.1","destination":"+44 12","channel":"sms"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "explain: missing flow", path: "/v1/admin/explain", body: `{"account":"a"}`, wantStatus: 400, wantType: "missing-field", wantField: "flow", spec: "reject"},
		{name: "explain: a destination that does not parse", path: "/v1/admin/explain", body: `{"flow":"otp_send","destination":"+44 12","channel":"sms"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination", spec: "accept"},
		{name: "check on a send flow", body: `{"flow":"otp_send","account":"a","ip":"192.0.2.1"}`, wantStatus: 400, wantType: "invalid-field", wantField: "flow", spec: "accept"},
		{name: "send: unknown key", path: send, body: `{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1","code":"123456"}`, wantStatus: 400, wantType: "unknown-field", spec: "reject"},
		{name: "deny: no expiry", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.0/24","reason":"r"}`, wantStatus: 400, wantType: "missing-field", wantField: "expires_in", spec: "reject"},
		{name: "deny: no reason", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.0/24","expires_in":"1h"}`, wantStatus: 400, wantType: "missing-field", wantField: "reason", spec: "reject"},
		{name: "deny: an expiry that is no duration", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.0/24","expires_in":"soon","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "expires_in", spec: "accept"},
		{name: "deny: forever", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.0/24","expires_in":"365d","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "expires_in", spec: "accept"},
		{name: "deny: an unknown action", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.0/24","action":"ban","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "action", spec: "reject"},
		{name: "deny: host bits set", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.7/24","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip_range", spec: "accept"},
		{name: "deny: the whole Internet", path: "/v1/admin/deny", body: `{"ip_range":"0.0.0.0/0","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip_range", spec: "accept"},
		{name: "deny: two subjects", path: "/v1/admin/deny", body: `{"ip_range":"203.0.113.0/24","country":"FR","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ip_range", spec: "accept"},
		{name: "deny: a country for login", path: "/v1/admin/deny", body: `{"flow":"login","country":"FR","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "flow", spec: "accept"},
		{name: "allow: an action", path: "/v1/admin/allow", body: `{"ip_range":"203.0.113.0/24","action":"block","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "unknown-field", wantField: "action", spec: "reject"},
		{name: "allow: a prefix without +", path: "/v1/admin/allow", body: `{"destination_prefix":"4477009","expires_in":"1h","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "destination_prefix", spec: "reject"},
		{name: "remove: no reason", path: "/v1/admin/remove", body: `{"id":"Hq3v0S2b1xY9nQe4a7LrVw"}`, wantStatus: 400, wantType: "missing-field", wantField: "reason", spec: "reject"},
		{name: "remove: not an id", path: "/v1/admin/remove", body: `{"id":"../../etc","reason":"r"}`, wantStatus: 400, wantType: "invalid-field", wantField: "id", spec: "accept"},
		{name: "entries: an unknown parameter", method: http.MethodGet, path: "/v1/admin/entries?ip=203.0.113.1", wantStatus: 400, wantType: "unknown-field", wantField: "ip"},
		{name: "check: ref over the cap", body: `{"flow":"login","account":"a","ip":"192.0.2.1","ref":"` + long(129) + `"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "reject"},
		{name: "check: ref of 128 characters but 256 bytes", body: `{"flow":"login","account":"a","ip":"192.0.2.1","ref":"` + strings.Repeat("é", 128) + `"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "accept"},
		{name: "check: ref is a number", body: `{"flow":"login","account":"a","ip":"192.0.2.1","ref":42}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "reject"},
		{name: "report: ref with a control character", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"success","ref":"user\u000a42"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "accept"},
		{name: "report: ref over the cap", path: report, body: `{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"failure","ref":"` + long(129) + `"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "reject"},
		{name: "send: ref with a NUL", path: send, body: `{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1","ref":"a\u0000"}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "accept"},
		{name: "send: ref is an object", path: send, body: `{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1","ref":{"id":1}}`, wantStatus: 400, wantType: "invalid-field", wantField: "ref", spec: "reject"},
		{name: "trailing slash", path: "/v1/check/", body: `{"flow":"login","account":"a","ip":"192.0.2.1"}`, wantStatus: 404, wantType: "not-found"},
	}
	h := newHarness(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path, ct := tt.method, tt.path, tt.contentType
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = check
			}
			switch ct {
			case "":
				ct = ctJSON
			case "-":
				ct = ""
			}
			before := h.keys()
			var res *response
			if tt.chunked {
				res = h.doChunked(t, method, path, ct, tt.body)
			} else {
				res = h.do(t, method, path, ct, tt.body)
			}
			if res.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", res.status, tt.wantStatus, res.body)
			}
			p := res.json(t)
			if got, want := p["type"], "https://tollgate.dev/problems/"+tt.wantType; got != want {
				t.Errorf("type = %v, want %v", got, want)
			}
			if got, _ := p["field"].(string); got != tt.wantField {
				t.Errorf("field = %q, want %q", got, tt.wantField)
			}
			if got, want := p["request_id"], res.header.Get("X-Request-Id"); got != want {
				t.Errorf("request_id = %v, want the X-Request-Id %q", got, want)
			}
			if d, _ := p["detail"].(string); d == "" || strings.Contains(d, "json:") || strings.Contains(d, "authguard:") {
				t.Errorf("detail %q is empty or leaks an internal error", d)
			}
			if tt.wantStatus == 405 && !slices.Contains([]string{"POST", "GET, HEAD"}, res.header.Get("Allow")) {
				t.Errorf("Allow = %q", res.header.Get("Allow"))
			}
			switch tt.spec {
			case "reject":
				if res.specErr == nil {
					t.Errorf("openapi.yaml accepts this request; it should document the limit")
				}
			case "accept":
				if res.specErr != nil {
					t.Errorf("openapi.yaml rejects this request: %v", res.specErr)
				}
			}
			if after := h.keys(); !slices.Equal(before, after) {
				t.Errorf("a rejected request changed the store: %d keys before, %d after", len(before), len(after))
			}
		})
	}
	if l, err := h.engine.ListEntries(context.Background(), "", ""); err != nil || len(l) != 0 {
		t.Errorf("rejected requests left %d entries (%v)", len(l), err)
	}
}

// TestGoodInputVariants are the deliberate leniencies: nulls for optional
// fields, a charset parameter, white space around the object.
func TestGoodInputVariants(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, contentType, body string
	}{
		{"nulls for optional fields", "application/json", `{"flow":"login","account":"a","ip":"192.0.2.1","device_token":null,"captcha_solved":null,"password_fingerprint":null}`},
		{"charset parameter", "application/json; charset=UTF-8", `{"flow":"login","account":"b","ip":"192.0.2.1"}`},
		{"white space around the object", "application/json", " \n\t{\"flow\":\"login\",\"account\":\"c\",\"ip\":\"2001:db8::1\"}\n "},
		{"IPv4-mapped IPv6", "application/json", `{"flow":"login","account":"d","ip":"::ffff:192.0.2.1"}`},
		{"every field", "application/json", `{"flow":"otp_verify","account":"e","ip":"192.0.2.1","device_token":"not-a-token","captcha_solved":true,"password_fingerprint":"fp"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.do(t, http.MethodPost, "/v1/check", tt.contentType, tt.body)
			if res.specErr != nil {
				t.Errorf("openapi.yaml rejects the request: %v", res.specErr)
			}
			if v := res.verdict(t); v.Action != "proceed" || v.Attempt == "" {
				t.Errorf("verdict = %+v, want proceed with an attempt token", v)
			}
		})
	}
}
