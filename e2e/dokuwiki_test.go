package e2e_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The login form of DokuWiki's default template.
const (
	wikiUser   = "#dw__login #focus__this"
	wikiPass   = `#dw__login input[name="p"]`
	wikiSubmit = `#dw__login button[type="submit"]`
	// wikiSignedIn is in the user tools of a signed-in user only.
	wikiSignedIn = "li.action.logout"
	wikiLogin    = "/doku.php?id=start&do=login"
)

// wikiHydraForm is hydra's http-post-form option against DokuWiki's
// login: success is the page hydra is redirected to showing the user
// signed in, which neither DokuWiki's 403 nor the proxy's 429 shows.
func wikiHydraForm(ip string) string {
	return fmt.Sprintf(`/doku.php:do=login&id=start&u=^USER^&p=^PASS^:H=X-Forwarded-For\: %s:S=Logged in as`, ip)
}

// TestDokuWiki_HydraGetsAtMostFreePlusTwoChecksWhileTheOwnerSignsInAtOnce
// is the Django admin's test on DokuWiki, whose answers differ: a wrong
// password is 403 with the form again, a right one 302 with an auth
// cookie named after a hash of the wiki's path.
func TestDokuWiki_HydraGetsAtMostFreePlusTwoChecksWhileTheOwnerSignsInAtOnce(t *testing.T) {
	w := need(t)
	tg, wiki := w.wikiProxy, w.wiki
	free, cookie := free(t, tg), deviceCookie(t, tg)
	owner := newTab(t, tg.proxy, ownerIP)

	signIn := func(t *testing.T) {
		t.Helper()
		before := wiki.checks(http.StatusFound)
		if got := owner.open(wikiLogin); got != http.StatusOK {
			t.Fatalf("the login page answers %d through the proxy", got)
		}
		if got := owner.signIn(wikiUser, wikiPass, wikiSubmit, "alice", alicePassword); got != http.StatusOK {
			t.Fatalf("signing in ends on a page of status %d (%s):\n%s", got, owner.location(), owner.text())
		}
		owner.waitFor(wikiSignedIn, 30*time.Second)
		if got := wiki.checks(http.StatusFound) - before; got != 1 {
			t.Errorf("DokuWiki signed alice in %d times, want 1", got)
		}
	}

	t.Run("the owner signs in in Chromium and gets the device cookie", func(t *testing.T) {
		owner.t = t
		signIn(t)
		owner.hasDeviceCookie(cookie)
	})

	failedBefore := wiki.checks(http.StatusForbidden)
	failed := func() int { return wiki.checks(http.StatusForbidden) - failedBefore }
	h := startHydra(t, tg.proxy, "alice", wikiHydraForm(attackerIP))
	t.Run("the owner signs in at once during the attack", func(t *testing.T) {
		owner.t = t
		if !waitUntil(2*time.Minute, func() bool { return failed() >= free || !h.running() }) {
			t.Fatalf("hydra's failures did not reach DokuWiki within 2 minutes (%d)", failed())
		}
		if got := failed(); got < free {
			t.Fatalf("hydra ended with %d failed checks at DokuWiki, fewer than free (%d): it did not get through the proxy", got, free)
		}
		during := h.running()
		// From an address she never signed in from, so that her device
		// cookie alone lets her in (a known network would too).
		owner.signOut(cookie)
		owner.setIP(travelIP)
		signIn(t)
		figure(t, "the owner signed in with her device cookie %s hydra ran (%d failed checks at DokuWiki by then)",
			map[bool]string{true: "while", false: "right after"}[during], failed())
	})

	t.Run("hydra with the top 100 gets at most what the backoff allows in its time (free+2 within 3 s)", func(t *testing.T) {
		found := h.wait(t, 2*time.Minute)
		got := failed()
		span := h.ended.Sub(h.started)
		bound := attackBound(t, tg, span)
		figure(t, "hydra (top 100, -t 16) against alice through the proxy: %d failed password checks at DokuWiki (free %d; bound %d for an attack of %v, free+2 = %d within 3 s), %d passwords found", got, free, bound, span.Round(time.Millisecond), free+2, found)
		if got > bound {
			t.Errorf("DokuWiki checked %d wrong passwords for alice; the proxy should have let at most %d through in %v (free %d, then one each time the delay runs out)", got, bound, span.Round(time.Millisecond), free)
		}
		if found != 0 {
			t.Errorf("hydra found %d passwords; alice's is not in its list", found)
		}
	})

	t.Run("the route reads DokuWiki's answers", func(t *testing.T) {
		// A failure the route cannot classify reports nothing: it is
		// still counted, but the operator's metrics lie.
		for _, outcome := range []string{"success", "failure", "unknown"} {
			t.Logf("%s: %v", outcome, tg.metric(t, "tollgate_proxy_outcomes_total", "route", "dokuwiki", "outcome", outcome))
		}
		if n := tg.metric(t, "tollgate_proxy_outcomes_total", "route", "dokuwiki", "outcome", "unknown"); n != 0 {
			t.Errorf("the dokuwiki route classified %v answers as unknown", n)
		}
		if n := tg.metric(t, "tollgate_proxy_outcomes_total", "route", "dokuwiki", "outcome", "failure"); n < float64(free) {
			t.Errorf("the dokuwiki route classified %v answers as failures, want at least free (%d)", n, free)
		}
	})
}
