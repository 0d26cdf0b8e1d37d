package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/proxy"
)

// guard bounds the waits of the streaming tests: a proxy that buffers
// would make them wait for ever.
const guard = 20 * time.Second

// serveProxy serves h's proxy on a loopback listener.
func serveProxy(t *testing.T, h *harness) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h.proxy)
	t.Cleanup(srv.Close)
	return srv
}

// A large upload streams to the upstream as it is sent: the upstream has
// its first MiB while the client still holds the other 63, and gets every
// byte.
func TestProxy_ALargeUploadStreamsThrough(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	srv := serveProxy(t, h)
	pr, pw := io.Pipe()
	defer pw.Close() // a failed test must not leave the proxy reading for ever
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/upload", pr)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		done <- result{resp, err}
	}()
	sum := sha256.New()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	write := func() {
		if _, err := pw.Write(chunk); err != nil {
			t.Error(err)
		}
		sum.Write(chunk)
	}
	write()
	select {
	case <-h.up.streaming:
	case <-time.After(guard):
		t.Fatal("the upstream did not get the first MiB while the client held the rest: the proxy buffers uploads")
	}
	for range streamed>>20 - 1 {
		write()
	}
	pw.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := string(body(t, r.resp))
	if want := fmt.Sprintf("%d %x", streamed, sum.Sum(nil)); got != want {
		t.Errorf("the upstream got %q, want %q", got, want)
	}
}

// A large response streams to the client as the upstream writes it.
func TestProxy_ALargeDownloadStreamsThrough(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	srv := serveProxy(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a failed test must not leave the upstream writing for ever
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/download", nil)
	first := make(chan error, 1)
	var resp *http.Response
	go func() {
		var err error
		if resp, err = http.DefaultClient.Do(req); err == nil {
			_, err = io.ReadFull(resp.Body, make([]byte, 1<<20))
		}
		first <- err
	}()
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(guard):
		t.Fatal("the client did not get the first MiB before the upstream wrote the rest: the proxy buffers responses")
	}
	defer resp.Body.Close()
	h.up.release <- struct{}{}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n+1<<20 != streamed {
		t.Errorf("read %d more bytes (%v), want %d", n, err, streamed-1<<20)
	}
}

func TestProxy_AWebSocketUpgradePassesThrough(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}})
	srv := serveProxy(t, h)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(guard))
	fmt.Fprint(conn, "GET /ws HTTP/1.1\r\nHost: app.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("answer %d Upgrade %q, want 101 websocket", resp.StatusCode, resp.Header.Get("Upgrade"))
	}
	for _, msg := range []string{"\x81\x05hello", "\x82\x03\x00\x01\x02", strings.Repeat("frame ", 5000)} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != msg {
			t.Errorf("echo of %d bytes differs", len(msg))
		}
	}
}

func TestProxy_ASlowUpstreamIs504(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}, UpstreamTimeout: 50 * time.Millisecond})
	resp := h.do(httptest.NewRequest(http.MethodGet, "/slow", nil), ownerAddr)
	b := body(t, resp)
	var p struct{ Type string }
	json.Unmarshal(b, &p)
	if resp.StatusCode != http.StatusGatewayTimeout || p.Type != proxy.ProblemUpstreamTimeout {
		t.Errorf("answer %d %s, want a 504 %s problem", resp.StatusCode, b, proxy.ProblemUpstreamTimeout)
	}
	if got := h.counter("tollgate_proxy_upstream_errors_total", "route", "_pass", "kind", "timeout"); got != 1 {
		t.Errorf("upstream timeouts = %v, want 1", got)
	}
}
