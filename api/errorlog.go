package api

import (
	"context"
	"log"
	"log/slog"
	"net/netip"
	"strings"
	"time"
)

// NewErrorLog returns a logger for net/http's and promhttp's own error
// messages (http.Server.ErrorLog, promhttp.HandlerOpts.ErrorLog) that
// writes each to h at level with every IP address in it, and its port,
// replaced by "[addr]": net/http names the peer ("http: TLS handshake error
// from 192.0.2.1:37552: ...") and its errors name both ends ("read tcp
// 127.0.0.1:8443->192.0.2.1:37552: ..."), and the log holds no IP address.
func NewErrorLog(h slog.Handler, level slog.Level) *log.Logger {
	return log.New(errorLogWriter{h: h, level: level}, "", 0)
}

type errorLogWriter struct {
	h     slog.Handler
	level slog.Level
}

func (w errorLogWriter) Write(p []byte) (int, error) {
	ctx := context.Background()
	if !w.h.Enabled(ctx, w.level) {
		return len(p), nil
	}
	msg := redactAddrs(strings.TrimSuffix(string(p), "\n"))
	_ = w.h.Handle(ctx, slog.NewRecord(time.Now(), w.level, msg, 0))
	return len(p), nil
}

// redactAddrs replaces each IP address in s, with its port if it has one,
// by "[addr]". It looks at each run of the characters addresses are written
// with (hex digits, '.', ':', '[' and ']') and cuts ':'-separated parts off
// its end until what is left parses, so that "192.0.2.1:37552:" and
// "[2001:db8::1]:443:bad" lose their addresses and keep the rest.
func redactAddrs(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if !addrByte(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && addrByte(s[j]) {
			j++
		}
		run := s[i:j]
		head := run
		if len(head) > maxAddrLen { // no address is longer: trimming stays cheap
			head = head[:maxAddrLen]
		}
		for head != "" && !isAddr(head) {
			k := strings.LastIndexByte(head, ':')
			if k < 0 {
				head = ""
				break
			}
			head = head[:k]
		}
		if head != "" {
			b.WriteString("[addr]")
			run = run[len(head):]
		}
		b.WriteString(run)
		i = j
	}
	return b.String()
}

// maxAddrLen is the longest address and port redactAddrs looks for at the
// start of a run: "[" 39 characters of IPv6 "]:65535".
const maxAddrLen = 47

func addrByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' ||
		c == '.' || c == ':' || c == '[' || c == ']'
}

func isAddr(s string) bool {
	if _, err := netip.ParseAddrPort(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil
}
