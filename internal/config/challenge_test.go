package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/challenge"
)

func providerSecretFile(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "provider-secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParse_Challenge(t *testing.T) {
	f := providerSecretFile(t, "0x4AAAAAAA-secret")
	cfg, err := Parse([]byte(`
challenge:
  difficulty: 17
  ttl: 2m
  pending_ttl: 90s
  max_body_bytes: 32KiB
  memory_limit: 8MiB
  solution_path: /_challenge
  page: turnstile
  provider_timeout: 2s
  providers:
    - kind: turnstile
      site_key: 0x4AAAAAAA-site
      secret_file: ` + f + `
      verify_url: http://127.0.0.1:9000/siteverify
`))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Challenge
	if c.Difficulty != 17 || c.TTL != 2*time.Minute || c.PendingTTL != 90*time.Second || c.MaxBodyBytes != 32<<10 ||
		c.MemoryLimit != 8<<20 || c.SolutionPath != "/_challenge" || c.Page != "turnstile" || c.ProviderTimeout != 2*time.Second {
		t.Fatalf("challenge = %+v", c)
	}
	if len(c.Providers) != 1 || c.Providers[0] != (ChallengeProvider{Kind: "turnstile", SiteKey: "0x4AAAAAAA-site",
		Secret: "0x4AAAAAAA-secret", VerifyURL: "http://127.0.0.1:9000/siteverify"}) {
		t.Fatalf("providers = %+v", c.Providers)
	}
	cc := c.ChallengeConfig([]byte("0123456789abcdef0123456789abcdef"), nil)
	if _, err := challenge.New(cc); err != nil {
		t.Fatalf("challenge.New on it: %v", err)
	}
	if cc.PageKind != challenge.Turnstile || cc.Providers[0].Kind != challenge.Turnstile {
		t.Fatalf("challenge.Config = %+v", cc)
	}

	// Without a section: the built-in proof of work, the package's defaults.
	cfg, err = Parse([]byte("listen: 127.0.0.1:9\n"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := challenge.New(cfg.Challenge.ChallengeConfig([]byte("0123456789abcdef0123456789abcdef"), nil))
	if err != nil || ch.Difficulty() != challenge.DefaultDifficulty || ch.PageKind() != challenge.ProofOfWork {
		t.Fatalf("no section: %v, %+v", err, cfg.Challenge)
	}
}

// TestParse_ChallengeMistakes: each mistake is an *Error at its path and
// line; a provider's secret never sits in the config itself, and is never
// sent to a non-loopback address in clear.
func TestParse_ChallengeMistakes(t *testing.T) {
	good := providerSecretFile(t, "s3cret")
	provider := func(extra string) string {
		return "providers:\n    - kind: hcaptcha\n      site_key: k\n      " + extra
	}
	for _, tt := range []struct {
		name, section, want string
	}{
		{"difficulty 33", "difficulty: 33", "line 2: challenge.difficulty must be 1 to 32"},
		{"a second TTL", "ttl: 1s", "line 2: challenge.ttl must be between 10s"},
		{"a body limit of 100 GiB", "max_body_bytes: 100GiB", "line 2: challenge.max_body_bytes must be a size between"},
		{"a memory limit that is not a size", "memory_limit: lots", "line 2: challenge.memory_limit must be a size"},
		{"a solution path with a host", "solution_path: //evil.example/x", "line 2: challenge.solution_path must be a path"},
		{"a page of no provider", "page: recaptcha", `line 2: challenge.page: "recaptcha" must be pow or a configured provider's kind`},
		{"an unknown provider", "providers:\n    - {kind: recaptha, site_key: k, secret_file: " + good + "}", `challenge.providers[0].kind: "recaptha" is not a provider`},
		{"a secret in the config itself", provider("secret: s3cret"), `unknown field "secret"`},
		{"no secret file", provider("verify_url: https://x.example/"), "challenge.providers[0].secret_file is required"},
		{"an empty secret file", provider("secret_file: " + providerSecretFile(t, "")), "the file is empty"},
		{"the secret in clear over the network", provider("secret_file: " + good + "\n      verify_url: http://verify.example/siteverify"), "challenge.providers[0].verify_url must be https"},
		{"an unknown key", "dificulty: 12", `dificulty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("challenge:\n  " + tt.section + "\n"))
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v (%T), want an *Error with a line holding %q", err, err, tt.want)
			}
		})
	}
}
