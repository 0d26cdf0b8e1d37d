package contract_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/tollgate-auth/tollgate/api/contract"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// wireDir is api/wire's source, whose constants are checked against the
// document's enumerations.
var wireDir = filepath.Join("..", "wire")

// loadSpec loads and validates openapi.yaml.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := contract.Spec()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return doc
}

// operation is the operation "METHOD /path".
func operation(t *testing.T, doc *openapi3.T, route string) *openapi3.Operation {
	t.Helper()
	method, path, _ := strings.Cut(route, " ")
	item := doc.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		t.Fatalf("openapi.yaml has no %s", route)
	}
	return item.GetOperation(method)
}

// requestSchema is the JSON request body's schema of route.
func requestSchema(t *testing.T, doc *openapi3.T, route string) *openapi3.Schema {
	t.Helper()
	op := operation(t, doc, route)
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		t.Fatalf("%s has no request body", route)
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		t.Fatalf("%s has no application/json request schema", route)
	}
	return mt.Schema.Value
}

// responseSchema is the JSON schema of route's answer with status.
func responseSchema(t *testing.T, doc *openapi3.T, route string, status int) *openapi3.Schema {
	t.Helper()
	res := operation(t, doc, route).Responses.Status(status)
	if res == nil || res.Value == nil {
		t.Fatalf("%s has no %d response", route, status)
	}
	mt := res.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		t.Fatalf("%s has no application/json %d schema", route, status)
	}
	return mt.Schema.Value
}

func componentSchema(t *testing.T, doc *openapi3.T, name string) *openapi3.Schema {
	t.Helper()
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		t.Fatalf("openapi.yaml has no schema %s", name)
	}
	return ref.Value
}

// Every wire type has exactly the properties of the schema it stands for,
// found through the operations that use it: the same JSON names both ways,
// compatible types (nested objects and array items included), and a field
// is required in the schema exactly when its tag has no omitempty.
func TestWire_TypesMatchOpenAPI(t *testing.T) {
	doc := loadSpec(t)
	tests := []struct {
		name   string
		value  any
		schema *openapi3.Schema
		// except are fields of the Go type that this schema leaves out:
		// a type shared by two operations.
		except []string
	}{
		{"POST /v1/check request", wire.CheckRequest{}, requestSchema(t, doc, "POST /v1/check"), nil},
		{"POST /v1/check 200", wire.Verdict{}, responseSchema(t, doc, "POST /v1/check", 200), nil},
		{"POST /v1/report request", wire.ReportRequest{}, requestSchema(t, doc, "POST /v1/report"), nil},
		{"POST /v1/report 200", wire.Verdict{}, responseSchema(t, doc, "POST /v1/report", 200), nil},
		{"POST /v1/otp/send request", wire.SendRequest{}, requestSchema(t, doc, "POST /v1/otp/send"), nil},
		{"POST /v1/otp/send 200", wire.Verdict{}, responseSchema(t, doc, "POST /v1/otp/send", 200), nil},
		{"POST /v1/admin/explain request", wire.ExplainRequest{}, requestSchema(t, doc, "POST /v1/admin/explain"), nil},
		{"POST /v1/admin/explain 200", wire.Explanation{}, responseSchema(t, doc, "POST /v1/admin/explain", 200), nil},
		{"POST /v1/admin/reset request", wire.ResetRequest{}, requestSchema(t, doc, "POST /v1/admin/reset"), nil},
		{"POST /v1/admin/reset 200", wire.ResetResult{}, responseSchema(t, doc, "POST /v1/admin/reset", 200), nil},
		{"POST /v1/admin/allow request", wire.EntryRequest{}, requestSchema(t, doc, "POST /v1/admin/allow"), []string{"action"}},
		{"POST /v1/admin/allow 201", wire.Entry{}, responseSchema(t, doc, "POST /v1/admin/allow", 201), nil},
		{"POST /v1/admin/deny request", wire.EntryRequest{}, requestSchema(t, doc, "POST /v1/admin/deny"), nil},
		{"POST /v1/admin/deny 201", wire.Entry{}, responseSchema(t, doc, "POST /v1/admin/deny", 201), nil},
		{"GET /v1/admin/entries 200", wire.Entries{}, responseSchema(t, doc, "GET /v1/admin/entries", 200), nil},
		{"POST /v1/admin/remove request", wire.RemoveRequest{}, requestSchema(t, doc, "POST /v1/admin/remove"), nil},
		{"POST /v1/admin/remove 200", wire.Removed{}, responseSchema(t, doc, "POST /v1/admin/remove", 200), nil},
		{"HeldList subjects item", wire.HeldSubject{}, componentSchema(t, doc, "HeldSubject"), nil},
		{"POST /v1/admin/reset-held request", wire.HeldResetRequest{}, requestSchema(t, doc, "POST /v1/admin/reset-held"), nil},
		{"POST /v1/admin/reset-held 200", wire.HeldReset{}, responseSchema(t, doc, "POST /v1/admin/reset-held", 200), nil},
		{"Explanation rules item", wire.RuleState{}, componentSchema(t, doc, "Explanation").Properties["rules"].Value.Items.Value, nil},
		{"Problem", wire.Problem{}, componentSchema(t, doc, "Problem"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, err := range match(reflect.TypeOf(tt.value), tt.schema, "", tt.except...) {
				t.Error(err)
			}
		})
	}
}

// Every error response of every operation is a Problem: its schema is the
// Problem component, alone or as the first part of an allOf.
func TestWire_ErrorResponsesAreProblems(t *testing.T) {
	doc := loadSpec(t)
	problem := componentSchema(t, doc, "Problem")
	for _, route := range []string{
		"POST /v1/check", "POST /v1/report", "POST /v1/otp/send", "POST /v1/admin/explain", "POST /v1/admin/reset",
		"POST /v1/admin/allow", "POST /v1/admin/deny", "GET /v1/admin/entries", "POST /v1/admin/remove",
		"GET /v1/admin/held", "POST /v1/admin/reset-held",
	} {
		for code, res := range operation(t, doc, route).Responses.Map() {
			if code[0] == '2' {
				continue
			}
			mt := res.Value.Content.Get("application/problem+json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				t.Errorf("%s %s: no application/problem+json schema", route, code)
				continue
			}
			s := mt.Schema.Value
			if len(s.AllOf) > 0 {
				s = s.AllOf[0].Value
			}
			if s != problem {
				t.Errorf("%s %s: the problem schema is not the Problem component", route, code)
			}
		}
	}
}

// The Verdict's fields are in the order openapi.yaml lists them as
// required: the wire order every verdict has.
func TestWire_VerdictFieldOrder(t *testing.T) {
	doc := loadSpec(t)
	var got []string
	for f := range reflect.TypeFor[wire.Verdict]().Fields() {
		if name, _ := jsonName(f); name != "-" {
			got = append(got, name)
		}
	}
	if want := componentSchema(t, doc, "Verdict").Required; !slices.Equal(got, want) {
		t.Errorf("wire.Verdict's fields are %v, want openapi.yaml's order %v", got, want)
	}
}

// The constants of the package are the enumerations of openapi.yaml, both
// ways: a constant added to the package, or a value added to the spec,
// without the other fails.
func TestWire_ConstantsMatchOpenAPIEnums(t *testing.T) {
	doc := loadSpec(t)
	prop := func(schema, name string) *openapi3.Schema {
		return componentSchema(t, doc, schema).Properties[name].Value
	}
	consts := map[string]string{
		"ActionProceed": wire.ActionProceed, "ActionDelay": wire.ActionDelay,
		"ActionCaptcha": wire.ActionCaptcha, "ActionDeny": wire.ActionDeny, "ActionStepUp": wire.ActionStepUp,
		"OutcomeFailure": wire.OutcomeFailure, "OutcomeSuccess": wire.OutcomeSuccess,
		"OutcomeStepUpPassed": wire.OutcomeStepUpPassed, "OutcomeStepUpFailed": wire.OutcomeStepUpFailed, "OutcomePasswordChanged": wire.OutcomePasswordChanged,
		"ChannelSMS": wire.ChannelSMS, "ChannelVoice": wire.ChannelVoice,
		"ChannelWhatsApp": wire.ChannelWhatsApp, "ChannelEmail": wire.ChannelEmail,
		"ProblemMalformedJSON": wire.ProblemMalformedJSON, "ProblemMissingField": wire.ProblemMissingField,
		"ProblemInvalidField": wire.ProblemInvalidField, "ProblemUnknownField": wire.ProblemUnknownField,
		"ProblemDuplicateField": wire.ProblemDuplicateField, "ProblemNotFound": wire.ProblemNotFound,
		"ProblemMethodNotAllowed": wire.ProblemMethodNotAllowed, "ProblemBodyTooLarge": wire.ProblemBodyTooLarge,
		"ProblemUnsupportedMediaType": wire.ProblemUnsupportedMediaType, "ProblemInternal": wire.ProblemInternal,
		"ProblemStoreUnavailable": wire.ProblemStoreUnavailable, "ProblemStoreFull": wire.ProblemStoreFull,
		"ProblemOverloaded": wire.ProblemOverloaded, "ProblemUnauthenticated": wire.ProblemUnauthenticated,
		"ProblemForbidden": wire.ProblemForbidden, "ProblemTooManyEntries": wire.ProblemTooManyEntries,
		"ProblemConfigInvalid":  wire.ProblemConfigInvalid,
		"ProblemSecretMismatch": wire.ProblemSecretMismatch, "ProblemStoreEvicts": wire.ProblemStoreEvicts,
		"ProblemStoreUnpersisted": wire.ProblemStoreUnpersisted, "ProblemStoreUnauthenticated": wire.ProblemStoreUnauthenticated,
		"ProblemBreachedOff": wire.ProblemBreachedOff, "ProblemBreachedUnavailable": wire.ProblemBreachedUnavailable,
	}
	tests := []struct {
		prefix string
		enums  []*openapi3.Schema // each must list exactly the prefix's values
	}{
		{"Action", []*openapi3.Schema{prop("Verdict", "action")}},
		{"Outcome", []*openapi3.Schema{prop("ReportRequest", "outcome")}},
		{"Channel", []*openapi3.Schema{
			prop("CheckRequest", "channel"), prop("ReportRequest", "channel"), prop("SendRequest", "channel"),
			prop("ExplainRequest", "channel"), requestSchema(t, doc, "POST /v1/admin/reset").Properties["channel"].Value,
		}},
		{"Problem", []*openapi3.Schema{prop("Problem", "type")}},
	}
	declared := declaredConsts(t)
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			var want []string
			for _, name := range declared {
				if strings.HasPrefix(name, tt.prefix) {
					v, ok := consts[name]
					if !ok {
						t.Errorf("wire.%s is not in this test's table", name)
						continue
					}
					want = append(want, v)
				}
			}
			slices.Sort(want)
			for _, s := range tt.enums {
				var got []string
				for _, e := range s.Enum {
					if e != nil { // null: the field is optional
						got = append(got, fmt.Sprint(e))
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("openapi.yaml's enum is %v, the package's %s constants are %v", got, tt.prefix, want)
				}
			}
		})
	}
}

// declaredConsts lists the exported constants of the package's source,
// except ProblemBase and DefaultSendFlow, which are no enumeration values.
func declaredConsts(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(wireDir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(wireDir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.IsExported() && n.Name != "ProblemBase" && n.Name != "DefaultSendFlow" {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("found no constants in the package source")
	}
	return names
}

// match compares a Go type with a schema and returns the differences; at
// names the place, for messages.
// except names fields of typ (not of nested types) that s leaves out.
func match(typ reflect.Type, s *openapi3.Schema, at string, except ...string) []error {
	where := at
	if where == "" {
		where = typ.String()
	}
	want := ""
	switch typ.Kind() {
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int64:
		want = "integer"
	case reflect.Slice:
		want = "array"
	case reflect.Struct:
		want = "object"
	default:
		return []error{fmt.Errorf("%s: Go type %s has no JSON Schema type in this test", where, typ)}
	}
	if !s.Type.Includes(want) {
		return []error{fmt.Errorf("%s: Go type %s, but the schema's type is %v", where, typ, s.Type.Slice())}
	}
	switch typ.Kind() {
	case reflect.Slice:
		if s.Items == nil || s.Items.Value == nil {
			return []error{fmt.Errorf("%s: an array without items", where)}
		}
		return match(typ.Elem(), s.Items.Value, where+"[]")
	case reflect.Struct:
		return matchObject(typ, s, where, except)
	}
	return nil
}

func matchObject(typ reflect.Type, s *openapi3.Schema, where string, except []string) []error {
	var errs []error
	if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
		errs = append(errs, fmt.Errorf("%s: the schema allows additional properties, so its properties say little", where))
	}
	fields := map[string]bool{} // JSON name → required
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, omitempty := jsonName(f)
		if name == "-" || slices.Contains(except, name) {
			continue
		}
		fields[name] = !omitempty
		p := s.Properties[name]
		if p == nil || p.Value == nil {
			errs = append(errs, fmt.Errorf("%s: field %s (%q) is not a property in openapi.yaml", where, f.Name, name))
			continue
		}
		errs = append(errs, match(f.Type, p.Value, where+"."+name)...)
		if !omitempty && p.Value.Type.IncludesNull() {
			errs = append(errs, fmt.Errorf("%s.%s: always sent, but the schema allows null", where, name))
		}
	}
	for name := range s.Properties {
		if _, ok := fields[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: property %q of openapi.yaml has no field", where, name))
		}
	}
	for name, required := range fields {
		if inSpec := slices.Contains(s.Required, name); required != inSpec {
			errs = append(errs, fmt.Errorf("%s.%s: required in openapi.yaml: %v; sent always (no omitempty): %v", where, name, inSpec, required))
		}
	}
	for _, name := range s.Required {
		if _, ok := fields[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: required property %q has no field", where, name))
		}
	}
	return errs
}

// jsonName is f's JSON key (its name when the tag gives none) and whether
// its tag says omitempty.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, slices.Contains(strings.Split(opts, ","), "omitempty")
}

// TestOpenAPI_GeneratesOptionalFieldsAndDeclaresSecurity: generators read a
// request property with a `default:` as always present (openapi-typescript's
// defaultNonNullable made captcha_solved and a send's flow required, so
// README's own calls did not compile), and lint tools flag an operation that
// declares no security. Every request property says its default in words,
// and every operation declares its security, `[]` on the open routes.
func TestOpenAPI_GeneratesOptionalFieldsAndDeclaresSecurity(t *testing.T) {
	doc := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security == nil {
				t.Errorf("%s %s declares no security (the open routes say `security: []`)", method, path)
			}
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				if mt.Schema == nil || mt.Schema.Value == nil {
					continue
				}
				for name, p := range mt.Schema.Value.Properties {
					if p.Value != nil && p.Value.Default != nil {
						t.Errorf("%s %s (%s): property %s has a default (%v), which generators make required; say it in the description", method, path, ct, name, p.Value.Default)
					}
				}
			}
		}
	}
	for _, route := range []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.yaml"} {
		if op := operation(t, doc, route); op.Security == nil || len(*op.Security) != 0 {
			t.Errorf("%s: security %v, want [] (open)", route, op.Security)
		}
	}
}
