package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/proxy"
)

// The benchmarks measure what the proxy adds to httputil.ReverseProxy, so
// the upstream is a handler called in the process (localTransport), not a
// network round trip whose noise would hide it; and both proxies copy
// through the same kind of buffer pool. Run them side by side:
//
//	go test -run '^$' -bench . -count=6 ./proxy/ | benchstat -col /proxy -
//
// (BenchmarkBareReverseProxy and BenchmarkPassThrough are one benchmark's
// two columns: BenchmarkProxy/proxy=bare and /proxy=tollgate.)

// localTransport answers a request with its handler, in the process.
type localTransport struct{ h http.Handler }

func (t localTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	t.h.ServeHTTP(w, r)
	resp := w.Result()
	resp.Request = r
	return resp, nil
}

// benchUpstream is a small static answer, or the fake login's.
func benchUpstream() http.Handler {
	page := []byte(strings.Repeat("console.log(1);\n", 64)) // 1 KiB of app.js
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3ss10n", Path: "/"})
			http.Redirect(w, r, "/home", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(page)
	})
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// benchPool is the proxy's pool of copy buffers, for the bare proxy.
type benchPool struct{}

var benchBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (benchPool) Get() []byte  { return benchBuffers.Get().(*[32 << 10]byte)[:] }
func (benchPool) Put(b []byte) { benchBuffers.Put((*[32 << 10]byte)(b)) }

var benchUpstreamURL, _ = url.Parse("http://app.internal:8000")

// browserRequest is a page asset's request as a browser sends it.
func browserRequest() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/static/app.js?v=3", nil)
	r.RemoteAddr = "198.51.100.7:40000"
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/140.0")
	r.Header.Set("Accept", "*/*")
	r.Header.Set("Accept-Language", "en-GB,en;q=0.5")
	r.Header.Set("Accept-Encoding", "gzip, deflate, br")
	r.Header.Set("Cookie", "sessionid=abc; csrftoken=def")
	return r
}

// newBenchProxy is a tollgate proxy with the fake login's route on the
// built-in policy, on a memory store and a test clock.
func newBenchProxy(b testing.TB, clock *testclock.Clock) http.Handler {
	b.Helper()
	eng, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: memstore.New(memstore.Config{Now: clock.Now}),
		Secret: testSecret, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Upstream: benchUpstreamURL, Secret: testSecret, Routes: []proxy.Route{formRoute(), jsonRoute()},
		Transport: localTransport{benchUpstream()}, Now: clock.Now}, eng)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// bareReverseProxy is what the proxy is built on, configured as it
// configures it for a request of no route.
func bareReverseProxy() http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(benchUpstreamURL)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:  localTransport{benchUpstream()},
		BufferPool: benchPool{},
	}
}

// servePassThrough serves a browser's asset request through h b.N times.
func servePassThrough(b *testing.B, h http.Handler) {
	r := browserRequest()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// BenchmarkBareReverseProxy is httputil.ReverseProxy alone: the baseline
// of BenchmarkPassThrough.
func BenchmarkBareReverseProxy(b *testing.B) {
	servePassThrough(b, bareReverseProxy())
}

// BenchmarkPassThrough is a request of no route through the proxy: it
// should cost what BenchmarkBareReverseProxy costs, and no allocation
// more.
func BenchmarkPassThrough(b *testing.B) {
	servePassThrough(b, newBenchProxy(b, testclock.New(time.Time{})))
}

// BenchmarkLogin is a form login through the proxy: read and parse the
// body, fingerprint the password, a check, the upstream, classify, a
// report and the device cookie. The owner signs in from a new address
// each time, 100 ms apart on the test clock.
func BenchmarkLogin(b *testing.B) {
	clock := testclock.New(time.Time{})
	h := newBenchProxy(b, clock)
	form := url.Values{"username": {owner}, "password": {ownerPassword}, "csrfmiddlewaretoken": {strings.Repeat("c", 64)}}.Encode()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":40000"
		clear(w.h)
		h.ServeHTTP(w, r)
		clock.Advance(100 * time.Millisecond)
	}
}

// A request of no route allocates nothing beyond what the bare
// ReverseProxy does: the route match, the cookie check and the forwarding
// headers are free.
func TestPassThrough_AllocatesNoMoreThanTheBareReverseProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over 1,000 requests")
	}
	tg := newBenchProxy(t, testclock.New(time.Time{}))
	allocs := func(h http.Handler, r *http.Request) float64 {
		w := &discardWriter{h: http.Header{}}
		return testing.AllocsPerRun(1000, func() {
			clear(w.h)
			h.ServeHTTP(w, r)
		})
	}
	spoofed := browserRequest()
	spoofed.Header.Set("X-Forwarded-For", "1.2.3.4")
	for name, r := range map[string]*http.Request{"a browser's request": browserRequest(), "with a forged X-Forwarded-For": spoofed} {
		bare, ours := allocs(bareReverseProxy(), r), allocs(tg, r)
		if ours > bare {
			t.Errorf("%s: %v allocations a request through the proxy, %v through the bare ReverseProxy", name, ours, bare)
		}
	}
}
