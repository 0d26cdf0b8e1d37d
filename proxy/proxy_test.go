package proxy_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/proxy"
)

// The addresses of the tests' end users.
const (
	ownerAddr    = "198.51.100.7:40000"
	ownerMobile  = "192.0.2.44:40000" // the owner on another network
	attackerAddr = "203.0.113.66:50000"
)

func TestProxy_ARequestOfNoRoutePassesThroughUntouched(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	payload := []byte("not a login \x00\xff, byte for byte")
	r := httptest.NewRequest(http.MethodPut, "/files/a.bin?x=1", bytes.NewReader(payload))
	r.Header.Set("X-App", "kept")
	resp := h.do(r, ownerAddr)
	if got := body(t, resp); resp.StatusCode != 200 || string(got) != "page" {
		t.Fatalf("answer = %d %q, want the upstream's 200 page", resp.StatusCode, got)
	}
	seen := h.up.requests()
	if len(seen) != 1 {
		t.Fatalf("the upstream saw %d requests, want 1", len(seen))
	}
	if s := seen[0]; s.method != http.MethodPut || s.path != "/files/a.bin" || !bytes.Equal(s.body, payload) || s.header.Get("X-App") != "kept" {
		t.Errorf("the upstream saw %s %s %q X-App=%q, want the request as sent", s.method, s.path, s.body, s.header.Get("X-App"))
	}
	if h.events.calls("check") != 0 {
		t.Error("a request of no route was checked")
	}
}

func TestProxy_RoutesMatchByMethodAndPath(t *testing.T) {
	prefix := formRoute()
	prefix.Name, prefix.Path, prefix.Prefix, prefix.Methods = "prefix", "/sso", true, []string{"GET", "POST"}
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), prefix}})
	tests := []struct {
		name, method, target string
		checked              bool
	}{
		{"the route", "POST", "/login", true},
		{"a trailing slash", "POST", "/login/", true},
		{"another case", "POST", "/LOGIN", true},
		{"an empty segment", "POST", "//login", true},
		{"a dot segment", "POST", "/x/../login", true},
		{"a servlet parameter", "POST", "/login;jsessionid=1", true},
		{"a method in lower case", "post", "/login", true},
		{"GET is not the route's", "GET", "/login", false},
		{"a longer path is not an exact route's", "POST", "/login2", false},
		{"under a prefix route", "GET", "/sso/start", true},
		{"the prefix itself", "POST", "/sso", true},
		{"a path that only starts like the prefix", "GET", "/ssox", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.events.calls("check")
			r := httptest.NewRequest(tt.method, tt.target, strings.NewReader("username=bob&password=x"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp := h.do(r, ownerAddr)
			body(t, resp)
			if got := h.events.calls("check") > before; got != tt.checked {
				t.Errorf("%s %s checked = %v, want %v", tt.method, tt.target, got, tt.checked)
			}
		})
	}
}

func TestProxy_TheBodyReachesTheUpstreamByteForByte(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}})
	tests := []struct{ name, path, contentType, body string }{
		{"form with a CSRF token and odd escapes", "/login", "application/x-www-form-urlencoded",
			"csrfmiddlewaretoken=a%2Bb%3D%3D&username=bob&password=p%C3%A4ss+w%26rd&next=%2Fadmin%2F"},
		{"JSON with white space and unicode", "/api/login", "application/json",
			"{ \"user\" : {\"name\":\"b\\u006fb\"},\n \"password\":\"p\u00e4ss\", \"extra\":[1,2.50,null] }  "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			body(t, h.do(r, ownerAddr))
			seen := h.up.requests()
			got := seen[len(seen)-1]
			if string(got.body) != tt.body {
				t.Errorf("the upstream got %q, want %q", got.body, tt.body)
			}
			if cl := got.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(tt.body)) {
				t.Errorf("Content-Length = %s, want %d", cl, len(tt.body))
			}
		})
	}
	if n := h.events.calls("check"); n != 2 {
		t.Errorf("%d checks, want 2", n)
	}
}

// guess is an attacker's i-th password: each is another, since the
// policy counts a repeated wrong password once.
func guess(i int) string { return "guess-" + strconv.Itoa(i) }

func TestProxy_ABodyPastTheBoundIs413AndTheUpstreamNeverSeesIt(t *testing.T) {
	rt := formRoute()
	rt.MaxBodyBytes = 1024
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{rt}})
	big := "username=bob&password=" + strings.Repeat("x", 2000)
	for _, chunked := range []bool{false, true} {
		var r *http.Request
		if chunked { // no Content-Length: read up to the bound
			r = httptest.NewRequest(http.MethodPost, "/login", io.MultiReader(strings.NewReader(big)))
			r.ContentLength = -1
		} else {
			r = httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(big))
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp := h.do(r, attackerAddr)
		b := body(t, resp)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("chunked=%v: answer %d %s, want a 413 problem", chunked, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var p struct{ Type string }
		if json.Unmarshal(b, &p); p.Type != "https://tollgate.dev/problems/body-too-large" {
			t.Errorf("problem type %q", p.Type)
		}
	}
	if n := len(h.up.requests()); n != 0 {
		t.Errorf("the upstream saw %d requests, want none", n)
	}
	if n := h.events.calls("check"); n != 0 {
		t.Errorf("%d checks of a refused body, want none", n)
	}
}

// A form route reads the account as the upstream would: PHP keeps the
// last of two "username" fields, Django's request.POST.get the last and a
// Go server the first, so a request with two would let the proxy check
// one account while the upstream checks the other's password.
func TestProxy_ASecondAccountFieldCannotSmuggleAGuessPastTheCheck(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}})
	tests := []struct{ name, target, contentType, body string }{
		{"twice in the body", "/login", "application/x-www-form-urlencoded", "username=nobody&username=alice&password=guess"},
		{"once in the query, once in the body", "/login?username=alice", "application/x-www-form-urlencoded", "username=nobody&password=guess"},
		{"twice in JSON", "/api/login", "application/json", `{"user":{"name":"nobody","name":"alice"},"password":"guess"}`},
		{"a form's account as a JSON number", "/api/login", "application/json", `{"user":{"name":7},"password":"guess"}`},
		{"a bad escape", "/login", "application/x-www-form-urlencoded", "username=alice%zz&password=guess"},
		{"semicolon separators", "/login", "application/x-www-form-urlencoded", "username=nobody;username=alice&password=guess"},
		{"JSON sent to a JSON route as a form", "/api/login", "application/x-www-form-urlencoded", `user.name=alice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.target, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			resp := h.do(r, attackerAddr)
			body(t, resp)
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Errorf("answer %d, want 400 or 415", resp.StatusCode)
			}
		})
	}
	if n := len(h.up.requests()); n != 0 {
		t.Errorf("the upstream saw %d ambiguous logins, want none", n)
	}
}

func TestProxy_FieldsAreReadFromFormsMultipartAndJSON(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}},
		func(c *authguard.Config) { c.RecordSubjects = true })
	multipartBody := "--XyZ\r\nContent-Disposition: form-data; name=\"username\"\r\n\r\nalice\r\n" +
		"--XyZ\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\n" + ownerPassword + "\r\n--XyZ--\r\n"
	tests := []struct{ name, target, contentType, body string }{
		{"urlencoded", "/login", "application/x-www-form-urlencoded", "username=alice&password=correct+horse"},
		{"the query string", "/login?username=alice&password=correct+horse", "", ""},
		{"multipart", "/login", "multipart/form-data; boundary=XyZ", multipartBody},
		{"JSON", "/api/login", "application/json; charset=utf-8", `{"user":{"name":"alice"},"password":"correct horse"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.target, strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			before := h.events.calls("check")
			body(t, h.do(r, ownerAddr))
			if h.events.calls("check") != before+1 {
				t.Fatal("not checked")
			}
		})
	}
	// Each check named alice with her password, and each succeeded.
	accounts, fingerprints := map[string]bool{}, map[string]bool{}
	h.events.mu.Lock()
	for _, ev := range h.events.evs {
		if ev.Call == "check" {
			accounts[ev.Subjects.Account], fingerprints[ev.Subjects.Fingerprint] = true, true
		}
	}
	h.events.mu.Unlock()
	if len(accounts) != 1 || accounts[""] || len(fingerprints) != 1 || fingerprints[""] {
		t.Errorf("the checks named %d accounts and %d passwords, want alice's one each", len(accounts), len(fingerprints))
	}
	if got := h.counter("tollgate_proxy_outcomes_total", "route", "form-login", "outcome", "success"); got != 3 {
		t.Errorf("form successes = %v, want 3", got)
	}
}

// The password is fingerprinted, never passed on: the engine's events
// (which the decision log writes) carry only the keyed hash of the
// fingerprint, and the same password gives the same one on every route.
func TestProxy_ThePasswordIsFingerprintedNeverPassedOn(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}},
		func(c *authguard.Config) { c.RecordSubjects = true })
	body(t, h.post(ownerAddr, "bob", "hunter2"))
	fp1 := h.events.last("check").Subjects.Fingerprint
	r := httptest.NewRequest(http.MethodPost, "/api/login", strings.NewReader(`{"user":{"name":"carol"},"password":"hunter2"}`))
	r.Header.Set("Content-Type", "application/json")
	body(t, h.do(r, ownerAddr))
	fp2 := h.events.last("check").Subjects.Fingerprint
	if fp1 == "" || fp1 != fp2 {
		t.Errorf("fingerprints %q and %q: want one non-empty fingerprint for one password", fp1, fp2)
	}
	body(t, h.post(ownerAddr, "bob", "hunter3"))
	if fp3 := h.events.last("check").Subjects.Fingerprint; fp3 == fp1 {
		t.Error("another password has the same fingerprint")
	}
	if strings.Contains(fp1, "hunter2") {
		t.Error("the fingerprint holds the password")
	}
}

func TestProxy_SuccessAndFailureAreReportedWithTheChecksAttempt(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	resp := h.post(ownerAddr, "bob", "wrong")
	body(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("a wrong password answered %d, want the upstream's 200 form", resp.StatusCode)
	}
	ev := h.events.last("report")
	if ev.Outcome != authguard.Failure || ev.Attempt != authguard.AttemptSettled {
		t.Errorf("report %v %v, want a failure settled with the check's attempt token", ev.Outcome, ev.Attempt)
	}
	resp = h.post(ownerAddr, owner, ownerPassword)
	body(t, resp)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the owner's login answered %d, want the upstream's 302", resp.StatusCode)
	}
	ev = h.events.last("report")
	if ev.Outcome != authguard.Success || ev.Attempt != authguard.AttemptSettled {
		t.Errorf("report %v %v, want a success settled with the check's attempt token", ev.Outcome, ev.Attempt)
	}
	if deviceCookie(resp) == nil {
		t.Error("a success set no device cookie")
	}
	if got := h.counter("tollgate_proxy_outcomes_total", "route", "form-login", "outcome", "success"); got != 1 {
		t.Errorf("outcomes{success} = %v, want 1", got)
	}
	if got := h.counter("tollgate_proxy_outcomes_total", "route", "form-login", "outcome", "failure"); got != 1 {
		t.Errorf("outcomes{failure} = %v, want 1", got)
	}
}

// An answer that matches neither success nor failure reports nothing, so
// the check's charge stays: an upstream whose answers the route cannot
// read is never a way around the account's budget.
func TestProxy_AnUnclassifiedAnswerLeavesTheAttemptCounted(t *testing.T) {
	rt := formRoute()
	rt.Failure = nil // the upstream's failure page is no longer recognised
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{rt}})
	for i := range 5 {
		resp := h.post(attackerAddr, owner, guess(i))
		body(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("guess %d answered %d, want the upstream's", i+1, resp.StatusCode)
		}
	}
	if n := h.events.calls("report"); n != 0 {
		t.Errorf("%d reports of unknown outcomes, want none", n)
	}
	if got := h.counter("tollgate_proxy_outcomes_total", "route", "form-login", "outcome", "unknown"); got != 5 {
		t.Errorf("outcomes{unknown} = %v, want 5", got)
	}
	resp := h.post(attackerAddr, owner, guess(5))
	body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the 6th guess answered %d, want 429: five unreported attempts count as five failures", resp.StatusCode)
	}
	if n := h.up.logins("/login"); n != 5 {
		t.Errorf("the upstream checked %d passwords, want 5", n)
	}
}

// The answer to a delay is the same bytes whether the account exists or
// not: an attacker cannot enumerate accounts through the proxy.
func TestProxy_TheDelayAnswerIsTheSameBytesForAnAccountThatDoesNotExist(t *testing.T) {
	for _, json := range []bool{false, true} {
		name := "form"
		if json {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}})
			send := func(user, password string) *http.Response {
				if !json {
					return h.post(attackerAddr, user, password)
				}
				r := httptest.NewRequest(http.MethodPost, "/api/login", strings.NewReader(`{"user":{"name":"`+user+`"},"password":"`+password+`"}`))
				r.Header.Set("Content-Type", "application/json")
				return h.do(r, attackerAddr)
			}
			var answers [2][]byte
			var headers [2]http.Header
			for i, user := range []string{owner, "no-such-user"} {
				for i := range 5 {
					body(t, send(user, guess(i)))
				}
				resp := send(user, guess(5))
				answers[i], headers[i] = body(t, resp), resp.Header
				if resp.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("%s: the 6th guess answered %d, want 429", user, resp.StatusCode)
				}
			}
			if !bytes.Equal(answers[0], answers[1]) {
				t.Errorf("the delay bodies differ:\n%s\n%s", answers[0], answers[1])
			}
			for _, k := range []string{"Retry-After", "Ratelimit", "Content-Type", "Cache-Control", "Content-Length"} {
				if headers[0].Get(k) == "" {
					t.Errorf("no %s", k)
				}
			}
			headers[0].Del("Date")
			headers[1].Del("Date")
			if !reflect.DeepEqual(headers[0], headers[1]) {
				t.Errorf("the delay headers differ:\n%v\n%v", headers[0], headers[1])
			}
			wantType := "text/html; charset=utf-8"
			if json {
				wantType = "application/problem+json"
			}
			if got := headers[0].Get("Content-Type"); got != wantType {
				t.Errorf("Content-Type %q, want %q", got, wantType)
			}
		})
	}
}

// The owner's device cookie, set by her success, lets her in while an
// attacker guessing her password from elsewhere is delayed; without it,
// on a network she never signed in from, she would wait as he does.
func TestProxy_TheOwnersDeviceCookieLetsHerInWhileTheAttackerIsDelayed(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	resp := h.post(ownerAddr, owner, ownerPassword)
	body(t, resp)
	cookie := deviceCookie(resp)
	if cookie == nil {
		t.Fatal("the owner's success set no device cookie")
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" || cookie.MaxAge <= 0 {
		t.Errorf("device cookie %+v: want HttpOnly, SameSite=Lax, Path=/ and a Max-Age", cookie)
	}
	for i := range 5 {
		body(t, h.post(attackerAddr, owner, guess(i)))
	}
	if resp := h.post(attackerAddr, owner, guess(5)); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the attacker's 6th guess answered %d, want 429", resp.StatusCode)
	}
	if resp := h.post(ownerMobile, owner, ownerPassword); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the owner without her cookie on a new network answered %d, want 429 like the attacker", resp.StatusCode)
	}
	resp = h.post(ownerMobile, owner, ownerPassword, &http.Cookie{Name: cookie.Name, Value: cookie.Value})
	body(t, resp)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the owner with her cookie answered %d, want the upstream's 302", resp.StatusCode)
	}
	if deviceCookie(resp) == nil {
		t.Error("the owner's success did not renew her cookie")
	}
}

func TestProxy_TollgatesCookieAndHeaderNeverReachTheUpstream(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	ck := &http.Cookie{Name: proxy.DefaultInsecureCookieName, Value: "a-device-token"}
	body(t, h.post(ownerAddr, "bob", "x", &http.Cookie{Name: "csrftoken", Value: "c"}, ck, &http.Cookie{Name: "theme", Value: "dark"}))
	r := httptest.NewRequest(http.MethodGet, "/home", nil)
	r.Header.Add("Cookie", proxy.DefaultInsecureCookieName+"=a-device-token")
	r.Header.Add("Cookie", "session=s; "+proxy.DefaultInsecureCookieName+"=x")
	r.Header.Set(proxy.ChallengeHeader, "token=t&nonce=1")
	body(t, h.do(r, ownerAddr))
	seen := h.up.requests()
	if len(seen) != 2 {
		t.Fatalf("the upstream saw %d requests, want 2", len(seen))
	}
	if got := seen[0].header.Values("Cookie"); len(got) != 1 || got[0] != "csrftoken=c; theme=dark" {
		t.Errorf("the login's Cookie lines = %q, want the app's cookies only", got)
	}
	if got := seen[1].header.Values("Cookie"); len(got) != 1 || got[0] != "session=s" {
		t.Errorf("a page's Cookie lines = %q, want the app's cookies only", got)
	}
	for _, s := range seen {
		if s.header.Get(proxy.ChallengeHeader) != "" && s.path == "/login" {
			t.Error("the challenge header reached the upstream on a route")
		}
	}
}

func TestProxy_AnUpstreamThatIsDownIs502(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	h.up.Close()
	for _, target := range []string{"/page", "/login"} {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader("username=bob&password=x"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp := h.do(r, ownerAddr)
		b := body(t, resp)
		var p struct {
			Type   string
			Status int
		}
		json.Unmarshal(b, &p)
		if resp.StatusCode != http.StatusBadGateway || p.Type != proxy.ProblemUpstreamUnavailable || p.Status != 502 {
			t.Errorf("%s: %d %s, want a 502 %s problem", target, resp.StatusCode, b, proxy.ProblemUpstreamUnavailable)
		}
	}
	if n := h.events.calls("report"); n != 0 {
		t.Errorf("%d reports of an attempt the upstream never answered, want none", n)
	}
	if got := h.counter("tollgate_proxy_upstream_errors_total", "route", "form-login", "kind", "unavailable"); got != 1 {
		t.Errorf("upstream errors of the route = %v, want 1", got)
	}
	if got := h.counter("tollgate_proxy_upstream_errors_total", "route", "_pass", "kind", "unavailable"); got != 1 {
		t.Errorf("upstream errors of pass-through = %v, want 1", got)
	}
}

// A form route reads only a form's body: an upload of another content
// type streams through whatever its size (no 413), and the account comes
// from the query string, where PHP's $_REQUEST finds it too.
func TestProxy_AnUploadOnAFormRouteStreamsAndIsCheckedByItsQuery(t *testing.T) {
	rt := formRoute()
	rt.Name, rt.Path, rt.Prefix, rt.MaxBodyBytes = "exe", "/lib/exe/", true, 1024
	rt.Account, rt.Password = "u", "p"
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{rt}})
	upload := bytes.Repeat([]byte{0xde, 0xad}, 1<<19) // 1 MiB
	r := httptest.NewRequest(http.MethodPost, "/lib/exe/ajax.php?call=upload&u=alice&p=guess", bytes.NewReader(upload))
	r.Header.Set("Content-Type", "application/octet-stream")
	resp := h.do(r, attackerAddr)
	body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the upload answered %d, want the upstream's 200", resp.StatusCode)
	}
	if c := h.rec.lastCheck(); c.Account != owner {
		t.Errorf("checked account %q, want the query's %q", c.Account, owner)
	}
	seen := h.up.requests()
	if len(seen) != 1 || !bytes.Equal(seen[0].body, upload) {
		t.Errorf("the upstream got %d requests, the body intact: %v", len(seen), len(seen) == 1 && bytes.Equal(seen[0].body, upload))
	}
}
