package auth_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
)

func ExampleVerifier_Verify() {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	key := ed25519.NewKeyFromSeed([]byte("an example seed of 32 bytes, ok."))
	v, err := auth.New(auth.Config{
		Audience: "tollgate",
		Keys:     []auth.Key{{ID: "k1", Alg: "EdDSA", Public: key.Public()}},
		Tenants:  []auth.Tenant{{Name: "acme", Issuer: "https://login.acme.example/"}},
		Now:      func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	token, err := auth.Sign(auth.SigningKey{ID: "k1", Alg: "EdDSA", Private: key},
		"https://login.acme.example/", "tollgate", "acme", "login-service",
		[]auth.Scope{auth.ScopeVerdicts}, 15*time.Minute, now)
	if err != nil {
		panic(err)
	}

	c, err := v.Verify("Bearer "+token, auth.ScopeVerdicts)
	fmt.Println(c.Tenant, c.Subject, c.Scopes, err)

	_, err = v.Verify("Bearer "+token, auth.ScopeAdminWrite)
	fmt.Println(err.(*auth.Error).Status, err)

	_, err = v.Verify("Basic YWxpY2U6aHVudGVyMg==", auth.ScopeVerdicts)
	fmt.Println(err.(*auth.Error).Status, err)
	// Output:
	// acme login-service [verdicts] <nil>
	// 403 auth: scope: the token does not hold the scope admin:write
	// 401 auth: malformed: the Authorization header is not "Bearer <token>"
}
