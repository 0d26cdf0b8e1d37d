package spraydetect

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrInvalidIP is returned for anything that is not a plain IPv4 or IPv6
// address: garbage, CIDR notation, ports, and IPv6 zones (a zone names a link
// on the caller's host, never a client on the internet).
var ErrInvalidIP = errors.New("spraydetect: invalid IP address")

// MaxIPLength bounds the text ParseIP looks at; the longest IPv6 form
// (IPv4-mapped, fully expanded) is 45 characters.
const MaxIPLength = 64

// ParseIP parses a client address. IPv4-mapped IPv6 addresses
// (::ffff:192.0.2.1) are unmapped to IPv4, so one client cannot appear under
// two forms.
func ParseIP(s string) (netip.Addr, error) {
	if len(s) == 0 || len(s) > MaxIPLength || strings.ContainsAny(s, "%/") {
		return netip.Addr{}, ErrInvalidIP
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, ErrInvalidIP
	}
	return a.Unmap(), nil
}

// Grouping turns an address into the prefix that is counted as one client.
//
// An address that carries one IPv4 address is counted as that IPv4 address,
// whatever its spelling: IPv4-mapped IPv6 (::ffff:0:0/96), 6to4 (2002::/16)
// and Teredo (2001::/32, see EmbeddedIPv4). Counted as IPv6, the holder of
// one IPv4 address could rotate through the 2^16 /64s of its 6to4 /48, and a
// Teredo client through the /64s of every Teredo server address it cares to
// write into its address (the /64 of a Teredo address is 2001:0:SERVER), each
// counted as a new client; and all honest clients of one Teredo server would
// share one /64's budget.
//
// Grouping alone does not stop rotation above IPv6Bits: the /64s of one /48
// are separate clients here. Aggregate limits over wider prefixes are built
// from WidePrefix.
type Grouping struct {
	// IPv6Bits is the IPv6 prefix length counted as one client. An ISP hands
	// a whole /64 (or /56, /48) to one customer, so counting single IPv6
	// addresses would let one attacker rotate through 2^64 of them. It does
	// not apply to 6to4 and Teredo addresses, which count as a /32 of the
	// IPv4 address they embed. The default is 64.
	IPv6Bits int
}

// Validate reports whether g is usable. Zero IPv6Bits means the default.
func (g Grouping) Validate() error {
	if g.IPv6Bits != 0 && (g.IPv6Bits < 16 || g.IPv6Bits > 128) {
		return fmt.Errorf("spraydetect: ipv6_prefix must be between 16 and 128, got %d", g.IPv6Bits)
	}
	return nil
}

// Prefix returns the prefix a counts as: a /32 for IPv4 (and IPv4-mapped
// IPv6), the /32 of the embedded IPv4 address for 6to4 and Teredo addresses
// (see EmbeddedIPv4), and a /IPv6Bits for other IPv6. A zone is dropped.
//
// Folding 6to4 and Teredo into IPv4 gives every address that embeds one IPv4
// address one budget, shared with that IPv4 address itself: no more than the
// IPv4 holder gets by sending over IPv4. (With IPv6Bits under 48, 2002::/16
// counted as IPv6 would lump several 6to4 sites into one client; they are
// counted apart, as their IPv4 addresses are.)
//
// The prefix is for counting, never for trust: decide allow-listing with
// AllowList.Contains on the address itself, not on the prefix Prefix returns,
// or a forged 6to4 or Teredo source would borrow an allow-listed IPv4's pass.
func (g Grouping) Prefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if v4, ok := EmbeddedIPv4(a); ok {
		a = v4
	}
	bits := 32
	if a.Is6() {
		bits = g.IPv6Bits
		if bits == 0 {
			bits = 64
		}
	}
	p, _ := a.Prefix(bits) // bits is in range for the family
	return p
}

// EmbeddedIPv4 returns the IPv4 address a 6to4 (2002::/16) or Teredo
// (2001::/32) address embeds, and true; for anything else a, false.
//
// A 6to4 address (RFC 3056) is 2002:V4HI:V4LO::/48 for the site whose public
// IPv4 address is V4, so bits 16–47 are returned: 2002:c000:0204::1 embeds
// 192.0.2.4. The embedded address is returned as it is even when it is
// private, loopback or unspecified (2002:0a00:0001:: embeds 10.0.0.1, 2002::
// embeds 0.0.0.0): such a prefix is bogus on the internet, but whoever sends
// from it is still one source, and counting it as any other key would hand
// it a fresh budget.
//
// A Teredo address (RFC 4380) is 2001:0000:SERVER:FLAGS:PORT:CLIENT, where
// SERVER is the Teredo server's IPv4 address, and PORT and CLIENT are the
// client's public (NAT-mapped) UDP port and IPv4 address, each with every bit
// inverted. The client's address is returned: the server field is shared by
// every client of one Teredo server, and the port only tells apart hosts
// behind one NAT, which count as one IPv4 client anyway. So
// 2001:0:4136:e378:8000:63bf:3fff:fdd2 embeds 3fff:fdd2 XOR ffff:ffff =
// c000:022d, 192.0.2.45.
//
// The embedded address says which IPv4 address a 6to4 or Teredo address is
// routed back to, not that the sender holds it. It is safe as a counting key
// (see Grouping.Prefix) and must never be trusted as the IPv4 address itself:
// AllowList.Contains deliberately does not look through it.
//
// Other addresses that contain an IPv4 address are left alone, and so report
// false: IPv4-mapped (::ffff:0:0/96, which ParseIP and Prefix already unmap),
// IPv4-compatible (::/96, deprecated), ISATAP interface IDs (the /64 is the
// site's, so per-/64 counting already holds), and the NAT64 prefixes
// 64:ff9b::/96 and 64:ff9b:1::/48. A NAT64 embeds the IPv4 server an
// IPv6-only client talks to; the server sees that client as the translator's
// IPv4 pool address, never as 64:ff9b::. Such a source only reaches a server
// that itself sits behind a stateless translator (SIIT-DC), and even then
// reading it as IPv4 would be wrong under a network-specific prefix and would
// split 64:ff9b::/96 — one /64 client today — into 2^32 clients for anyone
// able to send from it. ORCHID (2001:10::/28, 2001:20::/28) and the rest of
// 2001::/23 embed no IPv4 address.
func EmbeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return a, false
	}
	b := a.As16()
	switch {
	case b[0] == 0x20 && b[1] == 0x02: // 6to4, 2002::/16
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo, 2001::/32
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return a, false
}

// WidePrefix returns the /bits prefix of a native IPv6 address, for aggregate
// limits above the per-client grouping, and true. It returns false for IPv4,
// IPv4-mapped, 6to4 and Teredo addresses (they are counted as their IPv4) and
// when bits is outside 16..128. A zone is dropped.
//
// Grouping counts a /64 as one client, but one customer usually holds a /56 or
// a /48, and can spray from 256 or 65,536 fresh /64s. A limit on the /56 or
// /48 that contains a's /64 bounds that. It is a trade-off: a /48 may be
// shared by many customers (a hosting provider that gives each server a /64
// of its /48), so an attacker among them spends their common budget, and an
// aggregate limit should be looser than the per-client one. No prefix length
// stops an attacker who holds many /48s.
//
// 6to4 and Teredo report false because Grouping.Prefix already counts each as
// one IPv4 /32; a wide prefix of them would either repeat that count under
// another key or, for bits under 48, lump unrelated IPv4 clients together.
// Other IPv6, including NAT64's 64:ff9b::/96, is native here (see
// EmbeddedIPv4).
func WidePrefix(a netip.Addr, bits int) (netip.Prefix, bool) {
	if !a.Is6() || a.Is4In6() || bits < 16 || bits > 128 {
		return netip.Prefix{}, false
	}
	if _, ok := EmbeddedIPv4(a); ok {
		return netip.Prefix{}, false
	}
	p, _ := a.Prefix(bits) // bits is in range for IPv6
	return p, true
}

// AllowList is a set of ranges (offices, known NAT egress) that skip the IP
// rules. Account rules still apply to attempts from them.
type AllowList struct {
	prefixes []netip.Prefix
}

// ParseAllowList parses CIDR ranges and single addresses.
func ParseAllowList(entries []string) (AllowList, error) {
	var l AllowList
	for _, e := range entries {
		var p netip.Prefix
		var err error
		if strings.Contains(e, "/") {
			p, err = netip.ParsePrefix(strings.TrimSpace(e))
		} else {
			var a netip.Addr
			a, err = ParseIP(strings.TrimSpace(e))
			if err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return AllowList{}, fmt.Errorf("spraydetect: allow_list entry %q is not an address or CIDR range", e)
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return AllowList{}, fmt.Errorf("spraydetect: allow_list entry %q mixes IPv4-mapped and IPv6", e)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		l.prefixes = append(l.prefixes, p.Masked())
	}
	return l, nil
}

// Contains reports whether a lies in one of the ranges. An IPv4-mapped a is
// matched as its IPv4 address, which is the same address.
//
// A 6to4 or Teredo a is matched only as itself, never as the IPv4 address it
// embeds (see EmbeddedIPv4): a range of IPv4 addresses does not cover their
// 6to4 and Teredo forms. Those forms prove nothing about the sender — any host
// that can send from 2002::/16 or 2001::/32 (a misbehaving relay, a network
// that does not filter them) can name any IPv4 address there — so they must
// never earn an allow-listed office's pass. List 2002:V4HI:V4LO::/48
// explicitly to trust a 6to4 site.
func (l AllowList) Contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range l.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Len is the number of ranges.
func (l AllowList) Len() int { return len(l.prefixes) }
