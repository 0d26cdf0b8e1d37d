package contract_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/tollgate-auth/tollgate/api/contract"
)

// kinCheck is how kin-openapi itself judges e, as Check did before it
// compiled each body schema once: the request's validation, and the
// response's, each by openapi3filter with nothing of Check's own.
func kinCheck(t *testing.T, e contract.Exchange) (requestErr, responseErr error) {
	t.Helper()
	doc, err := contract.Spec()
	if err != nil {
		t.Fatal(err)
	}
	d := *doc
	d.Servers = nil
	router, err := legacy.NewRouter(&d)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(e.Method, e.URL, bytes.NewReader(e.Body))
	for name, values := range e.Header {
		req.Header[name] = values
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: %v", e.Method, e.URL, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	requestErr = openapi3filter.ValidateRequest(context.Background(), in)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: e.Status, Header: e.ResponseHeader,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(e.ResponseBody)
	return requestErr, openapi3filter.ValidateResponse(context.Background(), out)
}

// mutants are body with each top-level field dropped, each given a value
// of another JSON type, and an extra field added: the ways a body departs
// from its schema that a lax checker would miss.
func mutants(t *testing.T, body []byte) map[string][]byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	out := map[string][]byte{}
	add := func(name string, m map[string]any) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	for k, x := range v {
		m := maps(v)
		delete(m, k)
		add("without "+k, m)
		m = maps(v)
		if _, isString := x.(string); isString {
			m[k] = 12345
		} else {
			m[k] = "a string"
		}
		add(k+" of another type", m)
	}
	m := maps(v)
	m["zz_extra"] = 1
	add("an extra field", m)
	return out
}

func maps(v map[string]any) map[string]any {
	m := make(map[string]any, len(v))
	for k, x := range v {
		m[k] = x
	}
	return m
}

// TestCheck_AsStrictAsKinOpenAPIForEveryMutantOfABody: Check validates
// JSON bodies and string headers with a validator compiled once per
// schema instead of kin-openapi's, which compiles one per call; for a
// verdict, a problem (a schema of allOf, $ref and const) and a request,
// and every body derived from them by dropping a field, changing a type or
// adding a field, and every header dropped or garbled, Check finds an
// error exactly when kin-openapi does. The ones the document forbids must
// be found at all.
func TestCheck_AsStrictAsKinOpenAPIForEveryMutantOfABody(t *testing.T) {
	a := newAPI(t)
	served := []contract.Exchange{
		exchange(t, a, http.MethodPost, "/v1/check", `{"flow":"login","account":"a","ip":"192.0.2.1"}`),
		exchange(t, a, http.MethodPost, "/v1/check", `{}`),
		exchange(t, a, http.MethodGet, "/healthz", ""),
	}
	if served[0].Status != http.StatusOK || served[1].Status != http.StatusBadRequest {
		t.Fatalf("served %d and %d, want 200 and 400", served[0].Status, served[1].Status)
	}
	type variant struct {
		name             string
		e                contract.Exchange
		mustFailResponse bool
		mustFailRequest  bool
	}
	var variants []variant
	for i, e := range served {
		// A verdict has all its six fields, and no other.
		verdict := i == 0
		name := fmt.Sprintf("%s %s %s → %d", e.Method, e.URL, e.Body, e.Status)
		variants = append(variants, variant{name: name + " as served", e: e, mustFailRequest: i == 1})
		if len(e.ResponseBody) > 0 {
			for m, b := range mutants(t, e.ResponseBody) {
				f := e
				f.ResponseBody = b
				variants = append(variants, variant{name: name + ", response " + m, e: f, mustFailResponse: verdict})
			}
		}
		if len(e.Body) > 0 {
			for m, b := range mutants(t, e.Body) {
				f := e
				f.Body = b
				// account and ip may be absent (the server, not the
				// document, requires them by flow).
				forbidden := verdict && m != "without account" && m != "without ip"
				variants = append(variants, variant{name: name + ", request " + m, e: f, mustFailRequest: forbidden})
			}
		}
		for _, h := range []struct {
			name, value string
			mustFail    bool
		}{
			{"X-Request-Id", "", true},
			{"X-Request-Id", "not an id!", true},
			{"Cache-Control", "", true},
			{"Cache-Control", "no-cache", true},
			{"Retry-After", "soon", false},
		} {
			f := e
			f.ResponseHeader = e.ResponseHeader.Clone()
			if h.value == "" {
				f.ResponseHeader.Del(h.name)
			} else {
				f.ResponseHeader.Set(h.name, h.value)
			}
			variants = append(variants, variant{name: fmt.Sprintf("%s, header %s %q", name, h.name, h.value), e: f, mustFailResponse: h.mustFail})
		}
	}
	var responseFailures, requestFailures int
	for _, v := range variants {
		r := contract.Check(v.e)
		if r.Fatal != "" {
			t.Errorf("%s: Fatal %q", v.name, r.Fatal)
			continue
		}
		kinReq, kinResp := kinCheck(t, v.e)
		if got, want := len(r.Errors) > 0, kinResp != nil; got != want {
			t.Errorf("%s: Check's errors %q, kin-openapi's %v", v.name, r.Errors, kinResp)
		}
		if got, want := r.RequestError != "", kinReq != nil; got != want {
			t.Errorf("%s: Check's request error %q, kin-openapi's %v", v.name, r.RequestError, kinReq)
		}
		if v.mustFailResponse {
			responseFailures++
			if len(r.Errors) == 0 {
				t.Errorf("%s: Check passes it", v.name)
			}
		}
		if v.mustFailRequest {
			requestFailures++
			if r.RequestError == "" {
				t.Errorf("%s: Check accepts the request", v.name)
			}
		}
	}
	if responseFailures < 15 || requestFailures < 5 {
		t.Errorf("%d responses and %d requests the document forbids, want at least 15 and 5", responseFailures, requestFailures)
	}
}
