package e2e_test

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Django plug-in's set-up: a second Django project, protected by the
// Python client's tollgate.django and no proxy, beside the shared set-up
// (setup_test.go) and made of its parts: the tollgate binary it built,
// its process list (so TestMain's stop stops these too), its helpers.
// It starts on first use by a plug-in test, so that the proxy's tests pay
// nothing for it.
//
//   - the wheel, built by scripts/build-python.sh as make release builds
//     it, installed with pip from the file alone (--no-index) into a venv
//     that sees Debian's python3-django (--system-site-packages): the tests
//     run the package as published, not the source tree;
//   - tollgate serve, its API alone, on the memory store and the built-in
//     policy, with a breached-password corpus of a few hashes (the
//     breached section);
//   - django-admin startproject, plus clients/python/README.md's settings
//     block verbatim, plus testdata/django-plugin: this machine's settings
//     and the measure (settings_e2e.py, measure.py), and the project's own
//     login form (views.py, urls_tail.py), which knows nothing of tollgate;
//   - the accounts of testdata/django/users.py, alice, and hana (an e-mail
//     address, and the corpus's password), served by runserver on the
//     venv's Python; Django's mail goes to files (EMAIL_FILE_PATH) that
//     the step-up test reads its codes from.
type plugin struct {
	dj *django   // runserver on the project; its events file counts what reached Django
	tg *tollgate // tollgate serve: api only (proxy is "")
	// site is the project's directory; fresh is a startproject of the same
	// name, untouched, to compare it with.
	site, fresh string
	// block is the README's settings block the project's settings append.
	block string
	// py is the venv's python, env the environment manage.py runs in,
	// mail the directory of Django's mail files.
	py   string
	env  []string
	mail string
}

// hanaPassword is hana's password on the plug-in's site, the one of its
// accounts in the breached-password corpus; pluginDavePassword is dave's
// there (testdata/django/users.py reads it).
const (
	hanaPassword       = "Tg-e2e-hana-51c0-breached"
	pluginDavePassword = "Tg-e2e-dave-plugin-2a41"
)

// pluginCorpus is the breached-password corpus of the plug-in's tollgate:
// HIBP's SHA1:COUNT lines, hana's password among them.
func pluginCorpus() []byte {
	var b bytes.Buffer
	for i, pw := range []string{"123456", hanaPassword, "password1", "Tg-e2e-in-no-account"} {
		fmt.Fprintf(&b, "%X:%d\n", sha1.Sum([]byte(pw)), 1000*(i+1))
	}
	return b.Bytes()
}

// hanaCode, run by manage.py shell, adds hana: a staff user with an e-mail
// address, whose password is in the corpus.
const hanaCode = `
import os
from django.contrib.auth.models import User
User.objects.create_superuser('hana', 'hana@example.test', os.environ['E2E_HANA_PASSWORD'])
`

// sessionsOfCode, run by manage.py shell, prints how many rows of
// Django's own session table are signed in as E2E_SESSIONS_OF.
const sessionsOfCode = `
import os
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
uid = str(get_user_model().objects.get(username=os.environ['E2E_SESSIONS_OF']).pk)
print(sum(1 for s in Session.objects.all() if s.get_decoded().get('_auth_user_id') == uid))
`

// sessionsOf is the number of sessions in the plug-in site's session
// table signed in as username: what Django keeps, whatever any signal said.
func (p *plugin) sessionsOf(t *testing.T, username string) int {
	t.Helper()
	out, err := runCmd(p.site, append(p.env, "E2E_SESSIONS_OF="+username), time.Minute, p.py, "manage.py", "shell", "--command", sessionsOfCode)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(out)
	if len(fields) == 0 {
		t.Fatal("manage.py shell printed nothing")
	}
	n, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil {
		t.Fatalf("manage.py shell printed %q", out)
	}
	return n
}

// pluginCookie is the plug-in's device cookie over plain HTTP
// (TOLLGATE_DEVICE_COOKIE = {"secure": False}).
const pluginCookie = "tollgate-device"

// fingerprintKey is the project's TOLLGATE_FINGERPRINT_KEY.
const fingerprintKey = "tollgate-e2e-fingerprint-key-of-at-least-32-bytes"

// readmeMarker precedes the settings block in clients/python/README.md.
const readmeMarker = "<!-- e2e/plugin_setup_test.go appends this block verbatim"

var pluginSetup struct {
	once sync.Once
	p    *plugin
	err  error
}

// needPlugin is the plug-in's set-up, started on first use; it skips as
// need does.
func needPlugin(t *testing.T) *plugin {
	t.Helper()
	w := need(t)
	pluginSetup.once.Do(func() {
		start := time.Now()
		pluginSetup.p, pluginSetup.err = startPlugin(w, w.sub("django-plugin"))
		fmt.Fprintf(os.Stderr, "e2e: the Django plug-in set up in %v\n", time.Since(start).Round(100*time.Millisecond))
	})
	if pluginSetup.err != nil {
		w.dumpLogs()
		t.Fatalf("setting up the Django plug-in: %v", pluginSetup.err)
	}
	return pluginSetup.p
}

// readmeSettings is the Django settings block of clients/python/README.md:
// the python block after readmeMarker.
func readmeSettings() (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "clients", "python", "README.md"))
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(b), readmeMarker)
	if !ok {
		return "", errors.New("clients/python/README.md has no settings block marked for the e2e tests")
	}
	_, rest, ok = strings.Cut(rest, "```python\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		return "", errors.New("clients/python/README.md: the marked settings block is not a python block")
	}
	return block, nil
}

func startPlugin(w *world, dir string) (*plugin, error) {
	p := &plugin{site: filepath.Join(dir, "site"), fresh: filepath.Join(dir, "fresh")}
	var err error
	if p.block, err = readmeSettings(); err != nil {
		return nil, err
	}
	corpus := filepath.Join(dir, "pwned.txt")
	if err := os.WriteFile(corpus, pluginCorpus(), 0o644); err != nil {
		return nil, err
	}
	config := "# The built-in policy, unchanged, and a breached-password corpus.\nflows: {}\nbreached:\n  corpus: " + strconv.Quote(corpus) + "\n"
	if p.tg, err = startTollgateAPI(w, "plugin", config); err != nil {
		return nil, err
	}
	p.mail = filepath.Join(dir, "mail")
	if err := os.MkdirAll(p.mail, 0o755); err != nil {
		return nil, err
	}
	py, err := installWheel(dir)
	if err != nil {
		return nil, err
	}
	p.py = py
	events := filepath.Join(dir, "events.log")
	env := []string{"TOLLGATE_E2E_EVENTS=" + events, "PYTHONDONTWRITEBYTECODE=1",
		"TOLLGATE_URL=" + p.tg.api, "TOLLGATE_FINGERPRINT_KEY=" + fingerprintKey,
		"E2E_CAROL_PASSWORD=" + carolPassword, "E2E_BOB_PASSWORD=" + bobPassword,
		"E2E_SPRAYED_PASSWORD=" + sprayedPassword, "E2E_DAVE_PASSWORD=" + pluginDavePassword,
		"E2E_HANA_PASSWORD=" + hanaPassword, "TOLLGATE_E2E_MAIL=" + p.mail}
	p.env = env
	for _, d := range []string{p.site, p.fresh} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		if _, err := runCmd(dir, env, time.Minute, py, "-m", "django", "startproject", "tgplugin", d); err != nil {
			return nil, err
		}
	}
	pkg := filepath.Join(p.site, "tgplugin")
	settingsTail, err := os.ReadFile("testdata/django-plugin/settings_e2e.py")
	if err != nil {
		return nil, err
	}
	urlsTail, err := os.ReadFile("testdata/django-plugin/urls_tail.py")
	if err != nil {
		return nil, err
	}
	if err := appendFile(filepath.Join(pkg, "settings.py"), "\n"+p.block+string(settingsTail)); err != nil {
		return nil, err
	}
	if err := appendFile(filepath.Join(pkg, "urls.py"), string(urlsTail)); err != nil {
		return nil, err
	}
	for _, name := range []string{"measure.py", "views.py"} {
		b, err := os.ReadFile(filepath.Join("testdata", "django-plugin", name))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(pkg, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	users, err := os.ReadFile("testdata/django/users.py")
	if err != nil {
		return nil, err
	}
	for _, argv := range [][]string{
		{py, "manage.py", "check", "--fail-level", "WARNING"}, // tollgate.E001-E003 among them
		{py, "manage.py", "migrate", "--verbosity", "0"},
		{py, "manage.py", "createsuperuser", "--noinput", "--username", "alice", "--email", "alice@example.test"},
		{py, "manage.py", "shell", "--command", string(users)},
		{py, "manage.py", "shell", "--command", hanaCode},
	} {
		if _, err := runCmd(p.site, append(env, "DJANGO_SUPERUSER_PASSWORD="+alicePassword), 2*time.Minute, argv...); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p.dj = &django{base: "http://127.0.0.1:" + strconv.Itoa(port), events: events}
	p.dj.proc, err = w.spawn("django-plugin", dir, p.site, env, py, "manage.py", "runserver", "--noreload", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return p, waitHTTP(p.dj.proc, p.dj.base+"/admin/login/", 200, time.Minute)
}

// installWheel builds the Python package's wheel with
// scripts/build-python.sh, installs it with pip from the file alone into a
// venv under dir that sees the system's Django, and returns the venv's
// python.
func installWheel(dir string) (string, error) {
	dist := filepath.Join(dir, "dist")
	script, err := filepath.Abs(filepath.Join("..", "scripts", "build-python.sh"))
	if err != nil {
		return "", err
	}
	if _, err := runCmd("..", []string{"PYTHON=" + python}, 3*time.Minute, script, dist); err != nil {
		return "", err
	}
	wheels, _ := filepath.Glob(filepath.Join(dist, "*.whl"))
	if len(wheels) != 1 {
		return "", fmt.Errorf("build-python.sh made the wheels %q, want one", wheels)
	}
	venv := filepath.Join(dir, "venv")
	if _, err := runCmd(dir, nil, 2*time.Minute, python, "-m", "venv", "--system-site-packages", venv); err != nil {
		return "", err
	}
	py := filepath.Join(venv, "bin", "python")
	if _, err := runCmd(dir, nil, 2*time.Minute, py, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", wheels[0]); err != nil {
		return "", err
	}
	// The package Django imports is the venv's, not a source tree's.
	out, err := runCmd(dir, nil, time.Minute, py, "-c", "import tollgate.django, os; print(os.path.realpath(tollgate.__file__))")
	if err != nil {
		return "", err
	}
	if real, _ := filepath.EvalSymlinks(venv); !strings.HasPrefix(strings.TrimSpace(out), real+string(filepath.Separator)) {
		return "", fmt.Errorf("the venv imports tollgate from %s, not from the installed wheel", strings.TrimSpace(out))
	}
	return py, nil
}

// startTollgateAPI runs tollgate serve without a proxy section: its API
// on a free loopback port, the memory store, config as its file.
func startTollgateAPI(w *world, name, config string) (*tollgate, error) {
	dir := w.sub("tollgate-" + name)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	t := &tollgate{api: "http://127.0.0.1:" + strconv.Itoa(port), config: filepath.Join(dir, "tollgate.yaml")}
	if err := os.WriteFile(t.config, []byte(config), 0o644); err != nil {
		return nil, err
	}
	env := []string{"TOLLGATE_SECRET=" + secret, "TOLLGATE_LISTEN=127.0.0.1:" + strconv.Itoa(port)}
	t.proc, err = w.spawn("tollgate-"+name, dir, dir, env, w.bin, "serve", "-config", t.config)
	if err != nil {
		return nil, err
	}
	return t, waitHTTP(t.proc, t.api+"/readyz", 200, time.Minute)
}

// appendFile appends s to the file at path.
func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
