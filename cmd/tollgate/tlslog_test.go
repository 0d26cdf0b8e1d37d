package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// TestTLS_AFailedHandshakeLogsNoPeerAddress: a plain-HTTP client and a
// client that does not trust the certificate make net/http log TLS
// handshake errors; the lines are in the log, without the peer's address.
func TestTLS_AFailedHandshakeLogsNoPeerAddress(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile, 1, time.Now().Add(-time.Minute))
	cfg := testConfig()
	cfg.TLS = &config.TLSConfig{CertFile: certFile, KeyFile: keyFile}
	addr, logs := startServe(t, cfg)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	peers := []string{conn.LocalAddr().String()}
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	_, _ = io.ReadAll(conn)
	conn.Close()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	peers = append(peers, raw.LocalAddr().String())
	if tc := tls.Client(raw, &tls.Config{ServerName: "127.0.0.1"}); tc.Handshake() == nil {
		t.Error("a client that does not trust the certificate completed a handshake")
	}
	raw.Close()

	testkit.Eventually(3*time.Second, func() bool { return strings.Count(logs.String(), "TLS handshake error") >= 2 })
	if n := strings.Count(logs.String(), "TLS handshake error"); n < 2 {
		t.Errorf("%d handshake errors logged, want 2:\n%s", n, logs)
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		for _, p := range peers {
			host, _, _ := net.SplitHostPort(p)
			if strings.Contains(l, p) || strings.Contains(l, "from "+host) {
				t.Errorf("a log line holds the peer address %s: %s", p, l)
			}
		}
	}
}
