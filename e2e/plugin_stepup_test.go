package e2e_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The Django plug-in's step-up (tollgate.django.stepup): a right password
// that tollgate answers step_up (in the breached-password corpus, or from
// an escalated address) starts no Django session until the code the
// plug-in e-mailed (here: Django's file mail backend, settings_e2e.py) is
// entered on the page the plug-in serves. Sessions are counted in
// Django's own session table.

// pluginStepUpPath is the plug-in's code page (TOLLGATE_STEP_UP_PATH's
// default: the README's block sets nothing for it).
const pluginStepUpPath = "/tollgate/step-up/"

// codeRE finds the code in the plug-in's mail.
var codeRE = regexp.MustCompile(`code is ([0-9]{6})\.`)

// mailedCodes are the codes Django mailed to address, oldest first.
func (p *plugin) mailedCodes(t *testing.T, address string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(p.mail, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	type mail struct {
		at   time.Time
		code string
	}
	var mails []mail
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		// One file per connection; messages separated by a line of dashes.
		for msg := range strings.SplitSeq(string(b), strings.Repeat("-", 79)) {
			if !strings.Contains(msg, "\nTo: "+address+"\n") {
				continue
			}
			if m := codeRE.FindStringSubmatch(msg); m != nil {
				mails = append(mails, mail{fi.ModTime(), m[1]})
			}
		}
	}
	slices.SortStableFunc(mails, func(a, b mail) int { return a.at.Compare(b.at) })
	var codes []string
	for _, m := range mails {
		codes = append(codes, m.code)
	}
	return codes
}

// lastCode is the newest code mailed to address; it fails the test when
// none was.
func (p *plugin) lastCode(t *testing.T, address string) string {
	t.Helper()
	codes := p.mailedCodes(t, address)
	if len(codes) == 0 {
		t.Fatalf("no code was mailed to %s (files in %s)", address, p.mail)
	}
	return codes[len(codes)-1]
}

// otherCode is a 6-digit code that is not code.
func otherCode(code string) string {
	n, _ := strconv.Atoi(code)
	return fmt.Sprintf("%06d", (n+1)%1000000)
}

// get fetches url with cookie, following no redirect.
func (c *client) get(t *testing.T, url, cookie string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", c.ip)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, body}
}

// cookie is the value a's Set-Cookie gives name, or "".
func (a answer) cookie(name string) string {
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// enterCode types code into the plug-in's code page and submits it; it
// returns the status of the page that follows.
func (b *tab) enterCode(code string) int64 {
	b.t.Helper()
	ctx, cancel := b.bounded(time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#tollgate-code")),
		chromedp.SendKeys(chromedp.CSS("#tollgate-code"), code)); err != nil {
		b.t.Fatalf("typing the code: %v; the page at %s shows:\n%s", err, b.location(), b.text())
	}
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`[data-tollgate-step-up] button`)))
	if err != nil {
		b.t.Fatalf("submitting the code: %v", err)
	}
	return res.Status
}

// TestDjangoPlugin_AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor:
// hana's right password is in the corpus. An attacker holding it (no
// device cookie) gets the code page and no Django session, and a guessed
// code gets none either; hana in Chromium gets the code by mail, a wrong
// code does not sign her in, the right one does, and the device cookie it
// earned signs her in later without a code.
func TestDjangoPlugin_AStolenBreachedPasswordGetsNoSessionWithoutTheSecondFactor(t *testing.T) {
	p := needPlugin(t)
	dj := p.dj
	const hanaMail = "hana@example.test"
	csrf := "csrftoken=" + csrfPair

	t.Run("the attacker with the right breached password gets the code page and no session", func(t *testing.T) {
		c := newClient("203.0.113.171")
		mailed := len(p.mailedCodes(t, hanaMail))
		a := c.djangoLogin(t, dj.base, "hana", hanaPassword)
		if a.status != http.StatusFound || a.header.Get("Location") != pluginStepUpPath {
			t.Fatalf("the right breached password answers %d to %q, want 302 to the code page %s:\n%s", a.status, a.header.Get("Location"), pluginStepUpPath, a.body)
		}
		if got := dj.count("checked", "hana"); got != 1 {
			t.Errorf("Django checked hana's password %d times, want 1", got)
		}
		if n := p.sessionsOf(t, "hana"); n != 0 {
			t.Fatalf("Django's session table holds %d sessions of hana's before the second factor, want 0", n)
		}
		if v := a.cookie(pluginCookie); v != "" {
			t.Errorf("the step-up answer sets the device cookie %q", v)
		}
		session := "sessionid=" + a.cookie("sessionid")
		if got := c.get(t, dj.base+"/admin/", csrf+"; "+session); got.status != http.StatusFound {
			t.Errorf("the admin with the step-up's session answers %d, want 302 to its login", got.status)
		}
		if got := len(p.mailedCodes(t, hanaMail)) - mailed; got != 1 {
			t.Errorf("%d codes mailed to hana, want 1", got)
		}
		// A guess at the code: the form again, no session.
		g := c.post(t, dj.base+pluginStepUpPath, "csrfmiddlewaretoken="+csrfPair+"&code="+otherCode(p.lastCode(t, hanaMail)), csrf+"; "+session)
		if g.status != http.StatusOK || !bytes.Contains(g.body, []byte("not right")) {
			t.Errorf("a wrong code answers %d, want the form again saying it is not right:\n%s", g.status, g.body)
		}
		if n := p.sessionsOf(t, "hana"); n != 0 {
			t.Errorf("Django's session table holds %d sessions of hana's after a wrong code, want 0", n)
		}
		figure(t, "plug-in: hana's right breached password (in tollgate's corpus) from an attacker: the code page, %d Django sessions, a guessed code none", p.sessionsOf(t, "hana"))
	})

	hana := newTab(t, dj.base, "198.51.100.171")
	t.Run("hana signs in in Chromium only after the mailed code, not with a wrong one", func(t *testing.T) {
		hana.t = t
		if got := hana.open(djangoLoginPath); got != http.StatusOK {
			t.Fatalf("the login page answers %d", got)
		}
		if got := hana.signIn(djangoUser, djangoPass, djangoSubmit, "hana", hanaPassword); got != http.StatusOK {
			t.Fatalf("signing in ends on a page of status %d (%s):\n%s", got, hana.location(), hana.text())
		}
		if loc := hana.waitFor("#tollgate-code", 30*time.Second); !strings.HasSuffix(loc, pluginStepUpPath) {
			t.Fatalf("after the password hana is at %s, want the code page", loc)
		}
		code := p.lastCode(t, hanaMail)
		if got := hana.enterCode(otherCode(code)); got != http.StatusOK {
			t.Errorf("a wrong code answers %d, want the form again (200)", got)
		}
		if !strings.Contains(hana.text(), "not right") {
			t.Errorf("after a wrong code the page shows:\n%s", hana.text())
		}
		if n := p.sessionsOf(t, "hana"); n != 0 {
			t.Fatalf("Django's session table holds %d sessions of hana's after a wrong code, want 0", n)
		}
		hana.enterCode(code)
		if loc := hana.waitFor(djangoIndex, 30*time.Second); !strings.HasSuffix(loc, "/admin/") {
			t.Errorf("after the code hana is at %s, want the admin's index", loc)
		}
		if n := p.sessionsOf(t, "hana"); n != 1 {
			t.Errorf("Django's session table holds %d sessions of hana's after the code, want 1", n)
		}
		hana.hasDeviceCookie(pluginCookie)
	})

	t.Run("her device cookie then signs her in without a code", func(t *testing.T) {
		hana.t = t
		mailed := len(p.mailedCodes(t, hanaMail))
		hana.signOut(pluginCookie)
		if got := hana.open(djangoLoginPath); got != http.StatusOK {
			t.Fatalf("the login page answers %d", got)
		}
		hana.signIn(djangoUser, djangoPass, djangoSubmit, "hana", hanaPassword)
		if loc := hana.waitFor(djangoIndex, 30*time.Second); !strings.HasSuffix(loc, "/admin/") {
			t.Errorf("with her device cookie hana is at %s, want the admin's index", loc)
		}
		if got := len(p.mailedCodes(t, hanaMail)) - mailed; got != 0 {
			t.Errorf("%d codes mailed to hana at her known device, want 0", got)
		}
		if n := p.sessionsOf(t, "hana"); n != 2 {
			t.Errorf("Django's session table holds %d sessions of hana's, want 2 (the signed-out one's row stays)", n)
		}
		figure(t, "plug-in: hana in Chromium: the code page, a wrong code no session, the mailed code one; her device cookie then signs her in without a code")
	})
}
