package client_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
)

// The proxies of these tests: a load balancer network and a CDN's IPv6
// range, written once as an IPv4-mapped prefix to show it counts as IPv4.
var trustedProxies = []netip.Prefix{
	netip.MustParsePrefix("::ffff:10.0.0.0/104"), // 10.0.0.0/8
	netip.MustParsePrefix("2001:db8:ffff::/48"),
}

func mustProxies(t testing.TB, h client.ProxyHeader) *client.Proxies {
	t.Helper()
	p, err := client.NewProxies(client.ProxyConfig{Trusted: trustedProxies, Header: h})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proxiedRequest is a request from remote with these header field lines.
func proxiedRequest(remote string, lines map[string][]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.RemoteAddr = remote
	for k, vs := range lines {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return r
}

type ipCase struct {
	name   string
	remote string
	lines  map[string][]string
	want   string // "" for the invalid Addr
}

func runIPCases(t *testing.T, p *client.Proxies, tests []ipCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.ClientIP(proxiedRequest(tt.remote, tt.lines))
			want := netip.Addr{}
			if tt.want != "" {
				want = netip.MustParseAddr(tt.want)
			}
			if got != want {
				t.Errorf("ClientIP(RemoteAddr %q, %q) = %v, want %v", tt.remote, tt.lines, got, want)
			}
		})
	}
}

const (
	xffKey = "X-Forwarded-For"
	fwdKey = "Forwarded"
)

func TestClientIP_XForwardedFor(t *testing.T) {
	runIPCases(t, mustProxies(t, client.HeaderXForwardedFor), []ipCase{
		{"direct, no header", "203.0.113.9:5555", nil, "203.0.113.9"},
		{"direct attacker forging XFF gets its own address", "203.0.113.9:5555",
			map[string][]string{xffKey: {"198.51.100.1"}}, "203.0.113.9"},
		{"direct attacker forging a trusted hop gets its own address", "203.0.113.9:5555",
			map[string][]string{xffKey: {"198.51.100.1, 10.0.0.1"}}, "203.0.113.9"},
		{"direct attacker forging Forwarded gets its own address", "203.0.113.9:5555",
			map[string][]string{fwdKey: {"for=198.51.100.1"}}, "203.0.113.9"},
		{"behind the proxy", "10.0.0.1:80", map[string][]string{xffKey: {"203.0.113.9"}}, "203.0.113.9"},
		{"attacker behind the proxy prepending fake hops gets what the proxy saw", "10.0.0.1:80",
			map[string][]string{xffKey: {"1.1.1.1, 10.0.0.7, 2001:db8:ffff::1, 203.0.113.9"}}, "203.0.113.9"},
		{"attacker behind the proxy sending its own line gets what the proxy saw", "10.0.0.1:80",
			map[string][]string{xffKey: {"1.1.1.1, 10.0.0.7", "203.0.113.9"}}, "203.0.113.9"},
		{"Forwarded forged through an XFF proxy is never read", "10.0.0.1:80",
			map[string][]string{fwdKey: {"for=198.51.100.66"}, xffKey: {"203.0.113.9"}}, "203.0.113.9"},
		{"Forwarded alone through an XFF proxy: the proxy", "10.0.0.1:80",
			map[string][]string{fwdKey: {"for=198.51.100.66"}}, "10.0.0.1"},
		{"two trusted proxies", "10.0.0.3:80", map[string][]string{xffKey: {"203.0.113.9, 2001:db8:ffff::7"}}, "203.0.113.9"},
		{"two trusted proxies, one line each", "10.0.0.3:80",
			map[string][]string{xffKey: {"203.0.113.9", "10.0.0.2"}}, "203.0.113.9"},
		{"every hop trusted: the left-most", "10.0.0.3:80", map[string][]string{xffKey: {"10.0.0.5, 10.0.0.2"}}, "10.0.0.5"},
		{"trusted peer without header: the peer", "10.0.0.1:80", nil, "10.0.0.1"},
		{"empty entries are skipped", "10.0.0.1:80", map[string][]string{xffKey: {" , ,203.0.113.9,, ", ""}}, "203.0.113.9"},
		{"garbage right-most: the proxy that wrote it", "10.0.0.1:80",
			map[string][]string{xffKey: {"203.0.113.9, not-an-ip"}}, "10.0.0.1"},
		{"garbage after a trusted hop: that hop", "10.0.0.1:80",
			map[string][]string{xffKey: {"203.0.113.9, garbage, 10.0.0.2"}}, "10.0.0.2"},
		{"garbage left of the client is never reached", "10.0.0.1:80",
			map[string][]string{xffKey: {"<script>, 203.0.113.9"}}, "203.0.113.9"},
		{"IPv4 with a port", "10.0.0.1:80", map[string][]string{xffKey: {"203.0.113.9:51234"}}, "203.0.113.9"},
		{"IPv4 with a bad port", "10.0.0.1:80", map[string][]string{xffKey: {"203.0.113.9:http"}}, "10.0.0.1"},
		{"IPv4 with a six-digit port", "10.0.0.1:80", map[string][]string{xffKey: {"203.0.113.9:123456"}}, "10.0.0.1"},
		{"bare IPv6", "10.0.0.1:80", map[string][]string{xffKey: {"2001:db8:1::9"}}, "2001:db8:1::9"},
		{"bracketed IPv6 with a port", "10.0.0.1:80", map[string][]string{xffKey: {"[2001:db8:1::9]:4711"}}, "2001:db8:1::9"},
		{"bracketed IPv6 without a port", "10.0.0.1:80", map[string][]string{xffKey: {"[2001:db8:1::9]"}}, "2001:db8:1::9"},
		{"bracketed IPv4 is garbage", "10.0.0.1:80", map[string][]string{xffKey: {"[203.0.113.9]"}}, "10.0.0.1"},
		{"IPv6 proxy peer with a port", "[2001:db8:ffff::1]:443", map[string][]string{xffKey: {"203.0.113.9"}}, "203.0.113.9"},
		{"IPv4-mapped entry is unmapped", "10.0.0.1:80", map[string][]string{xffKey: {"::ffff:203.0.113.9"}}, "203.0.113.9"},
		{"IPv4-mapped trusted entry is trusted", "10.0.0.1:80",
			map[string][]string{xffKey: {"203.0.113.9, ::ffff:10.0.0.2"}}, "203.0.113.9"},
		{"IPv4-mapped peer is unmapped and trusted", "[::ffff:10.0.0.1]:80", map[string][]string{xffKey: {"203.0.113.9"}}, "203.0.113.9"},
		{"entry with a zone is garbage", "10.0.0.1:80", map[string][]string{xffKey: {"fe80::1%eth0"}}, "10.0.0.1"},
		{"bracketed entry with a zone is garbage", "10.0.0.1:80", map[string][]string{xffKey: {"[fe80::1%25eth0]:80"}}, "10.0.0.1"},
		{"peer with a zone: the zone is dropped", "[fe80::1%eth0]:80", map[string][]string{xffKey: {"203.0.113.9"}}, "fe80::1"},
		{"bare peer address", "10.0.0.1", map[string][]string{xffKey: {"203.0.113.9"}}, "203.0.113.9"},
		{"peer that is no address: invalid, headers unread", "@", map[string][]string{xffKey: {"203.0.113.9"}}, ""},
		{"empty RemoteAddr: invalid", "", nil, ""},
		{"prefix length is garbage", "10.0.0.1:80", map[string][]string{xffKey: {"203.0.113.0/24"}}, "10.0.0.1"},
	})
}

func TestClientIP_Forwarded(t *testing.T) {
	runIPCases(t, mustProxies(t, client.HeaderForwarded), []ipCase{
		{"direct attacker forging Forwarded gets its own address", "203.0.113.9:5555",
			map[string][]string{fwdKey: {"for=198.51.100.1"}}, "203.0.113.9"},
		{"behind the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for=203.0.113.9"}}, "203.0.113.9"},
		{"XFF forged through a Forwarded proxy is never read", "10.0.0.1:80",
			map[string][]string{xffKey: {"198.51.100.66"}, fwdKey: {"for=203.0.113.9"}}, "203.0.113.9"},
		{"attacker behind the proxy prepending fake elements gets what the proxy saw", "10.0.0.1:80",
			map[string][]string{fwdKey: {`for=1.1.1.1, for="[2001:db8:ffff::1]", for=10.0.0.9;proto=https, for=203.0.113.9`}}, "203.0.113.9"},
		{"parameters, any case, any order", "10.0.0.1:80",
			map[string][]string{fwdKey: {`proto=https;By=10.0.0.1;FOR="203.0.113.9:4711";host=example.com`}}, "203.0.113.9"},
		{"quoted IPv6 with a port", "10.0.0.1:80", map[string][]string{fwdKey: {`for="[2001:db8:1::9]:4711"`}}, "2001:db8:1::9"},
		{"quoted IPv6 without a port", "10.0.0.1:80", map[string][]string{fwdKey: {`for="[2001:db8:1::9]"`}}, "2001:db8:1::9"},
		{"quoted-pairs are unescaped", "10.0.0.1:80", map[string][]string{fwdKey: {`for="\[2001:db8:1::9\]"`}}, "2001:db8:1::9"},
		{"obfuscated port", "10.0.0.1:80", map[string][]string{fwdKey: {`for="203.0.113.9:_p-1"`}}, "203.0.113.9"},
		{"IPv4-mapped is unmapped", "10.0.0.1:80", map[string][]string{fwdKey: {`for="[::ffff:203.0.113.9]"`}}, "203.0.113.9"},
		{"whitespace around ; and ,", "10.0.0.3:80",
			map[string][]string{fwdKey: {"for=203.0.113.9 ; proto=https ,\tfor=10.0.0.2"}}, "203.0.113.9"},
		{"two lines", "10.0.0.3:80",
			map[string][]string{fwdKey: {"for=1.1.1.1", "for=203.0.113.9;proto=https, for=10.0.0.2"}}, "203.0.113.9"},
		{"a broken line of the attacker's before the proxy's line", "10.0.0.1:80",
			map[string][]string{fwdKey: {`for="unterminated`, "for=203.0.113.9"}}, "203.0.113.9"},
		{"an unterminated quote swallowing the proxy's element: the proxy", "10.0.0.1:80",
			map[string][]string{fwdKey: {`for="1.1.1.1, for=203.0.113.9`}}, "10.0.0.1"},
		{"a comma inside quotes does not split", "10.0.0.1:80",
			map[string][]string{fwdKey: {`for="1.1.1.1, for=6.6.6.6", for=203.0.113.9`}}, "203.0.113.9"},
		{"unknown right-most: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for=203.0.113.9, for=unknown"}}, "10.0.0.1"},
		{"obfuscated node right-most: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {`for="_hidden"`}}, "10.0.0.1"},
		{"obfuscated node after a trusted hop: that hop", "10.0.0.1:80",
			map[string][]string{fwdKey: {`for=_hidden, for=10.0.0.2`}}, "10.0.0.2"},
		{"element without for: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for=203.0.113.9, proto=https"}}, "10.0.0.1"},
		{"element with for twice: the proxy", "10.0.0.1:80",
			map[string][]string{fwdKey: {"for=198.51.100.1;for=203.0.113.9"}}, "10.0.0.1"},
		{"empty for: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {`for=""`}}, "10.0.0.1"},
		{"unquoted IPv6 is bad syntax: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for=[2001:db8:1::9]"}}, "10.0.0.1"},
		{"unquoted IPv4 with a port is bad syntax: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for=203.0.113.9:80"}}, "10.0.0.1"},
		{"quoted IPv6 without brackets: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {`for="2001:db8:1::9"`}}, "10.0.0.1"},
		{"zone: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {`for="[fe80::1%25eth0]"`}}, "10.0.0.1"},
		{"space around = is bad syntax: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for = 203.0.113.9"}}, "10.0.0.1"},
		{"control byte in quotes: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {"for=\"203.0.113.9\x01\""}}, "10.0.0.1"},
		{"empty elements are skipped", "10.0.0.1:80", map[string][]string{fwdKey: {", ,for=203.0.113.9,"}}, "203.0.113.9"},
		{"empty line: the proxy", "10.0.0.1:80", map[string][]string{fwdKey: {""}}, "10.0.0.1"},
		{"a line over 8 KiB (an attacker's, to cost memory) is not read: the proxy", "10.0.0.1:80",
			map[string][]string{fwdKey: {strings.Repeat("a=b,", 2<<10) + "for=203.0.113.9"}}, "10.0.0.1"},
		{"a line of 8 KiB is read", "10.0.0.1:80",
			map[string][]string{fwdKey: {strings.Repeat("a=b,", 2<<10-4) + "for=203.0.113.9"}}, "203.0.113.9"},
	})
}

func TestClientIP_NoProxiesReadsNoHeader(t *testing.T) {
	lines := map[string][]string{xffKey: {"198.51.100.1"}, fwdKey: {"for=198.51.100.1"}}
	none, err := client.NewProxies(client.ProxyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*client.Proxies{"nil": nil, "zero": {}, "NewProxies": none} {
		if got, want := p.ClientIP(proxiedRequest("10.0.0.1:80", lines)), netip.MustParseAddr("10.0.0.1"); got != want {
			t.Errorf("%s: ClientIP = %v, want %v", name, got, want)
		}
	}
}

func TestNewProxies_RefusesConfigurationsThatTrustClients(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	tests := []struct {
		name string
		cfg  client.ProxyConfig
		ok   bool
	}{
		{"none", client.ProxyConfig{}, true},
		{"a header without proxies", client.ProxyConfig{Header: client.HeaderForwarded}, true},
		{"proxies and their header", client.ProxyConfig{Trusted: []netip.Prefix{p("10.0.0.0/8")}, Header: client.HeaderXForwardedFor}, true},
		{"proxies without a header", client.ProxyConfig{Trusted: []netip.Prefix{p("10.0.0.0/8")}}, false},
		{"an unknown header", client.ProxyConfig{Trusted: []netip.Prefix{p("10.0.0.0/8")}, Header: 7}, false},
		{"the zero prefix", client.ProxyConfig{Trusted: []netip.Prefix{{}}, Header: client.HeaderForwarded}, false},
		{"every IPv4 address", client.ProxyConfig{Trusted: []netip.Prefix{p("0.0.0.0/0")}, Header: client.HeaderForwarded}, false},
		{"every IPv6 address", client.ProxyConfig{Trusted: []netip.Prefix{p("::/0")}, Header: client.HeaderForwarded}, false},
		{"every IPv4-mapped address", client.ProxyConfig{Trusted: []netip.Prefix{p("::ffff:0.0.0.0/96")}, Header: client.HeaderForwarded}, false},
		{"IPv4-mapped and IPv6 mixed", client.ProxyConfig{Trusted: []netip.Prefix{p("::ffff:0.0.0.0/95")}, Header: client.HeaderForwarded}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.NewProxies(tt.cfg)
			if got := err == nil; got != tt.ok {
				t.Errorf("NewProxies(%+v) error = %v, want ok %v", tt.cfg, err, tt.ok)
			}
		})
	}
}

func TestProxyHeader_String(t *testing.T) {
	tests := []struct {
		h    client.ProxyHeader
		want string
	}{
		{client.HeaderNone, "none"},
		{client.HeaderForwarded, "Forwarded"},
		{client.HeaderXForwardedFor, "X-Forwarded-For"},
		{9, "ProxyHeader(9)"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("ProxyHeader(%d).String() = %q, want %q", int(tt.h), got, tt.want)
		}
	}
}

// FuzzClientIP holds ClientIP to its promises for any RemoteAddr and any
// Forwarded and X-Forwarded-For lines (one per "\n"): it never panics; it
// answers the peer's address or, only when the peer is a trusted proxy, an
// address written in the configured header; never a zone or an IPv4-mapped
// form; the invalid Addr only when RemoteAddr is no address.
func FuzzClientIP(f *testing.F) {
	seeds := [][3]string{
		{"10.0.0.1:80", "for=203.0.113.9", "203.0.113.9"},
		{"203.0.113.9:5555", "for=198.51.100.1", "198.51.100.1, 10.0.0.1"},
		{"10.0.0.1:80", `for=1.1.1.1, for="[2001:db8:ffff::1]", for=203.0.113.9`, "1.1.1.1, 10.0.0.7, 203.0.113.9"},
		{"[2001:db8:ffff::1]:443", `for="[2001:db8:1::9]:4711";proto=https`, "[2001:db8:1::9]:4711"},
		{"[::ffff:10.0.0.1]:80", `for="[::ffff:203.0.113.9]"`, "::ffff:203.0.113.9"},
		{"10.0.0.1:80", "for=unknown\nfor=_x, for=10.0.0.2", "garbage, 10.0.0.2\n203.0.113.9:1"},
		{"10.0.0.1:80", `for="unterminated` + "\nfor=203.0.113.9", "fe80::1%eth0"},
		{"10.0.0.1:80", `for="\[2001:db8:1::9\]:_p"`, "[fe80::1%25eth0]:80, 2001:db8:1::9"},
		{"[fe80::1%eth0]:80", "for=203.0.113.9;for=1.2.3.4", "::"},
		{"@", "for=203.0.113.9", "203.0.113.9"},
		{"10.0.0.1", ", ,", ", ,"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	byHeader := map[string]*client.Proxies{
		fwdKey: mustProxies(f, client.HeaderForwarded),
		xffKey: mustProxies(f, client.HeaderXForwardedFor),
	}
	f.Fuzz(func(t *testing.T, remote, forwarded, xForwardedFor string) {
		r := proxiedRequest(remote, map[string][]string{
			fwdKey: strings.Split(forwarded, "\n"),
			xffKey: strings.Split(xForwardedFor, "\n"),
		})
		peer := peerOf(remote)
		for header, p := range byHeader {
			got := p.ClientIP(r)
			if got.Zone() != "" || got.Is4In6() {
				t.Fatalf("%s: ClientIP = %v: zoned or IPv4-mapped", header, got)
			}
			if got == peer {
				continue
			}
			if !peer.IsValid() || !fuzzTrusted(peer) {
				t.Fatalf("%s: ClientIP = %v, want the untrusted peer %v", header, got, peer)
			}
			if !writtenIn(got, strings.Join(r.Header.Values(header), "\n")) {
				t.Fatalf("%s: ClientIP = %v, which the %s lines %q do not hold", header, got, header, r.Header.Values(header))
			}
		}
	})
}

// peerOf is RemoteAddr's address as ClientIP must see it, worked out
// independently of clientip.go.
func peerOf(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().WithZone("").Unmap()
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.WithZone("").Unmap()
	}
	return netip.Addr{}
}

// fuzzTrusted reports whether a is in trustedProxies, written out as
// ClientIP must read them.
func fuzzTrusted(a netip.Addr) bool {
	return netip.MustParsePrefix("10.0.0.0/8").Contains(a) || netip.MustParsePrefix("2001:db8:ffff::/48").Contains(a)
}

// writtenIn reports whether some substring of text, with backslashes (the
// quoted-pair escapes) removed, parses as a, in any form (IPv4-mapped,
// uncompressed, with a zone).
func writtenIn(a netip.Addr, text string) bool {
	text = strings.ReplaceAll(text, `\`, "")
	for i := range len(text) {
		for j := i + 1; j <= len(text) && j-i <= 64; j++ {
			if b, err := netip.ParseAddr(text[i:j]); err == nil && b.WithZone("").Unmap() == a {
				return true
			}
		}
	}
	return false
}

func BenchmarkClientIP(b *testing.B) {
	p := mustProxies(b, client.HeaderXForwardedFor)
	r := proxiedRequest("10.0.0.1:80", map[string][]string{xffKey: {"1.1.1.1, 203.0.113.9, 10.0.0.2"}})
	b.ReportAllocs()
	for b.Loop() {
		p.ClientIP(r)
	}
}
