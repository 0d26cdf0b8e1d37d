package breached

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/breached/hibp"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// fullCorpus returns a corpus whose range 5BAA6 (password's) holds n
// hashes, range 7C4A8 (123456's) one, and no other range any.
func fullCorpus(t testing.TB, n int) *Corpus {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s:9659365\n%s:179863340\n", hexOf("password"), hexOf("123456"))
	for i := range n - 1 {
		fmt.Fprintf(&b, "5BAA6%035X:%d\n", i*7919+1, i+1)
	}
	c, err := Parse([]byte(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newService(t testing.TB, cfg Config) *Service {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkBody asserts that body is lines lines of SUFFIX:COUNT, CRLF.
func checkBody(t *testing.T, body []byte, lines int) {
	t.Helper()
	if got, want := len(body), lines*48; got != want {
		t.Fatalf("the answer is %d bytes, want %d", got, want)
	}
	for i, line := range bytes.SplitAfter(body, []byte("\r\n")) {
		if len(line) == 0 && i == lines {
			break
		}
		if len(line) != 48 || line[35] != ':' || !bytes.HasSuffix(line, []byte("\r\n")) ||
			bytes.ContainsFunc(line[:35], func(r rune) bool { return !strings.ContainsRune("0123456789ABCDEF", r) }) {
			t.Fatalf("line %d is %q", i, line)
		}
	}
}

func TestRange_EveryPrefixAnswersTheSameLinesAndBytes(t *testing.T) {
	s := newService(t, Config{Corpus: fullCorpus(t, 300)})
	if got, want := s.Lines(), 512; got != want {
		t.Fatalf("Lines() = %d, want %d (300 rounded up past a multiple of 256)", got, want)
	}
	prefixes := []string{"5BAA6", "5baa6", "7C4A8", "00000", "FFFFF", "ABCDE"}
	for i := range 200 {
		prefixes = append(prefixes, fmt.Sprintf("%05X", i*5237))
	}
	lens := map[int]int{}
	for _, p := range prefixes {
		body, err := s.Range(context.Background(), p)
		if err != nil {
			t.Fatalf("Range(%s): %v", p, err)
		}
		lens[len(body)]++
		checkBody(t, body, s.Lines())
	}
	if len(lens) != 1 {
		t.Fatalf("answers of %d different lengths: %v", len(lens), lens)
	}
	// The fullest range holds all its hashes, the others none.
	full, _ := s.Range(context.Background(), "5BAA6")
	_, sfx := hibp.Hash("password")
	if got := hibp.Count(full, sfx); got != 9659365 {
		t.Errorf("Count(password) in its range = %d, want 9659365", got)
	}
	if got := bytes.Count(full, []byte(":0000000000\r\n")); got != 512-300 {
		t.Errorf("the fullest range has %d padding lines, want %d", got, 512-300)
	}
	empty, _ := s.Range(context.Background(), "00000")
	if got := bytes.Count(empty, []byte(":0000000000\r\n")); got != 512 {
		t.Errorf("an empty range has %d padding lines, want 512", got)
	}
}

func TestRange_SharedVectorsFoundByTheClientsReading(t *testing.T) {
	s := newService(t, Config{Corpus: fullCorpus(t, 3)})
	for _, pw := range []string{"password", "123456", "not breached"} {
		p, sfx := hibp.Hash(pw)
		body, err := s.Range(context.Background(), strings.ToLower(p))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"password": 9659365, "123456": 179863340}[pw]
		if got := hibp.Count(body, sfx); got != want {
			t.Errorf("%s: Count = %d, want %d", pw, got, want)
		}
	}
}

func TestRange_BadPrefixAndOff(t *testing.T) {
	s := newService(t, Config{Corpus: fullCorpus(t, 1)})
	for _, p := range []string{"", "5BAA", "5BAA61", "5BAG6", "../../", "5BAA6\n"} {
		if _, err := s.Range(context.Background(), p); !errors.Is(err, ErrBadPrefix) {
			t.Errorf("Range(%q) = %v, want ErrBadPrefix", p, err)
		}
	}
	var live Live
	if _, err := live.Range(context.Background(), "5BAA6"); !errors.Is(err, ErrOff) {
		t.Errorf("an unset Live answers %v, want ErrOff", err)
	}
	live.Set(newService(t, Config{}))
	if _, err := live.Range(context.Background(), "5BAA6"); !errors.Is(err, ErrOff) {
		t.Errorf("a Service without corpus or upstream answers %v, want ErrOff", err)
	}
	live.Set(s)
	if _, err := live.Range(context.Background(), "5BAA6"); err != nil {
		t.Errorf("Live with a corpus: %v", err)
	}
}

func TestNew_LinesBelowTheFullestRangeOrPastMaxLinesIsAnError(t *testing.T) {
	if _, err := New(Config{Corpus: fullCorpus(t, 10), Lines: 9}); err == nil {
		t.Error("New accepted 9 lines for a range of 10")
	}
	var b strings.Builder
	for i := range MaxLines {
		fmt.Fprintf(&b, "00000%035X:1\n", i)
	}
	skewed, err := Parse([]byte(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Corpus: skewed}); err == nil {
		t.Error("New accepted a corpus whose every answer would be 65,792 lines")
	}
	if _, err := New(Config{Upstream: "https://example.com/", Lines: MaxLines + 1}); err == nil {
		t.Error("New accepted an upstream with more than MaxLines lines")
	}
	if _, err := New(Config{Upstream: "ftp://example.com/"}); err == nil {
		t.Error("New accepted an ftp upstream")
	}
}

// upstream is a loopback stand-in for a range API.
type upstream struct {
	*httptest.Server
	calls   atomic.Int64
	padding atomic.Int64 // requests that asked for padding
	status  atomic.Int64
	body    atomic.Pointer[string]
	stall   chan struct{} // when not nil, a request waits for it or its end
}

func newUpstream(t *testing.T, body string) *upstream {
	u := &upstream{}
	u.status.Store(200)
	u.body.Store(&body)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		if r.Header.Get("Add-Padding") == "true" {
			u.padding.Add(1)
		}
		if u.stall != nil {
			select {
			case <-u.stall:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(int(u.status.Load()))
		fmt.Fprint(w, *u.body.Load())
	}))
	t.Cleanup(u.Close)
	return u
}

// hibpBody is password's range as HIBP answers it with padding.
const hibpBody = "09936F675CC81E74EF5E8E25D940ED90475:705\r\n" +
	"1E4C9B93F3F0682250B6CF8331B7EE68FD8:9659365\r\n" +
	"2E4AE97BA94D0EDA82F8F6D05584EF8AA38:0\r\n" +
	"malformed line\r\n" +
	"a6a6513270e269e0d37f2a74de452e6b438:396\n"

func TestUpstream_RangeIsRepaddedAndCached(t *testing.T) {
	u := newUpstream(t, hibpBody)
	clock := testclock.New(testclock.Epoch)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, Config{Upstream: u.URL + "/range/", Lines: 64, CacheEntries: 2, CacheTTL: time.Minute, Now: clock.Now, Metrics: m})
	_, sfx := hibp.Hash("password")
	steps := []struct {
		name    string
		advance time.Duration
		prefix  string
		calls   int64
	}{
		{"t=0: a miss asks the upstream", 0, "5BAA6", 1},
		{"t=0: the same range again is a cache hit", 0, "5baa6", 1},
		{"t=+59s: still cached", 59 * time.Second, "5BAA6", 1},
		{"t=+60s: expired, asked again", time.Second, "5BAA6", 2},
		{"t=+60s: a second range", 0, "00000", 3},
		{"t=+60s: a third range evicts the least recently used (5BAA6)", 0, "11111", 4},
		{"t=+60s: 00000 still cached", 0, "00000", 4},
		{"t=+60s: 5BAA6 asked again", 0, "5BAA6", 5},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		body, err := s.Range(context.Background(), st.prefix)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		checkBody(t, body, 64)
		if got := hibp.Count(body, sfx); got != 9659365 {
			t.Errorf("%s: Count(password) = %d", st.name, got)
		}
		if got := u.calls.Load(); got != st.calls {
			t.Errorf("%s: %d upstream calls, want %d", st.name, got, st.calls)
		}
	}
	if got := s.cache.len(); got != 2 {
		t.Errorf("the cache holds %d ranges, want 2", got)
	}
	if got, want := u.padding.Load(), u.calls.Load(); got != want {
		t.Errorf("%d of %d upstream requests asked for padding", got, want)
	}
	body, _ := s.Range(context.Background(), "5BAA6")
	if got := bytes.Count(body, []byte(":0000000000\r\n")); got != 64-3 {
		t.Errorf("%d padding lines, want 61 (the upstream's padding and malformed line dropped)", got)
	}
	if got := counter(t, reg, "tollgate_breached_answers_total", sourceCache); got != 4 {
		t.Errorf("cache answers = %v, want 4", got)
	}
}

func TestUpstream_FailuresAreUnavailableNeverARange(t *testing.T) {
	big := strings.Repeat("1E4C9B93F3F0682250B6CF8331B7EE68FD8:1\r\n", 5)
	tests := []struct {
		name   string
		status int
		body   string
		kind   string
	}{
		{"500", 500, "", errStatus},
		{"429", 429, hibpBody, errStatus},
		{"more hashes than lines", 200, big, errTooLarge},
		{"more bytes than lines", 200, strings.Repeat(" ", 4*64+1), errTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, tt.body)
			u.status.Store(int64(tt.status))
			reg := prometheus.NewRegistry()
			m, _ := NewMetrics(reg)
			s := newService(t, Config{Upstream: u.URL + "/", Lines: 4, Metrics: m})
			for range 2 {
				if _, err := s.Range(context.Background(), "5BAA6"); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Range = %v, want ErrUnavailable", err)
				}
			}
			if got := u.calls.Load(); got != 2 {
				t.Errorf("%d upstream calls, want 2 (a failure is not cached)", got)
			}
			if got := counter(t, reg, "tollgate_breached_upstream_errors_total", tt.kind); got != 2 {
				t.Errorf("upstream errors of kind %s = %v, want 2", tt.kind, got)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		u := newUpstream(t, "")
		u.Close()
		s := newService(t, Config{Upstream: u.URL + "/"})
		_, err := s.Range(context.Background(), "5BAA6")
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Range = %v, want ErrUnavailable", err)
		}
		// An error may be logged; a prefix never is.
		if strings.Contains(err.Error(), "5BAA6") || strings.Contains(err.Error(), u.URL) {
			t.Errorf("the error %q names the prefix or the URL", err)
		}
	})
}

func TestUpstream_ASlowUpstreamIsCutAtTheTimeout(t *testing.T) {
	u := newUpstream(t, hibpBody)
	u.stall = make(chan struct{})
	defer close(u.stall)
	s := newService(t, Config{Upstream: u.URL + "/", UpstreamTimeout: 50 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := s.Range(context.Background(), "5BAA6")
		done <- err
	}()
	// The test's own bound: the upstream never answers, so only the
	// timeout can end the call.
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Range = %v, want ErrUnavailable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Range did not return: the upstream timeout was not applied")
	}
}

func TestUpstream_ACorpusWinsOverTheUpstream(t *testing.T) {
	u := newUpstream(t, hibpBody)
	s := newService(t, Config{Corpus: fullCorpus(t, 1), Upstream: u.URL + "/"})
	if _, err := s.Range(context.Background(), "5BAA6"); err != nil {
		t.Fatal(err)
	}
	if got := u.calls.Load(); got != 0 {
		t.Errorf("%d upstream calls with a corpus, want 0", got)
	}
}

// counter is the value of the counter name whose one label is value.
func counter(t *testing.T, reg *prometheus.Registry, name, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == name && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, value)
	return 0
}

// Any prefix is an answer of exactly Lines lines or ErrBadPrefix, never a
// panic or an answer of another size.
func FuzzRange(f *testing.F) {
	s := newService(f, Config{Corpus: fullCorpus(f, 20)})
	for _, p := range []string{"5BAA6", "5baa6", "00000", "fffff", "5BAA", "5BAG6", "+5BAA", "0x5BA", "５BAA6", ""} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, prefix string) {
		body, err := s.Range(context.Background(), prefix)
		if err != nil {
			if !errors.Is(err, ErrBadPrefix) || hibp.ValidPrefix(prefix) {
				t.Fatalf("Range(%q) = %v", prefix, err)
			}
			return
		}
		if !hibp.ValidPrefix(prefix) || len(body) != s.Len() {
			t.Fatalf("Range(%q) answered %d bytes, want %d of a valid prefix", prefix, len(body), s.Len())
		}
	})
}
