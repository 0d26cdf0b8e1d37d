package auth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// Scope is what a caller may do. On the wire, in a token's space-separated
// "scope" claim, it is the constant's value.
type Scope string

const (
	// ScopeVerdicts allows the verdict calls: check, report and otp/send.
	ScopeVerdicts Scope = "verdicts"
	// ScopeAdminRead allows reading through the admin API.
	ScopeAdminRead Scope = "admin:read"
	// ScopeAdminWrite allows changing state through the admin API. It does
	// not imply ScopeAdminRead.
	ScopeAdminWrite Scope = "admin:write"
)

// knownScope reports whether s is one of the Scope constants.
func knownScope(s Scope) bool {
	return s == ScopeVerdicts || s == ScopeAdminRead || s == ScopeAdminWrite
}

// Key is one configured verification key.
type Key struct {
	// ID is the kid that tokens signed with this key name. It is required
	// when more than one key is configured. With a single key and no ID,
	// the key verifies every token whatever its kid.
	ID string
	// Alg is the one algorithm the key accepts: "EdDSA", "ES256", "RS256"
	// or "HS256".
	Alg string
	// Public is the key for the asymmetric algorithms: an
	// ed25519.PublicKey (EdDSA), an *ecdsa.PublicKey on P-256 (ES256) or an
	// *rsa.PublicKey of at least 2048 bits (RS256).
	Public crypto.PublicKey
	// Secret is the key for HS256: at least 32 bytes.
	Secret []byte
	// Tenants are the tenants whose tokens the key verifies: a token it
	// verifies must claim one of them, with that tenant's issuer (RFC 8725
	// section 3.8: the key must belong to the issuer). Each is named once.
	// A key serves no tenant it is not listed for, so a key shared on
	// purpose (one HS256 secret for every tenant) lists each of them. With
	// one tenant configured, the default is that tenant; with several
	// there is none, and New refuses a key without Tenants.
	Tenants []string
}

// Tenant is a configured tenant and the issuer its tokens must carry. Its
// tokens verify only with the keys listed for it (Key.Tenants,
// Config.JWKSTenants).
type Tenant struct {
	// Name is a tollgate tenant name: ^[a-z0-9][a-z0-9_-]{0,63}$.
	Name string
	// Issuer is the iss of the tenant's tokens. One issuer serves one
	// tenant only.
	Issuer string
}

// Config configures a Verifier.
type Config struct {
	// Audience must be among a token's aud values. It is required.
	Audience string
	// Keys are the keys tokens may be signed with. At least one is
	// required, unless JWKSURL is set.
	Keys []Key
	// JWKSURL, when set, is a JWK Set (an identity provider's keys) whose
	// keys are trusted too: fetched by New and then by Run every
	// JWKSRefresh, and at once (at most every 30s) when a token names a
	// kid no key has. It must be https (http only on a loopback address).
	// A configured key's kid in the set is ignored there.
	JWKSURL string
	// JWKSTenants are the tenants whose tokens the keys of JWKSURL verify,
	// as Key.Tenants are a key's. With one tenant configured, the default
	// is that tenant; with several there is none, and New refuses a
	// JWKSURL without JWKSTenants.
	JWKSTenants []string
	// JWKSRefresh is how often Run fetches JWKSURL. The default is 5m; at
	// least 10s.
	JWKSRefresh time.Duration
	// HTTPClient fetches JWKSURL. The default has a 10s timeout.
	HTTPClient *http.Client
	// Tenants are the tenants callers may act for. At least one is
	// required.
	Tenants []Tenant
	// MaxLifetime is the longest a token may live: the longest exp - now
	// accepted (beyond Leeway), and the longest exp - iat when iat is
	// present. It is at most 24h. The default is 1h.
	MaxLifetime time.Duration
	// Leeway is the clock skew allowed on exp, nbf and iat. It is at most
	// 5m. The default is 30s.
	Leeway time.Duration
	// Now is the clock. The default is time.Now.
	Now func() time.Time
}

const (
	defaultMaxLifetime = time.Hour
	maxMaxLifetime     = 24 * time.Hour
	defaultLeeway      = 30 * time.Second
	maxLeeway          = 5 * time.Minute

	// maxTokenBytes bounds the token in an Authorization header.
	maxTokenBytes = 8 << 10
	// minSecretBytes is the shortest HS256 secret: 256 bits, the size of
	// the hash (RFC 7518 section 3.2).
	minSecretBytes = 32
	// minRSABits is the smallest RSA modulus accepted.
	minRSABits = 2048
)

// Caller is a verified caller.
type Caller struct {
	// Tenant is the tenant the caller acts for, from the "tenant" claim.
	// It is always a configured tenant.
	Tenant string
	// Subject is the "sub" claim, for audit logs. It may be empty.
	Subject string
	// Scopes are the known scopes of the space-separated "scope" claim,
	// each once, in the token's order. Unknown scopes are left out.
	Scopes []Scope
}

// Has reports whether c holds s.
func (c Caller) Has(s Scope) bool {
	return slices.Contains(c.Scopes, s)
}

// Error is a refused call. Status is 401 (the caller is not authenticated)
// or 403 (it is, but the token does not allow the call). Reason is a stable
// short code for metrics: "missing", "malformed", "algorithm",
// "unknown_key", "signature", "expired", "lifetime", "not_yet_valid",
// "audience", "issuer", "tenant", "type" or "scope". Detail says more, for
// logs. Neither holds any part of the token, so an Error may be logged;
// still, clients should get no more than the status.
type Error struct {
	Status int
	Reason string
	Detail string
}

// Error returns "auth: " followed by the reason and the detail.
func (e *Error) Error() string {
	if e.Detail == "" {
		return "auth: " + e.Reason
	}
	return "auth: " + e.Reason + ": " + e.Detail
}

// Reasons of an Error.
const (
	reasonMissing     = "missing"
	reasonMalformed   = "malformed"
	reasonAlgorithm   = "algorithm"
	reasonUnknownKey  = "unknown_key"
	reasonSignature   = "signature"
	reasonExpired     = "expired"
	reasonLifetime    = "lifetime"
	reasonNotYetValid = "not_yet_valid"
	reasonAudience    = "audience"
	reasonIssuer      = "issuer"
	reasonTenant      = "tenant"
	reasonType        = "type"
	reasonScope       = "scope"
)

// unauthenticated is a 401 refusal.
func unauthenticated(reason, detail string) *Error {
	return &Error{Status: http.StatusUnauthorized, Reason: reason, Detail: detail}
}

// Verifier verifies bearer tokens against a Config. It is safe for
// concurrent use.
type Verifier struct {
	audience    string
	static      []*verifyKey           // the configured keys
	keys        atomic.Pointer[keySet] // the configured keys and the JWKS's
	jwks        *jwksFetcher           // nil without a JWKS URL
	jwksTenants []string               // the tenants of the JWKS's keys
	issuers     map[string]string      // tenant name → issuer
	maxLifetime time.Duration
	leeway      time.Duration
	now         func() time.Time
}

// keySet is the keys a Verifier trusts at one time, with the parser that
// allows their algorithms.
type keySet struct {
	byID   map[string]*verifyKey
	only   *verifyKey // the key, when exactly one is trusted
	algs   []string
	parser *jwt.Parser
}

// verifyKey is a configured key as keyFor hands it to jwt/v5.
type verifyKey struct {
	id       string
	alg      string
	material any      // the Secret or the Public key, boxed once
	tenants  []string // the tenants whose tokens it verifies
}

// New returns a Verifier for cfg after checking it: an audience, at least one
// key, each with a known algorithm and a key of the right type and strength
// for it (RSA of at least 2048 bits, P-256 for ES256, an HS256 secret of at
// least 32 bytes), a unique kid on every key when there are several, at
// least one tenant, tenant names valid and unique, each issuer serving one
// tenant only, the tenants of every key and of the JWKS configured tenants
// (and given, when there are several tenants), and MaxLifetime and Leeway
// within bounds. New copies the secrets; the public keys must not be
// modified afterwards.
func New(cfg Config) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, configError("Audience", "an audience is required")
	}
	if len(cfg.Keys) == 0 && cfg.JWKSURL == "" {
		return nil, configError("Keys", "at least one key (or a JWKS URL) is required")
	}
	v := &Verifier{
		audience:    cfg.Audience,
		issuers:     make(map[string]string, len(cfg.Tenants)),
		maxLifetime: cfg.MaxLifetime,
		leeway:      cfg.Leeway,
		now:         cfg.Now,
	}
	if len(cfg.Tenants) == 0 {
		return nil, configError("Tenants", "at least one tenant is required")
	}
	tenantOf := make(map[string]string, len(cfg.Tenants)) // issuer → tenant
	for i, t := range cfg.Tenants {
		switch {
		case !wire.ValidTenant(t.Name):
			return nil, configError(tenantField(i), "tenants[%d]: name %q is not a tenant name (^[a-z0-9][a-z0-9_-]{0,63}$)", i, t.Name)
		case t.Issuer == "":
			return nil, configError(tenantField(i), "tenants[%d] (%s): an issuer is required", i, t.Name)
		}
		if _, dup := v.issuers[t.Name]; dup {
			return nil, configError(tenantField(i), "tenants[%d]: tenant %q is configured twice", i, t.Name)
		}
		if other, dup := tenantOf[t.Issuer]; dup {
			return nil, configError(tenantField(i), "tenants[%d] (%s): issuer %q already serves tenant %q; one issuer may serve one tenant only", i, t.Name, t.Issuer, other)
		}
		v.issuers[t.Name] = t.Issuer
		tenantOf[t.Issuer] = t.Name
	}
	seen := map[string]bool{}
	for i, k := range cfg.Keys {
		if err := checkKey(k); err != nil {
			return nil, configError(keyField(i), "keys[%d] (kid %q): %w", i, k.ID, err)
		}
		if k.ID == "" && (len(cfg.Keys) > 1 || cfg.JWKSURL != "") {
			return nil, configError(keyField(i), "keys[%d]: an ID (kid) is required when more than one key is configured", i)
		}
		if seen[k.ID] {
			return nil, configError(keyField(i), "keys[%d]: kid %q is configured twice", i, k.ID)
		}
		seen[k.ID] = true
		tenants, err := v.keyTenants(k.Tenants)
		if err != nil {
			return nil, configError(keyField(i), "keys[%d] (kid %q): %w", i, k.ID, err)
		}
		vk := &verifyKey{id: k.ID, alg: k.Alg, material: k.Public, tenants: tenants}
		if k.Alg == algHS256 {
			vk.material = slices.Clone(k.Secret)
		}
		v.static = append(v.static, vk)
	}
	switch {
	case v.maxLifetime == 0:
		v.maxLifetime = defaultMaxLifetime
	case v.maxLifetime < 0 || v.maxLifetime > maxMaxLifetime:
		return nil, configError("MaxLifetime", "max lifetime %v is not within (0, %v]", v.maxLifetime, maxMaxLifetime)
	}
	switch {
	case v.leeway == 0:
		v.leeway = defaultLeeway
	case v.leeway < 0 || v.leeway > maxLeeway:
		return nil, configError("Leeway", "leeway %v is not within (0, %v]", v.leeway, maxLeeway)
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.keys.Store(v.keySet(nil))
	if cfg.JWKSURL != "" {
		f, err := newJWKSFetcher(cfg)
		if err != nil {
			return nil, err
		}
		if v.jwksTenants, err = v.keyTenants(cfg.JWKSTenants); err != nil {
			return nil, configError("JWKSTenants", "JWKS: %w", err)
		}
		v.jwks = f
		if err := v.refresh(context.Background()); err != nil && len(v.static) == 0 {
			return nil, jwksConfigError(err)
		}
	}
	return v, nil
}

// keyField and tenantField are the ConfigError.Field of Keys[i] and
// Tenants[i].
func keyField(i int) string    { return fmt.Sprintf("Keys[%d]", i) }
func tenantField(i int) string { return fmt.Sprintf("Tenants[%d]", i) }

// keyTenants checks the tenants a key is listed for (Key.Tenants or
// Config.JWKSTenants) against the configured ones and returns a copy; when
// none are listed, the tenant if only one is configured. A key is never
// taken for every tenant by default: with several, the list is required.
func (v *Verifier) keyTenants(listed []string) ([]string, error) {
	if len(listed) == 0 {
		if len(v.issuers) != 1 {
			return nil, errors.New("name the tenants whose tokens it verifies: with several tenants configured, a key serves only those it is listed for")
		}
		for name := range v.issuers {
			return []string{name}, nil
		}
	}
	for i, name := range listed {
		if _, ok := v.issuers[name]; !ok {
			return nil, fmt.Errorf("tenant %q is not configured", name)
		}
		if slices.Contains(listed[:i], name) {
			return nil, fmt.Errorf("tenant %q is listed twice", name)
		}
	}
	return slices.Clone(listed), nil
}

// keySet is the configured keys and fetched, less any fetched key whose
// kid a configured key has or that this package does not verify. The
// fetched keys verify the tokens of the JWKS's tenants.
func (v *Verifier) keySet(fetched []Key) *keySet {
	ks := &keySet{byID: map[string]*verifyKey{}}
	add := func(k *verifyKey) {
		ks.byID[k.id] = k
		if !slices.Contains(ks.algs, k.alg) {
			ks.algs = append(ks.algs, k.alg)
		}
	}
	for _, k := range v.static {
		add(k)
	}
	for _, k := range fetched {
		if _, taken := ks.byID[k.ID]; taken || k.ID == "" || checkKey(k) != nil {
			continue
		}
		add(&verifyKey{id: k.ID, alg: k.Alg, material: k.Public, tenants: v.jwksTenants})
	}
	if len(ks.byID) == 1 && v.jwks == nil {
		for _, k := range ks.byID {
			ks.only = k
		}
	}
	ks.parser = jwt.NewParser(
		jwt.WithValidMethods(ks.algs),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(v.audience),
		jwt.WithLeeway(v.leeway),
		jwt.WithTimeFunc(v.now),
		jwt.WithStrictDecoding(),
	)
	return ks
}

// Verify checks an Authorization header value and that its token allows
// need. On success it returns the Caller and a nil error. Otherwise the
// error is an *Error: 401 when the header does not hold a valid token for a
// configured tenant, 403 "scope" when the token is valid but lacks need; in
// that case only, the Caller is returned too, for the audit log. need
// should be one of the Scope constants: any other value, the empty Scope
// included, is never held.
//
// Checks run in this order, and the first that fails gives the Reason:
// the header ("missing", "malformed"); the encoding of the JWS, its JOSE
// header and its claims ("malformed"); alg, which must be the algorithm of
// a configured key ("algorithm"); crit ("malformed"), typ ("type") and kid
// ("unknown_key"); the kid's key's algorithm ("algorithm"); the signature
// ("signature"); exp ("expired", or "lifetime" when it is absent); nbf and
// iat ("not_yet_valid"); aud ("audience"); the lifetime ("lifetime"); the
// tenant ("tenant"); the issuer ("issuer"); that the key which verified
// the signature is listed for the tenant ("issuer" too: RFC 8725 section
// 3.8, the key must belong to the issuer); and the scope ("scope").
func (v *Verifier) Verify(authorization string, need Scope) (Caller, error) {
	raw, refused := bearerToken(authorization)
	if refused != nil {
		return Caller{}, refused
	}
	var c claims
	ks := v.keys.Load()
	tok, err := ks.parser.ParseWithClaims(raw, &c, ks.keyFor)
	if err != nil {
		refused := ks.refusal(tok, &c, err)
		if refused.Reason == reasonUnknownKey && v.jwks != nil {
			v.jwks.soon(v) // a key the provider may have just added
		}
		return Caller{}, refused
	}
	exp := c.ExpiresAt.Time // present: the parser requires it
	if exp.Sub(v.now()) > v.maxLifetime+v.leeway {
		return Caller{}, unauthenticated(reasonLifetime, "exp is further away than the longest lifetime allowed")
	}
	if c.IssuedAt != nil && exp.Sub(c.IssuedAt.Time) > v.maxLifetime {
		return Caller{}, unauthenticated(reasonLifetime, "exp - iat is longer than the longest lifetime allowed")
	}
	issuer, ok := v.issuers[c.Tenant]
	if !ok {
		return Caller{}, unauthenticated(reasonTenant, "the tenant claim names no configured tenant")
	}
	if c.Issuer != issuer {
		return Caller{}, unauthenticated(reasonIssuer, "iss is not the issuer of the token's tenant")
	}
	// Without this, one tenant's key could sign a token claiming another
	// tenant and its issuer: both claims are the signer's to choose.
	if k, _ := ks.named(tok); k == nil || !slices.Contains(k.tenants, c.Tenant) {
		return Caller{}, unauthenticated(reasonIssuer, "the key that verified the token is not one of its tenant's keys")
	}
	caller := Caller{Tenant: c.Tenant, Subject: c.Subject, Scopes: parseScopes(c.Scope)}
	if !caller.Has(need) {
		return caller, &Error{Status: http.StatusForbidden, Reason: reasonScope, Detail: "the token does not hold the scope " + string(need)}
	}
	return caller, nil
}

// bearerToken returns the token of a "Bearer <token>" header value, or why
// there is none.
func bearerToken(h string) (string, *Error) {
	if strings.TrimSpace(h) == "" {
		return "", unauthenticated(reasonMissing, "no Authorization header")
	}
	const scheme = "bearer "
	if len(h) < len(scheme) || !asciiEqualFold(h[:len(scheme)], scheme) {
		return "", unauthenticated(reasonMalformed, `the Authorization header is not "Bearer <token>"`)
	}
	tok := h[len(scheme):]
	switch {
	case tok == "":
		return "", unauthenticated(reasonMalformed, "the bearer token is empty")
	case len(tok) > maxTokenBytes:
		return "", unauthenticated(reasonMalformed, "the bearer token is longer than 8 KiB")
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; !isBase64URL(c) && c != '.' {
			return "", unauthenticated(reasonMalformed, "the bearer token holds a character that is not base64url or '.'")
		}
	}
	return tok, nil
}

// asciiEqualFold reports whether s equals lower, a lower-case ASCII string,
// ignoring ASCII case.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// keyFor is the jwt.Keyfunc: it checks the JOSE header and returns the
// configured key the token names. It never looks at jku, x5u, jwk or x5c.
// jwt/v5 has already checked that alg is one of ks.algs.
func (ks *keySet) keyFor(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, unauthenticated(reasonMalformed, "the token has a crit header; no extension is understood")
	}
	if typ, ok := t.Header["typ"]; ok {
		s, _ := typ.(string)
		if !strings.EqualFold(s, "JWT") && !strings.EqualFold(s, "at+jwt") {
			return nil, unauthenticated(reasonType, `typ is neither "JWT" nor "at+jwt"`)
		}
	}
	k, refused := ks.named(t)
	if refused != nil {
		return nil, refused
	}
	if t.Method == nil || t.Method.Alg() != k.alg {
		return nil, unauthenticated(reasonAlgorithm, "alg is not the algorithm of the key kid names")
	}
	return k.material, nil
}

// named returns the key t's kid names, or the only key when there is one
// and the token has no kid or the key no ID.
func (ks *keySet) named(t *jwt.Token) (*verifyKey, *Error) {
	kid, hasKid := t.Header["kid"]
	switch {
	case !hasKid && ks.only == nil:
		return nil, unauthenticated(reasonUnknownKey, "the token has no kid and several keys are configured")
	case !hasKid || ks.only != nil && ks.only.id == "":
		return ks.only, nil
	}
	s, ok := kid.(string)
	if !ok {
		return nil, unauthenticated(reasonMalformed, "kid is not a string")
	}
	k := ks.byID[s]
	if k == nil {
		return nil, unauthenticated(reasonUnknownKey, "kid names no configured key")
	}
	return k, nil
}

// refusal turns an error of jwt/v5 into an *Error. tok and c are what the
// parser returned and filled in; tok may be nil.
func (ks *keySet) refusal(tok *jwt.Token, c *claims, err error) *Error {
	var refused *Error
	switch {
	case errors.As(err, &refused): // from keyFor
		return refused
	case errors.Is(err, jwt.ErrTokenMalformed), tok == nil:
		return unauthenticated(reasonMalformed, "the token is not a well-formed JWS")
	case tok.Method == nil:
		// ErrTokenUnverifiable: alg is missing or names no algorithm
		// jwt/v5 knows.
		return unauthenticated(reasonAlgorithm, "alg is missing or unknown")
	case !slices.Contains(ks.algs, tok.Method.Alg()):
		// jwt/v5 reports an alg outside WithValidMethods, "none"
		// included, as ErrTokenSignatureInvalid.
		return unauthenticated(reasonAlgorithm, "alg is not the algorithm of any configured key")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return unauthenticated(reasonSignature, "the signature does not verify with the key kid names")
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthenticated(reasonExpired, "exp has passed")
	case c.ExpiresAt == nil:
		// jwt/v5 reports a missing exp as ErrTokenRequiredClaimMissing,
		// as it does a missing aud.
		return unauthenticated(reasonLifetime, "the token has no exp")
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthenticated(reasonNotYetValid, "nbf or iat is in the future")
	case errors.Is(err, jwt.ErrTokenInvalidAudience), errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return unauthenticated(reasonAudience, "aud does not hold this service's audience")
	default:
		return unauthenticated(reasonMalformed, "the token could not be verified")
	}
}

// parseScopes returns the known scopes of a space-separated scope claim,
// each once.
func parseScopes(s string) []Scope {
	var out []Scope
	for f := range strings.SplitSeq(s, " ") {
		if sc := Scope(f); knownScope(sc) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}
