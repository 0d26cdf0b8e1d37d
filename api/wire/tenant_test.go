package wire_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// tenantRE is the tenant names' definition, which wire.ValidTenant implements
// without a regexp.
var tenantRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func TestValidTenant_AgreesWithItsRegexp(t *testing.T) {
	tests := []string{
		"", "default", "a", "0", "acme-eu_1", "-a", "_a", "a-", "a_", "A", "acMe", "a.b", "a b",
		"a\n", "\na", "é", "a\x00", strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a", 65), "a" + strings.Repeat("-", 63), "a" + strings.Repeat("-", 64),
	}
	for c := range 256 {
		tests = append(tests, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, name := range tests {
		if got, want := wire.ValidTenant(name), tenantRE.MatchString(name); got != want {
			t.Errorf("ValidTenant(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzValidTenant(f *testing.F) {
	for _, s := range []string{"default", "acme-eu_1", "-a", "A", strings.Repeat("a", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := wire.ValidTenant(name), tenantRE.MatchString(name); got != want {
			t.Errorf("ValidTenant(%q) = %v, want %v", name, got, want)
		}
	})
}
