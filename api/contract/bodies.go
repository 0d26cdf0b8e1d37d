package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// kin-openapi validates a value against a schema of a 3.1 document by
// compiling a JSON Schema 2020-12 validator for it on every call, and keeps
// none: four fifths of the checker's CPU went to compiling the same few
// dozen body schemas over and over. The JSON bodies are therefore checked
// here, with kin's own choice of validator made once per schema and its
// 2020-12 validator compiled once (the library kin uses, set up as kin sets
// it up); everything else (status, headers, parameters, other media types)
// is still kin's, unchanged.

// bodyMode is how kin-openapi would check a value against one schema.
type bodyMode int

const (
	// viaKin: call kin's VisitJSON as openapi3filter does, compiling per
	// call — for the rare schemas whose validator kin builds in ways not
	// reproduced here (2020-12 keywords with component $refs, a schema that
	// does not compile, nullable).
	viaKin bodyMode = iota
	// builtIn: kin falls back to its built-in (OpenAPI 3.0) validator for a
	// schema that refers to components and uses no 2020-12 keyword; it is
	// called directly, without the compile kin throws away.
	builtIn
	// compiled: kin's 2020-12 validator, compiled once.
	compiled
)

type bodySchema struct {
	mode     bodyMode
	compiled *jsonschema.Schema
}

var bodySchemas struct {
	sync.Mutex
	m map[*openapi3.Schema]*bodySchema
}

// bodySchemaOf is s's validator, decided and compiled on first use.
func bodySchemaOf(s *openapi3.Schema) *bodySchema {
	bodySchemas.Lock()
	defer bodySchemas.Unlock()
	if b := bodySchemas.m[s]; b != nil {
		return b
	}
	if bodySchemas.m == nil {
		bodySchemas.m = map[*openapi3.Schema]*bodySchema{}
	}
	b := newBodySchema(s)
	bodySchemas.m[s] = b
	return b
}

// newBodySchema makes kin's decision (openapi3's useJSONSchema2020 and
// newJSONSchemaValidator, v0.153.0) once.
func newBodySchema(s *openapi3.Schema) *bodySchema {
	uses2020, nullable := schemaFeatures(s)
	if nullable {
		// kin's built-in validator reads nullable only outside 2020-12 mode:
		// calling it directly would not be the same check.
		return &bodySchema{mode: viaKin}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return &bodySchema{mode: viaKin}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return &bodySchema{mode: viaKin}
	}
	if containsComponentRef(doc) {
		if !uses2020 {
			return &bodySchema{mode: builtIn}
		}
		if !inlineComponents(s, doc) {
			return &bodySchema{mode: viaKin}
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	formats := map[string]bool{}
	collectFormats(doc, formats)
	for f := range formats {
		c.RegisterFormat(&jsonschema.Format{Name: f, Validate: formatValidator(f)})
	}
	if len(formats) > 0 {
		c.AssertFormat()
	}
	const url = "https://example.com/schema.json" // kin's name for it
	if err := c.AddResource(url, doc); err != nil {
		return &bodySchema{mode: viaKin}
	}
	v, err := c.Compile(url)
	if err != nil {
		return &bodySchema{mode: viaKin}
	}
	return &bodySchema{mode: compiled, compiled: v}
}

// visit is kin's s.VisitJSON(value, opts..., EnableJSONSchema2020()).
func visit(s *openapi3.Schema, value any, opts ...openapi3.SchemaValidationOption) error {
	b := bodySchemaOf(s)
	switch b.mode {
	case builtIn:
		return s.VisitJSON(value, opts...)
	case compiled:
		return b.compiled.Validate(value)
	}
	return s.VisitJSON(value, append(opts, openapi3.EnableJSONSchema2020())...)
}

// schemaFeatures says whether s uses a keyword for which kin keeps its
// 2020-12 validator even when s refers to components
// (schemaHasJSONSchema2020FallbackGuardKeyword), and whether any schema
// under s is nullable.
func schemaFeatures(s *openapi3.Schema) (uses2020, nullable bool) {
	openapi3.NewSchemaRef("", s).WalkSubtree(func(_ string, ref *openapi3.SchemaRef) error {
		v := ref.Value
		if v == nil {
			return nil
		}
		if v.Nullable {
			nullable = true
		}
		if v.Const != nil ||
			len(v.PrefixItems) != 0 || v.Contains != nil ||
			len(v.PatternProperties) != 0 ||
			len(v.DependentSchemas) != 0 || v.PropertyNames != nil ||
			v.UnevaluatedItems.Has != nil || v.UnevaluatedItems.Schema != nil ||
			v.UnevaluatedProperties.Has != nil || v.UnevaluatedProperties.Schema != nil ||
			v.If != nil || v.Then != nil || v.Else != nil ||
			len(v.DependentRequired) != 0 || len(v.Defs) != 0 ||
			v.ContentSchema != nil {
			uses2020 = true
		}
		return nil
	})
	return uses2020, nullable
}

func containsComponentRef(node any) bool {
	switch node := node.(type) {
	case map[string]any:
		if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, "#/components/schemas/") {
			return true
		}
		for _, v := range node {
			if containsComponentRef(v) {
				return true
			}
		}
	case []any:
		for _, v := range node {
			if containsComponentRef(v) {
				return true
			}
		}
	}
	return false
}

// inlineComponents is kin's addInternalSchemaRefs: the compiled schema is
// a subtree of the document, so each component it refers to, directly or
// through another, is copied into its $defs and the $ref pointed there. It
// reports false, leaving the schema to kin, when a reference is not a plain
// one to a component (a $ref with sibling keywords makes a copy of its
// target, which kin tells apart and this does not).
func inlineComponents(s *openapi3.Schema, doc any) bool {
	spec, err := Spec()
	if err != nil || spec.Components == nil {
		return false
	}
	const prefix = "#/components/schemas/"
	component := func(ref string) *openapi3.Schema {
		name, ok := strings.CutPrefix(ref, prefix)
		if !ok || strings.ContainsAny(name, "/~") {
			return nil
		}
		if c := spec.Components.Schemas[name]; c != nil {
			return c.Value
		}
		return nil
	}
	plain := true
	openapi3.NewSchemaRef("", s).WalkSubtree(func(_ string, ref *openapi3.SchemaRef) error {
		if strings.HasPrefix(ref.Ref, prefix) && (component(ref.Ref) == nil || component(ref.Ref) != ref.Value) {
			plain = false
		}
		return nil
	})
	root, _ := doc.(map[string]any)
	if !plain || root == nil {
		return false
	}
	ids := map[string]string{}
	defs := map[string]any{}
	pending := []any{root}
	for len(pending) > 0 {
		node := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		switch node := node.(type) {
		case map[string]any:
			if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, prefix) {
				id, seen := ids[ref]
				if !seen {
					c := component(ref)
					if c == nil {
						return false
					}
					raw, err := json.Marshal(c)
					if err != nil {
						return false
					}
					var target any
					if err := json.Unmarshal(raw, &target); err != nil {
						return false
					}
					id = fmt.Sprintf("ref%d", len(ids))
					ids[ref] = id
					defs[id] = target
					pending = append(pending, target)
				}
				node["$ref"] = "#/$defs/" + id
			}
			for _, v := range node {
				pending = append(pending, v)
			}
		case []any:
			pending = append(pending, node...)
		}
	}
	root["$defs"] = defs
	return true
}

func collectFormats(node any, formats map[string]bool) {
	switch node := node.(type) {
	case map[string]any:
		if f, ok := node["format"].(string); ok && f != "" {
			formats[f] = true
		}
		for _, v := range node {
			collectFormats(v, formats)
		}
	case []any:
		for _, v := range node {
			collectFormats(v, formats)
		}
	}
}

// formatValidator is kin's: the format validators openapi3 registers,
// looked up when a value is checked.
func formatValidator(format string) func(any) error {
	return func(value any) error {
		switch value := value.(type) {
		case string:
			if f, ok := openapi3.SchemaStringFormats[format]; ok {
				return f.Validate(value)
			}
		case json.Number:
			if n, err := value.Float64(); err == nil {
				return numberFormat(format, n)
			}
		case float64:
			return numberFormat(format, value)
		case float32:
			return numberFormat(format, float64(value))
		case int:
			return numberFormat(format, float64(value))
		case int32:
			return numberFormat(format, float64(value))
		case int64:
			return numberFormat(format, float64(value))
		}
		return nil
	}
}

func numberFormat(format string, value float64) error {
	if value == math.Trunc(value) && !math.IsInf(value, 0) {
		if f, ok := openapi3.SchemaIntegerFormats[format]; ok {
			return f.Validate(int64(value))
		}
	}
	if f, ok := openapi3.SchemaNumberFormats[format]; ok {
		return f.Validate(value)
	}
	return nil
}

// jsonBody is the media type's schema when kin would decode the body as
// JSON (openapi3filter's decodeBody): nil for anything else, which is left
// to kin.
func jsonBody(mt *openapi3.MediaType, contentType string) *openapi3.SchemaRef {
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil || len(mt.Encoding) != 0 {
		return nil
	}
	mediaType, _, _ := strings.Cut(contentType, ";")
	switch strings.ToLower(strings.TrimSpace(mediaType)) {
	case "application/json", "application/problem+json":
	default:
		return nil
	}
	if s := mt.Schema.Value; s.Type.Is("string") && s.Format == "binary" {
		return nil
	}
	return mt.Schema
}

func schemaName(s *openapi3.SchemaRef) string {
	id := strings.TrimSpace(s.Ref)
	if id == "" {
		id = strings.TrimSpace(s.Value.Title)
	}
	if id != "" {
		id = " " + id
	}
	return id
}

// validateRequest is openapi3filter.ValidateRequest(ctx, in), with a JSON
// body checked by visit.
func validateRequest(ctx context.Context, in *openapi3filter.RequestValidationInput, body []byte) error {
	opts := *in.Options
	opts.ExcludeRequestBody = true
	in.Options = &opts
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		return err
	}
	opts.ExcludeRequestBody = false
	rb := in.Route.Operation.RequestBody
	if rb == nil {
		return nil
	}
	req := in.Request
	schema := jsonBody(rb.Value.Content.Get(req.Header.Get("Content-Type")), req.Header.Get("Content-Type"))
	if len(body) == 0 || schema == nil {
		return openapi3filter.ValidateRequestBody(ctx, in, rb.Value)
	}
	value, err := openapi3filter.JSONBodyDecoder(bytes.NewReader(body), req.Header, schema, nil)
	if err != nil {
		return &openapi3filter.RequestError{Input: in, RequestBody: rb.Value, Reason: "failed to decode request body", Err: err}
	}
	// kin writes defaults back into a JSON body, and its built-in
	// validator sets them while it checks.
	vopts := []openapi3.SchemaValidationOption{openapi3.VisitAsRequest(), openapi3.DefaultsSet(func() {})}
	if err := visit(schema.Value, value, vopts...); err != nil {
		return &openapi3filter.RequestError{Input: in, RequestBody: rb.Value, Reason: "doesn't match schema" + schemaName(schema), Err: err}
	}
	return nil
}

// validateResponse is openapi3filter.ValidateResponse(ctx, out), with
// string headers and a JSON body checked by visit.
func validateResponse(ctx context.Context, out *openapi3filter.ResponseValidationInput, body []byte) error {
	opts := *out.Options
	out.Options = &opts
	out.SetBodyBytes(body)
	if out.RequestValidationInput.Request.Method == http.MethodHead {
		return nil // never checked by kin
	}
	switch out.Status {
	case http.StatusNotModified, http.StatusPermanentRedirect, http.StatusTemporaryRedirect, http.StatusMovedPermanently:
		return nil // never checked by kin
	}
	responses := out.RequestValidationInput.Route.Operation.Responses
	if responses.Len() == 0 {
		return nil
	}
	r := responses.Status(out.Status)
	if r == nil {
		r = responses.Default()
	}
	if r == nil || r.Value == nil || !stringHeaders(r.Value) {
		// The status and the headers as kin checks them.
		opts.ExcludeResponseBody = true
		err := openapi3filter.ValidateResponse(ctx, out)
		opts.ExcludeResponseBody = false
		if err != nil || r == nil || r.Value == nil {
			return err
		}
	} else if err := validateHeaders(out, r.Value); err != nil {
		return err
	}
	if len(r.Value.Content) == 0 {
		return nil
	}
	ct := out.Header.Get("Content-Type")
	schema := jsonBody(r.Value.Content.Get(ct), ct)
	if schema == nil {
		return openapi3filter.ValidateResponse(ctx, out)
	}
	value, err := openapi3filter.JSONBodyDecoder(bytes.NewReader(body), out.Header, schema, nil)
	if err != nil {
		return &openapi3filter.ResponseError{Input: out, Reason: "failed to decode response body", Err: err}
	}
	if err := visit(schema.Value, value, openapi3.VisitAsResponse()); err != nil {
		return &openapi3filter.ResponseError{Input: out, Reason: "response body doesn't match schema" + schemaName(schema), Err: err}
	}
	return nil
}

// stringHeaders reports whether every header r describes is one that kin
// decodes as the raw text of its first value (openapi3filter's
// validateResponseHeader and decodeValue): a schema of type string and
// nothing else, serialized in the simple style.
func stringHeaders(r *openapi3.Response) bool {
	for _, h := range r.Headers {
		if h == nil || h.Value == nil || h.Value.Content != nil || h.Value.Schema == nil || h.Value.Schema.Value == nil {
			return false
		}
		if style := h.Value.Style; style != "" && style != openapi3.SerializationSimple {
			return false
		}
		s := h.Value.Schema.Value
		if len(s.AllOf) != 0 || len(s.AnyOf) != 0 || len(s.OneOf) != 0 || s.Not != nil {
			return false
		}
		if t := s.Type.Slice(); len(t) != 1 || t[0] != openapi3.TypeString {
			return false
		}
	}
	return true
}

// validateHeaders is kin's check of the response headers r describes, for
// headers stringHeaders accepts: in name order, Content-Type aside.
func validateHeaders(out *openapi3filter.ResponseValidationInput, r *openapi3.Response) error {
	names := make([]string, 0, len(r.Headers))
	for name := range r.Headers {
		if name != "Content-Type" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		h := r.Headers[name].Value
		raw, found := out.Header[http.CanonicalHeaderKey(name)]
		if !found {
			if h.Required {
				return &openapi3filter.ResponseError{Input: out, Reason: fmt.Sprintf("response header %q missing", name)}
			}
			continue
		}
		var value any // kin checks a header present with no value as null
		if len(raw) > 0 {
			value = raw[0]
		}
		if err := visit(h.Schema.Value, value); err != nil {
			return &openapi3filter.ResponseError{Input: out, Reason: fmt.Sprintf("response header %q doesn't match schema", name), Err: err}
		}
	}
	return nil
}
