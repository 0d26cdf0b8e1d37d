package proxy_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/proxy"
)

// newChallenger is a challenger with an easy proof of work.
func newChallenger(t *testing.T) *challenge.Challenger {
	t.Helper()
	ch, err := challenge.New(challenge.Config{Secret: testSecret, Difficulty: 4})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// solve finds a proof-of-work nonce for token, as the page's script does.
func solve(t *testing.T, token string, difficulty int) string {
	t.Helper()
	for n := uint64(0); n < 1<<20; n++ {
		if challenge.LeadingZeroBits(challenge.WorkHash(token, n)) >= difficulty {
			return strconv.FormatUint(n, 10)
		}
	}
	t.Fatal("no nonce found")
	return ""
}

// sprayUntilCaptcha fails ten accounts from attackerAddr: the built-in
// login's ip_spray then asks that address for a CAPTCHA.
func sprayUntilCaptcha(t *testing.T, h *harness) {
	t.Helper()
	for i := range 10 {
		body(t, h.post(attackerAddr, "user-"+strconv.Itoa(i), guess(i)))
	}
}

var (
	handleRE = regexp.MustCompile(`name="tollgate_handle" value="([^"]+)"`)
	tokenRE  = regexp.MustCompile(`name="tollgate_token" value="([^"]+)"`)
)

// A real user behind the spraying address is asked for the challenge;
// once her browser solves it, the login she had already submitted goes on
// without her typing it again: the upstream gets it byte for byte, checked
// with the challenge solved, and she is signed in. (A right password from
// an address past ip_spray is answered step_up: the route lets that
// reason through, without a device cookie; TestProxy_ARightPasswordFrom
// ASprayingAddressIsHeldUnlessTheRouteLetsItThrough holds it.)
func TestProxy_ASolvedChallengeCompletesTheOriginalSubmission(t *testing.T) {
	rt := formRoute()
	rt.StepUpPass = []authguard.Reason{authguard.ReasonAddressEscalated}
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{rt}, Challenger: newChallenger(t)})
	sprayUntilCaptcha(t, h)
	logins := h.up.logins("/login")

	original := url.Values{"username": {owner}, "password": {ownerPassword}, "csrf": {"t0k3n"}}.Encode()
	r := httptest.NewRequest(http.MethodPost, "/login?next=%2Fhome", strings.NewReader(original))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := h.do(r, attackerAddr)
	page := string(body(t, resp))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("answer %d %s, want the challenge page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if strings.Contains(page, ownerPassword) || strings.Contains(page, "correct+horse") || strings.Contains(page, owner) {
		t.Fatal("the challenge page holds the submission")
	}
	if h.up.logins("/login") != logins {
		t.Fatal("the challenged login reached the upstream")
	}
	hm, tm := handleRE.FindStringSubmatch(page), tokenRE.FindStringSubmatch(page)
	if hm == nil || tm == nil {
		t.Fatalf("no handle or token in the page:\n%s", page)
	}
	solution := url.Values{"tollgate_handle": {hm[1]}, "tollgate_token": {tm[1]}, "tollgate_nonce": {solve(t, tm[1], 4)}}.Encode()
	post := func() *http.Response {
		r := httptest.NewRequest(http.MethodPost, proxy.DefaultSolutionPath, strings.NewReader(solution))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return h.do(r, attackerAddr)
	}
	resp = post()
	body(t, resp)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/home" {
		t.Fatalf("the solved challenge answered %d %s, want the upstream's 302", resp.StatusCode, resp.Header.Get("Location"))
	}
	if deviceCookie(resp) != nil {
		t.Error("the success from an escalated address set a device cookie, which its step_up verdict does not carry")
	}
	seen := h.up.requests()
	last := seen[len(seen)-1]
	if last.path != "/login" || string(last.body) != original {
		t.Errorf("the upstream got %s %q, want the original submission %q", last.path, last.body, original)
	}
	if c := h.rec.lastCheck(); !c.CaptchaSolved || c.Account != owner {
		t.Errorf("the check after the challenge: captcha_solved %v, account %q", c.CaptchaSolved, c.Account)
	}
	// The same solution again is spent: a fresh page, nothing forwarded.
	logins = h.up.logins("/login")
	resp = post()
	body(t, resp)
	if resp.StatusCode == http.StatusFound || h.up.logins("/login") != logins {
		t.Errorf("a replayed solution answered %d and reached the upstream", resp.StatusCode)
	}
	if got := h.counter("tollgate_proxy_answers_total", "route", "form-login", "answer", "solved"); got != 1 {
		t.Errorf("answers{solved} = %v, want 1", got)
	}
}

// A JSON route's challenge is a problem document carrying it; the request
// sent again with the solution in Tollgate-Challenge goes on with the
// challenge solved, and the header never reaches the upstream.
func TestProxy_AJSONRoutesChallengeIsSolvedInAHeader(t *testing.T) {
	rt := jsonRoute()
	rt.StepUpPass = []authguard.Reason{authguard.ReasonAddressEscalated} // as above
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
	resp := send("")
	var p struct {
		Type      string
		Challenge struct {
			Token      string
			Kind       string
			Difficulty int
		}
	}
	json.Unmarshal(body(t, resp), &p)
	if resp.StatusCode != http.StatusTooManyRequests || p.Type != proxy.ProblemChallenge || p.Challenge.Kind != "pow" || p.Challenge.Token == "" {
		t.Fatalf("answer %d %+v, want a challenge problem", resp.StatusCode, p)
	}
	wrong := uint64(0)
	for challenge.LeadingZeroBits(challenge.WorkHash(p.Challenge.Token, wrong)) >= p.Challenge.Difficulty {
		wrong++
	}
	resp = send(url.Values{"token": {p.Challenge.Token}, "nonce": {strconv.FormatUint(wrong, 10)}}.Encode())
	body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a wrong nonce answered %d, want the challenge again", resp.StatusCode)
	}
	resp = send(url.Values{"token": {p.Challenge.Token}, "nonce": {solve(t, p.Challenge.Token, p.Challenge.Difficulty)}}.Encode())
	body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the solved request answered %d, want the upstream's 200", resp.StatusCode)
	}
	seen := h.up.requests()
	if got := seen[len(seen)-1].header.Get(proxy.ChallengeHeader); got != "" {
		t.Errorf("the upstream got %s: %q", proxy.ChallengeHeader, got)
	}
	if !h.rec.lastCheck().CaptchaSolved {
		t.Error("the check after the solution did not say captcha_solved")
	}
}

// Without a challenger a captcha verdict is still never a pass: a 429.
func TestProxy_WithoutAChallengerACaptchaIsRefused(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	sprayUntilCaptcha(t, h)
	logins := h.up.logins("/login")
	resp := h.post(attackerAddr, owner, ownerPassword)
	body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || h.up.logins("/login") != logins {
		t.Errorf("answer %d, upstream logins %d → %d: want 429 and nothing forwarded", resp.StatusCode, logins, h.up.logins("/login"))
	}
}
