package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/breached"
	"github.com/tollgate-auth/tollgate/breached/hibp"
)

// breachedHarness is a harness whose API answers ranges from b, with v
// verifying its tokens (nil: no authentication).
func breachedHarness(t *testing.T, b api.Breached, v *auth.Verifier) *harness {
	t.Helper()
	h := newHarness(t)
	var err error
	h.metrics = api.NewMetrics(h.engine.Policy())
	h.api, err = api.New(api.Config{Engine: h.engine, Store: h.store, Metrics: h.metrics, Verifier: v, Breached: b})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testCorpus holds password's and 123456's hashes and 299 more in
// password's range, the fullest. A corpus is immutable, and each one
// allocates its range table (megabytes): the tests share one.
func testCorpus(t *testing.T) *breached.Corpus {
	t.Helper()
	c, err := sharedCorpus()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var sharedCorpus = sync.OnceValues(func() (*breached.Corpus, error) {
	var b strings.Builder
	for _, pw := range []string{"password", "123456"} {
		p, s := hibp.Hash(pw)
		fmt.Fprintf(&b, "%s%s:%d\n", p, s, len(pw))
	}
	for i := range 299 {
		fmt.Fprintf(&b, "5BAA6%035X:1\n", i*104729+3)
	}
	return breached.Parse([]byte(b.String()), 0)
})

func liveOf(t *testing.T, cfg breached.Config) *breached.Live {
	t.Helper()
	s, err := breached.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var l breached.Live
	l.Set(s)
	return &l
}

func TestBreached_EveryPrefixAnswersTheSameLengthAndTheClientFindsItsSuffix(t *testing.T) {
	h := breachedHarness(t, liveOf(t, breached.Config{Corpus: testCorpus(t)}), nil)
	prefixes := []string{"5BAA6", "5baa6", "7C4A8", "00000", "FFFFF", "fffff"}
	for i := range 50 {
		prefixes = append(prefixes, fmt.Sprintf("%05X", i*21011))
	}
	var size int
	for _, p := range prefixes {
		res := h.do(t, http.MethodGet, "/v1/breached/"+p, "", "")
		if res.status != http.StatusOK || res.specErr != nil {
			t.Fatalf("%s: status %d (%v), body %s", p, res.status, res.specErr, truncate(res.body))
		}
		if ct := res.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", p, ct)
		}
		if size == 0 {
			size = len(res.body)
		}
		if len(res.body) != size || res.header.Get("Content-Length") != fmt.Sprint(size) {
			t.Fatalf("%s: %d bytes (Content-Length %s), the first answer %d", p, len(res.body), res.header.Get("Content-Length"), size)
		}
	}
	for pw, want := range map[string]int64{"password": 8, "123456": 6, "not breached at all": 0} {
		p, s := hibp.Hash(pw)
		res := h.do(t, http.MethodGet, "/v1/breached/"+p, "", "")
		if got := hibp.Count(res.body, s); got != want {
			t.Errorf("%s: Count = %d, want %d", pw, got, want)
		}
	}
}

func TestBreached_ABadPrefixIsAProblemThatEchoesNothing(t *testing.T) {
	h := breachedHarness(t, liveOf(t, breached.Config{Corpus: testCorpus(t)}), nil)
	for _, p := range []string{"5BAA", "5BAA61", "5BAG6", "%2e%2e", "5BAA6%0A", "secret", "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"} {
		res := h.do(t, http.MethodGet, "/v1/breached/"+p, "", "")
		if res.status != http.StatusBadRequest {
			t.Fatalf("%q: status %d, want 400", p, res.status)
		}
		if pr := res.json(t); pr["type"] != "https://tollgate.dev/problems/invalid-field" || pr["field"] != "prefix" {
			t.Errorf("%q: %v", p, pr)
		}
		if bytes.Contains(bytes.ToLower(res.body), []byte("secret")) || bytes.Contains(res.body, []byte("5BAG6")) {
			t.Errorf("%q: the problem echoes the prefix: %s", p, res.body)
		}
	}
	if got := h.keys(); len(got) != 0 {
		t.Errorf("the store holds %v after range requests", got)
	}
	if strings.Contains(h.logs.String(), "5BAA6") {
		t.Error("the log holds a prefix")
	}
}

func TestBreached_OffIs404BreachedOff(t *testing.T) {
	for name, b := range map[string]api.Breached{
		"no Breached":                 nil,
		"an unset Live":               &breached.Live{},
		"neither corpus nor upstream": liveOf(t, breached.Config{}),
	} {
		h := breachedHarness(t, b, nil)
		res := h.do(t, http.MethodGet, "/v1/breached/5BAA6", "", "")
		if res.status != http.StatusNotFound || res.json(t)["type"] != "https://tollgate.dev/problems/breached-off" {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
}

func TestBreached_AnUpstreamThatFailsIs503NeverARange(t *testing.T) {
	stand := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(stand.Close)
	h := breachedHarness(t, liveOf(t, breached.Config{Upstream: stand.URL + "/range/", UpstreamTimeout: time.Second}), nil)
	res := h.do(t, http.MethodGet, "/v1/breached/5BAA6", "", "")
	if res.status != http.StatusServiceUnavailable || res.json(t)["type"] != "https://tollgate.dev/problems/breached-unavailable" {
		t.Fatalf("%d %s", res.status, res.body)
	}
	if bytes.Contains(res.body, []byte(stand.URL)) || bytes.Contains(res.body, []byte("5BAA6")) {
		t.Errorf("the problem names the upstream or the prefix: %s", res.body)
	}
}

func TestBreached_NeedsTheVerdictsScope(t *testing.T) {
	key := auth.SigningKey{ID: "k", Alg: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef")}
	v, err := auth.New(auth.Config{Audience: "tollgate", Keys: []auth.Key{{ID: "k", Alg: "HS256", Secret: key.Secret}},
		Tenants: []auth.Tenant{{Name: "shop", Issuer: "iss"}}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(scopes ...auth.Scope) string {
		tok, err := auth.Sign(key, "iss", "tollgate", "shop", "app", scopes, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	h := breachedHarness(t, liveOf(t, breached.Config{Corpus: testCorpus(t)}), v)
	if res := h.do(t, http.MethodGet, "/v1/breached/5BAA6", "", ""); res.status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", res.status)
	}
	if res := h.do(t, http.MethodGet, "/v1/breached/5BAA6", "", "", "Authorization", bearer(auth.ScopeAdminRead)); res.status != http.StatusForbidden {
		t.Errorf("an admin:read token: %d, want 403", res.status)
	}
	if res := h.do(t, http.MethodGet, "/v1/breached/5BAA6", "", "", "Authorization", bearer(auth.ScopeVerdicts)); res.status != http.StatusOK {
		t.Errorf("a verdicts token: %d, want 200", res.status)
	}
}

var _ api.Breached = (*breached.Live)(nil)
