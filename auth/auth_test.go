package auth_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// TestVerify_Attacks runs each attack on a Verifier configured with one key
// of each algorithm and checks the exact refusal.
func TestVerify_Attacks(t *testing.T) {
	clock := testclock.New(time.Time{})
	now := clock.Now()
	k := testKeys()
	good := claimsAt(now)
	rsaDER, err := x509.MarshalPKIXPublicKey(k.rsa.Public())
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaDER})
	evilJWK := map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(k.evilEd.Public().(ed25519.PublicKey))}
	edToken := forge(hdr("EdDSA", "ed"), good, jwt.SigningMethodEdDSA, k.ed)
	parts := strings.Split(edToken, ".")

	tests := []struct {
		name   string
		token  string
		need   auth.Scope // ScopeVerdicts when empty
		status int
		reason string
	}{
		{"AlgNone", forge(hdr("none", "ed"), good, nil, nil), "", 401, "algorithm"},
		{"AlgNoneWithoutKid", forge(hdr("none", ""), good, nil, nil), "", 401, "algorithm"},
		{"AlgNoneUpperCase", forge(hdr("NONE", "ed"), good, nil, nil), "", 401, "algorithm"},
		{"AlgMissing", forge(map[string]any{"typ": "JWT", "kid": "ed"}, good, nil, nil), "", 401, "algorithm"},
		{"AlgNotConfigured_HS512", forge(hdr("HS512", "hs"), good, jwt.SigningMethodHS512, k.hs), "", 401, "algorithm"},
		{"AlgNotConfigured_PS256", forge(hdr("PS256", "rsa"), good, jwt.SigningMethodPS256, k.rsa), "", 401, "algorithm"},
		{"RS256ToHS256KeyConfusion_PEM", forge(hdr("HS256", "rsa"), good, jwt.SigningMethodHS256, rsaPEM), "", 401, "algorithm"},
		{"RS256ToHS256KeyConfusion_DER", forge(hdr("HS256", "rsa"), good, jwt.SigningMethodHS256, rsaDER), "", 401, "algorithm"},
		{"ES256TokenNamingEdDSAKey", forge(hdr("ES256", "ed"), good, jwt.SigningMethodES256, k.ec), "", 401, "algorithm"},
		{"SignedByUnknownKeySameKid", forge(hdr("EdDSA", "ed"), good, jwt.SigningMethodEdDSA, k.evilEd), "", 401, "signature"},
		{"TamperedClaims", parts[0] + "." + b64(with(good, "tenant", "globex", "iss", globexIssuer)) + "." + parts[2], "", 401, "signature"},
		{"SignatureOfAnotherToken", forge(hdr("EdDSA", "ed"), with(good, "scope", "admin:write"), nil, nil) + parts[2], "", 401, "signature"},
		{"UnknownKid", forge(hdr("EdDSA", "nope"), good, jwt.SigningMethodEdDSA, k.ed), "", 401, "unknown_key"},
		{"KidNotAString", forge(with(hdr("EdDSA", ""), "kid", 1), good, jwt.SigningMethodEdDSA, k.ed), "", 401, "malformed"},
		{"NoKidWithSeveralKeys", forge(hdr("EdDSA", ""), good, jwt.SigningMethodEdDSA, k.ed), "", 401, "unknown_key"},
		{"Expired", forge(hdr("EdDSA", "ed"), with(good, "iat", now.Add(-20*time.Minute).Unix(), "exp", now.Add(-time.Minute).Unix()), jwt.SigningMethodEdDSA, k.ed), "", 401, "expired"},
		{"NoExp", forge(hdr("EdDSA", "ed"), with(good, "exp", drop), jwt.SigningMethodEdDSA, k.ed), "", 401, "lifetime"},
		{"ExpNull", forge(hdr("EdDSA", "ed"), with(good, "exp", nil), jwt.SigningMethodEdDSA, k.ed), "", 401, "lifetime"},
		{"ExpAsString", forge(hdr("EdDSA", "ed"), with(good, "exp", "99999999999"), jwt.SigningMethodEdDSA, k.ed), "", 401, "malformed"},
		{"ExpFarFuture", forge(hdr("EdDSA", "ed"), with(good, "iat", drop, "exp", 1e300), jwt.SigningMethodEdDSA, k.ed), "", 401, "lifetime"},
		{"LifetimeTooLong", forge(hdr("EdDSA", "ed"), with(good, "iat", drop, "exp", now.Add(2*time.Hour).Unix()), jwt.SigningMethodEdDSA, k.ed), "", 401, "lifetime"},
		{"LifetimeTooLongSinceIat", forge(hdr("EdDSA", "ed"), with(good, "iat", now.Add(-50*time.Minute).Unix(), "exp", now.Add(20*time.Minute).Unix()), jwt.SigningMethodEdDSA, k.ed), "", 401, "lifetime"},
		{"NbfInFuture", forge(hdr("EdDSA", "ed"), with(good, "nbf", now.Add(5*time.Minute).Unix()), jwt.SigningMethodEdDSA, k.ed), "", 401, "not_yet_valid"},
		{"IatInFuture", forge(hdr("EdDSA", "ed"), with(good, "iat", now.Add(5*time.Minute).Unix()), jwt.SigningMethodEdDSA, k.ed), "", 401, "not_yet_valid"},
		{"WrongAudience", forge(hdr("EdDSA", "ed"), with(good, "aud", []string{"other-service"}), jwt.SigningMethodEdDSA, k.ed), "", 401, "audience"},
		{"NoAudience", forge(hdr("EdDSA", "ed"), with(good, "aud", drop), jwt.SigningMethodEdDSA, k.ed), "", 401, "audience"},
		{"WrongIssuerForTenant", forge(hdr("EdDSA", "ed"), with(good, "iss", "https://evil.example/"), jwt.SigningMethodEdDSA, k.ed), "", 401, "issuer"},
		{"NoIssuer", forge(hdr("EdDSA", "ed"), with(good, "iss", drop), jwt.SigningMethodEdDSA, k.ed), "", 401, "issuer"},
		{"UnknownTenant", forge(hdr("EdDSA", "ed"), with(good, "tenant", "initech"), jwt.SigningMethodEdDSA, k.ed), "", 401, "tenant"},
		{"NoTenant", forge(hdr("EdDSA", "ed"), with(good, "tenant", drop), jwt.SigningMethodEdDSA, k.ed), "", 401, "tenant"},
		{"OtherTenantsIssuerClaimsThisTenant", forge(hdr("EdDSA", "ed"), with(good, "iss", globexIssuer), jwt.SigningMethodEdDSA, k.ed), "", 401, "issuer"},
		{"TenantClaimWithOtherCase", forge(hdr("EdDSA", "ed"), with(good, "tenant", drop, "Tenant", "acme"), jwt.SigningMethodEdDSA, k.ed), "", 401, "tenant"},
		{"TenantClaimTwice", forge(hdr("EdDSA", "ed"), `{"iss":"`+acmeIssuer+`","aud":"tollgate","tenant":"globex","scope":"verdicts","exp":`+itoa(now.Add(time.Minute).Unix())+`,"tenant":"acme"}`, jwt.SigningMethodEdDSA, k.ed), "", 401, "malformed"},
		{"TenantNotAString", forge(hdr("EdDSA", "ed"), with(good, "tenant", []string{"acme"}), jwt.SigningMethodEdDSA, k.ed), "", 401, "malformed"},
		{"InjectedJWKHeader", forge(with(hdr("EdDSA", "ed"), "jwk", evilJWK), good, jwt.SigningMethodEdDSA, k.evilEd), "", 401, "signature"},
		{"InjectedJWKHeaderWithoutKid", forge(with(hdr("EdDSA", ""), "jwk", evilJWK), good, jwt.SigningMethodEdDSA, k.evilEd), "", 401, "unknown_key"},
		{"JKUHeaderSignedByOtherKey", forge(with(hdr("EdDSA", "ed"), "jku", "https://evil.example/jwks.json"), good, jwt.SigningMethodEdDSA, k.evilEd), "", 401, "signature"},
		{"X5UHeaderSignedByOtherKey", forge(with(hdr("EdDSA", "ed"), "x5u", "https://evil.example/cert.pem"), good, jwt.SigningMethodEdDSA, k.evilEd), "", 401, "signature"},
		{"WrongTyp", forge(with(hdr("EdDSA", "ed"), "typ", "dpop+jwt"), good, jwt.SigningMethodEdDSA, k.ed), "", 401, "type"},
		{"TypNotAString", forge(with(hdr("EdDSA", "ed"), "typ", 1), good, jwt.SigningMethodEdDSA, k.ed), "", 401, "type"},
		{"CritHeader", forge(with(hdr("EdDSA", "ed"), "crit", []string{"b64"}, "b64", false), good, jwt.SigningMethodEdDSA, k.ed), "", 401, "malformed"},
		{"NonCanonicalSignatureEncoding", parts[0] + "." + parts[1] + "." + flipPadBits(parts[2]), "", 401, "malformed"},
		{"PaddedSegments", parts[0] + "=." + parts[1] + "." + parts[2], "", 401, "malformed"},
		{"VerdictsTokenOnAdminWrite", edToken, auth.ScopeAdminWrite, 403, "scope"},
		{"NoScopeOnVerdicts", forge(hdr("EdDSA", "ed"), with(good, "scope", drop), jwt.SigningMethodEdDSA, k.ed), "", 403, "scope"},
		{"UnknownScopeOnly", forge(hdr("EdDSA", "ed"), with(good, "scope", "admin verdicts:all"), jwt.SigningMethodEdDSA, k.ed), "", 403, "scope"},
		{"EmptyNeedIsNeverHeld", edToken, auth.Scope(""), 403, "scope"},
	}
	v := newVerifier(t, testConfig(clock))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			need := tt.need
			if need == "" && tt.name != "EmptyNeedIsNeverHeld" {
				need = auth.ScopeVerdicts
			}
			h := "Bearer " + tt.token
			_, err := v.Verify(h, need)
			wantRefusal(t, err, tt.status, tt.reason)
			checkError(t, h, err)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// flipPadBits sets the unused low bits of the last base64url character of
// s: a different string that a lax decoder turns into the same bytes.
func flipPadBits(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[last^1])
}

// TestVerify_RS256ToHS256KeyConfusionWithOnlyRSAConfigured signs an HS256
// token with the RSA public key as the secret when no HS256 key exists:
// jwt/v5's allow-list refuses it before any key is looked up.
func TestVerify_RS256ToHS256KeyConfusionWithOnlyRSAConfigured(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	cfg := testConfig(clock)
	cfg.Keys = []auth.Key{{ID: "rsa", Alg: "RS256", Public: k.rsa.Public(), Tenants: []string{"acme"}}}
	v := newVerifier(t, cfg)
	der, err := x509.MarshalPKIXPublicKey(k.rsa.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	for _, secret := range [][]byte{der, pemBytes} {
		for _, kid := range []string{"rsa", ""} {
			_, err := v.Verify("Bearer "+forge(hdr("HS256", kid), claimsAt(clock.Now()), jwt.SigningMethodHS256, secret), auth.ScopeVerdicts)
			wantRefusal(t, err, 401, "algorithm")
		}
	}
}

// TestVerify_InjectedJWKHeaderWithOneKey embeds the attacker's key in a
// token without kid when one key is configured: the configured key is used.
func TestVerify_InjectedJWKHeaderWithOneKey(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	cfg := testConfig(clock)
	cfg.Keys = []auth.Key{{Alg: "EdDSA", Public: k.ed.Public(), Tenants: []string{"acme"}}}
	v := newVerifier(t, cfg)
	evilJWK := map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(k.evilEd.Public().(ed25519.PublicKey))}
	for _, kid := range []string{"", "evil"} {
		_, err := v.Verify("Bearer "+forge(with(hdr("EdDSA", kid), "jwk", evilJWK), claimsAt(clock.Now()), jwt.SigningMethodEdDSA, k.evilEd), auth.ScopeVerdicts)
		wantRefusal(t, err, 401, "signature")
	}
}

// TestVerify_JKUHeaderIsIgnored checks that a jku header changes nothing: a
// token signed by the configured key is accepted, one signed by the key the
// URL would serve is not.
func TestVerify_JKUHeaderIsIgnored(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	v := newVerifier(t, testConfig(clock))
	h := with(hdr("EdDSA", "ed"), "jku", "https://evil.example/jwks.json", "x5u", "https://evil.example/x.pem")
	if _, err := v.Verify("Bearer "+forge(h, claimsAt(clock.Now()), jwt.SigningMethodEdDSA, k.ed), auth.ScopeVerdicts); err != nil {
		t.Errorf("token signed by the configured key: %v", err)
	}
	_, err := v.Verify("Bearer "+forge(h, claimsAt(clock.Now()), jwt.SigningMethodEdDSA, k.evilEd), auth.ScopeVerdicts)
	wantRefusal(t, err, 401, "signature")
}

// TestVerify_ValidTokens accepts a token of each algorithm and reads the
// caller from it.
func TestVerify_ValidTokens(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	v := newVerifier(t, testConfig(clock))
	c := with(claimsAt(clock.Now()), "tenant", "globex", "iss", globexIssuer, "sub", "svc-login",
		"scope", "admin:read unknown verdicts admin:read", "jti", "x1", "Tenant", "acme")
	tests := []struct {
		name   string
		header map[string]any
		method jwt.SigningMethod
		key    any
	}{
		{"EdDSA", hdr("EdDSA", "ed"), jwt.SigningMethodEdDSA, k.ed},
		{"ES256", hdr("ES256", "ec"), jwt.SigningMethodES256, k.ec},
		{"RS256", hdr("RS256", "rsa"), jwt.SigningMethodRS256, k.rsa},
		{"HS256", hdr("HS256", "hs"), jwt.SigningMethodHS256, k.hs},
		{"TypAbsent", with(hdr("EdDSA", "ed"), "typ", drop), jwt.SigningMethodEdDSA, k.ed},
		{"TypLowerCase", with(hdr("EdDSA", "ed"), "typ", "jwt"), jwt.SigningMethodEdDSA, k.ed},
		{"TypAccessToken", with(hdr("EdDSA", "ed"), "typ", "at+JWT"), jwt.SigningMethodEdDSA, k.ed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, scheme := range []string{"Bearer ", "bearer ", "BEARER "} {
				got, err := v.Verify(scheme+forge(tt.header, c, tt.method, tt.key), auth.ScopeVerdicts)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if got.Tenant != "globex" || got.Subject != "svc-login" || !slices.Equal(got.Scopes, []auth.Scope{auth.ScopeAdminRead, auth.ScopeVerdicts}) {
					t.Errorf("Verify = %+v, want globex svc-login [admin:read verdicts]", got)
				}
				if !got.Has(auth.ScopeAdminRead) || got.Has(auth.ScopeAdminWrite) {
					t.Errorf("Has: %+v", got)
				}
			}
		})
	}
}

// TestVerify_AudienceAsString accepts aud as a single string and as an
// array holding other audiences too.
func TestVerify_AudienceAsString(t *testing.T) {
	clock := testclock.New(time.Time{})
	v := newVerifier(t, testConfig(clock))
	for _, aud := range []any{audience, []string{"other", audience}} {
		tok := forge(hdr("EdDSA", "ed"), with(claimsAt(clock.Now()), "aud", aud), jwt.SigningMethodEdDSA, testKeys().ed)
		if _, err := v.Verify("Bearer "+tok, auth.ScopeVerdicts); err != nil {
			t.Errorf("aud %v: %v", aud, err)
		}
	}
}

// TestVerify_ScopeRefusalNamesTheCaller returns the verified caller with a
// 403, for the audit log.
func TestVerify_ScopeRefusalNamesTheCaller(t *testing.T) {
	clock := testclock.New(time.Time{})
	v := newVerifier(t, testConfig(clock))
	tok := forge(hdr("EdDSA", "ed"), with(claimsAt(clock.Now()), "scope", "verdicts"), jwt.SigningMethodEdDSA, testKeys().ed)
	c, err := v.Verify("Bearer "+tok, auth.ScopeAdminWrite)
	wantRefusal(t, err, 403, "scope")
	if c.Tenant != "acme" || c.Subject != "alice" {
		t.Errorf("caller = %+v, want acme alice", c)
	}
}

// TestVerify_LeewayHonoured steps the clock past a token's exp and nbf.
func TestVerify_LeewayHonoured(t *testing.T) {
	clock := testclock.New(time.Time{})
	start := clock.Now()
	v := newVerifier(t, testConfig(clock))
	k := testKeys()
	expiring := "Bearer " + forge(hdr("EdDSA", "ed"), with(claimsAt(start), "exp", start.Unix()), jwt.SigningMethodEdDSA, k.ed)
	early := "Bearer " + forge(hdr("EdDSA", "ed"), with(claimsAt(start), "nbf", start.Add(20*time.Second).Unix(), "iat", start.Add(20*time.Second).Unix()), jwt.SigningMethodEdDSA, k.ed)
	steps := []struct {
		name   string
		at     time.Duration
		header string
		reason string // "" when accepted
	}{
		{"t=0s: nbf and iat 20s ahead, within leeway", 0, early, ""},
		{"t=0s: exp now", 0, expiring, ""},
		{"t=+10s: expired 10s ago, leeway 30s", 10 * time.Second, expiring, ""},
		{"t=+29s: expired 29s ago", 29 * time.Second, expiring, ""},
		{"t=+30s: expired 30s ago", 30 * time.Second, expiring, "expired"},
		{"t=+31s: expired 31s ago", 31 * time.Second, expiring, "expired"},
		{"t=-11s: nbf 31s ahead", -11 * time.Second, early, "not_yet_valid"},
	}
	for _, st := range steps {
		clock.Set(start.Add(st.at))
		_, err := v.Verify(st.header, auth.ScopeVerdicts)
		if st.reason == "" {
			if err != nil {
				t.Errorf("%s: %v, want accepted", st.name, err)
			}
			continue
		}
		t.Run(st.name, func(t *testing.T) { wantRefusal(t, err, 401, st.reason) })
	}
}

// TestVerify_MaxLifetimeBoundary accepts exactly MaxLifetime (plus leeway
// from now) and refuses a second more.
func TestVerify_MaxLifetimeBoundary(t *testing.T) {
	clock := testclock.New(time.Time{})
	now := clock.Now()
	cfg := testConfig(clock)
	cfg.MaxLifetime = 10 * time.Minute
	cfg.Leeway = 5 * time.Second
	v := newVerifier(t, cfg)
	k := testKeys()
	tests := []struct {
		name   string
		claims map[string]any
		reason string
	}{
		{"exp-iat = max", with(claimsAt(now), "exp", now.Add(10*time.Minute).Unix()), ""},
		{"exp-iat = max+1s", with(claimsAt(now), "exp", now.Add(10*time.Minute+time.Second).Unix()), "lifetime"},
		{"exp-now = max+leeway, no iat", with(claimsAt(now), "iat", drop, "exp", now.Add(10*time.Minute+5*time.Second).Unix()), ""},
		{"exp-now = max+leeway+1s, no iat", with(claimsAt(now), "iat", drop, "exp", now.Add(10*time.Minute+6*time.Second).Unix()), "lifetime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify("Bearer "+forge(hdr("EdDSA", "ed"), tt.claims, jwt.SigningMethodEdDSA, k.ed), auth.ScopeVerdicts)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantRefusal(t, err, 401, tt.reason)
		})
	}
}

// TestVerify_MalformedHeaders refuses Authorization values that are not
// "Bearer <JWS>".
func TestVerify_MalformedHeaders(t *testing.T) {
	clock := testclock.New(time.Time{})
	v := newVerifier(t, testConfig(clock))
	valid := forge(hdr("EdDSA", "ed"), claimsAt(clock.Now()), jwt.SigningMethodEdDSA, testKeys().ed)
	big := forge(hdr("EdDSA", "ed"), with(claimsAt(clock.Now()), "pad", strings.Repeat("x", 9<<10)), jwt.SigningMethodEdDSA, testKeys().ed)
	tests := []struct {
		name, header, reason string
	}{
		{"Absent", "", "missing"},
		{"Blank", "  \t", "missing"},
		{"Basic", "Basic x", "malformed"},
		{"BasicCredentials", "Basic YWxpY2U6aHVudGVyMg==", "malformed"},
		{"SchemeOnly", "Bearer", "malformed"},
		{"SchemeAndSpace", "Bearer ", "malformed"},
		{"TwoSpaces", "Bearer  " + valid, "malformed"},
		{"TwoSpacesLiteral", "Bearer  two spaces", "malformed"},
		{"Tab", "Bearer\t" + valid, "malformed"},
		{"TrailingSpace", "Bearer " + valid + " ", "malformed"},
		{"TrailingNewline", "Bearer " + valid + "\n", "malformed"},
		{"NoSpace", "Bearer" + valid, "malformed"},
		{"OtherScheme", "DPoP " + valid, "malformed"},
		{"Token9KiB", "Bearer " + big, "malformed"},
		{"Token9KiBOfA", "Bearer " + strings.Repeat("a", 9<<10), "malformed"},
		{"OneSegment", "Bearer abc", "malformed"},
		{"TwoSegments", "Bearer abc.def", "malformed"},
		{"FourSegments", "Bearer " + valid + ".x", "malformed"},
		{"JWEFiveSegments", "Bearer a.b.c.d.e", "malformed"},
		{"HeaderNotJSON", "Bearer " + b64("not json") + "." + b64(claimsAt(clock.Now())) + ".sig", "malformed"},
		{"ClaimsNotJSON", "Bearer " + b64(hdr("EdDSA", "ed")) + "." + b64("[1]") + ".sig", "malformed"},
		{"ClaimsNotObject", "Bearer " + b64(hdr("EdDSA", "ed")) + "." + b64("\"x\"") + ".sig", "malformed"},
		{"StandardBase64", "Bearer " + strings.ReplaceAll(valid, "_", "/") + "+", "malformed"},
		{"NonASCII", "Bearer " + valid + "é", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(tt.header, auth.ScopeVerdicts)
			wantRefusal(t, err, 401, tt.reason)
			checkError(t, tt.header, err)
		})
	}
	if len(big) <= 8<<10 {
		t.Fatalf("big token has %d bytes, want more than 8 KiB", len(big))
	}
}

// TestVerify_TokenAt8KiB accepts a token of exactly 8 KiB.
func TestVerify_TokenAt8KiB(t *testing.T) {
	clock := testclock.New(time.Time{})
	v := newVerifier(t, testConfig(clock))
	base := forge(hdr("HS256", "hs"), with(claimsAt(clock.Now()), "pad", ""), jwt.SigningMethodHS256, testKeys().hs)
	n := (8<<10 - len(base)) * 3 / 4 // pad bytes for 8 KiB, about
	for pad := n - 3; pad <= n+3; pad++ {
		tok := forge(hdr("HS256", "hs"), with(claimsAt(clock.Now()), "pad", strings.Repeat("x", pad)), jwt.SigningMethodHS256, testKeys().hs)
		_, err := v.Verify("Bearer "+tok, auth.ScopeVerdicts)
		if len(tok) <= 8<<10 && err != nil {
			t.Errorf("token of %d bytes: %v", len(tok), err)
		}
		if len(tok) > 8<<10 {
			wantRefusal(t, err, 401, "malformed")
		}
	}
}

// TestNew_RefusesBadConfig checks New's validation.
func TestNew_RefusesBadConfig(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*auth.Config)
		want   string // in the error
	}{
		{"NoAudience", func(c *auth.Config) { c.Audience = "" }, "audience"},
		{"NoKeys", func(c *auth.Config) { c.Keys = nil }, "at least one key"},
		{"ShortHS256Secret", func(c *auth.Config) { c.Keys[3].Secret = make([]byte, 31) }, "at least 32"},
		{"HS256WithPublicKey", func(c *auth.Config) { c.Keys[3].Public = k.ed.Public() }, "secret, not a public key"},
		{"RSA1024", func(c *auth.Config) { c.Keys[2].Public = rsa1024.Public() }, "1024 bits"},
		{"P384ForES256", func(c *auth.Config) { c.Keys[1].Public = p384.Public() }, "P-256"},
		{"EdDSAKeyForES256", func(c *auth.Config) { c.Keys[1].Public = k.ed.Public() }, "*ecdsa.PublicKey"},
		{"PrivateKeyAsPublic", func(c *auth.Config) { c.Keys[0].Public = k.ed }, "ed25519.PublicKey"},
		{"NoPublicKey", func(c *auth.Config) { c.Keys[0].Public = nil }, "not nothing"},
		{"SecretOnAsymmetricKey", func(c *auth.Config) { c.Keys[0].Secret = k.hs }, "not a secret"},
		{"AlgNone", func(c *auth.Config) { c.Keys[0].Alg = "none" }, `"none"`},
		{"AlgHS512", func(c *auth.Config) { c.Keys[3].Alg = "HS512" }, `"HS512"`},
		{"AlgMissing", func(c *auth.Config) { c.Keys[0].Alg = "" }, "alg"},
		{"InvalidECPoint", func(c *auth.Config) { c.Keys[1].Public = &ecdsa.PublicKey{Curve: elliptic.P256()} }, "not a point"},
		{"DuplicateKids", func(c *auth.Config) { c.Keys[1].ID = "ed" }, "twice"},
		{"MissingKidWithSeveralKeys", func(c *auth.Config) { c.Keys[2].ID = "" }, "ID (kid) is required"},
		{"KeyWithoutTenantsWithSeveralTenants", func(c *auth.Config) { c.Keys[1].Tenants = nil }, `keys[1] (kid "ec"): name the tenants`},
		{"KeyForUnknownTenant", func(c *auth.Config) { c.Keys[0].Tenants = []string{"acme", "initech"} }, `tenant "initech" is not configured`},
		{"KeyTenantTwice", func(c *auth.Config) { c.Keys[0].Tenants = []string{"acme", "acme"} }, `tenant "acme" is listed twice`},
		{"JWKSWithoutTenantsWithSeveralTenants", func(c *auth.Config) { c.JWKSURL = "https://idp.example/jwks" }, "JWKS: name the tenants"},
		{"JWKSForUnknownTenant", func(c *auth.Config) { c.JWKSURL, c.JWKSTenants = "https://idp.example/jwks", []string{"initech"} }, `tenant "initech" is not configured`},
		{"NoTenants", func(c *auth.Config) { c.Tenants = nil }, "at least one tenant"},
		{"TenantUpperCase", func(c *auth.Config) { c.Tenants[0].Name = "Acme" }, "not a tenant name"},
		{"TenantLeadingDash", func(c *auth.Config) { c.Tenants[0].Name = "-acme" }, "not a tenant name"},
		{"TenantEmpty", func(c *auth.Config) { c.Tenants[0].Name = "" }, "not a tenant name"},
		{"TenantTooLong", func(c *auth.Config) { c.Tenants[0].Name = strings.Repeat("a", 65) }, "not a tenant name"},
		{"TenantWithSlash", func(c *auth.Config) { c.Tenants[0].Name = "acme/x" }, "not a tenant name"},
		{"TenantWithoutIssuer", func(c *auth.Config) { c.Tenants[0].Issuer = "" }, "issuer is required"},
		{"DuplicateTenant", func(c *auth.Config) { c.Tenants[1].Name = "acme" }, "configured twice"},
		{"OneIssuerForTwoTenants", func(c *auth.Config) { c.Tenants[1].Issuer = acmeIssuer }, "one issuer may serve one tenant only"},
		{"MaxLifetimeOver24h", func(c *auth.Config) { c.MaxLifetime = 25 * time.Hour }, "max lifetime"},
		{"MaxLifetimeNegative", func(c *auth.Config) { c.MaxLifetime = -time.Second }, "max lifetime"},
		{"LeewayOver5m", func(c *auth.Config) { c.Leeway = 6 * time.Minute }, "leeway"},
		{"LeewayNegative", func(c *auth.Config) { c.Leeway = -time.Second }, "leeway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(clock)
			tt.mutate(&cfg)
			_, err := auth.New(cfg)
			if err == nil {
				t.Fatal("New accepted the config")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "auth: ") {
				t.Errorf("New error %q, want it to start with \"auth: \" and mention %q", err, tt.want)
			}
		})
	}
}

// TestNew_AcceptsBounds accepts the limits of the config.
func TestNew_AcceptsBounds(t *testing.T) {
	clock := testclock.New(time.Time{})
	cfg := testConfig(clock)
	cfg.MaxLifetime, cfg.Leeway = 24*time.Hour, 5*time.Minute
	cfg.Tenants = append(cfg.Tenants, auth.Tenant{Name: "0" + strings.Repeat("a_-", 21), Issuer: "x"})
	newVerifier(t, cfg)
	one := testConfig(clock)
	one.Keys = one.Keys[3:]
	one.Keys[0].ID = ""
	one.Keys[0].Secret = make([]byte, 32)
	newVerifier(t, one)
}

// TestNew_CopiesSecrets keeps the secret as it was given to New.
func TestNew_CopiesSecrets(t *testing.T) {
	clock := testclock.New(time.Time{})
	cfg := testConfig(clock)
	secret := append([]byte(nil), testKeys().hs...)
	cfg.Keys[3].Secret = secret
	v := newVerifier(t, cfg)
	tok := forge(hdr("HS256", "hs"), claimsAt(clock.Now()), jwt.SigningMethodHS256, testKeys().hs)
	clear(secret)
	if _, err := v.Verify("Bearer "+tok, auth.ScopeVerdicts); err != nil {
		t.Errorf("Verify after the caller changed its secret: %v", err)
	}
}

// TestError_DoesNotEchoToken checks the message of a refusal.
func TestError_DoesNotEchoToken(t *testing.T) {
	e := &auth.Error{Status: http.StatusUnauthorized, Reason: "expired", Detail: "exp has passed"}
	if got, want := e.Error(), "auth: expired: exp has passed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestVerify_ClaimsDecoding feeds hand-written claims JSON: claim names are
// matched exactly (escapes decoded) at the top level only, and a claim
// given twice is refused however it is spelt.
func TestVerify_ClaimsDecoding(t *testing.T) {
	clock := testclock.New(time.Time{})
	v := newVerifier(t, testConfig(clock))
	exp := itoa(clock.Now().Add(time.Minute).Unix())
	rest := `"iss":"` + acmeIssuer + `","aud":"tollgate","scope":"verdicts","exp":` + exp
	tests := []struct {
		name, claims, reason string // reason "" when accepted
	}{
		{"Compact", `{"tenant":"acme",` + rest + `}`, ""},
		{"WhiteSpace", "{ \n\t\"tenant\" : \"acme\" ,\r\n " + strings.ReplaceAll(rest, ",", " , ") + " }", ""},
		{"EscapedName", `{"ten\u0061nt":"acme",` + rest + `}`, ""},
		{"EscapedValue", `{"tenant":"\u0061cme",` + rest + `}`, ""},
		{"UnknownClaimsOfEveryType", `{"a":{"tenant":"globex","b":[1,{"c":"}"}]},"d":[],"e":"\"tenant\":","f":true,"g":null,"h":-1.5e3,"tenant":"acme",` + rest + `}`, ""},
		{"TenantOnlyInNestedObject", `{"ext":{"tenant":"acme"},` + rest + `}`, "tenant"},
		{"DuplicateEscapedTenant", `{"tenant":"globex","ten\u0061nt":"acme",` + rest + `}`, "malformed"},
		{"DuplicateExp", `{"tenant":"acme",` + rest + `,"exp":1}`, "malformed"},
		{"DuplicateNullTenant", `{"tenant":null,"tenant":"acme",` + rest + `}`, "malformed"},
		{"TenantNumber", `{"tenant":1,` + rest + `}`, "malformed"},
		{"AudNumber", `{"tenant":"acme",` + strings.Replace(rest, `"aud":"tollgate"`, `"aud":1`, 1) + `}`, "malformed"},
		{"AudArrayWithNumber", `{"tenant":"acme",` + strings.Replace(rest, `"aud":"tollgate"`, `"aud":["tollgate",1]`, 1) + `}`, "malformed"},
		{"AudEmptyArray", `{"tenant":"acme",` + strings.Replace(rest, `"aud":"tollgate"`, `"aud":[]`, 1) + `}`, "audience"},
		{"ExpBoolean", `{"tenant":"acme",` + strings.Replace(rest, exp, "true", 1) + `}`, "malformed"},
		{"ExpFraction", `{"tenant":"acme",` + strings.Replace(rest, exp, exp+".5", 1) + `}`, ""},
		{"ExpHuge", `{"tenant":"acme",` + strings.Replace(rest, exp, "1e400", 1) + `}`, "malformed"},
		{"ExpFarPast", `{"tenant":"acme",` + strings.Replace(rest, exp, "-1e300", 1) + `}`, "expired"},
		{"InvalidUTF8Subject", "{\"sub\":\"\xff\",\"tenant\":\"acme\"," + rest + "}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := forge(hdr("HS256", "hs"), tt.claims, jwt.SigningMethodHS256, testKeys().hs)
			c, err := v.Verify("Bearer "+tok, auth.ScopeVerdicts)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if c.Tenant != "acme" {
					t.Errorf("tenant %q, want acme", c.Tenant)
				}
				return
			}
			wantRefusal(t, err, 401, tt.reason)
		})
	}
}

// TestVerify_OneTenantsKeyCannotMintAnotherTenantsToken: acme's and globex's
// identity providers each have keys of their own. A token signed with one
// tenant's key that claims the other tenant and its issuer (with the admin
// scopes) is refused like any invalid token, 401 "issuer", with a detail
// that names no tenant; each key still verifies its own tenant's tokens.
// A config that leaves it unsaid which tenants a key serves is refused.
func TestVerify_OneTenantsKeyCannotMintAnotherTenantsToken(t *testing.T) {
	clock := testclock.New(time.Time{})
	acmeKey := ed25519.NewKeyFromSeed([]byte("acme's own identity provider key"))
	globexKey := ed25519.NewKeyFromSeed([]byte("globex own identity provider key"))
	acmeSecret := []byte("acme's own HS256 secret, 32 bytes+")
	cfg := auth.Config{
		Audience: audience,
		Keys: []auth.Key{
			{ID: "acme-idp", Alg: "EdDSA", Public: acmeKey.Public(), Tenants: []string{"acme"}},
			{ID: "globex-idp", Alg: "EdDSA", Public: globexKey.Public(), Tenants: []string{"globex"}},
			{ID: "acme-local", Alg: "HS256", Secret: acmeSecret, Tenants: []string{"acme"}},
		},
		Tenants: []auth.Tenant{{Name: "acme", Issuer: acmeIssuer}, {Name: "globex", Issuer: globexIssuer}},
		Now:     clock.Now,
	}
	v := newVerifier(t, cfg)
	acme := with(claimsAt(clock.Now()), "scope", "verdicts admin:read admin:write")
	globex := with(acme, "tenant", "globex", "iss", globexIssuer)
	tests := []struct {
		name   string
		token  string
		tenant string // "" when refused
	}{
		{"AcmeKeyMintsGlobex", forge(hdr("EdDSA", "acme-idp"), globex, jwt.SigningMethodEdDSA, acmeKey), ""},
		{"AcmeSecretMintsGlobex", forge(hdr("HS256", "acme-local"), globex, jwt.SigningMethodHS256, acmeSecret), ""},
		{"GlobexKeyMintsAcme", forge(hdr("EdDSA", "globex-idp"), acme, jwt.SigningMethodEdDSA, globexKey), ""},
		{"AcmeKeyForAcme", forge(hdr("EdDSA", "acme-idp"), acme, jwt.SigningMethodEdDSA, acmeKey), "acme"},
		{"AcmeSecretForAcme", forge(hdr("HS256", "acme-local"), acme, jwt.SigningMethodHS256, acmeSecret), "acme"},
		{"GlobexKeyForGlobex", forge(hdr("EdDSA", "globex-idp"), globex, jwt.SigningMethodEdDSA, globexKey), "globex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := "Bearer " + tt.token
			got, err := v.Verify(h, auth.ScopeAdminWrite)
			if tt.tenant != "" {
				if err != nil || got.Tenant != tt.tenant || !got.Has(auth.ScopeAdminWrite) {
					t.Fatalf("Verify = %+v, %v; want tenant %s with admin:write", got, err, tt.tenant)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted for tenant %q with scopes %v", got.Tenant, got.Scopes)
			}
			wantRefusal(t, err, 401, "issuer")
			checkError(t, h, err)
			if msg := err.Error(); strings.Contains(msg, "acme") || strings.Contains(msg, "globex") {
				t.Errorf("the refusal %q names a tenant", msg)
			}
			if got.Tenant != "" || got.Scopes != nil {
				t.Errorf("a refusal returned the caller %+v", got)
			}
		})
	}
	t.Run("KeysWithoutTenantsAreNotShared", func(t *testing.T) {
		unsaid := cfg
		unsaid.Keys = slices.Clone(cfg.Keys)
		unsaid.Keys[0].Tenants = nil
		if _, err := auth.New(unsaid); err == nil || !strings.Contains(err.Error(), "name the tenants") {
			t.Errorf("New with a key of no tenant and two tenants: %v, want a refusal", err)
		}
	})
}

// TestVerify_KeySharedOnPurposeVerifiesTheTenantsItIsSharedWith: a secret
// listed for acme and globex verifies both tenants' tokens, and not those of
// initech, which has a key of its own; a one-tenant config needs no list.
func TestVerify_KeySharedOnPurposeVerifiesTheTenantsItIsSharedWith(t *testing.T) {
	clock := testclock.New(time.Time{})
	k := testKeys()
	const initechIssuer = "https://initech.example/"
	v := newVerifier(t, auth.Config{
		Audience: audience,
		Keys: []auth.Key{
			{ID: "shared", Alg: "HS256", Secret: k.hs, Tenants: []string{"globex", "acme"}},
			{ID: "initech", Alg: "EdDSA", Public: k.ed.Public(), Tenants: []string{"initech"}},
		},
		Tenants: []auth.Tenant{{Name: "acme", Issuer: acmeIssuer}, {Name: "globex", Issuer: globexIssuer}, {Name: "initech", Issuer: initechIssuer}},
		Now:     clock.Now,
	})
	acme := claimsAt(clock.Now())
	globex := with(acme, "tenant", "globex", "iss", globexIssuer)
	initech := with(acme, "tenant", "initech", "iss", initechIssuer)
	for _, tt := range []struct {
		name   string
		token  string
		tenant string // "" when refused
	}{
		{"SharedForAcme", forge(hdr("HS256", "shared"), acme, jwt.SigningMethodHS256, k.hs), "acme"},
		{"SharedForGlobex", forge(hdr("HS256", "shared"), globex, jwt.SigningMethodHS256, k.hs), "globex"},
		{"InitechsKeyForInitech", forge(hdr("EdDSA", "initech"), initech, jwt.SigningMethodEdDSA, k.ed), "initech"},
		{"SharedForInitech", forge(hdr("HS256", "shared"), initech, jwt.SigningMethodHS256, k.hs), ""},
		{"InitechsKeyForAcme", forge(hdr("EdDSA", "initech"), acme, jwt.SigningMethodEdDSA, k.ed), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify("Bearer "+tt.token, auth.ScopeVerdicts)
			if tt.tenant == "" {
				wantRefusal(t, err, 401, "issuer")
				return
			}
			if err != nil || got.Tenant != tt.tenant {
				t.Errorf("Verify = %+v, %v; want tenant %s", got, err, tt.tenant)
			}
		})
	}
	t.Run("OneTenantNeedsNoList", func(t *testing.T) {
		one := newVerifier(t, auth.Config{Audience: audience, Keys: []auth.Key{{ID: "hs", Alg: "HS256", Secret: k.hs}},
			Tenants: []auth.Tenant{{Name: "acme", Issuer: acmeIssuer}}, Now: clock.Now})
		if got, err := one.Verify("Bearer "+forge(hdr("HS256", "hs"), acme, jwt.SigningMethodHS256, k.hs), auth.ScopeVerdicts); err != nil || got.Tenant != "acme" {
			t.Errorf("Verify = %+v, %v; want tenant acme", got, err)
		}
	})
}
