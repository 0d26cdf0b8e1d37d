package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key to
// the two files, dated at, and returns the certificate.
func writeCert(t *testing.T, certFile, keyFile string, serial int64, at time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "tollgate test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		b    *pem.Block
	}{{certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}, {keyFile, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.b), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestTLS_ServesAndPicksUpARenewedCertificate: with tls configured serve
// answers HTTPS with the certificate, and a certificate renewed in place is
// served without a restart.
func TestTLS_ServesAndPicksUpARenewedCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writeCert(t, certFile, keyFile, 1, time.Now().Add(-time.Minute))
	cfg := testConfig()
	cfg.TLS = &config.TLSConfig{CertFile: certFile, KeyFile: keyFile}
	// Every handshake looks at the files, so the test does not wait out
	// the second between two looks; the look itself is what is tested.
	was := certCheckEvery
	certCheckEvery = 0
	t.Cleanup(func() { certCheckEvery = was })
	addr, _ := startServe(t, cfg)

	get := func(trust *x509.Certificate) error {
		pool := x509.NewCertPool()
		pool.AddCert(trust)
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		res, err := c.Get("https://" + addr + "/healthz")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("/healthz over TLS: %d", res.StatusCode)
		}
		return nil
	}
	if err := get(first); err != nil {
		t.Fatalf("HTTPS with the first certificate: %v", err)
	}
	if res, err := http.Get("http://" + addr + "/healthz"); err == nil && res.StatusCode == 200 {
		t.Error("plain HTTP was answered")
	}
	second := writeCert(t, certFile, keyFile, 2, time.Now().Add(time.Minute))
	// The files are looked at on a handshake: the next one notices.
	var err error
	testkit.Eventually(10*time.Second, func() bool { err = get(second); return err == nil })
	if err != nil {
		t.Fatalf("the renewed certificate is not served: %v", err)
	}
}
