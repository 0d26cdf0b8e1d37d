package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/challenge"
)

// FuzzFormFields: a form route reads a field the way a Go server's
// url.ParseQuery does, when both read it once; and never panics.
func FuzzFormFields(f *testing.F) {
	f.Add("u=q", "u=ann&p=pw", "application/x-www-form-urlencoded")
	f.Add("", "u=a&u=b", "application/x-www-form-urlencoded")
	f.Add("", "--B\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nann\r\n--B--\r\n", "multipart/form-data; boundary=B")
	f.Add("u=%zz", "p=;", "application/x-www-form-urlencoded; charset=utf-8")
	f.Fuzz(func(t *testing.T, query, body, ct string) {
		rt := &Route{Body: Form, Account: "u", Password: "p"}
		fs, err := readFields(rt, query, ct, []byte(body))
		if err != nil || ct != "application/x-www-form-urlencoded" {
			return
		}
		q, qerr := url.ParseQuery(query)
		b, berr := url.ParseQuery(body)
		if qerr != nil || berr != nil {
			t.Fatalf("readFields accepted what url.ParseQuery refuses: %v %v", qerr, berr)
		}
		all := append(q["u"], b["u"]...)
		switch {
		case len(all) > 1:
			t.Fatalf("readFields accepted u %d times", len(all))
		case len(all) == 1 && fs.account != all[0]:
			t.Fatalf("account %q, url.ParseQuery %q", fs.account, all[0])
		case len(all) == 0 && fs.account != "":
			t.Fatalf("account %q where url.ParseQuery finds none", fs.account)
		}
	})
}

// FuzzJSONFields: a JSON route reads a field as encoding/json finds it,
// and never panics.
func FuzzJSONFields(f *testing.F) {
	f.Add(`{"u":"ann","p":"x"}`)
	f.Add(`{"u":"a","u":"b"}`)
	f.Add(`{"u":{"n":1}}`)
	f.Add(`[1,2]`)
	f.Add("{\"u\":\"\\ud800\"}")
	f.Fuzz(func(t *testing.T, body string) {
		rt := &Route{Body: JSON, Account: "/u", Password: "/p"}
		fs, err := readFields(rt, "", "application/json", []byte(body))
		if err != nil {
			return
		}
		var doc map[string]any
		if json.Unmarshal([]byte(body), &doc) != nil {
			return // not an object, or a value encoding/json reads otherwise
		}
		if s, ok := doc["u"].(string); ok && s != fs.account {
			t.Fatalf("account %q, encoding/json %q", fs.account, s)
		}
	})
}

// FuzzParsePointer: a pointer parses to tokens that escape back to it.
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a/b", "/a~1b/~0", "/~", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tokens, err := parsePointer(p)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, tok := range tokens {
			b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
		}
		if b.String() != p {
			t.Fatalf("parsePointer(%q) = %q, which escapes back to %q", p, tokens, b.String())
		}
	})
}

// FuzzClassify: any answer of an upstream is classified without a panic,
// and an answer both lists match is unknown.
func FuzzClassify(f *testing.F) {
	f.Add(302, "sessionid=1; Path=/", "/admin/", `{"ok":true}`)
	f.Add(200, "DW0123=; Max-Age=0", "", `<form id="login">`)
	f.Add(0, "\x00", "\xff", "{")
	rt := &Route{
		Success: []Match{{Status: []int{302}, Cookie: "sessionid", LocationNot: regexp.MustCompile(`/login`)},
			{JSON: "/ok", JSONValue: "true"}, {CookiePattern: regexp.MustCompile(`^DW`)}},
		Failure: []Match{{Status: []int{200}, BodyContains: "login"}, {Header: "X-Fail", HeaderValue: regexp.MustCompile(`.`)}},
	}
	f.Fuzz(func(t *testing.T, status int, setCookie, location, body string) {
		h := http.Header{"Set-Cookie": {setCookie}, "Location": {location}, "X-Fail": {location}}
		r := &response{status: status, header: h, body: []byte(body)}
		o := classify(rt, r)
		if anyMatch(rt.Success, r) && anyMatch(rt.Failure, r) && o != Unknown {
			t.Fatalf("both lists match and the outcome is %v", o)
		}
	})
}

// FuzzParseSolution: Tollgate-Challenge parses to a proof of work or a
// provider's response, never both, and never panics.
func FuzzParseSolution(f *testing.F) {
	f.Add("token=t&nonce=12")
	f.Add("provider=turnstile&response=r&token=t")
	f.Add("provider=pow&response=r")
	f.Add("token=a&token=b&nonce=1")
	f.Fuzz(func(t *testing.T, h string) {
		s, ok := parseSolution(h)
		if !ok {
			return
		}
		pow := s.Provider == 0
		if pow && (s.Token == "" || s.Nonce == "" || s.Response != "") || !pow && (s.Response == "" || s.Nonce != "" || s.Provider == challenge.ProofOfWork) {
			t.Fatalf("parseSolution(%q) = %+v", h, s)
		}
	})
}

// FuzzMatchPath: a path matches its cleaned self exactly, and cleaning is
// idempotent.
func FuzzMatchPath(f *testing.F) {
	for _, s := range []string{"/", "//a/./b/../c;x/", "a", "/A/b/", "/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c := cleanPath(p)
		if cleanPath(c) != c {
			t.Fatalf("cleanPath(%q) = %q, cleaned again %q", p, c, cleanPath(c))
		}
		if !strings.Contains(c, ";") && !matchPath(p, c, false) {
			t.Fatalf("%q does not match its cleaned %q", p, c)
		}
	})
}

// FuzzStripCookie: no pair of the device cookie survives, whatever the
// Cookie lines.
func FuzzStripCookie(f *testing.F) {
	f.Add("a=1; __Host-tollgate-device=x", "__Host-tollgate-device=y")
	f.Add(";;", " __Host-tollgate-device =z")
	f.Fuzz(func(t *testing.T, l1, l2 string) {
		const name = "__Host-tollgate-device"
		h := http.Header{"Cookie": {l1, l2}}
		stripCookie(h, name)
		r := &http.Request{Header: h}
		if cs := r.CookiesNamed(name); len(cs) > 0 {
			t.Fatalf("after stripping %q %q: %q still has %s", l1, l2, h["Cookie"], name)
		}
	})
}
