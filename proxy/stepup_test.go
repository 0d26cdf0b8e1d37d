package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/breached/hibp"
	"github.com/tollgate-auth/tollgate/proxy"
)

// corpus answers the ranges of a breached-password corpus of the given
// passwords, in HIBP's format, as the server's breached.Live does. It
// records the prefixes it was asked for.
type corpus struct {
	mu     sync.Mutex
	hashes map[string]string // prefix: its lines
	asked  []string
	down   bool // every range fails, as an unreachable range API does
}

func newCorpus(passwords ...string) *corpus {
	c := &corpus{hashes: map[string]string{}}
	for i, pw := range passwords {
		prefix, suffix := hibp.Hash(pw)
		c.hashes[prefix] += fmt.Sprintf("%s:%d\r\n", suffix, 1000+i)
	}
	return c
}

func (c *corpus) Range(_ context.Context, prefix string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, prefix)
	if c.down {
		return nil, errors.New("the range API is down")
	}
	// A padding line of count 0 in every answer, as the padded answers.
	return []byte(c.hashes[prefix] + "0000000000000000000000000000000000A:0\r\n"), nil
}

// lookups is how many ranges were asked for.
func (c *corpus) lookups() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asked)
}

var _ proxy.BreachedRanges = (*corpus)(nil)

// breachedPassword is a common password, in the test corpus, that is
// nobody's password at the fake login.
const breachedPassword = "123456"

// newBreachedHarness is a harness whose corpus holds alice's password and
// breachedPassword.
func newBreachedHarness(t *testing.T, cfg proxy.Config) (*harness, *corpus) {
	t.Helper()
	c := newCorpus(ownerPassword, breachedPassword)
	cfg.Breached = c
	return newHarness(t, cfg), c
}

func TestProxy_AStolenBreachedPasswordGetsNoUpstreamSession(t *testing.T) {
	h, _ := newBreachedHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}})

	t.Run("a form login", func(t *testing.T) {
		before := h.up.logins("/login")
		resp := h.post(attackerAddr, owner, ownerPassword)
		b := body(t, resp)
		if got := h.up.logins("/login") - before; got != 1 {
			t.Fatalf("the upstream checked %d logins, want the 1 that verifies the password", got)
		}
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("answer %d, want the step-up page's 403", resp.StatusCode)
		}
		if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("the answer sets cookies %q: the upstream's session (or a device cookie) reached the end user", sc)
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			t.Errorf("the answer redirects to %q, the upstream's signed-in page", loc)
		}
		if !bytes.Contains(b, []byte("known data breach")) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("the answer is not the built-in step-up page naming the breach:\n%s", b)
		}
		if r := h.rec.lastReport(); r.Outcome != authguard.Success || !r.Breached {
			t.Errorf("reported %v breached=%v, want a success with a breached password", r.Outcome, r.Breached)
		}
		if n := h.counter("tollgate_proxy_answers_total", "route", "form-login", "answer", "stepped_up"); n != 1 {
			t.Errorf("stepped_up answers = %v, want 1", n)
		}
	})

	t.Run("a JSON login", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/api/login", strings.NewReader(`{"user":{"name":"alice"},"password":"correct horse"}`))
		r.Header.Set("Content-Type", "application/json")
		resp := h.do(r, attackerAddr)
		b := body(t, resp)
		if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("the answer sets cookies %q", sc)
		}
		var p wire.Problem
		if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != http.StatusForbidden || p.Type != proxy.ProblemStepUp ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("answer %d %s %s, want a 403 %s problem", resp.StatusCode, resp.Header.Get("Content-Type"), b, proxy.ProblemStepUp)
		}
		if bytes.Contains(b, []byte(`"ok"`)) {
			t.Errorf("the upstream's answer reached the end user: %s", b)
		}
	})

	t.Run("an operator's page", func(t *testing.T) {
		rt := formRoute()
		rt.StepUpPage = template.Must(template.New("").Parse(`operator: {{if .Breached}}reset your password{{else}}call us{{end}}`))
		h, _ := newBreachedHarness(t, proxy.Config{Routes: []proxy.Route{rt}})
		resp := h.post(attackerAddr, owner, ownerPassword)
		if b := body(t, resp); string(b) != "operator: reset your password" || resp.StatusCode != http.StatusForbidden {
			t.Errorf("answer %d %q, want the operator's page", resp.StatusCode, b)
		}
	})

	t.Run("the held session is logged out at the upstream", func(t *testing.T) {
		rt := formRoute()
		rt.StepUpLogout = "/logout"
		h, _ := newBreachedHarness(t, proxy.Config{Routes: []proxy.Route{rt}})
		resp := h.post(attackerAddr, owner, ownerPassword)
		if body(t, resp); resp.StatusCode != http.StatusForbidden || len(resp.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("answer %d with cookies %q, want the step-up page alone", resp.StatusCode, resp.Header.Values("Set-Cookie"))
		}
		var logouts []seenRequest
		for _, s := range h.up.requests() {
			if s.path == "/logout" {
				logouts = append(logouts, s)
			}
		}
		if len(logouts) != 1 || logouts[0].method != http.MethodGet || !strings.Contains(logouts[0].header.Get("Cookie"), "session=s3ss10n") {
			t.Fatalf("the upstream saw logouts %+v, want one GET with the held session's cookie", logouts)
		}
		if strings.Contains(logouts[0].header.Get("Cookie"), proxy.DefaultInsecureCookieName) {
			t.Error("the logout carried tollgate's device cookie")
		}
	})

	t.Run("the owner at her known device is not held back", func(t *testing.T) {
		// She signed in before her password was in the corpus, and holds
		// the device cookie of that sign-in.
		h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
		resp := h.post(ownerAddr, owner, ownerPassword)
		body(t, resp)
		device := deviceCookie(resp)
		if device == nil {
			t.Fatal("no device cookie on the first sign-in")
		}
		h.proxy.SetBreached(newCorpus(ownerPassword))
		resp = h.post(ownerMobile, owner, ownerPassword, device)
		body(t, resp)
		if resp.StatusCode != http.StatusFound || !h.rec.lastReport().Breached {
			t.Errorf("answer %d (breached=%v), want the upstream's redirect: her device token exempts her", resp.StatusCode, h.rec.lastReport().Breached)
		}
		resp = h.post(attackerAddr, owner, ownerPassword)
		if body(t, resp); resp.StatusCode != http.StatusForbidden {
			t.Errorf("the same password without her device cookie answers %d, want the step-up page", resp.StatusCode)
		}
	})

	t.Run("a password not in the corpus signs in as before", func(t *testing.T) {
		c := newCorpus(breachedPassword) // not alice's
		h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}, Breached: c})
		resp := h.post(ownerAddr, owner, ownerPassword)
		body(t, resp)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/home" {
			t.Errorf("answer %d to %q, want the upstream's redirect home", resp.StatusCode, resp.Header.Get("Location"))
		}
		var session bool
		for _, ck := range resp.Cookies() {
			session = session || ck.Name == "session"
		}
		if !session || deviceCookie(resp) == nil {
			t.Errorf("cookies %q: want the upstream's session and the device cookie", resp.Header.Values("Set-Cookie"))
		}
		if r := h.rec.lastReport(); r.Breached {
			t.Error("a password not in the corpus was reported breached")
		}
		if c.lookups() != 1 {
			t.Errorf("%d ranges asked for, want one", c.lookups())
		}
	})

	t.Run("a range that cannot be had is not a breach", func(t *testing.T) {
		c := newCorpus(ownerPassword)
		c.down = true
		h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}, Breached: c})
		resp := h.post(ownerAddr, owner, ownerPassword)
		body(t, resp)
		if resp.StatusCode != http.StatusFound || h.rec.lastReport().Breached {
			t.Errorf("answer %d, breached=%v: want the sign-in, not breached", resp.StatusCode, h.rec.lastReport().Breached)
		}
		if n := h.counter("tollgate_proxy_breached_errors_total"); n != 1 {
			t.Errorf("breached lookup errors = %v, want 1", n)
		}
	})

	t.Run("without a corpus nothing is breached", func(t *testing.T) {
		h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
		resp := h.post(ownerAddr, owner, ownerPassword)
		body(t, resp)
		if resp.StatusCode != http.StatusFound || h.rec.lastReport().Breached {
			t.Errorf("answer %d, breached=%v: want the sign-in, not breached", resp.StatusCode, h.rec.lastReport().Breached)
		}
		// A server that opens its ranges after the proxy sets them.
		h.proxy.SetBreached(newCorpus(ownerPassword))
		resp = h.post(attackerAddr, owner, ownerPassword)
		if body(t, resp); resp.StatusCode != http.StatusForbidden || !h.rec.lastReport().Breached {
			t.Errorf("after SetBreached: answer %d, breached=%v; want the step-up page", resp.StatusCode, h.rec.lastReport().Breached)
		}
	})
}

func TestProxy_TheBreachedPasswordNeverLeavesTheProcess(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, c := newBreachedHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), jsonRoute()}, Logger: logger})
	body(t, h.post(attackerAddr, owner, ownerPassword))    // a success: stepped up
	body(t, h.post(attackerAddr, owner, breachedPassword)) // a failure
	r := httptest.NewRequest(http.MethodPost, "/api/login", strings.NewReader(`{"user":{"name":"alice"},"password":"123456"}`))
	r.Header.Set("Content-Type", "application/json")
	body(t, h.do(r, attackerAddr))

	// What must stay in the process: each password, its SHA-1, the
	// suffix and the range prefix.
	var secrets, prefixes []string
	for _, pw := range []string{ownerPassword, breachedPassword} {
		prefix, suffix := hibp.Hash(pw)
		secrets = append(secrets, strings.ToUpper(pw), prefix+suffix, suffix)
		prefixes = append(prefixes, prefix)
	}
	// The lookup happened, in the process.
	if c.lookups() != 3 {
		t.Fatalf("%d ranges asked for, want 3", c.lookups())
	}
	h.rec.mu.Lock()
	reports := append([]authguard.ReportRequest(nil), h.rec.reports...)
	checks := append([]authguard.CheckRequest(nil), h.rec.checks...)
	h.rec.mu.Unlock()
	if len(reports) != 3 || len(checks) != 3 {
		t.Fatalf("%d checks and %d reports, want 3 of each", len(checks), len(reports))
	}
	for i, rep := range reports {
		if !rep.Breached {
			t.Errorf("report %d does not say breached", i)
		}
	}
	// Neither a check nor a report carries the password, its hash, the
	// suffix or the range prefix: only the boolean says anything of the
	// corpus.
	var reqs []any
	for i := range reports {
		reqs = append(reqs, reports[i], checks[i])
	}
	for _, req := range reqs {
		v := reflect.ValueOf(req)
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() != reflect.String || f.String() == "" {
				continue
			}
			got := strings.ToUpper(f.String())
			for _, s := range secrets {
				if strings.Contains(got, s) {
					t.Errorf("%T.%s carries the password or its hash", req, v.Type().Field(i).Name)
				}
			}
			for _, prefix := range prefixes {
				if got == prefix {
					t.Errorf("%T.%s is the range prefix", req, v.Type().Field(i).Name)
				}
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(strings.ToUpper(logs.String()), s) {
			t.Errorf("the logs carry the password or its hash:\n%s", logs.String())
		}
	}
	for _, s := range h.up.requests() {
		for _, v := range s.header {
			for _, x := range v {
				if strings.Contains(strings.ToUpper(x), secrets[1]) {
					t.Errorf("a header to the upstream carries the hash: %q", x)
				}
			}
		}
	}
}

func TestProxy_AFailedLoginWithABreachedPasswordFeedsTheStuffingSignal(t *testing.T) {
	h, _ := newBreachedHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	tests := []struct {
		name, user, password string
		breached             bool
	}{
		{"a breached password, wrong for the account", owner, breachedPassword, true},
		{"a breached password for an account that does not exist", "nobody", breachedPassword, true},
		{"a password in no breach", owner, "Tg-not-breached-9", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.post(attackerAddr, tt.user, tt.password)
			body(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("answer %d, want the upstream's form again", resp.StatusCode)
			}
			r := h.rec.lastReport()
			if r.Outcome != authguard.Failure || r.Breached != tt.breached {
				t.Errorf("reported %v breached=%v, want a failure with breached=%v", r.Outcome, r.Breached, tt.breached)
			}
		})
	}
	// The engine's credential_stuffing rule counts them: past its limit of
	// distinct accounts failing with breached passwords from one address,
	// the address is asked for a CAPTCHA, while the same number of
	// failures with passwords in no breach is not.
	stuffing := limitOf(t, h, "credential_stuffing")
	for _, tt := range []struct {
		addr     string
		password string
		captcha  bool
	}{{"192.0.2.200:1000", breachedPassword, true}, {"192.0.2.201:1000", "Tg-not-breached-9", false}} {
		for i := range stuffing {
			body(t, h.post(tt.addr, fmt.Sprintf("victim%02d", i), tt.password))
		}
		resp := h.post(tt.addr, "victim-next", tt.password)
		body(t, resp)
		if got := resp.StatusCode == http.StatusTooManyRequests; got != tt.captcha {
			t.Errorf("after %d accounts failed with %q from one address, the next answers %d; want a CAPTCHA: %v", stuffing, tt.password, resp.StatusCode, tt.captcha)
		}
	}
}

// limitOf is the limit of the first window of the login flow's rule.
func limitOf(t *testing.T, h *harness, rule string) int {
	t.Helper()
	r := h.engine.Policy().Flow("login").Rule(rule)
	if r == nil || len(r.Windows) == 0 {
		t.Fatalf("the login flow has no %s rule with windows", rule)
	}
	return r.Windows[0].Limit
}

// A right password from an address past ip_spray (a sprayer's, or a NAT
// shared with one) is answered step_up once its CAPTCHA is solved: the
// route holds it back, unless it lists address_escalated in StepUpPass, as
// a proxy whose users share addresses with sprayers may.
func TestProxy_ARightPasswordFromASprayingAddressIsHeldUnlessTheRouteLetsItThrough(t *testing.T) {
	for _, pass := range []bool{false, true} {
		t.Run(fmt.Sprintf("step_up_pass address_escalated %v", pass), func(t *testing.T) {
			rt := jsonRoute()
			if pass {
				rt.StepUpPass = []authguard.Reason{authguard.ReasonAddressEscalated}
			}
			h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute(), rt}, Challenger: newChallenger(t)})
			sprayUntilCaptcha(t, h)
			send := func(header string) *http.Response {
				r := httptest.NewRequest(http.MethodPost, "/api/login", strings.NewReader(`{"user":{"name":"alice"},"password":"correct horse"}`))
				r.Header.Set("Content-Type", "application/json")
				if header != "" {
					r.Header.Set(proxy.ChallengeHeader, header)
				}
				return h.do(r, attackerAddr)
			}
			var p struct{ Challenge struct{ Token string } }
			json.Unmarshal(body(t, send("")), &p)
			resp := send(url.Values{"token": {p.Challenge.Token}, "nonce": {solve(t, p.Challenge.Token, 4)}}.Encode())
			b := body(t, resp)
			if !h.rec.lastCheck().CaptchaSolved || h.up.logins("/api/login") != 1 {
				t.Fatalf("the solved login was not checked solved and forwarded once (%d forwarded)", h.up.logins("/api/login"))
			}
			var session bool
			for _, ck := range resp.Cookies() {
				session = session || ck.Name == "session"
			}
			if pass {
				if resp.StatusCode != http.StatusOK || !session || deviceCookie(resp) != nil {
					t.Errorf("answer %d, cookies %q; want the upstream's 200 and session, no device cookie", resp.StatusCode, resp.Header.Values("Set-Cookie"))
				}
				return
			}
			var pr wire.Problem
			json.Unmarshal(b, &pr)
			if resp.StatusCode != http.StatusForbidden || pr.Type != proxy.ProblemStepUp || len(resp.Header.Values("Set-Cookie")) != 0 {
				t.Errorf("answer %d %s, cookies %q; want the step-up problem and no cookie", resp.StatusCode, b, resp.Header.Values("Set-Cookie"))
			}
			if bytes.Contains(b, []byte("breach")) {
				t.Errorf("the problem names a breach the verdict does not give: %s", b)
			}
		})
	}
}

// A route of a flow that verifies codes reads a code where a login reads
// the password: "123456" is in every breach, and is no password.
func TestProxy_ACodeIsNotLookedUpAsAPassword(t *testing.T) {
	h, c := newBreachedHarness(t, proxy.Config{Routes: otpRoutes()})
	body(t, h.postForm("/otp/verify", ownerAddr, url.Values{"username": {owner}, "phone": {victim}, "code": {breachedPassword}}))
	if rep := h.rec.lastReport(); rep.Flow != "otp_verify" || rep.Breached {
		t.Errorf("report on %q breached=%v, want otp_verify's, not breached", rep.Flow, rep.Breached)
	}
	if c.lookups() != 0 {
		t.Errorf("%d ranges asked for a code, want none", c.lookups())
	}
}

func TestProxy_AShadowRouteDeliversWhatEnforcingWouldHaveSteppedUp(t *testing.T) {
	rt := formRoute()
	rt.Mode = proxy.Shadow
	h, _ := newBreachedHarness(t, proxy.Config{Routes: []proxy.Route{rt}})
	resp := h.post(attackerAddr, owner, ownerPassword)
	body(t, resp)
	if resp.StatusCode != http.StatusFound {
		t.Errorf("answer %d, want the upstream's redirect: a shadow route refuses nothing", resp.StatusCode)
	}
	if deviceCookie(resp) != nil {
		t.Error("a step-up verdict set a device cookie")
	}
	if n := h.counter("tollgate_proxy_shadow_refusals_total", "route", rt.Name, "action", wire.ActionStepUp, "outcome", "success"); n != 1 {
		t.Errorf("shadow refusals (step_up, success) = %v, want 1", n)
	}
}
