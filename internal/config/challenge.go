package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/tollgate-auth/tollgate/challenge"
)

// Challenge configures the challenge a captcha verdict is answered with
// (package challenge): the built-in proof of work out of the box, or a
// provider CAPTCHA that tollgate verifies. Zero fields take the challenge
// package's defaults.
type Challenge struct {
	// Difficulty is the proof of work's leading zero bits, 1 to 32. The
	// default is 15 (32,768 SHA-256 hashes on average).
	Difficulty int
	// TTL is how long an issued challenge may be solved. The default is 5m.
	TTL time.Duration
	// PendingTTL is how long a held submission waits for its challenge.
	// The default is 5m.
	PendingTTL time.Duration
	// MaxBodyBytes bounds a held submission's body. The default is 64 KiB.
	MaxBodyBytes int64
	// MemoryLimit bounds the bytes the held submissions take in memory,
	// when there is no Redis. The default is 32 MiB.
	MemoryLimit int64
	// SolutionPath is where the challenge page posts its solution. The
	// default is "/.tollgate/challenge".
	SolutionPath string
	// Page is what the challenge page asks: "pow", or a configured
	// provider's kind. The default is "pow".
	Page string
	// ProviderTimeout bounds one call to a provider's siteverify; past it
	// the challenge fails (closed). The default is 5s.
	ProviderTimeout time.Duration
	// Providers are the CAPTCHA providers tollgate verifies. The default is
	// none.
	Providers []ChallengeProvider
}

// ChallengeProvider is one CAPTCHA provider tollgate verifies server side.
type ChallengeProvider struct {
	// Kind is "turnstile", "hcaptcha" or "recaptcha".
	Kind string
	// SiteKey is the widget's public key.
	SiteKey string
	// Secret is the provider's secret key, read from secret_file.
	Secret string
	// VerifyURL is the siteverify endpoint. The default is the provider's
	// documented one.
	VerifyURL string
}

// fileChallenge is the YAML form of Challenge. Provider secrets come from
// files, never from the config itself.
type fileChallenge struct {
	Difficulty      int                     `yaml:"difficulty"`
	TTL             Duration                `yaml:"ttl"`
	PendingTTL      Duration                `yaml:"pending_ttl"`
	MaxBodyBytes    string                  `yaml:"max_body_bytes"`
	MemoryLimit     string                  `yaml:"memory_limit"`
	SolutionPath    string                  `yaml:"solution_path"`
	Page            string                  `yaml:"page"`
	ProviderTimeout Duration                `yaml:"provider_timeout"`
	Providers       []fileChallengeProvider `yaml:"providers"`
}

type fileChallengeProvider struct {
	Kind       string `yaml:"kind"`
	SiteKey    string `yaml:"site_key"`
	SecretFile string `yaml:"secret_file"`
	VerifyURL  string `yaml:"verify_url"`
}

// challengeConfig checks fc and reads its providers' secret files; on a
// mistake it returns the path in the file it is at.
func challengeConfig(fc *fileChallenge) (Challenge, string, error) {
	c := Challenge{Difficulty: fc.Difficulty, TTL: time.Duration(fc.TTL), PendingTTL: time.Duration(fc.PendingTTL),
		SolutionPath: fc.SolutionPath, Page: fc.Page, ProviderTimeout: time.Duration(fc.ProviderTimeout)}
	if c.Difficulty < 0 || c.Difficulty > challenge.MaxDifficulty {
		return c, "challenge.difficulty", fmt.Errorf("must be 1 to %d leading zero bits (0 or absent: the default, %d)", challenge.MaxDifficulty, challenge.DefaultDifficulty)
	}
	for _, d := range []struct {
		path     string
		v        time.Duration
		min, max time.Duration
	}{
		{"challenge.ttl", c.TTL, 10 * time.Second, time.Hour},
		{"challenge.pending_ttl", c.PendingTTL, 10 * time.Second, time.Hour},
		{"challenge.provider_timeout", c.ProviderTimeout, 100 * time.Millisecond, 30 * time.Second},
	} {
		if d.v != 0 && (d.v < d.min || d.v > d.max) {
			return c, d.path, fmt.Errorf("must be between %s and %s", d.min, d.max)
		}
	}
	for _, b := range []struct {
		path     string
		s        string
		to       *int64
		min, max int64
	}{
		{"challenge.max_body_bytes", fc.MaxBodyBytes, &c.MaxBodyBytes, 1 << 10, 16 << 20},
		{"challenge.memory_limit", fc.MemoryLimit, &c.MemoryLimit, 1 << 20, 1 << 40},
	} {
		if b.s == "" {
			continue
		}
		n, err := humanize.ParseBytes(b.s)
		if err != nil || int64(n) < b.min || int64(n) > b.max {
			return c, b.path, fmt.Errorf("must be a size between %s and %s, like 64KiB", humanize.IBytes(uint64(b.min)), humanize.IBytes(uint64(b.max)))
		}
		*b.to = int64(n)
	}
	if p := c.SolutionPath; p != "" && (!strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "?#")) {
		return c, "challenge.solution_path", errors.New("must be a path starting with a single /, without query or fragment")
	}
	seen := map[string]bool{}
	for i, fp := range fc.Providers {
		at := fmt.Sprintf("challenge.providers[%d]", i)
		k, ok := challenge.ParseKind(fp.Kind)
		if !ok || k == challenge.ProofOfWork {
			return c, at + ".kind", fmt.Errorf("%q is not a provider: turnstile, hcaptcha or recaptcha", fp.Kind)
		}
		if seen[fp.Kind] {
			return c, at + ".kind", fmt.Errorf("%s is configured twice", fp.Kind)
		}
		seen[fp.Kind] = true
		if fp.SiteKey == "" {
			return c, at + ".site_key", errors.New("is required: the widget's public site key")
		}
		if fp.SecretFile == "" {
			return c, at + ".secret_file", errors.New("is required: a file holding the provider's secret key")
		}
		data, err := os.ReadFile(fp.SecretFile)
		if err != nil {
			return c, at + ".secret_file", err
		}
		secret := string(bytes.TrimSpace(data))
		if secret == "" {
			return c, at + ".secret_file", errors.New("the file is empty")
		}
		if fp.VerifyURL != "" {
			if err := checkVerifyURL(fp.VerifyURL); err != nil {
				return c, at + ".verify_url", err
			}
		}
		c.Providers = append(c.Providers, ChallengeProvider{Kind: fp.Kind, SiteKey: fp.SiteKey, Secret: secret, VerifyURL: fp.VerifyURL})
	}
	if c.Page != "" && c.Page != "pow" && !seen[c.Page] {
		return c, "challenge.page", fmt.Errorf("%q must be pow or a configured provider's kind", c.Page)
	}
	return c, "", nil
}

// checkVerifyURL accepts an absolute https URL, or http to a loopback
// address (a stand-in): the provider's secret is sent to it.
func checkVerifyURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return errors.New("must be an absolute http(s) URL without credentials or fragment")
	}
	if u.Scheme == "https" {
		return nil
	}
	if ip, err := netip.ParseAddr(u.Hostname()); u.Scheme == "http" && (u.Hostname() == "localhost" || err == nil && ip.IsLoopback()) {
		return nil
	}
	return errors.New("must be https (or http to a loopback address): the provider's secret is sent to it")
}

// ChallengeConfig is c as the challenge package takes it, for the server's
// secret and store.
func (c Challenge) ChallengeConfig(secret []byte, store challenge.Store) challenge.Config {
	out := challenge.Config{Secret: secret, Store: store, Difficulty: c.Difficulty, TTL: c.TTL, PendingTTL: c.PendingTTL,
		MaxBodyBytes: c.MaxBodyBytes, SolutionPath: c.SolutionPath, ProviderTimeout: c.ProviderTimeout}
	if k, ok := challenge.ParseKind(c.Page); ok {
		out.PageKind = k
	}
	for _, p := range c.Providers {
		k, _ := challenge.ParseKind(p.Kind)
		out.Providers = append(out.Providers, challenge.ProviderConfig{Kind: k, SiteKey: p.SiteKey, Secret: p.Secret, VerifyURL: p.VerifyURL})
	}
	return out
}
