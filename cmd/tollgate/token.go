package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/internal/config"
)

const tokenUsage = `usage: tollgate token -key FILE -tenant NAME [flags]

Prints a bearer token for calling tollgate, signed with a key whose public
half (or, for HS256, whose secret) the server's auth config holds: for
local use, scripts and tests. Production callers get theirs from their own
issuer.

flags:
  -key FILE        a PEM private key (Ed25519, ECDSA P-256, RSA), or with
                   -alg HS256 the shared secret file
  -alg ALG         EdDSA, ES256, RS256 or HS256 (default: from the key)
  -kid ID          the key id the server's config gives the key
  -config FILE     the server's config: audience and the tenant's issuer
  -tenant NAME     the tenant (required)
  -issuer ISS      the issuer (default: the tenant's in -config)
  -audience AUD    the audience (default: -config's)
  -scopes LIST     space- or comma-separated: verdicts, admin:read,
                   admin:write (default verdicts)
  -sub SUBJECT     who calls, for audit logs (default tollgate-token)
  -ttl D           lifetime (default 15m)
`

// tokenCmd runs `tollgate token`: see tokenUsage. It returns 2 on a usage
// error and 1 when the key or config cannot be used.
func tokenCmd(args []string, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("tollgate token", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keyFile := fs.String("key", "", "")
	alg := fs.String("alg", "", "")
	kid := fs.String("kid", "", "")
	configFile := fs.String("config", "", "")
	tenant := fs.String("tenant", "", "")
	issuer := fs.String("issuer", "", "")
	audience := fs.String("audience", "", "")
	scopes := fs.String("scopes", string(auth.ScopeVerdicts), "")
	sub := fs.String("sub", "tollgate-token", "")
	ttl := fs.Duration("ttl", 15*time.Minute, "")
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "tollgate token: %v\n%s", err, tokenUsage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, tokenUsage)
			return 0
		}
		return usageErr(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *keyFile == "":
		return usageErr(errors.New("-key is required"))
	case *tenant == "":
		return usageErr(errors.New("-tenant is required"))
	case *ttl <= 0:
		return usageErr(errors.New("-ttl must be positive"))
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "tollgate token: %v\n", err)
		return 1
	}
	if *configFile != "" {
		cfg, err := config.Load(*configFile, func(string) string { return "" })
		if err != nil {
			return fail(err)
		}
		if cfg.Auth == nil {
			return fail(fmt.Errorf("%s has no auth section", *configFile))
		}
		if *audience == "" {
			*audience = cfg.Auth.Audience
		}
		if i := slices.IndexFunc(cfg.Auth.Tenants, func(t auth.Tenant) bool { return t.Name == *tenant }); i >= 0 && *issuer == "" {
			*issuer = cfg.Auth.Tenants[i].Issuer
		}
	}
	if *issuer == "" || *audience == "" {
		return usageErr(errors.New("give -issuer and -audience, or -config with the tenant"))
	}
	data, err := os.ReadFile(*keyFile)
	if err != nil {
		return fail(err)
	}
	k := auth.SigningKey{ID: *kid, Alg: *alg}
	if k.Alg == "HS256" {
		k.Secret = bytes.TrimRight(data, "\r\n")
	} else {
		if k.Private, err = auth.ParsePrivateKeyPEM(data); err != nil {
			return fail(fmt.Errorf("%s: %w", *keyFile, err))
		}
		if k.Alg == "" {
			switch k.Private.(type) {
			case ed25519.PrivateKey:
				k.Alg = "EdDSA"
			case *ecdsa.PrivateKey:
				k.Alg = "ES256"
			case *rsa.PrivateKey:
				k.Alg = "RS256"
			}
		}
	}
	var list []auth.Scope
	for _, s := range strings.FieldsFunc(*scopes, func(r rune) bool { return r == ' ' || r == ',' }) {
		list = append(list, auth.Scope(s))
	}
	token, err := auth.Sign(k, *issuer, *audience, *tenant, *sub, list, *ttl, now())
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, token)
	return 0
}
