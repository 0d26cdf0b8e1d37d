package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHead_GetRoutesAnswerLikeGetWithoutABody: HEAD on every GET route is
// answered as GET is — same status, same Content-Type, no body — over a real
// server, so that what a load balancer's HEAD probe sees is what is tested.
func TestHead_GetRoutesAnswerLikeGetWithoutABody(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(h.api)
	t.Cleanup(srv.Close)
	tests := []struct {
		path string
		// sameLength: the body does not change between two requests, so
		// HEAD's Content-Length is GET's (a scrape of /metrics counts the
		// request before it).
		sameLength bool
	}{
		{"/healthz", true},
		{"/readyz", true},
		{"/metrics", false},
		{"/openapi.yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			get := requestServer(t, srv, http.MethodGet, tt.path)
			head := requestServer(t, srv, http.MethodHead, tt.path)
			if got, want := head.status, http.StatusOK; got != want || get.status != want {
				t.Fatalf("HEAD %s = %d, GET = %d, want %d", tt.path, got, get.status, want)
			}
			if len(head.body) != 0 {
				t.Errorf("HEAD %s has a body of %d bytes, want none", tt.path, len(head.body))
			}
			if len(get.body) == 0 {
				t.Errorf("GET %s has no body", tt.path)
			}
			if got, want := head.header.Get("Content-Type"), get.header.Get("Content-Type"); got != want || got == "" {
				t.Errorf("HEAD %s Content-Type = %q, want GET's %q", tt.path, got, want)
			}
			if got, want := head.header.Get("Content-Length"), get.header.Get("Content-Length"); tt.sameLength && got != want {
				t.Errorf("HEAD %s Content-Length = %q, want GET's %q", tt.path, got, want)
			}
			for _, k := range []string{"Cache-Control", "X-Request-Id"} {
				if head.header.Get(k) == "" {
					t.Errorf("HEAD %s has no %s", tt.path, k)
				}
			}
		})
	}
}

// TestHead_OtherRoutesKeepTheirAllowHeader: HEAD is no way around a route's
// methods: a POST route answers HEAD with 405 and Allow: POST, and a GET
// route lists HEAD in its Allow header.
func TestHead_OtherRoutesKeepTheirAllowHeader(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		method, path, wantAllow string
	}{
		{http.MethodHead, "/v1/check", "POST"},
		{http.MethodHead, "/v1/report", "POST"},
		{http.MethodHead, "/v1/otp/send", "POST"},
		{http.MethodHead, "/v1/admin/reset", "POST"},
		{http.MethodPost, "/healthz", "GET, HEAD"},
		{http.MethodDelete, "/metrics", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := h.do(t, tt.method, tt.path, "", "")
			if got, want := res.status, http.StatusMethodNotAllowed; got != want {
				t.Fatalf("%s %s = %d, want %d; body %s", tt.method, tt.path, got, want, res.body)
			}
			if got := res.header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("%s %s Allow = %q, want %q", tt.method, tt.path, got, tt.wantAllow)
			}
			if got, want := res.json(t)["type"], "https://tollgate.dev/problems/method-not-allowed"; got != want {
				t.Errorf("%s %s type = %v, want %v", tt.method, tt.path, got, want)
			}
		})
	}
}

// TestHead_UnknownRouteIsNotFound: HEAD on a route that does not exist is
// 404, not a GET of something else.
func TestHead_UnknownRouteIsNotFound(t *testing.T) {
	h := newHarness(t)
	if got, want := h.do(t, http.MethodHead, "/nope", "", "").status, http.StatusNotFound; got != want {
		t.Errorf("HEAD /nope = %d, want %d", got, want)
	}
}

// requestServer makes one request to a running server.
func requestServer(tb testing.TB, srv *httptest.Server, method, path string) *response {
	tb.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: body}
}
