package e2e_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// The accounts' passwords. None is in testdata/top100.txt.
const (
	alicePassword   = "Tg-e2e-alice-9c41-staple"
	carolPassword   = "Tg-e2e-carol-5e02-lantern"
	bobPassword     = "Tg-e2e-bob-77d3-harbour"
	sprayedPassword = "Tg-e2e-user-1f8a-meadow" // user01..user50's
	// davePassword is the one password in the breached-password corpus of
	// the step-up test (django_breached_test.go).
	davePassword = "Tg-e2e-dave-3b9e-breached"
)

// world is the set-up every test of the binary shares.
type world struct {
	dir    string
	bin    string // the tollgate binary
	redis  *redistest.Instance
	django *django
	wiki   *dokuwiki
	// djangoProxy and wikiProxy are tollgate serve in front of Django and
	// DokuWiki, on the memory store; pair are two more in front of
	// Django, sharing redis.
	djangoProxy, wikiProxy *tollgate
	pair                   [2]*tollgate
	procs                  []*proc
	mu                     sync.Mutex
}

var (
	env *world
	// skipAll, when set, is why every test skips: no real software here.
	skipAll string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	switch {
	case testing.Short():
		skipAll = "starts Django, DokuWiki, redis-server, Chromium and hydra: runs in the full make test, not under -short"
	default:
		skipAll = missingSoftware()
	}
	if skipAll != "" {
		if os.Getenv("CI") == "true" && !testing.Short() {
			fmt.Fprintf(os.Stderr, "e2e: %s (CI=true; scripts/ensure-realapps.sh installs it)\n", skipAll)
			return 1
		}
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tollgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	w := &world{dir: dir}
	defer w.stop()
	start := time.Now()
	if err := w.start(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: setting up: %v\n", err)
		w.dumpLogs()
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: set up in %v\n", time.Since(start).Round(100*time.Millisecond))
	env = w
	defer stopBrowser()
	code := m.Run()
	if code != 0 {
		w.dumpLogs()
	}
	return code
}

// need skips the test when the set-up could not run here.
func need(t *testing.T) *world {
	t.Helper()
	if skipAll != "" {
		t.Skip(skipAll)
	}
	return env
}

// missingSoftware names what the tests need that is not installed, or "".
func missingSoftware() string {
	var missing []string
	for _, bin := range []string{"go", "hydra", "php", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if chromium() == "" {
		missing = append(missing, "chromium")
	}
	if _, err := os.Stat("/usr/share/dokuwiki/doku.php"); err != nil {
		missing = append(missing, "dokuwiki")
	}
	if exec.Command(python, "-c", "import django").Run() != nil {
		missing = append(missing, "python3-django")
	}
	if len(missing) == 0 {
		return ""
	}
	return "not installed: " + strings.Join(missing, ", ")
}

// chromium is the browser's path, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// start builds tollgate and starts the applications, Redis and the
// proxies; what can start at once does.
func (w *world) start() error {
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Go(func() { w.bin, errs[0] = buildTollgate(w.dir) })
	wg.Go(func() { w.redis, errs[1] = redistest.Start(w.sub("redis")) })
	wg.Go(func() { w.django, errs[2] = startDjango(w, w.sub("django")) })
	wg.Go(func() { w.wiki, errs[3] = startDokuWiki(w, w.sub("dokuwiki")) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var err error
	if w.djangoProxy, err = startTollgate(w, "django", w.django.base, djangoRoutes, nil); err != nil {
		return err
	}
	if w.wikiProxy, err = startTollgate(w, "dokuwiki", w.wiki.base, wikiRoutes, nil); err != nil {
		return err
	}
	for i := range w.pair {
		if w.pair[i], err = startTollgate(w, "pair"+strconv.Itoa(i), w.django.base, djangoRoutes, w.redis); err != nil {
			return err
		}
	}
	return nil
}

// stop stops every process started, by its process id.
func (w *world) stop() {
	w.mu.Lock()
	procs := w.procs
	w.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop()
	}
	if w.redis != nil {
		w.redis.Stop()
	}
}

// sub makes the directory name under the set-up's.
func (w *world) sub(name string) string {
	d := filepath.Join(w.dir, name)
	os.MkdirAll(d, 0o755)
	return d
}

// dumpLogs prints the tail of every process's log, for a failed run.
func (w *world) dumpLogs() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		b, _ := os.ReadFile(p.logPath)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		fmt.Fprintf(os.Stderr, "--- %s (%s), the end of its log:\n%s\n", p.name, p.logPath, b)
	}
}

// buildTollgate builds the repository's tollgate into dir.
func buildTollgate(dir string) (string, error) {
	bin := filepath.Join(dir, "tollgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tollgate")
	cmd.Dir = ".." // the service's module, built as make build does
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/tollgate: %v\n%s", err, out)
	}
	return bin, nil
}

// proc is a process the set-up started, its output in a file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once it has exited
	waitErr error
}

// spawn starts argv in dir with env (added to a minimal environment),
// its output to name.log in logDir; it dies with the test binary.
func (w *world) spawn(name, logDir, dir string, env []string, argv ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + logDir, "LANG=C.UTF-8"}, env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	w.mu.Lock()
	w.procs = append(w.procs, p)
	w.mu.Unlock()
	return p, nil
}

// stop kills the process by its id and waits for it.
func (p *proc) stop() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has exited, with its status.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// waitHTTP waits, up to limit, until url answers want; p's exit ends the
// wait early.
func waitHTTP(p *proc, url string, want int, limit time.Duration) error {
	c := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	last := "no answer"
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited while starting (%v); see %s", p.name, err, p.logPath)
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("%s: %s did not answer %d within %v (last: %s)", p.name, url, want, limit, last)
		}
	}
}

// freePort is a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runCmd runs argv in dir with env, bounded, and returns its output.
func runCmd(dir string, env []string, limit time.Duration, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}
