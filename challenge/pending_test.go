package challenge_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// secretBody is a login form whose password must never show outside the
// sealed blob.
var secretBody = []byte("username=alice%40example.com&password=correct-horse-battery-staple-%F0%9F%90%B4&remember=1\x00\xff")

func loginSubmission() challenge.Submission {
	return challenge.Submission{Method: "POST", Path: "/login?next=%2Fhome", ContentType: "application/x-www-form-urlencoded", Body: secretBody}
}

// page holds sub, serves the challenge page for it and returns the
// page's body and the handle and token in it.
func page(t testing.TB, c *challenge.Challenger, tenant string, sub challenge.Submission, kind challenge.Kind) (body, handle string, ch challenge.Challenge) {
	t.Helper()
	handle, err := c.Hold(ctx, tenant, sub)
	if err != nil {
		t.Fatal(err)
	}
	ch = issue(t, c, challenge.IssueOptions{Tenant: tenant, Handle: handle, Kind: kind})
	w := httptest.NewRecorder()
	c.ServePage(w, httptest.NewRequest("POST", sub.Path, nil), ch, challenge.PageOptions{Handle: handle})
	return w.Body.String(), handle, ch
}

// solutionPost is the form the page posts.
func solutionPost(fields url.Values) *http.Request {
	r := httptest.NewRequest("POST", challenge.DefaultSolutionPath, strings.NewReader(fields.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func redeem(t testing.TB, c *challenge.Challenger, tenant string, fields url.Values) challenge.Redemption {
	t.Helper()
	red, err := c.Redeem(ctx, tenant, solutionPost(fields), netip.Addr{})
	if err != nil {
		t.Fatalf("Redeem: %v", err)
	}
	if red.Solved != (len(red.Submission.Method) > 0) {
		t.Fatalf("Redeem = %+v: a submission only with a solution", red)
	}
	return red
}

func TestPending_ABodyRoundTripsByteIdenticalAndOnlyOnce(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	_, handle, ch := page(t, c, "", loginSubmission(), 0)
	form := url.Values{"tollgate_handle": {handle}, "tollgate_token": {ch.Token}, "tollgate_nonce": {solve(t, ch)}}
	red := redeem(t, c, "", form)
	if !red.Solved {
		t.Fatalf("Redeem = %+v, want solved", red.Result)
	}
	if got, want := red.Submission, loginSubmission(); got.Method != want.Method || got.Path != want.Path ||
		got.ContentType != want.ContentType || !bytes.Equal(got.Body, want.Body) {
		t.Fatalf("Submission = %+v, want %+v", got, want)
	}
	if got, want := redeem(t, c, "", form).Reason, challenge.ReasonReplayed; got != want {
		t.Fatalf("the same post again: Reason = %q, want %q", got, want)
	}
	// A second challenge for the same handle, solved: the submission was
	// given out already.
	ch2 := issue(t, c, challenge.IssueOptions{Handle: handle})
	form2 := url.Values{"tollgate_handle": {handle}, "tollgate_token": {ch2.Token}, "tollgate_nonce": {solve(t, ch2)}}
	if got, want := redeem(t, c, "", form2).Reason, challenge.ReasonNoSubmission; got != want {
		t.Fatalf("a second challenge: Reason = %q, want %q", got, want)
	}
}

func TestPending_AWrongHandleRevealsNothingAndSpendsNothing(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	_, victim, victimCh := page(t, c, "", loginSubmission(), 0)
	_, own, ownCh := page(t, c, "", challenge.Submission{Method: "POST", Path: "/login", Body: []byte("mine")}, 0)
	// The attacker solves their own challenge and posts it with the
	// victim's handle (or a made-up one): nothing comes back.
	nonce := solve(t, ownCh)
	for _, h := range []string{victim, strings.Repeat("A", challenge.HandleLen)} {
		red := redeem(t, c, "", url.Values{"tollgate_handle": {h}, "tollgate_token": {ownCh.Token}, "tollgate_nonce": {nonce}})
		if red.Solved || red.Reason != challenge.ReasonInvalid || red.Submission.Body != nil {
			t.Fatalf("handle %s: Redeem = %+v, want invalid and nothing", h, red)
		}
	}
	// Neither the victim's submission nor the attacker's challenge was
	// spent by the attempts.
	if red := redeem(t, c, "", url.Values{"tollgate_handle": {victim}, "tollgate_token": {victimCh.Token}, "tollgate_nonce": {solve(t, victimCh)}}); !red.Solved || !bytes.Equal(red.Submission.Body, secretBody) {
		t.Fatalf("the victim: Redeem = %+v", red.Result)
	}
	if red := redeem(t, c, "", url.Values{"tollgate_handle": {own}, "tollgate_token": {ownCh.Token}, "tollgate_nonce": {nonce}}); !red.Solved || string(red.Submission.Body) != "mine" {
		t.Fatalf("the attacker's own: Redeem = %+v", red.Result)
	}
}

func TestPending_AnotherTenantCannotRedeem(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	_, handle, ch := page(t, c, "acme", loginSubmission(), 0)
	form := url.Values{"tollgate_handle": {handle}, "tollgate_token": {ch.Token}, "tollgate_nonce": {solve(t, ch)}}
	if red := redeem(t, c, "globex", form); red.Solved {
		t.Fatalf("another tenant: %+v", red.Result)
	}
	if red := redeem(t, c, "acme", form); !red.Solved {
		t.Fatalf("its tenant: %+v", red.Result)
	}
}

func TestPending_AnExpiredSubmissionIsGone(t *testing.T) {
	c, clock := newChallenger(t, challenge.Config{PendingTTL: time.Minute, TTL: time.Hour})
	_, handle, ch := page(t, c, "", loginSubmission(), 0)
	clock.Advance(time.Minute)
	form := url.Values{"tollgate_handle": {handle}, "tollgate_token": {ch.Token}, "tollgate_nonce": {solve(t, ch)}}
	if got, want := redeem(t, c, "", form).Reason, challenge.ReasonNoSubmission; got != want {
		t.Fatalf("Reason = %q, want %q", got, want)
	}
}

func TestPending_TheMemoryStoreIsBoundedInBytes(t *testing.T) {
	clock := testclock.New(time.Time{})
	store := challenge.NewMemoryStore(challenge.MemoryConfig{MaxBytes: 64 << 10, Now: clock.Now})
	c, _ := newChallenger(t, challenge.Config{Store: store, Now: clock.Now, PendingTTL: time.Minute, MaxBodyBytes: 8 << 10})
	big := challenge.Submission{Method: "POST", Path: "/login", Body: bytes.Repeat([]byte("x"), 8<<10)}
	held := 0
	for range 100 {
		_, err := c.Hold(ctx, "", big)
		if errors.Is(err, challenge.ErrStoreFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held++
	}
	if held == 0 || held >= 8 {
		t.Fatalf("held %d submissions of 8 KiB in 64 KiB, want between 1 and 7", held)
	}
	if got := store.Bytes(); got > 64<<10 {
		t.Fatalf("Bytes = %d, over the limit", got)
	}
	// The held ones expire and make room.
	clock.Advance(time.Minute)
	if _, err := c.Hold(ctx, "", big); err != nil {
		t.Fatalf("after the expiry: %v", err)
	}
}

func TestPending_ABodyOverTheLimitIsNotHeld(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{MaxBodyBytes: 100})
	if _, err := c.Hold(ctx, "", challenge.Submission{Method: "POST", Path: "/", Body: make([]byte, 101)}); !errors.Is(err, challenge.ErrBodyTooLarge) {
		t.Fatalf("Hold: err = %v, want ErrBodyTooLarge", err)
	}
	r := httptest.NewRequest("POST", "/login", bytes.NewReader(make([]byte, 101)))
	if _, err := c.HoldRequest(ctx, "", r); !errors.Is(err, challenge.ErrBodyTooLarge) {
		t.Fatalf("HoldRequest: err = %v, want ErrBodyTooLarge", err)
	}
	r = httptest.NewRequest("POST", "/login?a=1", bytes.NewReader(make([]byte, 100)))
	r.Header.Set("Content-Type", "application/json")
	if _, err := c.HoldRequest(ctx, "", r); err != nil {
		t.Fatalf("HoldRequest at the limit: %v", err)
	}
}

func TestPage_HoldsTheHandleAndTheChallengeButNeverTheBody(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	handle, err := c.Hold(ctx, "", loginSubmission())
	if err != nil {
		t.Fatal(err)
	}
	ch := issue(t, c, challenge.IssueOptions{Handle: handle})
	w := httptest.NewRecorder()
	c.ServePage(w, httptest.NewRequest("POST", "/login", nil), ch, challenge.PageOptions{Handle: handle})
	res := w.Result()
	body, _ := io.ReadAll(res.Body)
	for _, want := range []string{handle, ch.Token, `data-difficulty="8"`, `action="/.tollgate/challenge"`, "crypto.subtle.digest"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, never := range []string{"correct-horse", "alice", "password"} {
		if strings.Contains(string(body), never) {
			t.Errorf("the page holds %q", never)
		}
	}
	h := res.Header
	if got := h.Get("Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'none'; script-src 'nonce-") || strings.Contains(got, "unsafe") {
		t.Errorf("Content-Security-Policy = %q", got)
	}
	if got := h.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q", got)
	}
	if got := h.Values("Set-Cookie"); len(got) != 0 {
		t.Errorf("Set-Cookie = %q", got)
	}
}

func TestPage_AProvidersPageRendersItsWidgetAndRedeemsItsResponse(t *testing.T) {
	s := newStandIn(t, answering(200, `{"success":true}`))
	c := newProviderChallenger(t, challenge.HCaptcha, s)
	body, handle, ch := page(t, c, "", loginSubmission(), challenge.HCaptcha)
	for _, want := range []string{`class="h-captcha"`, `data-sitekey="site-key-1"`, "https://js.hcaptcha.com/1/api.js"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "provider-secret-1") {
		t.Fatal("the page holds the provider's secret")
	}
	// The widget fills its own field; the page's script copies it into
	// tollgate_response. Either is read.
	red, err := c.Redeem(ctx, "", solutionPost(url.Values{"tollgate_handle": {handle}, "tollgate_token": {ch.Token},
		"h-captcha-response": {"P1_abc"}, "g-recaptcha-response": {"P1_abc"}}), netip.MustParseAddr("198.51.100.4"))
	if err != nil || !red.Solved || !bytes.Equal(red.Submission.Body, secretBody) {
		t.Fatalf("Redeem = %+v, %v", red.Result, err)
	}
	if got := s.calls()[0].Get("remoteip"); got != "198.51.100.4" {
		t.Errorf("remoteip = %q", got)
	}
}

func TestRedeem_BadPostsAreMalformedAndSpendNothing(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	_, handle, ch := page(t, c, "", loginSubmission(), 0)
	nonce := solve(t, ch)
	good := url.Values{"tollgate_handle": {handle}, "tollgate_token": {ch.Token}, "tollgate_nonce": {nonce}}
	with := func(k string, v ...string) url.Values {
		f := url.Values{}
		for kk, vv := range good {
			f[kk] = vv
		}
		if v == nil {
			delete(f, k)
		} else {
			f[k] = v
		}
		return f
	}
	tests := []struct {
		name string
		req  *http.Request
	}{
		{"a GET", httptest.NewRequest("GET", "/.tollgate/challenge?"+good.Encode(), nil)},
		{"JSON", func() *http.Request {
			r := solutionPost(good)
			r.Header.Set("Content-Type", "application/json")
			return r
		}()},
		{"no handle", solutionPost(with("tollgate_handle"))},
		{"two handles", solutionPost(with("tollgate_handle", handle, handle))},
		{"a short handle", solutionPost(with("tollgate_handle", handle[1:]))},
		{"no token", solutionPost(with("tollgate_token"))},
		{"two nonces", solutionPost(with("tollgate_nonce", nonce, nonce))},
		{"a body over the limit", solutionPost(with("pad", strings.Repeat("x", challenge.MaxSolutionBytes)))},
		{"a bad escape", func() *http.Request {
			r := httptest.NewRequest("POST", "/", strings.NewReader(good.Encode()+"&x=%zz"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			red, err := c.Redeem(ctx, "", tt.req, netip.Addr{})
			if err != nil || red.Solved || red.Reason != challenge.ReasonMalformed {
				t.Fatalf("Redeem = %+v, %v; want malformed", red, err)
			}
		})
	}
	if red := redeem(t, c, "", good); !red.Solved {
		t.Fatalf("the good post after them: %+v", red.Result)
	}
}

func TestRestore_GivesTheHeldRequestWithTheOtherHeaders(t *testing.T) {
	post := solutionPost(url.Values{"tollgate_handle": {"x"}})
	post.Header.Set("User-Agent", "ua-1")
	r, err := challenge.Restore(post, loginSubmission())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	if r.Method != "POST" || r.URL.RequestURI() != "/login?next=%2Fhome" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" ||
		!bytes.Equal(body, secretBody) || r.ContentLength != int64(len(secretBody)) || r.Header.Get("User-Agent") != "ua-1" {
		t.Fatalf("Restore = %s %s %q %q", r.Method, r.URL, r.Header, body)
	}
	if _, err := challenge.Restore(post, challenge.Submission{Method: "POST", Path: "//evil.example/x"}); err == nil {
		// "//x" is a path on the wire; it must never become a host.
		r, _ := challenge.Restore(post, challenge.Submission{Method: "POST", Path: "//evil.example/x"})
		if r.URL.Host != "" {
			t.Fatalf("a held path became host %q", r.URL.Host)
		}
	}
}
