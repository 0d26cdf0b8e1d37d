package e2e_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests of the Django plug-in (tollgate.django, plugin_setup_test.go):
// the same attacks as the proxy's, on a Django project that only its
// settings protect. What reached Django is counted by Django's own
// backend (testdata/django-plugin/measure.py): "check_failed <user>" is a
// password check that failed, what an attacker got to try.

// pluginLoginPath is the project's own login form (testdata/django-plugin/views.py).
const pluginLoginPath = "/login/"

// pluginLogin posts the project's own form as an attacker who never loads
// it does: the fixed CSRF pair.
func (c *client) pluginLogin(t *testing.T, base, username, password string) answer {
	t.Helper()
	form := fmt.Sprintf("csrfmiddlewaretoken=%s&username=%s&password=%s", csrfPair, queryEscape(username), queryEscape(password))
	return c.post(t, base+pluginLoginPath, form, "csrftoken="+csrfPair)
}

// captchaed reports whether a is the plug-in's answer to a captcha verdict
// for a client that is no browser: a 429 without Retry-After (waiting does
// not lift it).
func (a answer) captchaed() bool {
	return a.status == http.StatusTooManyRequests && a.header.Get("Retry-After") == ""
}

// TestDjangoPlugin_SettingsAloneProtectTheAdminAndTheProjectsOwnForm: the
// project differs from a fresh startproject by its settings (the README's
// block and this machine's lines), the measure, and its own login form,
// which names no tollgate; and both the admin's form and its own let free
// wrong passwords reach Django, then answer 429.
func TestDjangoPlugin_SettingsAloneProtectTheAdminAndTheProjectsOwnForm(t *testing.T) {
	p := needPlugin(t)
	t.Run("the project differs from startproject's by its settings and its own view", func(t *testing.T) {
		files := func(root string) map[string][]byte {
			m := map[string][]byte{}
			err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasSuffix(path, ".sqlite3") {
					return err
				}
				b, err := os.ReadFile(path)
				rel, _ := filepath.Rel(root, path)
				m[rel] = b
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		site, fresh := files(p.site), files(p.fresh)
		var added, changed []string
		for name, b := range site {
			if old, ok := fresh[name]; !ok {
				added = append(added, name)
			} else if !bytes.Equal(old, b) {
				changed = append(changed, name)
			}
		}
		slices.Sort(added)
		slices.Sort(changed)
		if want := []string{"tgplugin/measure.py", "tgplugin/views.py"}; !slices.Equal(added, want) {
			t.Errorf("files added to startproject's: %q, want %q", added, want)
		}
		if want := []string{"tgplugin/settings.py", "tgplugin/urls.py"}; !slices.Equal(changed, want) {
			t.Errorf("files changed from startproject's: %q, want %q", changed, want)
		}
		tail, _ := os.ReadFile("testdata/django-plugin/settings_e2e.py")
		// startproject writes a random SECRET_KEY into each project.
		key := regexp.MustCompile(`(?m)^SECRET_KEY = .*$`)
		got := key.ReplaceAllString(string(site["tgplugin/settings.py"]), "SECRET_KEY = …")
		want := key.ReplaceAllString(string(fresh["tgplugin/settings.py"])+"\n"+p.block+string(tail), "SECRET_KEY = …")
		if got != want {
			t.Errorf("settings.py is not startproject's plus the README's block plus settings_e2e.py:\n%s", got)
		}
		for name, b := range site {
			if name != "tgplugin/settings.py" && bytes.Contains(b, []byte("tollgate.django")) {
				t.Errorf("%s names tollgate.django: only the settings may", name)
			}
		}
		var lines []string
		for line := range strings.Lines(p.block) {
			if line = strings.TrimSpace(line); line != "" {
				lines = append(lines, line)
			}
		}
		figure(t, "the settings that protect the project (clients/python/README.md), %d lines: %s", len(lines), strings.Join(lines, " | "))
	})

	tg, dj := p.tg, p.dj
	free := free(t, tg)
	for _, tt := range []struct {
		name, account string
		login         func(c *client, pw string) answer
	}{
		{"the admin's form", "dora", func(c *client, pw string) answer { return c.djangoLogin(t, dj.base, "dora", pw) }},
		{"the project's own form", "erin", func(c *client, pw string) answer { return c.pluginLogin(t, dj.base, "erin", pw) }},
	} {
		t.Run(tt.name+" lets free wrong passwords reach Django, then answers 429", func(t *testing.T) {
			c := newClient("203.0.113.80")
			for i := range free {
				if a := tt.login(c, "Tg-e2e-wrong-"+strconv.Itoa(i)); a.status != http.StatusOK {
					t.Fatalf("wrong password %d answers %d, want the form again (200)", i+1, a.status)
				}
			}
			a := tt.login(c, "Tg-e2e-wrong-next")
			if !a.delayed() {
				t.Errorf("past free wrong passwords the form answers %d (Retry-After %q), want 429 with Retry-After", a.status, a.header.Get("Retry-After"))
			}
			if got := dj.count("check_failed", tt.account); got != free {
				t.Errorf("Django checked %d wrong passwords for %s, want free = %d", got, tt.account, free)
			}
		})
	}
}

// TestDjangoPlugin_HydraGetsAtMostFreePlusTwoChecksWhileTheOwnerSignsInAtOnce:
// hydra with the top-100 passwords and 16 tasks against the admin's login
// of a project that settings alone protect, while alice signs in from
// Chromium with the device cookie her first sign-in earned.
func TestDjangoPlugin_HydraGetsAtMostFreePlusTwoChecksWhileTheOwnerSignsInAtOnce(t *testing.T) {
	p := needPlugin(t)
	tg, dj := p.tg, p.dj
	free := free(t, tg)
	owner := newTab(t, dj.base, ownerIP)

	t.Run("the owner signs in in Chromium and gets the device cookie", func(t *testing.T) {
		owner.t = t
		before := dj.loggedIn("alice")
		if got := owner.open(djangoLoginPath); got != http.StatusOK {
			t.Fatalf("the login page answers %d", got)
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
		owner.hasDeviceCookie(pluginCookie)
	})

	failedBefore := dj.count("check_failed", "alice")
	h := startHydra(t, dj.base, "alice", djangoHydraForm(attackerIP))
	t.Run("the owner signs in at once during the attack", func(t *testing.T) {
		owner.t = t
		if !waitUntil(2*time.Minute, func() bool { return dj.count("check_failed", "alice")-failedBefore >= free || !h.running() }) {
			t.Fatalf("hydra's failures did not reach Django within 2 minutes (%d)", dj.count("check_failed", "alice")-failedBefore)
		}
		if got := dj.count("check_failed", "alice") - failedBefore; got < free {
			t.Fatalf("hydra ended with %d failed checks at Django, fewer than free (%d)", got, free)
		}
		during := h.running()
		before := dj.loggedIn("alice")
		// From an address she never signed in from, so that her device
		// cookie alone lets her in (a known network would too).
		owner.signOut(pluginCookie)
		owner.setIP(travelIP)
		if got := owner.open(djangoLoginPath); got != http.StatusOK {
			t.Fatalf("the login page answers %d", got)
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
		figure(t, "plug-in: the owner signed in with her device cookie %s hydra ran (%d failed checks at Django by then)",
			map[bool]string{true: "while", false: "right after"}[during], dj.count("check_failed", "alice")-failedBefore)
	})

	t.Run("hydra with the top 100 gets at most what the backoff allows in its time (free+2 within 3 s)", func(t *testing.T) {
		found := h.wait(t, 2*time.Minute)
		got := dj.count("check_failed", "alice") - failedBefore
		span := h.ended.Sub(h.started)
		bound := attackBound(t, tg, span)
		figure(t, "plug-in: hydra (top 100, -t 16) against alice: %d failed password checks at Django (free %d; bound %d for an attack of %v, free+2 = %d within 3 s), %d passwords found", got, free, bound, span.Round(time.Millisecond), free+2, found)
		if got > bound {
			t.Errorf("Django checked %d wrong passwords for alice; the plug-in should have let at most %d through in %v (free %d, then one each time the delay runs out)", got, bound, span.Round(time.Millisecond), free)
		}
		if found != 0 {
			t.Errorf("hydra found %d passwords; alice's is not in its list", found)
		}
	})
}

// TestDjangoPlugin_AnUnknownAccountGetsTheSameBytesAsAKnownOne holds bob
// and nobody-xyz (no such account) in backoff with the same failures and
// compares what the plug-in answers each next: the same status, headers
// and bytes.
func TestDjangoPlugin_AnUnknownAccountGetsTheSameBytesAsAKnownOne(t *testing.T) {
	p := needPlugin(t)
	tg, dj := p.tg, p.dj
	free := free(t, tg)
	c := newClient("203.0.113.151")
	// Both accounts' failures at once, and their next attempts at once, so
	// that both delays start and are asked about together.
	for i := range free {
		for j, a := range c.djangoLogins(t, dj.base, fmt.Sprintf("Tg-e2e-wrong-%d", i), "bob", "nobody-xyz") {
			if a.status != http.StatusOK {
				t.Fatalf("failure %d of account %d answers %d, want Django's form again", i+1, j, a.status)
			}
		}
	}
	if got := dj.count("check_failed", "nobody-xyz"); got != free {
		t.Fatalf("Django checked %d passwords for nobody-xyz, want free = %d", got, free)
	}
	next := c.djangoLogins(t, dj.base, "Tg-e2e-wrong-next", "bob", "nobody-xyz")
	known, unknown := next[0], next[1]
	if !known.delayed() || !unknown.delayed() {
		t.Fatalf("past free failures: bob answered %d, nobody-xyz %d; want 429 with Retry-After for both", known.status, unknown.status)
	}
	if !bytes.Equal(known.body, unknown.body) {
		t.Errorf("the 429 bodies differ:\nbob:\n%s\nnobody-xyz:\n%s", known.body, unknown.body)
	}
	// Date, and the Expires Django computes from now for the CSRF cookie it
	// sets again, are the clock's: the two answers may straddle a second.
	clock := regexp.MustCompile(`expires=[^;]*`)
	for name := range known.header {
		if name == "Date" {
			continue
		}
		a, b := known.header.Values(name), unknown.header.Values(name)
		if name == "Set-Cookie" {
			a, b = slices.Clone(a), slices.Clone(b)
			for i := range a {
				a[i] = clock.ReplaceAllString(a[i], "expires=…")
			}
			for i := range b {
				b[i] = clock.ReplaceAllString(b[i], "expires=…")
			}
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s: bob's %q, nobody-xyz's %q", name, a, b)
		}
	}
	if len(known.header) != len(unknown.header) {
		t.Errorf("bob's answer has %d headers, nobody-xyz's %d", len(known.header), len(unknown.header))
	}
	figure(t, "plug-in: bob and nobody-xyz past %d failures: both %d, %d-byte bodies equal: %v", free, known.status, len(known.body), bytes.Equal(known.body, unknown.body))
}

// TestDjangoPlugin_OnePasswordSprayedFromFiftyAddressesGetsAtMostTenChecks
// sprays one password over fifty real accounts from fifty addresses: the
// password's fingerprint is one subject, so at most password_spray's
// limit of accounts get a password check at Django.
func TestDjangoPlugin_OnePasswordSprayedFromFiftyAddressesGetsAtMostTenChecks(t *testing.T) {
	p := needPlugin(t)
	tg, dj := p.tg, p.dj
	bound := limitOf(t, tg, "password_spray")
	users := sprayed()
	checked, captchaed := 0, 0
	for i, u := range users {
		if newClient("198.18.1."+strconv.Itoa(i+1)).djangoLogin(t, dj.base, u, "Tg-e2e-Winter2026!").captchaed() {
			captchaed++
		}
	}
	for _, u := range users {
		checked += dj.count("check_failed", u)
	}
	figure(t, "plug-in: one password over %d accounts from %d addresses: %d accounts got a password check at Django, %d a CAPTCHA (bound %d)",
		len(users), len(users), checked, captchaed, bound)
	if checked > bound {
		t.Errorf("Django checked the sprayed password on %d accounts; want at most %d", checked, bound)
	}
	if checked+captchaed != len(users) {
		t.Errorf("%d checked + %d CAPTCHAs of %d attempts: every attempt not checked should get the CAPTCHA", checked, captchaed, len(users))
	}
}

// TestDjangoPlugin_ACaptchaAddressSolvesTheChallengeAndSignsInWithoutRetyping
// makes an address the policy answers captcha (a spray from it), then
// carol signs in from it in Chromium: the plug-in answers the challenge
// page, her browser solves tollgate's proof of work, and the submission
// she typed, held on the server, is checked without her typing it again;
// the address being escalated, she then enters the code the plug-in mailed
// her, and only then has a session.
func TestDjangoPlugin_ACaptchaAddressSolvesTheChallengeAndSignsInWithoutRetyping(t *testing.T) {
	p := needPlugin(t)
	tg, dj := p.tg, p.dj
	const ip = "192.0.2.88"
	spray := newClient(ip)
	limit := limitOf(t, tg, "ip_spray")
	captchaed := false
	for i := 1; i <= limit+1 && !captchaed; i++ {
		captchaed = spray.djangoLogin(t, dj.base, fmt.Sprintf("ghost%02d", i), "Tg-e2e-captcha-spray-2").captchaed()
	}
	if !captchaed {
		t.Fatalf("a spray over %d accounts from %s got no CAPTCHA", limit+1, ip)
	}

	carol := newTab(t, dj.base, ip)
	before := dj.loggedIn("carol")
	if got := carol.open(djangoLoginPath); got != http.StatusOK {
		t.Fatalf("the login page answers %d", got)
	}
	if got := carol.signIn(djangoUser, djangoPass, djangoSubmit, "carol", carolPassword); got != http.StatusTooManyRequests {
		t.Errorf("carol's sign-in from a captcha address answers %d, want the challenge page's 429", got)
	}
	// The solver runs in the page, then posts; the right password from an
	// address past ip_spray is answered step_up (address_escalated): the
	// code page, and no session until the code mailed to carol is in.
	if loc := carol.waitFor("#tollgate-code", 2*time.Minute); !strings.HasSuffix(loc, pluginStepUpPath) {
		t.Errorf("after the challenge carol is at %s, want the code page", loc)
	}
	if got := dj.loggedIn("carol") - before; got != 0 {
		t.Errorf("Django started %d sessions for carol before the code, want 0", got)
	}
	carol.enterCode(p.lastCode(t, "carol@example.test"))
	loc := carol.waitFor(djangoIndex, time.Minute)
	if !strings.HasSuffix(loc, "/admin/") {
		t.Errorf("after the challenge and the code carol is at %s, want the admin's index", loc)
	}
	if got := dj.loggedIn("carol") - before; got != 1 {
		t.Errorf("Django started %d sessions for carol, want 1", got)
	}
	if got := dj.count("checked", "carol"); got != 1 {
		t.Errorf("Django checked carol's password %d times, want once: after the challenge", got)
	}
	if got := dj.count("check_failed", "carol"); got != 0 {
		t.Errorf("Django failed %d checks for carol; her held submission should have been her password", got)
	}
	carol.hasDeviceCookie(pluginCookie)
	figure(t, "plug-in: carol from a CAPTCHA address: challenge page, solved in Chromium, her password checked without retyping (%d check at Django), then the mailed code, then the session", dj.count("checked", "carol"))
}
