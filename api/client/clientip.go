package client

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// ProxyHeader names the forwarding header that trusted proxies write.
type ProxyHeader int

// The forwarding headers Proxies reads.
const (
	// HeaderNone reads no header: the client IP is the connection's peer.
	HeaderNone ProxyHeader = iota
	// HeaderForwarded is RFC 7239's Forwarded, read for its for= parameters.
	HeaderForwarded
	// HeaderXForwardedFor is the de facto X-Forwarded-For.
	HeaderXForwardedFor
)

// String returns the header's name, or "none".
func (h ProxyHeader) String() string {
	switch h {
	case HeaderForwarded:
		return "Forwarded"
	case HeaderXForwardedFor:
		return "X-Forwarded-For"
	case HeaderNone:
		return "none"
	}
	return "ProxyHeader(" + strconv.Itoa(int(h)) + ")"
}

// ProxyConfig configures Proxies.
type ProxyConfig struct {
	// Trusted are the address ranges of your own reverse proxies and load
	// balancers: only a request whose connection comes from one of them has
	// its Header read. IPv4-mapped IPv6 prefixes are taken as the IPv4
	// prefix; a prefix of length 0 (every address) is refused. The default
	// is none: the client IP is always the connection's peer.
	Trusted []netip.Prefix
	// Header is the one forwarding header your trusted proxies write,
	// appending the address of the peer they saw (nginx's
	// $proxy_add_x_forwarded_for, HAProxy's option forwardfor, or a
	// Forwarded "for=" element). The other header is never read: a proxy
	// passes through whatever a client sends in a header it does not
	// manage, so reading it would let any client choose its address.
	// Required with Trusted. The default is HeaderNone.
	Header ProxyHeader
}

// Proxies resolves the end user's address of a request that may have come
// through trusted reverse proxies. The zero Proxies trusts no proxy and
// answers the connection's peer; a Proxies is safe for concurrent use.
type Proxies struct {
	trusted []netip.Prefix
	header  string // canonical header key; "" reads none
	xff     bool
}

// ProxyConfigError is a ProxyConfig that NewProxies refuses. Field is the
// field at fault, "Trusted" or "Header"; Prefix, for Trusted, the prefix
// refused. Detail says what is wrong without the package's prefix, for a
// caller that names the setting its own way (tollgate's config, at
// proxy.trusted_proxies); Error is "client: proxies: " followed by Detail.
type ProxyConfigError struct {
	Field  string
	Prefix netip.Prefix
	Detail string
}

func (e *ProxyConfigError) Error() string { return "client: proxies: " + e.Detail }

// NewProxies returns Proxies for cfg, or a *ProxyConfigError when a prefix
// is invalid or trusts every address, or Trusted is set without a Header.
func NewProxies(cfg ProxyConfig) (*Proxies, error) {
	p := &Proxies{}
	for _, pf := range cfg.Trusted {
		if !pf.IsValid() {
			return nil, &ProxyConfigError{Field: "Trusted", Prefix: pf, Detail: "invalid trusted prefix"}
		}
		if pf.Addr().Is4In6() {
			if pf.Bits() < 96 {
				return nil, &ProxyConfigError{Field: "Trusted", Prefix: pf, Detail: "trusted prefix " + pf.String() + " mixes IPv4-mapped and IPv6 addresses"}
			}
			pf = netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-96)
		}
		if pf.Bits() == 0 {
			return nil, &ProxyConfigError{Field: "Trusted", Prefix: pf, Detail: "trusted prefix " + pf.String() + " trusts every address, letting any client choose its IP"}
		}
		p.trusted = append(p.trusted, pf.Masked())
	}
	switch cfg.Header {
	case HeaderNone:
		if len(p.trusted) > 0 {
			return nil, &ProxyConfigError{Field: "Header", Detail: "Trusted needs the Header those proxies write"}
		}
	case HeaderForwarded, HeaderXForwardedFor:
		p.header = cfg.Header.String()
		p.xff = cfg.Header == HeaderXForwardedFor
	default:
		return nil, &ProxyConfigError{Field: "Header", Detail: "unknown Header " + cfg.Header.String()}
	}
	return p, nil
}

// ClientIP returns the end user's address for r, never with a zone or in
// IPv4-mapped IPv6 form (tollgate's ip field takes it as it is):
//
//   - The connection's peer is r.RemoteAddr's address (port dropped, zone
//     dropped, unmapped). When it is not an address, ClientIP returns the
//     zero netip.Addr, which IsValid reports as invalid.
//   - When the peer is not a trusted proxy, ClientIP returns it and reads no
//     header at all.
//   - Otherwise it walks the configured header's entries from the right
//     (every field line in order, each a comma-separated list, empty
//     entries skipped): each entry is what the hop to its right saw. It
//     returns the first entry, from the right, that is not a trusted
//     proxy.
//   - An entry that is not an address — unparsable, "unknown", an
//     obfuscated node ("_hidden"), a Forwarded element without for= or with
//     two, an address with a zone, an IPv6 address in Forwarded that is
//     not quoted and bracketed, or a Forwarded field line that is not valid
//     RFC 7239 syntax (one such line counts as a single unusable entry) —
//     stops the walk: ClientIP returns the trusted hop that wrote it, the
//     last address known good (the peer itself when that is the right-most
//     entry).
//   - When every entry is a trusted proxy, or there is none, it returns the
//     left-most trusted hop (the peer when there is no entry).
//
// Entries may carry ports: "192.0.2.1:4711" and "[2001:db8::1]:4711" in
// either header (in Forwarded quoted, as RFC 7239 requires), and bare
// IPv6 in X-Forwarded-For.
//
// Security: the answer is only as good as the configuration. Trusted must
// hold only proxies you run (or your CDN's published ranges), each of which
// appends the peer it saw to Header, and every path to the service must go
// through them; otherwise a client picks its own address, and with it
// its own rate limits. Unlike chi's middleware.RealIP (deprecated in chi
// 5.5 as spoofable), which takes True-Client-IP, X-Real-IP or the left-most
// X-Forwarded-For entry whatever the peer, ClientIP never returns an entry a
// client wrote itself while a trusted proxy wrote an address to its right,
// and never reads a header the peer could have forged. An end user whose
// trusted proxy wrote
// an unusable entry gets the proxy's address, which every such end user
// shares; a client can do that to itself on purpose, but then it is
// counted with the others doing so, never as someone else.
func (p *Proxies) ClientIP(r *http.Request) netip.Addr {
	peer := remoteAddr(r.RemoteAddr)
	if !peer.IsValid() || p == nil || p.header == "" || !p.isTrusted(peer) {
		return peer
	}
	lines := r.Header.Values(p.header)
	addr := peer
	// step takes the next entry from the right; false ends the walk.
	step := func(entry string) bool {
		a, ok := parseNode(entry, p.xff)
		if !ok {
			return false // addr wrote it: the last address known good
		}
		addr = a
		return p.isTrusted(a)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if p.xff {
			for rest := lines[i]; rest != ""; {
				entry := rest
				if j := strings.LastIndexByte(rest, ','); j >= 0 {
					entry, rest = rest[j+1:], rest[:j]
				} else {
					rest = ""
				}
				if entry = strings.Trim(entry, " \t"); entry != "" && !step(entry) {
					return addr
				}
			}
			continue
		}
		fors, ok := forwardedFors(lines[i])
		if !ok {
			return addr
		}
		for j := len(fors) - 1; j >= 0; j-- {
			if !step(fors[j]) {
				return addr
			}
		}
	}
	return addr
}

// isTrusted reports whether a is in a trusted prefix.
func (p *Proxies) isTrusted(a netip.Addr) bool {
	for _, pf := range p.trusted {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

// remoteAddr is the address of an http.Request's RemoteAddr ("ip:port",
// "[ip%zone]:port" or a bare address), unmapped and without zone; the zero
// Addr when it is none of these.
func remoteAddr(s string) netip.Addr {
	var a netip.Addr
	if ap, err := netip.ParseAddrPort(s); err == nil {
		a = ap.Addr()
	} else if a, err = netip.ParseAddr(s); err != nil {
		return netip.Addr{}
	}
	return a.WithZone("").Unmap()
}

// parseNode parses one hop: an X-Forwarded-For entry (xff) or a Forwarded
// for= value, already unquoted. It returns the unmapped address, or false for
// anything that is not an address without zone.
func parseNode(s string, xff bool) (netip.Addr, bool) {
	var host string
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" && !isPort(rest, xff) {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	case xff && strings.Count(s, ":") > 1: // bare IPv6
		host = s
	default: // IPv4, with or without a port
		host = s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			if !isPort(s[i:], xff) {
				return netip.Addr{}, false
			}
			host = s[:i]
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is4() {
			return netip.Addr{}, false
		}
		return a, true
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// isPort reports whether s is ":" and a port: 1 to 5 digits, or with
// Forwarded (not xff) also an obfuscated port ("_" and letters, digits,
// ".", "_", "-"; RFC 7239 §6.3).
func isPort(s string, xff bool) bool {
	if len(s) < 2 || s[0] != ':' {
		return false
	}
	s = s[1:]
	if !xff && s[0] == '_' {
		for i := 1; i < len(s); i++ {
			if !isAlnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-' {
				return false
			}
		}
		return len(s) > 1
	}
	if len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxForwardedLine is the longest Forwarded line read: nginx's default
// limit on a header line.
const maxForwardedLine = 8 << 10

// forwardedFors parses one Forwarded field line (RFC 7239 §4, with optional
// whitespace around ";" and ",") and returns the for= value of each
// non-empty element, unquoted. An element without for=, or with it twice,
// gives "", which no address parses as. ok is false when the line is not
// valid syntax, or longer than maxForwardedLine: a proxy writes no such
// line, and its elements would cost many times its size to hold.
func forwardedFors(line string) (fors []string, ok bool) {
	if len(line) > maxForwardedLine {
		return nil, false
	}
	i := 0
	for {
		i = skipOWS(line, i)
		var (
			value    string
			nfor     int
			nonEmpty bool
		)
		// One element: pairs separated by ";", each possibly empty.
		for i < len(line) && line[i] != ',' {
			if line[i] == ';' {
				nonEmpty = true
				i = skipOWS(line, i+1)
				continue
			}
			start := i
			for i < len(line) && isTchar(line[i]) {
				i++
			}
			name := line[start:i]
			if name == "" || i >= len(line) || line[i] != '=' {
				return nil, false
			}
			i++
			var v string
			if i < len(line) && line[i] == '"' {
				var good bool
				if v, i, good = quotedString(line, i); !good {
					return nil, false
				}
			} else {
				start = i
				for i < len(line) && isTchar(line[i]) {
					i++
				}
				if v = line[start:i]; v == "" {
					return nil, false
				}
			}
			nonEmpty = true
			if strings.EqualFold(name, "for") {
				nfor++
				value = v
			}
			i = skipOWS(line, i)
			if i < len(line) && line[i] != ';' && line[i] != ',' {
				return nil, false
			}
		}
		if nonEmpty {
			if nfor != 1 {
				value = ""
			}
			fors = append(fors, value)
		}
		if i >= len(line) {
			return fors, true
		}
		i++ // the ","
	}
}

// quotedString parses the RFC 9110 quoted-string at s[i] (a '"') and returns
// its unescaped value and the index after it.
func quotedString(s string, i int) (string, int, bool) {
	var b strings.Builder
	for i++; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, true
		case c == '\\':
			i++
			if i >= len(s) || (s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f {
				return "", 0, false
			}
			b.WriteByte(s[i])
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", 0, false
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// skipOWS returns the index of the first byte at or after i that is not a
// space or tab.
func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isTchar reports whether c is an RFC 9110 token character.
func isTchar(c byte) bool {
	return isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
