package e2e_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// python is Debian's interpreter, the one python3-django is installed for
// (a python3 earlier on PATH may have no Django).
const python = "/usr/bin/python3"

// django is Django's development server on a project of its own.
type django struct {
	*proc
	base   string   // http://127.0.0.1:port
	events string   // the file of its login signals (settings_tail.py)
	site   string   // the project's directory, where manage.py is
	env    []string // the environment manage.py runs in
}

// startDjango makes a project in dir with django-admin startproject, adds
// testdata/django/settings_tail.py to its settings, migrates its
// database, creates the accounts and serves it with runserver.
func startDjango(w *world, dir string) (*django, error) {
	d := &django{events: filepath.Join(dir, "events.log")}
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		return nil, err
	}
	env := []string{"TOLLGATE_E2E_EVENTS=" + d.events, "PYTHONDONTWRITEBYTECODE=1",
		"E2E_CAROL_PASSWORD=" + carolPassword, "E2E_BOB_PASSWORD=" + bobPassword,
		"E2E_SPRAYED_PASSWORD=" + sprayedPassword, "E2E_DAVE_PASSWORD=" + davePassword}
	d.site, d.env = site, env
	// "site" is Python's own module, which startproject refuses.
	if _, err := runCmd(dir, env, time.Minute, python, "-m", "django", "startproject", "tgsite", site); err != nil {
		return nil, err
	}
	tail, err := os.ReadFile("testdata/django/settings_tail.py")
	if err != nil {
		return nil, err
	}
	settings := filepath.Join(site, "tgsite", "settings.py")
	f, err := os.OpenFile(settings, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(tail)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	users, err := os.ReadFile("testdata/django/users.py")
	if err != nil {
		return nil, err
	}
	for _, argv := range [][]string{
		{python, "manage.py", "migrate", "--verbosity", "0"},
		{python, "manage.py", "createsuperuser", "--noinput", "--username", "alice", "--email", "alice@example.test"},
		{python, "manage.py", "shell", "--command", string(users)},
	} {
		if _, err := runCmd(site, append(env, "DJANGO_SUPERUSER_PASSWORD="+alicePassword), 2*time.Minute, argv...); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	d.base = "http://127.0.0.1:" + strconv.Itoa(port)
	d.proc, err = w.spawn("django", dir, site, env, python, "manage.py", "runserver", "--noreload", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return d, waitHTTP(d.proc, d.base+"/admin/login/", 200, time.Minute)
}

// count is how many lines of Django's signal file are "kind username".
func (d *django) count(kind, username string) int {
	b, _ := os.ReadFile(d.events)
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.TrimSuffix(line, "\n") == kind+" "+username {
			n++
		}
	}
	return n
}

// failed is the number of failed password checks Django made for
// username: what an attacker got to try.
func (d *django) failed(username string) int { return d.count("login_failed", username) }

// loggedIn is the number of sessions Django started for username.
func (d *django) loggedIn(username string) int { return d.count("logged_in", username) }

// sessionsCode, run by manage.py shell, prints how many sessions of
// Django's own table (django_session) are signed in as the user named by
// E2E_SESSIONS_OF: the session rows Django keeps, whether or not anyone
// holds their key.
const sessionsCode = `
import os
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
uid = str(get_user_model().objects.get(username=os.environ['E2E_SESSIONS_OF']).pk)
print(sum(1 for s in Session.objects.all() if s.get_decoded().get('_auth_user_id') == uid))
`

// sessions is the number of sessions in Django's session table signed in
// as username.
func (d *django) sessions(t *testing.T, username string) int {
	t.Helper()
	out, err := runCmd(d.site, append(d.env, "E2E_SESSIONS_OF="+username), time.Minute, python, "manage.py", "shell", "--command", sessionsCode)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		t.Fatalf("manage.py shell printed nothing")
	}
	n, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil {
		t.Fatalf("manage.py shell printed %q", out)
	}
	return n
}

// csrfPair is the fixed pair an attacker who never reads the login form
// sends Django: the csrftoken cookie and the csrfmiddlewaretoken field
// with the same 64 characters. Django 3.2 unmasks both and compares their
// secrets, so any 64 letters and digits pass.
var csrfPair = func() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 64)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}()

// djangoLoginPath is the admin's login form, as the admin's redirect
// names it.
const djangoLoginPath = "/admin/login/?next=/admin/"

// djangoLoginBody is the form the admin's login page posts.
func djangoLoginBody(username, password string) string {
	return fmt.Sprintf("csrfmiddlewaretoken=%s&username=%s&password=%s&next=%%2Fadmin%%2F",
		csrfPair, queryEscape(username), queryEscape(password))
}
