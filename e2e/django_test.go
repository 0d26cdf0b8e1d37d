package e2e_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The simulated end users' addresses, each a client of its own (the proxy
// trusts 127.0.0.1's X-Forwarded-For).
const (
	ownerIP    = "198.51.100.10" // alice at home
	travelIP   = "198.51.100.99" // alice's laptop elsewhere: no network she signed in from
	attackerIP = "203.0.113.66"  // hydra
)

// The admin's login form, as a browser sees it.
const (
	djangoUser   = "#id_username"
	djangoPass   = "#id_password"
	djangoSubmit = `#login-form input[type="submit"]`
	// djangoIndex is on the admin's index only: the signed-in user's tools.
	djangoIndex = "#user-tools"
)

// djangoHydraForm is hydra's http-post-form option against the admin's
// login: the fixed CSRF pair (cookie and field), its own address in
// X-Forwarded-For, and success on the redirect to /admin/ that only a
// right password gets, so that a delay or a challenge counts as a wrong
// password and hydra goes on through the list. (hydra 9.4 reads the
// condition last once an option holds an escaped colon.)
func djangoHydraForm(ip string) string {
	return fmt.Sprintf(`/admin/login/?next=/admin/:csrfmiddlewaretoken=%s&username=^USER^&password=^PASS^&next=%%2Fadmin%%2F`+
		`:H=Cookie\: csrftoken=%s:H=X-Forwarded-For\: %s:S=Location\: /admin/`, csrfPair, csrfPair, ip)
}

// TestDjangoAdmin_HydraGetsAtMostFreePlusTwoChecksWhileTheOwnerSignsInAtOnce
// runs the attack the proxy is for on Django's real admin: hydra with
// the top-100 passwords and 16 tasks against alice, while alice keeps
// signing in from her browser with the device cookie the proxy gave her.
func TestDjangoAdmin_HydraGetsAtMostFreePlusTwoChecksWhileTheOwnerSignsInAtOnce(t *testing.T) {
	w := need(t)
	tg, dj := w.djangoProxy, w.django
	free, cookie := free(t, tg), deviceCookie(t, tg)
	owner := newTab(t, tg.proxy, ownerIP)

	t.Run("the owner signs in in Chromium and gets the device cookie", func(t *testing.T) {
		owner.t = t
		before := dj.loggedIn("alice")
		if got := owner.open("/admin/login/?next=/admin/"); got != http.StatusOK {
			t.Fatalf("the login page answers %d through the proxy", got)
		}
		if got := owner.signIn(djangoUser, djangoPass, djangoSubmit, "alice", alicePassword); got != http.StatusOK {
			t.Fatalf("signing in ends on a page of status %d (%s):\n%s", got, owner.location(), owner.text())
		}
		if loc := owner.waitFor(djangoIndex, 30*time.Second); !strings.HasSuffix(loc, "/admin/") {
			t.Errorf("signed in at %s, want the admin's index", loc)
		}
		if got := dj.loggedIn("alice") - before; got != 1 {
			t.Errorf("Django started %d sessions for alice, want 1", got)
		}
		owner.hasDeviceCookie(cookie)
	})

	failedBefore := dj.failed("alice")
	h := startHydra(t, tg.proxy, "alice", djangoHydraForm(attackerIP))
	t.Run("the owner signs in at once during the attack", func(t *testing.T) {
		owner.t = t
		// Past free failures the account is held back: the owner's sign-in
		// now is the one an attacker's guesses must not delay.
		if !waitUntil(2*time.Minute, func() bool { return dj.failed("alice")-failedBefore >= free || !h.running() }) {
			t.Fatalf("hydra's failures did not reach Django within 2 minutes (%d)", dj.failed("alice")-failedBefore)
		}
		// Django checks a password only once its CSRF check passed: these
		// failures show that the proxy passed the cookie and the field on.
		if got := dj.failed("alice") - failedBefore; got < free {
			t.Fatalf("hydra ended with %d failed checks at Django, fewer than free (%d): it did not get through the proxy", got, free)
		}
		during := h.running()
		before := dj.loggedIn("alice")
		// From an address she never signed in from, so that her device
		// cookie alone lets her in (a known network would too).
		owner.signOut(cookie)
		owner.setIP(travelIP)
		if got := owner.open("/admin/login/?next=/admin/"); got != http.StatusOK {
			t.Fatalf("the login page answers %d through the proxy", got)
		}
		if got := owner.signIn(djangoUser, djangoPass, djangoSubmit, "alice", alicePassword); got != http.StatusOK {
			t.Fatalf("the owner's sign-in during the attack ends on a page of status %d (%s):\n%s", got, owner.location(), owner.text())
		}
		if loc := owner.waitFor(djangoIndex, 30*time.Second); !strings.HasSuffix(loc, "/admin/") {
			t.Errorf("signed in at %s, want the admin's index", loc)
		}
		if got := dj.loggedIn("alice") - before; got != 1 {
			t.Errorf("Django started %d sessions for alice, want 1", got)
		}
		figure(t, "the owner signed in with her device cookie %s hydra ran (%d failed checks at Django by then)",
			map[bool]string{true: "while", false: "right after"}[during], dj.failed("alice")-failedBefore)
	})

	t.Run("hydra with the top 100 gets at most what the backoff allows in its time (free+2 within 3 s)", func(t *testing.T) {
		found := h.wait(t, 2*time.Minute)
		got := dj.failed("alice") - failedBefore
		bound := attackBound(t, tg, h.ended.Sub(h.started))
		figure(t, "hydra (top 100, -t 16) against alice through the proxy: %d failed password checks at Django (free %d, bound %d for an attack of %v; free+2 = %d), %d passwords found", got, free, bound, h.ended.Sub(h.started).Round(time.Millisecond), free+2, found)
		if got > bound {
			t.Errorf("Django checked %d wrong passwords for alice; the proxy should have let at most %d through in %v (free %d, then one per delay run out)", got, bound, h.ended.Sub(h.started).Round(time.Millisecond), free)
		}
		if found != 0 {
			t.Errorf("hydra found %d passwords; alice's is not in its list", found)
		}
	})

	t.Run("the route reads Django's answers", func(t *testing.T) {
		// A failure the route cannot classify reports nothing: it is
		// still counted, but the operator's metrics lie.
		if n := tg.metric(t, "tollgate_proxy_outcomes_total", "route", "django-admin", "outcome", "unknown"); n != 0 {
			t.Errorf("the django-admin route classified %v answers as unknown", n)
		}
		if n := tg.metric(t, "tollgate_proxy_outcomes_total", "route", "django-admin", "outcome", "success"); n < 2 {
			t.Errorf("the django-admin route classified %v answers as successes, want the owner's 2", n)
		}
	})
}

// TestDjangoAdmin_ACaptchaAddressSolvesTheChallengeAndItsHeldLoginSignsIn
// makes an address the policy answers captcha (a spray from it), then
// carol signs in from it in Chromium: she gets the built-in challenge,
// her browser solves it, and the submission she typed signs her in
// without her typing it again.
func TestDjangoAdmin_ACaptchaAddressSolvesTheChallengeAndItsHeldLoginSignsIn(t *testing.T) {
	w := need(t)
	tg, dj := w.djangoProxy, w.django
	const ip = "192.0.2.77"
	spray := newClient(ip)
	limit := limitOf(t, tg, "ip_spray")
	challenged := false
	for i := 1; i <= limit+1 && !challenged; i++ {
		a := spray.djangoLogin(t, tg.proxy, fmt.Sprintf("ghost%02d", i), "Tg-e2e-captcha-spray-1")
		challenged = a.challenged()
	}
	if !challenged {
		t.Fatalf("a spray over %d accounts from %s got no challenge", limit+1, ip)
	}

	carol := newTab(t, tg.proxy, ip)
	before := dj.loggedIn("carol")
	if got := carol.open("/admin/login/?next=/admin/"); got != http.StatusOK {
		t.Fatalf("the login page answers %d through the proxy", got)
	}
	if got := carol.signIn(djangoUser, djangoPass, djangoSubmit, "carol", carolPassword); got != http.StatusTooManyRequests {
		t.Errorf("carol's sign-in from a captcha address answers %d, want the challenge page's 429", got)
	}
	loc := carol.waitFor(djangoIndex, 2*time.Minute) // the solver runs in the page, then posts
	if !strings.HasSuffix(loc, "/admin/") {
		t.Errorf("after the challenge carol is at %s, want the admin's index", loc)
	}
	if got := dj.loggedIn("carol") - before; got != 1 {
		t.Errorf("Django started %d sessions for carol, want 1", got)
	}
	if got := dj.failed("carol"); got != 0 {
		t.Errorf("Django failed %d checks for carol; her held submission should have been her password", got)
	}
}

// TestDjangoAdmin_AnUnknownAccountGetsTheSameDelayPageAsAKnownOne holds
// alice and nobody-xyz (no such account) in backoff with the same
// failures, and compares what the proxy answers each next: the same
// status, headers and bytes.
func TestDjangoAdmin_AnUnknownAccountGetsTheSameDelayPageAsAKnownOne(t *testing.T) {
	w := need(t)
	tg, dj := w.pair[0], w.django
	free := free(t, tg)
	c := newClient("203.0.113.150")
	// Each round's two failures at once, and the two next attempts at
	// once, so that both accounts' delays start and are asked about
	// together, however long Django takes over a password.
	for i := range free {
		for j, a := range c.djangoLogins(t, tg.proxy, fmt.Sprintf("Tg-e2e-wrong-%d", i), "alice", "nobody-xyz") {
			if a.status != http.StatusOK {
				t.Fatalf("failure %d of account %d answers %d, want Django's form again", i+1, j, a.status)
			}
		}
	}
	if got := dj.failed("nobody-xyz"); got < free {
		t.Fatalf("Django checked %d passwords for nobody-xyz, want at least %d", got, free)
	}
	next := c.djangoLogins(t, tg.proxy, "Tg-e2e-wrong-next", "alice", "nobody-xyz")
	known, unknown := next[0], next[1]
	if !known.delayed() || !unknown.delayed() {
		t.Fatalf("past free failures: alice answered %d, nobody-xyz %d; want the delay page for both", known.status, unknown.status)
	}
	if !bytes.Equal(known.body, unknown.body) {
		t.Errorf("the delay pages differ:\nalice:\n%s\nnobody-xyz:\n%s", known.body, unknown.body)
	}
	for _, h := range []string{"Content-Type", "Content-Length", "Retry-After", "RateLimit", "RateLimit-Policy", "Cache-Control", "Set-Cookie"} {
		if a, b := known.header.Values(h), unknown.header.Values(h); strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: alice's %q, nobody-xyz's %q", h, a, b)
		}
	}
	if len(known.header) != len(unknown.header) {
		t.Errorf("alice's answer has %d headers, nobody-xyz's %d", len(known.header), len(unknown.header))
	}
}
