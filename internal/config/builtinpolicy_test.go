package config

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// TestBuiltinPolicy_IsTheEmbeddedYAML holds internal/builtinpolicy, the
// built-in policy as Go for the tests that want it without this package's
// dependencies, to default_policy.yaml: the policy it builds is
// DefaultPolicy, field for field, unexported ones too. A change to the
// YAML, or a field authguard gains that the built-in flows set, fails here
// until go generate rewrites flows.go.
func TestBuiltinPolicy_IsTheEmbeddedYAML(t *testing.T) {
	const redo = "go generate ./internal/builtinpolicy rewrites it"
	p, g := DefaultPolicy(), builtinpolicy.Policy()
	if got, want := g.FlowNames(), p.FlowNames(); !slices.Equal(got, want) {
		t.Fatalf("builtinpolicy has flows %v, DefaultPolicy %v; %s", got, want, redo)
	}
	for _, name := range p.FlowNames() {
		if !reflect.DeepEqual(g.Flow(name), p.Flow(name)) {
			t.Errorf("builtinpolicy's flow %s differs from DefaultPolicy's at %s; %s", name, firstDiff("Flow", reflect.ValueOf(g.Flow(name)), reflect.ValueOf(p.Flow(name)), 0), redo)
		}
	}
	if !reflect.DeepEqual(g, p) {
		t.Errorf("builtinpolicy.Policy() differs from DefaultPolicy(); %s", redo)
	}
}

// firstDiff is the path of the first field, element or value at which got
// and want differ, with the two values, for the failure message; "" if it
// finds none within a few levels (flows point at other flows).
func firstDiff(path string, got, want reflect.Value, depth int) string {
	if depth > 8 {
		return ""
	}
	if got.Kind() != want.Kind() {
		return path
	}
	switch got.Kind() {
	case reflect.Pointer, reflect.Interface:
		if got.IsNil() || want.IsNil() {
			if got.IsNil() != want.IsNil() {
				return path + ": one is nil"
			}
			return ""
		}
		return firstDiff(path, got.Elem(), want.Elem(), depth+1)
	case reflect.Struct:
		for i := range got.NumField() {
			if d := firstDiff(path+"."+got.Type().Field(i).Name, got.Field(i), want.Field(i), depth+1); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if got.Len() != want.Len() {
			return fmt.Sprintf("%s: %d elements, want %d", path, got.Len(), want.Len())
		}
		for i := range got.Len() {
			if d := firstDiff(fmt.Sprintf("%s[%d]", path, i), got.Index(i), want.Index(i), depth+1); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if got.Len() != want.Len() {
			return fmt.Sprintf("%s: %d entries, want %d", path, got.Len(), want.Len())
		}
		for _, k := range got.MapKeys() {
			w := want.MapIndex(k)
			if !w.IsValid() {
				return fmt.Sprintf("%s[%v]: not wanted", path, k)
			}
			if d := firstDiff(fmt.Sprintf("%s[%v]", path, k), got.MapIndex(k), w, depth+1); d != "" {
				return d
			}
		}
		return ""
	}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		return fmt.Sprintf("%s: %s, want %s", path, g, w)
	}
	return ""
}
