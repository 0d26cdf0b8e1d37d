package challengepage_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/e2e/browser/browsertest"
)

// testSecret is 32 bytes, as a server's.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

var ctx = context.Background()

// loginApp is a login behind a proxy that challenges every POST /login:
// the proxy holds the post, serves the page, and on the solution post
// restores the held request and hands it to the app, which echoes it.
type loginApp struct {
	c        *challenge.Challenger
	mu       sync.Mutex
	posted   []byte // the body of the POST /login the proxy held
	restored []byte // the body the app got after the challenge
	cookies  int    // requests that carried a Cookie header
}

func (a *loginApp) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><form method="post" action="/login?next=%2Fhome">`+
			`<input id="username" name="username"><input id="password" name="password" type="password">`+
			`<button id="go">Log in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Restored") == "" { // the proxy: challenge it
			var body bytes.Buffer
			body.ReadFrom(r.Body)
			a.mu.Lock()
			a.posted = body.Bytes()
			a.mu.Unlock()
			r.Body = http.NoBody
			handle, err := a.c.Hold(r.Context(), "", challenge.Submission{Method: r.Method, Path: r.URL.RequestURI(),
				ContentType: r.Header.Get("Content-Type"), Body: body.Bytes()})
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			ch, err := a.c.Issue(r.Context(), challenge.IssueOptions{Handle: handle})
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			a.c.ServePage(w, r, ch, challenge.PageOptions{Handle: handle})
			return
		}
		var body bytes.Buffer // the app, on the restored request
		body.ReadFrom(r.Body)
		a.mu.Lock()
		a.restored = body.Bytes()
		a.mu.Unlock()
		fmt.Fprintf(w, `<!doctype html><pre id="done">%s %s</pre>`, r.Method, html.EscapeString(r.URL.RequestURI()))
	})
	mux.HandleFunc("POST "+challenge.DefaultSolutionPath, func(w http.ResponseWriter, r *http.Request) {
		red, err := a.c.Redeem(r.Context(), "", r, netip.Addr{})
		if err != nil || !red.Solved {
			fmt.Fprintf(w, `<!doctype html><p id="failed">%s %v</p>`, red.Reason, err)
			return
		}
		restored, err := challenge.Restore(r, red.Submission)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		restored.Header.Set("X-Restored", "1")
		mux.ServeHTTP(w, restored)
	})
	mux.HandleFunc("GET /plugin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'")
		fmt.Fprint(w, `<!doctype html><title>plug-in</title><script src="/solver.js"></script>`)
	})
	mux.HandleFunc("GET /solver.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(challenge.Solver())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Cookie") != "" {
			a.mu.Lock()
			a.cookies++
			a.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	})
}

// startApp serves a loginApp on loopback (a secure context, where Web
// Crypto exists) with the default difficulty, and opens a browser tab.
func startApp(t *testing.T) (*loginApp, string, context.Context) {
	browser := browsertest.Start(t, 3*time.Minute)
	c, err := challenge.New(challenge.Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	app := &loginApp{c: c}
	srv := httptest.NewServer(app.handler())
	t.Cleanup(srv.Close)
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	return app, srv.URL, tab
}

func TestBrowser_TheBuiltInPageSolvesInChromiumAndTheLoginGoesThrough(t *testing.T) {
	app, base, tab := startApp(t)
	password := "p@ss w0rd ✓ & more=yes"
	err := chromedp.Do(tab,
		chromedp.Navigate(base+"/login"),
		chromedp.SetValue(chromedp.CSS("#username"), "alice@example.com"),
		chromedp.SetValue(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#go")),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The page solves on its own and posts; the app answers #done (or the
	// proxy #failed).
	wait, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	if err := chromedp.Do(wait, chromedp.WaitVisible(chromedp.CSS("#done, #failed"))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("waiting for the login to go through: %v; the page says %q", err, text)
	}
	text, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if want := "POST /login?next=%2Fhome"; text != want {
		t.Fatalf("the page says %q, want %q", text, want)
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	if len(app.posted) == 0 || !bytes.Equal(app.restored, app.posted) {
		t.Fatalf("the app got %q, the browser posted %q", app.restored, app.posted)
	}
	if app.cookies != 0 {
		t.Fatalf("%d requests carried a cookie", app.cookies)
	}
}

// TestBrowser_SolveTimeOfTheDefaultDifficulty measures (and reports, never
// asserts) how long Chromium's Web Crypto takes to solve challenges of the
// default difficulty, through the solver a plug-in's page loads; each
// nonce it finds must verify.
func TestBrowser_SolveTimeOfTheDefaultDifficulty(t *testing.T) {
	app, base, tab := startApp(t)
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/plugin")); err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	var ms []float64
	for range rounds {
		ch, err := app.c.Issue(ctx, challenge.IssueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expr := fmt.Sprintf(`(async () => { const t0 = performance.now(); const n = await tollgateSolve(%q, %d); return [n, String(performance.now() - t0)]; })()`,
			ch.Token, ch.Difficulty)
		got, err := chromedp.Run(tab, chromedp.Evaluate[[2]string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		r, err := app.c.Verify(ctx, "", "", challenge.Solution{Token: ch.Token, Nonce: got[0]})
		if err != nil || !r.Solved {
			t.Fatalf("the browser's nonce %s: %+v, %v", got[0], r, err)
		}
		var d float64
		fmt.Sscan(got[1], &d)
		ms = append(ms, d)
	}
	slices.Sort(ms)
	var sum float64
	for _, d := range ms {
		sum += d
	}
	t.Logf("difficulty %d (%d hashes expected): %d solves in headless Chromium, median %.0f ms, mean %.0f ms, min %.0f ms, max %.0f ms",
		challenge.DefaultDifficulty, 1<<challenge.DefaultDifficulty, rounds, ms[rounds/2], sum/rounds, ms[0], ms[rounds-1])
}
