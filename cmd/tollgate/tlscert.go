package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certCheckEvery is how often, at most, a handshake looks at the
// certificate's files for a change: a stat of two files per second costs
// nothing, and a renewal (done days before expiry) is served within a
// second of the first handshake after it. Tests shorten it so that a
// renewal is seen at the next handshake. The default is one second.
var certCheckEvery = time.Second

// certReloader serves a certificate and key from files and reloads them
// when either file changes (checked at most once every checkEvery, on a
// handshake) or on reload (SIGHUP): a renewed certificate is used without a
// restart. A pair that fails to load keeps the previous one.
type certReloader struct {
	certFile, keyFile string
	checkEvery        time.Duration
	onError           func(error)

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// newCertReloader loads the pair once: a pair that does not load is a
// start-up error.
func newCertReloader(certFile, keyFile string, onError func(error)) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, checkEvery: certCheckEvery, onError: onError}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload loads the pair now.
func (r *certReloader) reload() error {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	mod := r.newest()
	r.mu.Lock()
	r.cert, r.modTime, r.checked = &cert, mod, time.Now()
	r.mu.Unlock()
	return nil
}

// newest is the later modification time of the two files.
func (r *certReloader) newest() time.Time {
	var t time.Time
	for _, f := range []string{r.certFile, r.keyFile} {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	stale := time.Since(r.checked) >= r.checkEvery
	if stale {
		r.checked = time.Now()
	}
	mod := r.modTime
	r.mu.Unlock()
	if stale && r.newest().After(mod) {
		if err := r.reload(); err != nil && r.onError != nil {
			r.onError(err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cert, nil
}
