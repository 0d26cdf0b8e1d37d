package contract_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/contract"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// newAPI is the API as api.New builds it, on a memory store.
func newAPI(t *testing.T) *api.API {
	t.Helper()
	store := memstore.New(memstore.Config{})
	eng, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: store, Secret: []byte("tollgate-contract-tests-secret-32-bytes")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := api.New(api.Config{Engine: eng, Store: store, Metrics: api.NewMetrics(config.DefaultPolicy())})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOpenAPI_IsValid: openapi.yaml loads and validates as OpenAPI 3.1.
func TestOpenAPI_IsValid(t *testing.T) {
	doc, err := contract.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi = %s, want 3.1", doc.OpenAPI)
	}
}

// TestRoutesMatchSpec fails when a route exists in the router but not in
// openapi.yaml, or the other way round: the API as api.New builds it.
func TestRoutesMatchSpec(t *testing.T) {
	doc, err := contract.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var inSpec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inSpec = append(inSpec, method+" "+path)
		}
	}
	var inRouter []string
	err = chi.Walk(newAPI(t).Router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		inRouter = append(inRouter, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(inSpec)
	slices.Sort(inRouter)
	if !slices.Equal(inSpec, inRouter) {
		t.Errorf("routes differ\nrouter: %v\nspec:   %v", inRouter, inSpec)
	}
}

// exchange serves one request on a and returns it with its answer.
func exchange(t *testing.T, a *api.API, method, url, body string) contract.Exchange {
	t.Helper()
	req := httptest.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return contract.Exchange{Method: method, URL: url, Header: req.Header, Body: []byte(body),
		Status: rec.Code, ResponseHeader: rec.Header(), ResponseBody: rec.Body.Bytes()}
}

// TestCheck_FindsWhatTheDocumentDoesNotDescribe: the API's own answers
// pass; every way an answer can depart from openapi.yaml is an error; a
// request the document rejects is said to be one. The api tests rely on
// this checker for every response they get.
func TestCheck_FindsWhatTheDocumentDoesNotDescribe(t *testing.T) {
	a := newAPI(t)
	check := exchange(t, a, http.MethodPost, "/v1/check", `{"flow":"login","account":"a","ip":"192.0.2.1"}`)
	if check.Status != http.StatusOK {
		t.Fatalf("check: %d %s", check.Status, check.ResponseBody)
	}
	with := func(e contract.Exchange, f func(*contract.Exchange)) contract.Exchange {
		e.ResponseHeader = e.ResponseHeader.Clone()
		f(&e)
		return e
	}
	tests := []struct {
		name       string
		e          contract.Exchange
		errors     bool   // the response departs from the document
		requestErr bool   // the document rejects the request
		fatal      string // the exchange cannot be checked
	}{
		{"a verdict as served", check, false, false, ""},
		{"an action the document lacks", with(check, func(e *contract.Exchange) {
			e.ResponseBody = bytes.Replace(e.ResponseBody, []byte(`"proceed"`), []byte(`"wave-through"`), 1)
		}), true, false, ""},
		{"a header the response must carry", with(check, func(e *contract.Exchange) { e.ResponseHeader.Del("Cache-Control") }), true, false, ""},
		{"a status the operation lacks", with(check, func(e *contract.Exchange) { e.Status = http.StatusTeapot }), true, false, ""},
		{"a request without its required fields, refused as served", exchange(t, a, http.MethodPost, "/v1/check", `{}`), false, true, ""},
		{"a 404 as served", exchange(t, a, http.MethodGet, "/nope", ""), false, true, ""},
		{"a 404 that is no problem", with(exchange(t, a, http.MethodGet, "/nope", ""), func(e *contract.Exchange) {
			e.ResponseBody = []byte(`{"error":"not found"}`)
		}), true, true, ""},
		{"an undocumented route answered", with(check, func(e *contract.Exchange) { e.URL = "/v1/secret" }), false, false, "is not in openapi.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := contract.Check(tt.e)
			if tt.fatal != "" {
				if !strings.Contains(r.Fatal, tt.fatal) {
					t.Errorf("Fatal = %q, want %q", r.Fatal, tt.fatal)
				}
				return
			}
			if r.Fatal != "" {
				t.Fatalf("Fatal = %q", r.Fatal)
			}
			if got := len(r.Errors) > 0; got != tt.errors {
				t.Errorf("errors %q; want some: %v", r.Errors, tt.errors)
			}
			if got := r.RequestError != ""; got != tt.requestErr {
				t.Errorf("request error %q; want one: %v", r.RequestError, tt.requestErr)
			}
		})
	}
}

// TestServe_AnswersEachLineAndRefusesGarbage: one result per line, in
// order; a line that is no exchange is a fatal result, never silence or a
// pass.
func TestServe_AnswersEachLineAndRefusesGarbage(t *testing.T) {
	in := strings.NewReader(`{"method":"GET","url":"/healthz","status":418}` + "\nnot json\n")
	var out bytes.Buffer
	if err := contract.Serve(in, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"errors"`) || !strings.Contains(lines[1], `"fatal":"apicheck: not an exchange`) {
		t.Errorf("Serve wrote %q", out.String())
	}
}
