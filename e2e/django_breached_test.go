package e2e_test

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// breachedProxy starts tollgate serve in front of Django, as the shipped
// example (whose route logs a held session out at /admin/logout/), with a
// breached-password corpus (the breached section) of a few hashes, one of
// them dave's password's. It is stopped with the set-up.
func breachedProxy(t *testing.T, w *world) *tollgate {
	t.Helper()
	dir := w.sub("breached")
	var corpus bytes.Buffer
	for i, pw := range []string{"123456", davePassword, "password1", "Tg-e2e-in-no-account"} {
		fmt.Fprintf(&corpus, "%X:%d\n", sha1.Sum([]byte(pw)), 1000*(i+1))
	}
	file := filepath.Join(dir, "pwned.txt")
	if err := os.WriteFile(file, corpus.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := startTollgate(w, "breached", w.django.base, djangoRoutes, nil, func(root *yaml.Node) {
		set(root, "breached", &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("corpus"), scalar(file)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(tg.logPath)
	if !bytes.Contains(log, []byte("proxy: breached-password lookups on")) {
		t.Fatal("the server did not give the proxy its breached-password ranges: its log lacks \"proxy: breached-password lookups on\"")
	}
	return tg
}

// TestDjangoAdmin_AStolenBreachedPasswordGetsNoDjangoSession signs in to
// Django's real admin through the proxy with dave's right password, which
// is in the breached-password corpus, as an attacker holding a leaked
// pair does (no device cookie): Django checks the password and starts a
// session, the engine answers the success step_up, and the proxy holds
// Django's answer back (its Set-Cookie never reaches the client), answers
// the step-up page and logs the session out at Django, so that Django's
// own session table holds no session of dave's. carol, whose password is
// in no breach, signs in through the same proxy as before.
func TestDjangoAdmin_AStolenBreachedPasswordGetsNoDjangoSession(t *testing.T) {
	w := need(t)
	tg, dj := breachedProxy(t, w), w.django

	t.Run("the right breached password gets the step-up page and no session", func(t *testing.T) {
		attacker := newClient("203.0.113.91")
		before := dj.loggedIn("dave")
		a := attacker.djangoLogin(t, tg.proxy, "dave", davePassword)
		if got := dj.loggedIn("dave") - before; got != 1 {
			t.Fatalf("Django signed dave in %d times, want once: the proxy must pass the password on for Django to check", got)
		}
		if a.status != http.StatusForbidden || !bytes.Contains(a.body, []byte("known data breach")) {
			t.Errorf("answer %d, want the step-up page's 403 naming the breach:\n%s", a.status, a.body)
		}
		if sc := a.header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("the answer sets %q: Django's session (or a device cookie) reached the attacker", sc)
		}
		if loc := a.header.Get("Location"); loc != "" {
			t.Errorf("the answer redirects to %s", loc)
		}
		if n := dj.sessions(t, "dave"); n != 0 {
			t.Errorf("Django's session table holds %d sessions of dave's, want 0: the held session was not logged out", n)
		}
		if n := tg.metric(t, "tollgate_proxy_answers_total", "route", "django-admin", "answer", "stepped_up"); n != 1 {
			t.Errorf("stepped_up answers = %v, want 1", n)
		}
	})

	t.Run("a password in no breach signs in as before", func(t *testing.T) {
		carol := newClient("198.51.100.61")
		before := dj.sessions(t, "carol")
		a := carol.djangoLogin(t, tg.proxy, "carol", carolPassword)
		if a.status != http.StatusFound || !strings.HasSuffix(a.header.Get("Location"), "/admin/") {
			t.Fatalf("answer %d to %q, want Django's redirect to the admin", a.status, a.header.Get("Location"))
		}
		if !strings.Contains(strings.Join(a.header.Values("Set-Cookie"), "\n"), "sessionid=") {
			t.Errorf("cookies %q: want Django's sessionid", a.header.Values("Set-Cookie"))
		}
		if got := dj.sessions(t, "carol") - before; got != 1 {
			t.Errorf("Django's session table gained %d sessions of carol's, want 1", got)
		}
	})
}
