package authguard_test

import (
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// TestSecretChecks_TellSecretsApartAndRevealNone: the same secrets give the
// same checks on every instance; another main or tenant secret changes
// only its own check; no check holds a secret.
func TestSecretChecks_TellSecretsApartAndRevealNone(t *testing.T) {
	const main, other = "main-secret-of-the-deployment-32-bytes", "another-secret-not-the-main-one-32-bytes"
	const acme, acme2 = "acme-tenant-secret-at-least-32-bytes!!", "acme-tenant-secret-rotated-32-bytes!!!"
	checks := func(secret, acmeSecret, prefix string) []authguard.SecretCheck {
		t.Helper()
		mem := memstore.New(memstore.Config{})
		t.Cleanup(func() { mem.Close() })
		e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: mem, Secret: []byte(secret), KeyPrefix: prefix,
			TenantSecrets: map[string][]byte{"acme": []byte(acmeSecret)}})
		if err != nil {
			t.Fatal(err)
		}
		return e.SecretChecks()
	}
	base := checks(main, acme, "")
	if len(base) != 2 || base[0].Tenant != "" || base[0].Key != "tg:_admin:secretcheck" || base[1].Tenant != "acme" || base[1].Key != "tg:_admin:secretcheck:acme" {
		t.Fatalf("SecretChecks = %+v, want the main secret's at tg:_admin:secretcheck, then acme's", base)
	}
	tests := []struct {
		name                 string
		got                  []authguard.SecretCheck
		mainSame, tenantSame bool
	}{
		{"another instance, same secrets", checks(main, acme, ""), true, true},
		{"another main secret", checks(other, acme, ""), false, true},
		{"another tenant secret", checks(main, acme2, ""), true, false},
	}
	for _, tt := range tests {
		if got := tt.got[0].Value == base[0].Value; got != tt.mainSame {
			t.Errorf("%s: main check equal = %v, want %v", tt.name, got, tt.mainSame)
		}
		if got := tt.got[1].Value == base[1].Value; got != tt.tenantSame {
			t.Errorf("%s: tenant check equal = %v, want %v", tt.name, got, tt.tenantSame)
		}
	}
	if p := checks(main, acme, "blue"); p[0].Key != "blue:_admin:secretcheck" {
		t.Errorf("with key prefix blue: key %q", p[0].Key)
	}
	for _, c := range base {
		for _, s := range []string{main, acme, main[:16], acme[:16]} {
			if strings.Contains(c.Value, s) || strings.Contains(c.Key, s) {
				t.Errorf("check %+v holds a secret", c)
			}
		}
		if len(c.Value) != 22 {
			t.Errorf("check value of %d characters, want 22", len(c.Value))
		}
	}
}
