package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/tollgate-auth/tollgate/breached"
)

// Breached configures GET /v1/breached/{prefix} (package breached): a
// breached-password corpus held in memory, or an upstream range API
// forwarded to. With both, the corpus answers and the upstream is never
// asked (no prefix leaves for a third party, and no answer waits on the
// network). With neither the route answers 404 breached-off.
type Breached struct {
	// Corpus is the path of the Pwned Passwords downloader's directory of
	// range files, or of one file of SHA1:COUNT lines, loaded at start and
	// on every reload. The default is "": no corpus.
	Corpus string
	// MaxBytes bounds the memory the corpus's index may take (22 bytes a
	// hash and 4 MiB): a larger corpus is refused, at start (the server
	// does not start) or on reload (the old corpus stays). The default is
	// 1 GiB, about 48 million hashes; the full corpus of about a billion
	// needs some 21 GiB.
	MaxBytes int64
	// Upstream is a range API's URL that the 5-digit prefix is appended
	// to, such as https://api.pwnedpasswords.com/range/: https, or http to
	// a loopback address. The default is "": no forwarding.
	Upstream string
	// UpstreamTimeout bounds one upstream request; past it the call
	// answers 503. The default is 2s.
	UpstreamTimeout time.Duration
	// CacheEntries bounds how many upstream ranges are kept (some 22 KB
	// each for HIBP's). The default is 1024.
	CacheEntries int
	// CacheTTL is how long an upstream range is kept. The default is 1h.
	CacheTTL time.Duration
	// Lines is the number of lines of every answer, padding included. The
	// default is 0: the corpus's fullest range rounded up to a multiple of
	// 256, or 2,048 for an upstream.
	Lines int
}

// DefaultBreachedMaxBytes is Breached.MaxBytes's default.
const DefaultBreachedMaxBytes = 1 << 30

// fileBreached is the YAML form of Breached.
type fileBreached struct {
	Corpus          string   `yaml:"corpus"`
	MaxBytes        string   `yaml:"max_bytes"`
	Upstream        string   `yaml:"upstream"`
	UpstreamTimeout Duration `yaml:"upstream_timeout"`
	CacheEntries    int      `yaml:"cache_entries"`
	CacheTTL        Duration `yaml:"cache_ttl"`
	Lines           int      `yaml:"lines"`
}

// breachedConfig checks fb; on a mistake it returns the path in the file
// it is at. The corpus is not read here (it may be gigabytes): only that
// its path exists.
func breachedConfig(fb *fileBreached) (*Breached, string, error) {
	b := &Breached{Corpus: fb.Corpus, MaxBytes: DefaultBreachedMaxBytes, Upstream: fb.Upstream,
		UpstreamTimeout: time.Duration(fb.UpstreamTimeout), CacheEntries: fb.CacheEntries, CacheTTL: time.Duration(fb.CacheTTL), Lines: fb.Lines}
	if b.Corpus != "" {
		if _, err := os.Stat(b.Corpus); err != nil {
			return nil, "breached.corpus", err
		}
	}
	if fb.MaxBytes != "" {
		n, err := humanize.ParseBytes(fb.MaxBytes)
		if err != nil || n < 16<<20 || n > 1<<40 {
			return nil, "breached.max_bytes", errors.New("must be a size between 16MiB and 1TiB, such as 24GiB")
		}
		b.MaxBytes = int64(n)
	}
	if b.Upstream != "" {
		u, err := url.Parse(b.Upstream)
		loopback := false
		if err == nil {
			ip, perr := netip.ParseAddr(u.Hostname())
			loopback = u.Hostname() == "localhost" || perr == nil && ip.IsLoopback()
		}
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			!(u.Scheme == "https" || u.Scheme == "http" && loopback) {
			return nil, "breached.upstream", errors.New("must be an https URL (or http to a loopback address) without credentials, query or fragment; the prefix is appended to it")
		}
	}
	for _, d := range []struct {
		path     string
		v        time.Duration
		min, max time.Duration
	}{
		{"breached.upstream_timeout", b.UpstreamTimeout, 100 * time.Millisecond, 30 * time.Second},
		{"breached.cache_ttl", b.CacheTTL, time.Minute, 7 * 24 * time.Hour},
	} {
		if d.v != 0 && (d.v < d.min || d.v > d.max) {
			return nil, d.path, fmt.Errorf("must be between %s and %s", d.min, d.max)
		}
	}
	if b.CacheEntries < 0 || b.CacheEntries > 1<<20 {
		return nil, "breached.cache_entries", errors.New("must be 1 to 1048576 (0 or absent: the default, 1024)")
	}
	if b.Lines != 0 && (b.Lines < 16 || b.Lines > 1<<16) {
		return nil, "breached.lines", errors.New("must be 16 to 65536 (0 or absent: the fullest range rounded up)")
	}
	return b, "", nil
}

// ServiceConfig is b as the breached package takes it, with the corpus
// loaded from b.Corpus (nil without one) and the server's metrics.
func (b *Breached) ServiceConfig(c *breached.Corpus, m *breached.Metrics) breached.Config {
	return breached.Config{Corpus: c, Upstream: b.Upstream, UpstreamTimeout: b.UpstreamTimeout,
		CacheEntries: b.CacheEntries, CacheTTL: b.CacheTTL, Lines: b.Lines, Metrics: m}
}
