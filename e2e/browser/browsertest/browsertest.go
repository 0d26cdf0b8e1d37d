// Package browsertest drives pages in headless Chromium (with chromedp) for
// the end-to-end tests of this module (the demo logins of examples/, the
// challenge page): it finds the browser (skipping the
// test without one, failing it when CI=true), starts it bounded in time and
// checks that none of its processes outlives the test, and gives each
// simulated end user a Tab of its own.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Path finds Chromium: the test is skipped without it, and fails
// without it when CI=true (scripts/ensure-chromium.sh installs it).
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium, chromium-browser or google-chrome on PATH; scripts/ensure-chromium.sh installs one"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true)")
	}
	t.Skip(msg)
	return ""
}

// Start starts headless Chromium for the test, bounded by budget, and stops
// it at cleanup, failing the test if any of its processes outlives it.
func Start(t *testing.T, budget time.Duration) context.Context {
	t.Helper()
	path, profile := Path(t), t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests run as root
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(900, 820),
	)
	ctx, cancelTimeout := context.WithTimeout(context.Background(), budget)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		// Close the browser gracefully, so that it reaps its own child
		// processes; then the allocator kills whatever is left and waits.
		closing, cancelClosing := context.WithTimeout(browserCtx, 10*time.Second)
		if err := chromedp.Cancel(closing); err != nil {
			t.Logf("closing the browser: %v", err)
		}
		cancelClosing()
		cancelBrowser()
		cancelAlloc()
		cancelTimeout()
		if left := processesUsing(profile); len(left) > 0 {
			t.Errorf("browser processes left after the test: %v", left)
		}
	})
	if err := chromedp.Do(browserCtx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", path, err)
	}
	return browserCtx
}

// processesUsing lists the processes whose command line names dir (the
// browser's profile, which every process of it is started with), waiting
// up to 5 seconds for them to go.
func processesUsing(dir string) []string {
	var left []string
	for range 50 {
		left = left[:0]
		cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range cmdlines {
			b, err := os.ReadFile(f)
			if err == nil && strings.Contains(string(b), dir) {
				left = append(left, filepath.Base(filepath.Dir(f)))
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// Tab is one browser profile of its own (cookies apart) that plays one
// client address, which the app under test reads from X-Forwarded-For.
type Tab struct {
	t   *testing.T
	ctx context.Context
	url string
}

// NewTab opens a Tab on browserCtx (from Start) for the app at base, as ip.
func NewTab(t *testing.T, browserCtx context.Context, base, ip string) *Tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	b := &Tab{t: t, ctx: ctx, url: base}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network.Enable: %v", err)
	}
	b.SetIP(ip)
	return b
}

// SetIP makes every request of the tab say it comes from ip, as the app's
// (loopback) reverse proxy would.
func (b *Tab) SetIP(ip string) {
	b.t.Helper()
	_, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-For": ip}})
	if err != nil {
		b.t.Fatalf("setting X-Forwarded-For: %v", err)
	}
}

// Open loads path and returns the status of the page.
func (b *Tab) Open(path string) int64 {
	b.t.Helper()
	res, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(b.url+path))
	if err != nil {
		b.t.Fatalf("opening %s: %v", path, err)
	}
	return res.Status
}

// Fill sets form fields, by element id.
func (b *Tab) Fill(fields ...string) {
	b.t.Helper()
	for i := 0; i+1 < len(fields); i += 2 {
		if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS("#"+fields[i]), fields[i+1])); err != nil {
			b.t.Fatalf("filling #%s: %v", fields[i], err)
		}
	}
}

// Submit clicks the element with the id, waits for the page it leads to
// and returns its response (after redirects).
func (b *Tab) Submit(id string) *network.Response {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS("#"+id)))
	if err != nil {
		b.t.Fatalf("clicking #%s: %v", id, err)
	}
	return res
}

// Click is submit's status.
func (b *Tab) Click(id string) int64 {
	b.t.Helper()
	return b.Submit(id).Status
}

// Wait waits, at most within, until the page shows an element matching
// sel: for a page that moves on by itself, such as a challenge page whose
// solver posts its form once it is done.
func (b *Tab) Wait(sel string, within time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		b.t.Fatalf("waiting %v for %s: %v", within, sel, err)
	}
}

// Tick ticks a checkbox without leaving the page.
func (b *Tab) Tick(id string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS("#"+id))); err != nil {
		b.t.Fatalf("ticking #%s: %v", id, err)
	}
}

// Text is the page's visible text.
func (b *Tab) Text() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		b.t.Fatalf("reading the page: %v", err)
	}
	return s
}

// Read is the text of the element sel.
func (b *Tab) Read(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// Shows fails the test unless the page's text holds every want and none of
// the not (texts after a "!").
func (b *Tab) Shows(wants ...string) string {
	b.t.Helper()
	text := b.Text()
	for _, w := range wants {
		if not, ok := strings.CutPrefix(w, "!"); ok {
			if strings.Contains(text, not) {
				b.t.Errorf("the page shows %q; it should not:\n%s", not, text)
			}
		} else if !strings.Contains(text, w) {
			b.t.Errorf("the page does not show %q:\n%s", w, text)
		}
	}
	return text
}

// Screenshot saves the viewport as name.png in the test's artifact
// directory (kept with go test -artifacts -outputdir DIR).
func (b *Tab) Screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// Cookies are the browser's cookies for the app, by name.
func (b *Tab) Cookies() map[string]*network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.url}})
	if err != nil {
		b.t.Fatalf("network.GetCookies: %v", err)
	}
	m := make(map[string]*network.Cookie)
	for _, c := range res.Cookies {
		m[c.Name] = c
	}
	return m
}
