package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// recorder is a reusable http.ResponseWriter, lighter than
// httptest.ResponseRecorder, so that the benchmark measures the server.
type recorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) reset() {
	clear(r.h)
	r.code = 0
	r.body.Reset()
}

// benchAPI is the service as tollgate serve builds it on the memory store:
// the built-in policy, metrics on, the real clock.
func benchAPI(b *testing.B) *api.API {
	store := memstore.New(memstore.Config{})
	metrics := api.NewMetrics(nil)
	eng, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: store, Secret: testSecret, Observe: metrics.Observe})
	if err != nil {
		b.Fatal(err)
	}
	a, err := api.New(api.Config{Engine: eng, Store: store, Metrics: metrics})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkCheckReport is one login as the service sees it: a check that
// proceeds and a success report, through the router, middleware, decoding,
// the engine on the memory store (real clock) and verdict encoding. Accounts
// and addresses cycle through 4096 pairs; each success clears its counter.
func BenchmarkCheckReport(b *testing.B) {
	a := benchAPI(b)
	checkURL, _ := url.Parse("/v1/check")
	reportURL, _ := url.Parse("/v1/report")
	hdr := http.Header{"Content-Type": {"application/json"}}
	const pairs = 4096
	checks := make([][]byte, pairs)
	for i := range checks {
		checks[i] = []byte(`{"flow":"login","account":"user` + strconv.Itoa(i) + `@example.com","ip":"10.0.` +
			strconv.Itoa(i>>8) + `.` + strconv.Itoa(i&255) + `"}`)
	}
	rec := &recorder{h: http.Header{}}
	var body bytes.Reader
	var report []byte
	serve := func(u *url.URL, b []byte) {
		rec.reset()
		body.Reset(b)
		a.ServeHTTP(rec, &http.Request{
			Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: hdr, Body: io.NopCloser(&body), ContentLength: int64(len(b)),
			RemoteAddr: "127.0.0.1:1234", Host: "127.0.0.1:8080",
		})
	}
	attemptKey := []byte(`"attempt":"`)

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := checks[i%pairs]
		serve(checkURL, c)
		out := rec.body.Bytes()
		j := bytes.Index(out, attemptKey)
		if rec.code != http.StatusOK || j < 0 || bytes.HasPrefix(out[j+len(attemptKey):], []byte(`"`)) {
			b.Fatalf("check: %d %s", rec.code, out)
		}
		tok := out[j+len(attemptKey):]
		tok = tok[:bytes.IndexByte(tok, '"')]
		report = append(append(append(append(report[:0], c[:len(c)-1]...), `,"outcome":"success","attempt":"`...), tok...), `"}`...)
		serve(reportURL, report)
		if rec.code != http.StatusOK {
			b.Fatalf("report: %d %s", rec.code, rec.body.Bytes())
		}
	}
}

// BenchmarkCheck_FreshSubjects is the check of tollgate-bench's default
// load as the service sees it: a login check with every signal (account,
// address, password fingerprint) on subjects never seen, each proceeding,
// through the router, middleware, decoding, the engine on the memory store
// and verdict encoding. Its allocations are what the garbage collector
// pays for per check (BENCHMARKS.md).
func BenchmarkCheck_FreshSubjects(b *testing.B) {
	a := benchAPI(b)
	checkURL, _ := url.Parse("/v1/check")
	hdr := http.Header{"Content-Type": {"application/json"}}
	rec := &recorder{h: http.Header{}}
	var body bytes.Reader
	var c []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c = append(c[:0], `{"flow":"login","account":"user`...)
		c = strconv.AppendInt(c, int64(i), 10)
		c = append(c, `@example.com","ip":"10.`...)
		c = strconv.AppendInt(c, int64(i>>16&255), 10)
		c = append(c, '.')
		c = strconv.AppendInt(c, int64(i>>8&255), 10)
		c = append(c, '.')
		c = strconv.AppendInt(c, int64(i&255), 10)
		c = append(c, `","password_fingerprint":"`...)
		c = strconv.AppendInt(c, int64(1e15+i), 16)
		c = append(c, `"}`...)
		rec.reset()
		body.Reset(c)
		a.ServeHTTP(rec, &http.Request{
			Method: http.MethodPost, URL: checkURL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: hdr, Body: io.NopCloser(&body), ContentLength: int64(len(c)),
			RemoteAddr: "127.0.0.1:1234", Host: "127.0.0.1:8080",
		})
		if rec.code != http.StatusOK {
			b.Fatalf("check: %d %s", rec.code, rec.body.Bytes())
		}
	}
}
