package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/tollgate-auth/tollgate"
)

// Exchange is a request and the API's response to it.
type Exchange struct {
	Method string      `json:"method"`
	URL    string      `json:"url"` // the request URI: path and query
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`

	Status         int         `json:"status"`
	ResponseHeader http.Header `json:"response_header,omitempty"`
	ResponseBody   []byte      `json:"response_body,omitempty"`
}

// Result is what Check finds.
type Result struct {
	// RequestError is the request's validation against openapi.yaml: ""
	// when the document accepts the request.
	RequestError string `json:"request_error,omitempty"`
	// Errors say how the response departs from openapi.yaml: none when
	// the document describes it.
	Errors []string `json:"errors,omitempty"`
	// Fatal is set when the exchange cannot be checked at all: openapi.yaml
	// does not load, or the request is no operation of it yet was answered
	// as one.
	Fatal string `json:"fatal,omitempty"`
}

// Spec is openapi.yaml, loaded and validated once.
var Spec = sync.OnceValues(func() (*openapi3.T, error) {
	// kin-openapi decodes text/plain but not OpenMetrics, which /metrics
	// serves to scrapers that ask for it.
	openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
	// GET /openapi.yaml's body is YAML text (type: string); kin-openapi
	// would decode application/yaml into an object before validating it.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	// GET /v1/challenge/solver.js's body is script text (type: string).
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
	doc, err := openapi3.NewLoader().LoadFromData(tollgate.OpenAPI)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return doc, nil
})

// fallbackResponses are what openapi.yaml's x-tollgate-fallback-responses
// describes, keyed by status: the answers to a request that matches no
// operation (404 and 405). No operation lists them, so kin-openapi keeps the
// extension as plain data; they are decoded as response objects and their
// $refs resolved against the document's components, as kin does for the
// document's own responses.
var fallbackResponses = sync.OnceValues(func() (openapi3.ResponseBodies, error) {
	doc, err := Spec()
	if err != nil {
		return nil, err
	}
	raw, ok := doc.Extensions["x-tollgate-fallback-responses"]
	if !ok {
		return nil, errors.New("no x-tollgate-fallback-responses")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var rs openapi3.ResponseBodies
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("x-tollgate-fallback-responses: %w", err)
	}
	// A document of the spec's components with these as its responses:
	// loading it resolves their $refs, validating it checks them.
	d := &openapi3.T{
		OpenAPI: doc.OpenAPI,
		Info:    doc.Info,
		Paths:   openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:   doc.Components.Schemas,
			Headers:   doc.Components.Headers,
			Responses: rs,
		},
	}
	if err := openapi3.NewLoader().ResolveRefsIn(d, nil); err != nil {
		return nil, fmt.Errorf("x-tollgate-fallback-responses: %w", err)
	}
	if err := d.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("x-tollgate-fallback-responses: %w", err)
	}
	return rs, nil
})

var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := Spec()
	if err != nil {
		return nil, err
	}
	// Requests in tests go to httptest's example.com, not to the
	// documented server: match on paths and methods only.
	d := *doc
	d.Servers = nil
	return legacy.NewRouter(&d)
})

// Check validates e against openapi.yaml.
func Check(e Exchange) (res Result) {
	defer func() {
		if p := recover(); p != nil { // httptest.NewRequest panics on a target it cannot parse
			res = Result{Fatal: fmt.Sprintf("apicheck: %s %q: %v", e.Method, e.URL, p)}
		}
	}()
	errorf := func(format string, a ...any) { res.Errors = append(res.Errors, fmt.Sprintf(format, a...)) }
	fatalf := func(format string, a ...any) Result { res.Fatal = fmt.Sprintf(format, a...); return res }
	ctx := context.Background()
	router, err := specRouter()
	if err != nil {
		return fatalf("openapi.yaml router: %v", err)
	}
	req := httptest.NewRequest(e.Method, e.URL, bytes.NewReader(e.Body))
	for name, values := range e.Header {
		req.Header[name] = values
	}
	header := e.ResponseHeader
	if header == nil {
		header = http.Header{}
	}
	route, params, ferr := router.FindRoute(req)
	// An operation that lists its own 404 (a route whose feature is off,
	// such as GET /v1/breached/{prefix}'s breached-off) is checked against
	// it, as any other status.
	listed := ferr == nil && route.Operation.Responses.Status(e.Status) != nil
	if (e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed) && !listed {
		// Not a documented operation (kin's router is laxer than chi about
		// trailing slashes): a 404 or 405 problem, as openapi.yaml's
		// x-tollgate-fallback-responses describes.
		fallback, err := fallbackResponses()
		if err != nil {
			return fatalf("openapi.yaml: %v", err)
		}
		status := strconv.Itoa(e.Status)
		want := fallback[status]
		if want == nil || want.Value == nil {
			return fatalf("openapi.yaml's x-tollgate-fallback-responses has no %s", status)
		}
		for name, h := range want.Value.Headers {
			got := header.Values(name)
			if len(got) == 0 {
				if h.Value.Required {
					errorf("%d without %s", e.Status, name)
				}
				continue
			}
			if err := visit(h.Value.Schema.Value, got[0]); err != nil {
				errorf("%d header %s: %q does not match openapi.yaml's x-tollgate-fallback-responses %s: %v", e.Status, name, got[0], status, err)
			}
		}
		mt := want.Value.Content.Get("application/problem+json")
		if mt == nil {
			return fatalf("openapi.yaml's x-tollgate-fallback-responses %s has no application/problem+json", status)
		}
		var v any
		if err := json.Unmarshal(e.ResponseBody, &v); err != nil {
			return fatalf("%d body %q: %v", e.Status, e.ResponseBody, err)
		}
		if err := visit(mt.Schema.Value, v); err != nil {
			errorf("%d body %s does not match openapi.yaml's x-tollgate-fallback-responses %s: %v", e.Status, e.ResponseBody, status, err)
		}
		if ferr == nil {
			ferr = errors.New("no such operation")
		}
		res.RequestError = ferr.Error()
		return res
	}
	if ferr != nil {
		return fatalf("%s %s is not in openapi.yaml (%v) but answered %d", e.Method, req.URL.Path, ferr, e.Status)
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		// The server checks bearer tokens itself (api's TestAuth_*); the
		// spec's security requirement is documentation here.
		Options: &openapi3filter.Options{MultiError: false, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if err := validateRequest(ctx, in, e.Body); err != nil {
		res.RequestError = err.Error()
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 e.Status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := validateResponse(ctx, out, e.ResponseBody); err != nil {
		errorf("%s %s → %d %s\ndoes not match openapi.yaml: %v", e.Method, req.URL.Path, e.Status, truncate(e.ResponseBody), err)
	}
	return res
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// Serve reads one JSON Exchange per line from r and writes its Result, one
// JSON object per line, to w, until r ends. A line that is no Exchange is
// answered with a Fatal result, so that the sender fails rather than
// takes silence for a pass.
func Serve(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for sc.Scan() {
		var e Exchange
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			res.Fatal = "apicheck: not an exchange: " + err.Error()
		} else {
			res = Check(e)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}
