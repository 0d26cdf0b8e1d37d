package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse_Breached(t *testing.T) {
	corpus := filepath.Join(t.TempDir(), "pwned.txt")
	if err := os.WriteFile(corpus, []byte("5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte("breached:\n  corpus: " + corpus + "\n  max_bytes: 24GiB\n  upstream: https://api.pwnedpasswords.com/range/\n" +
		"  upstream_timeout: 500ms\n  cache_entries: 10\n  cache_ttl: 10m\n  lines: 1280\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Breached{Corpus: corpus, MaxBytes: 24 << 30, Upstream: "https://api.pwnedpasswords.com/range/",
		UpstreamTimeout: 500 * time.Millisecond, CacheEntries: 10, CacheTTL: 10 * time.Minute, Lines: 1280}
	if cfg.Breached == nil || *cfg.Breached != want {
		t.Errorf("Breached = %+v, want %+v", cfg.Breached, want)
	}
	cfg, err = Parse([]byte("breached:\n  upstream: http://127.0.0.1:9/range/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Breached.MaxBytes; got != DefaultBreachedMaxBytes {
		t.Errorf("MaxBytes = %d, want the default %d", got, DefaultBreachedMaxBytes)
	}
	if cfg, err := Parse([]byte("listen: 127.0.0.1:8080\n")); err != nil || cfg.Breached != nil {
		t.Errorf("without a section: %+v, %v; want nil", cfg.Breached, err)
	}
}

func TestParse_BreachedMistakes(t *testing.T) {
	for _, tt := range []struct {
		name, section, want string
	}{
		{"a missing corpus", "corpus: /nonexistent/pwned", "line 2: breached.corpus"},
		{"a max_bytes that is not a size", "max_bytes: lots", "line 2: breached.max_bytes must be a size"},
		{"a max_bytes of 1 KiB", "max_bytes: 1KiB", "line 2: breached.max_bytes must be a size"},
		{"prefixes in clear to a remote host", "upstream: http://api.pwnedpasswords.com/range/", "line 2: breached.upstream must be an https URL"},
		{"an upstream with a query", "upstream: https://x.example/range?p=", "breached.upstream must be"},
		{"a relative upstream", "upstream: /range/", "breached.upstream must be"},
		{"a timeout of a minute", "upstream_timeout: 1m", "breached.upstream_timeout must be between"},
		{"a cache TTL of a second", "cache_ttl: 1s", "breached.cache_ttl must be between"},
		{"negative cache entries", "cache_entries: -1", "breached.cache_entries must be"},
		{"5 lines", "lines: 5", "breached.lines must be"},
		{"an unknown key", "corpuss: /x", "corpuss"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("breached:\n  " + tt.section + "\n"))
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v (%T), want an *Error with a line holding %q", err, err, tt.want)
			}
		})
	}
}
