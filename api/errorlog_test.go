package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api"
)

// TestErrorLog_NetHTTPMessagesLoseThePeerAddress: net/http's own messages,
// which name the peer and both ends of a connection, reach the log with
// every address replaced and the rest kept.
func TestErrorLog_NetHTTPMessagesLoseThePeerAddress(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http: TLS handshake error from 198.51.100.77:37552: EOF",
			"http: TLS handshake error from [addr]: EOF"},
		{"http: TLS handshake error from [2001:db8::77]:443: remote error: tls: bad certificate",
			"http: TLS handshake error from [addr]: remote error: tls: bad certificate"},
		{"http: TLS handshake error from 198.51.100.77:37552: read tcp 127.0.0.1:8443->198.51.100.77:37552: read: connection reset by peer",
			"http: TLS handshake error from [addr]: read tcp [addr]->[addr]: read: connection reset by peer"},
		{"http2: server: error reading preface from client 198.51.100.77:1:bad", "http2: server: error reading preface from client [addr]:bad"},
		{"http: panic serving 2001:db8::77: boom", "http: panic serving [addr]: boom"},
		{"http: Accept error: accept tcp: too many open files; retrying in 5ms", "http: Accept error: accept tcp: too many open files; retrying in 5ms"},
		{"error encoding and sending metric family: write tcp [::1]:9000->[::1]:53110: write: broken pipe",
			"error encoding and sending metric family: write tcp [addr]->[addr]: write: broken pipe"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		api.NewErrorLog(slog.NewJSONHandler(&buf, nil), slog.LevelWarn).Print(tt.in)
		var got struct{ Level, Msg string }
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%q: %v: %s", tt.in, err, buf.Bytes())
		}
		if got.Msg != tt.want || got.Level != "WARN" {
			t.Errorf("log of %q = %s %q, want WARN %q", tt.in, got.Level, got.Msg, tt.want)
		}
		if strings.Contains(buf.String(), "198.51.100") || strings.Contains(buf.String(), "2001:db8") {
			t.Errorf("the log holds an address: %s", buf.Bytes())
		}
	}
}

// FuzzErrorLog_NoAddressSurvives: whatever surrounds an IP address (or an
// address and port) in a net/http message, the line logged does not hold
// it; and no message panics the writer.
func FuzzErrorLog_NoAddressSurvives(f *testing.F) {
	f.Add("http: TLS handshake error from ", "192.0.2.1:37552", ": EOF")
	f.Add("read tcp 127.0.0.1:8443->", "[2001:db8::1]:443", ": reset")
	f.Add("", "::ffff:192.0.2.1", "")
	f.Add("x ", "fe80::1", ":::")
	f.Fuzz(func(t *testing.T, prefix, addr, suffix string) {
		var buf bytes.Buffer
		api.NewErrorLog(slog.NewJSONHandler(&buf, nil), slog.LevelWarn).Print(prefix + addr + suffix)
		var line struct{ Msg string }
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("not one JSON line: %q", buf.String())
		}
		ap, err := netip.ParseAddrPort(addr)
		a := ap.Addr()
		if err != nil {
			if a, err = netip.ParseAddr(addr); err != nil {
				return
			}
		}
		// Only an address standing apart: a hex digit, a dot, a colon or a
		// bracket next to it makes it part of a longer run.
		if a.Zone() != "" || prefix != "" && addrChar(prefix[len(prefix)-1]) || suffix != "" && addrChar(suffix[0]) {
			return
		}
		if strings.Contains(line.Msg, a.String()) || strings.Contains(line.Msg, addr) {
			t.Errorf("logged %q, which holds %s", line.Msg, addr)
		}
	})
}

func addrChar(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF.:[]", c) >= 0 }
