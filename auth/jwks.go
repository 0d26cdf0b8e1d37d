package auth

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

const (
	defaultJWKSRefresh = 5 * time.Minute
	minJWKSRefresh     = 10 * time.Second
	// unknownKidEvery bounds the fetches that tokens naming an unknown kid
	// cause: at most one per interval, whatever an attacker sends.
	unknownKidEvery = 30 * time.Second
	maxJWKSBytes    = 1 << 20
)

// jwksFetcher fetches a Config's JWKSURL.
type jwksFetcher struct {
	url     string
	every   time.Duration
	client  *http.Client
	mu      sync.Mutex
	last    time.Time // the last fetch an unknown kid caused
	pending bool
}

func newJWKSFetcher(cfg Config) (*jwksFetcher, error) {
	u, err := url.Parse(cfg.JWKSURL)
	if err != nil || u.Host == "" {
		return nil, configError("JWKSURL", "JWKS URL %q is not a URL", cfg.JWKSURL)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname())) {
		return nil, configError("JWKSURL", "JWKS URL must be https (http only on a loopback address), not %q", u.Scheme)
	}
	f := &jwksFetcher{url: cfg.JWKSURL, every: cfg.JWKSRefresh, client: cfg.HTTPClient}
	switch {
	case f.every == 0:
		f.every = defaultJWKSRefresh
	case f.every < minJWKSRefresh:
		return nil, configError("JWKSRefresh", "the JWKS refresh must be at least %v", minJWKSRefresh)
	}
	if f.client == nil {
		f.client = &http.Client{Timeout: 10 * time.Second}
	}
	return f, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetch gets and parses the JWK Set.
func (f *jwksFetcher) fetch(ctx context.Context) ([]Key, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, err
	}
	res, err := f.client.Do(req)
	if err != nil {
		return nil, errJWKS("%w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, errJWKS("%s answered %d", f.url, res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, errJWKS("%w", err)
	}
	if len(data) > maxJWKSBytes {
		return nil, errJWKS("over 1 MiB")
	}
	return ParseJWKS(data)
}

// soon fetches the set in the background, at most once per
// unknownKidEvery: a token named a kid no trusted key has.
func (f *jwksFetcher) soon(v *Verifier) {
	f.mu.Lock()
	if f.pending || time.Since(f.last) < unknownKidEvery {
		f.mu.Unlock()
		return
	}
	f.pending, f.last = true, time.Now()
	f.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = v.refresh(ctx) // a failure keeps the keys trusted now
		f.mu.Lock()
		f.pending = false
		f.mu.Unlock()
	}()
}

// refresh fetches the JWKS and trusts its keys (and the configured ones)
// from now on. A failed fetch keeps the keys trusted now.
func (v *Verifier) refresh(ctx context.Context) error {
	keys, err := v.jwks.fetch(ctx)
	if err != nil {
		return err
	}
	v.keys.Store(v.keySet(keys))
	return nil
}

// Run fetches the JWKS every JWKSRefresh until ctx is done, calling onError
// (when not nil) with each failed fetch; it returns at once without a JWKS
// URL. A failed fetch keeps the keys trusted until then.
func (v *Verifier) Run(ctx context.Context, onError func(error)) {
	if v.jwks == nil {
		return
	}
	t := time.NewTicker(v.jwks.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := v.refresh(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}
