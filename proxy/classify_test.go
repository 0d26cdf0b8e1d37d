package proxy

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

var now = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// resp is a response with status, header lines (name, value, ...) and a
// body.
func resp(status int, body string, lines ...string) *response {
	h := http.Header{}
	for i := 0; i+1 < len(lines); i += 2 {
		h.Add(lines[i], lines[i+1])
	}
	return &response{status: status, header: h, body: []byte(body), now: now}
}

func TestMatch_EachCondition(t *testing.T) {
	re := regexp.MustCompile
	tests := []struct {
		name string
		m    Match
		r    *response
		want bool
	}{
		{"status in the list", Match{Status: []int{302, 303}}, resp(303, ""), true},
		{"status not in the list", Match{Status: []int{302}}, resp(200, ""), false},
		{"location matches", Match{Location: re(`^/admin/$`)}, resp(302, "", "Location", "/admin/"), true},
		{"location absent", Match{Location: re(`.`)}, resp(302, ""), false},
		{"location_not holds", Match{LocationNot: re(`/login`)}, resp(302, "", "Location", "/admin/"), true},
		{"location_not fails", Match{LocationNot: re(`/login`)}, resp(302, "", "Location", "/admin/login/?next=/"), false},
		{"location_not without a location", Match{LocationNot: re(`/login`)}, resp(200, ""), true},
		{"cookie set", Match{Cookie: "sessionid"}, resp(302, "", "Set-Cookie", "sessionid=abc; Path=/; HttpOnly"), true},
		{"another cookie", Match{Cookie: "sessionid"}, resp(302, "", "Set-Cookie", "csrftoken=abc; Path=/"), false},
		{"cookie deleted by Max-Age=0", Match{Cookie: "sessionid"}, resp(302, "", "Set-Cookie", "sessionid=x; Max-Age=0"), false},
		{"cookie deleted by a past Expires", Match{Cookie: "sessionid"},
			resp(302, "", "Set-Cookie", "sessionid=deleted; expires=Thu, 01 Jan 1970 00:00:01 GMT"), false},
		{"cookie with an empty value", Match{Cookie: "sessionid"}, resp(302, "", "Set-Cookie", "sessionid=; Path=/"), false},
		{"cookie with a future Expires", Match{Cookie: "sessionid"},
			resp(302, "", "Set-Cookie", "sessionid=v; Expires=Fri, 01 Jan 2100 00:00:00 GMT"), true},
		{"the second Set-Cookie", Match{Cookie: "sessionid"}, resp(302, "", "Set-Cookie", "a=1", "Set-Cookie", "sessionid=2"), true},
		{"cookie pattern", Match{CookiePattern: re(`^DW[0-9a-f]{32}$`)},
			resp(302, "", "Set-Cookie", "DW0123456789abcdef0123456789abcdef=x; path=/"), true},
		{"cookie pattern, deleted", Match{CookiePattern: re(`^DW[0-9a-f]{32}$`)},
			resp(200, "", "Set-Cookie", "DW0123456789abcdef0123456789abcdef=deleted; Max-Age=0"), false},
		{"header present", Match{Header: "X-Login"}, resp(200, "", "X-Login", "ok"), true},
		{"header absent", Match{Header: "X-Login"}, resp(200, ""), false},
		{"header value", Match{Header: "X-Login", HeaderValue: re(`^ok$`)}, resp(200, "", "X-Login", "fail", "X-Login", "ok"), true},
		{"header value differs", Match{Header: "X-Login", HeaderValue: re(`^ok$`)}, resp(200, "", "X-Login", "okay"), false},
		{"body contains", Match{BodyContains: `id="login-form"`}, resp(200, `<form id="login-form">`), true},
		{"body lacks", Match{BodyContains: `id="login-form"`}, resp(200, `<h1>Site administration</h1>`), false},
		{"json value", Match{JSON: "/ok", JSONValue: "true"}, resp(200, `{"ok":true}`), true},
		{"json value differs", Match{JSON: "/ok", JSONValue: "true"}, resp(200, `{"ok":false}`), false},
		{"json string", Match{JSON: "/status", JSONValue: `"ok"`}, resp(200, `{"status":"ok"}`), true},
		{"json number spelt otherwise", Match{JSON: "/n", JSONValue: "1"}, resp(200, `{"n":1.0}`), true},
		{"json object, keys in another order", Match{JSON: "/u", JSONValue: `{"a":1,"b":2}`}, resp(200, `{"u":{"b":2,"a":1}}`), true},
		{"json present", Match{JSON: "/token"}, resp(200, `{"token":"x"}`), true},
		{"json absent", Match{JSON: "/token"}, resp(200, `{"error":"x"}`), false},
		{"json in an array", Match{JSON: "/a/1", JSONValue: "2"}, resp(200, `{"a":[1,2]}`), true},
		{"json escaped pointer", Match{JSON: "/a~1b/c~0d", JSONValue: "1"}, resp(200, `{"a/b":{"c~d":1}}`), true},
		{"json not JSON", Match{JSON: "/ok"}, resp(200, `<html>`), false},
		{"json truncated", Match{JSON: "/ok"}, resp(200, `{"ok":tr`), false},
		{"every condition must hold", Match{Status: []int{302}, Cookie: "sessionid"}, resp(302, ""), false},
		{"and all do", Match{Status: []int{302}, Cookie: "sessionid"}, resp(302, "", "Set-Cookie", "sessionid=1"), true},
		{"an empty match holds for nothing", Match{}, resp(200, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.matches(tt.r); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	rt := &Route{
		Success: []Match{{Status: []int{302}, Cookie: "sessionid"}, {Status: []int{200}, BodyContains: "Welcome"}},
		Failure: []Match{{Status: []int{200}, BodyContains: "login-form"}},
	}
	tests := []struct {
		name string
		r    *response
		want authguard.Outcome
	}{
		{"the first success", resp(302, "", "Set-Cookie", "sessionid=1"), authguard.Success},
		{"the second success", resp(200, "Welcome"), authguard.Success},
		{"the failure", resp(200, "<form id=login-form>"), authguard.Failure},
		{"neither", resp(500, "oops"), Unknown},
		{"both: unknown", resp(200, "Welcome back <form id=login-form>"), Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(rt, tt.r); got != tt.want {
				t.Errorf("classify = %v, want %v", got, tt.want)
			}
		})
	}
}
