package authguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
)

// SecretCheck is a value that every instance keyed by the same secret
// computes alike, and instances with different secrets do not: an
// HMAC-SHA-256 of a constant under a key derived from the secret (as the
// subject, attempt and device keys are), truncated to 128 bits. It reveals
// neither the secret nor anything derived for another purpose. Instances
// sharing a store write it under Key if absent and compare (package
// redisstore's SecretCheck), so that one started with another secret, which
// would keep counts apart from the others, sees it.
type SecretCheck struct {
	// Tenant is the tenant whose own secret (Config.TenantSecrets) the
	// value is keyed by; "" for the main secret (Config.Secret), which
	// keys every other tenant's hashes and every token.
	Tenant string
	// Key is the store key the value is kept under:
	// <prefix>:_admin:secretcheck for the main secret and
	// <prefix>:_admin:secretcheck:<tenant> for a tenant's ("_admin" is no
	// tenant name).
	Key string
	// Value is the check value, 22 characters of base64url.
	Value string
}

// secretCheck computes the check of one secret.
func secretCheck(prefix, tenant string, secret []byte) SecretCheck {
	key := prefix + ":_admin:secretcheck"
	if tenant != "" {
		key += ":" + tenant
	}
	m := hmac.New(sha256.New, deriveKey(secret, "secret-check"))
	m.Write([]byte("tollgate secret check\x00" + tenant))
	sum := m.Sum(nil)
	return SecretCheck{Tenant: tenant, Key: key, Value: base64.RawURLEncoding.EncodeToString(sum[:hashBytes])}
}

// secretChecks computes the checks of cfg's secrets: the main one first,
// then each tenant secret by tenant name.
func secretChecks(cfg Config) []SecretCheck {
	checks := []SecretCheck{secretCheck(cfg.KeyPrefix, "", cfg.Secret)}
	for _, name := range slices.Sorted(maps.Keys(cfg.TenantSecrets)) {
		checks = append(checks, secretCheck(cfg.KeyPrefix, name, cfg.TenantSecrets[name]))
	}
	return checks
}

// SecretChecks returns the check values of the engine's secrets: the main
// secret's first, then one per tenant secret, by tenant name. A tenant
// without a secret of its own is covered by the main secret's check.
func (e *Engine) SecretChecks() []SecretCheck { return slices.Clone(e.secretChecks) }
