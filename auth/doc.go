// Package auth authenticates the callers of tollgate's HTTP API: it verifies
// the JWT in an "Authorization: Bearer" header and says which tenant the
// caller acts for and what it may do.
//
// Verification follows RFC 8725 (JWT Best Current Practices) and uses
// github.com/golang-jwt/jwt/v5:
//
//   - Keys come from the configuration only (Config.Keys). The kid header
//     selects one of them; jku, x5u, jwk and x5c headers are never used, so
//     a token cannot bring its own key.
//   - Each key accepts one algorithm. The token's alg must be among the
//     algorithms of the configured keys and equal the alg of the key its kid
//     names, so "none" and RS256→HS256 key confusion are refused.
//   - The typ header, when present, must be "JWT" or "at+jwt". A crit header
//     is refused: this package understands no extension.
//   - exp is required and bounded: a token may not live longer than
//     Config.MaxLifetime. nbf and iat may not lie in the future. Clock skew
//     up to Config.Leeway is allowed.
//   - aud must contain Config.Audience; the "tenant" claim must name a
//     configured tenant, iss must be that tenant's issuer, and the key
//     that verified the signature must be listed for that tenant
//     (Key.Tenants, Config.JWKSTenants; RFC 8725 section 3.8), so one
//     tenant's issuer or key cannot mint tokens for another. With several
//     tenants every key must say which it serves: none is shared unless
//     listed for each tenant that shares it.
//   - Claim names are case-sensitive, each claim may appear once, and
//     NumericDate claims must be JSON numbers.
//
// Verify answers a Caller or an *Error whose Status is 401 or 403 and whose
// Reason is a short stable code for metrics and logs. An Error never holds
// any part of the token.
//
// ParsePublicKeyPEM and ParseJWKS load verification keys for the config
// loader; ParsePrivateKeyPEM and Sign mint tokens for `tollgate token` and
// tests.
package auth
