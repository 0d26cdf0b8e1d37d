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
type Grouping struct {
	// IPv6Bits is the IPv6 prefix length counted as one client. An ISP hands
	// a whole /64 (or /56, /48) to one customer, so counting single IPv6
	// addresses would let one attacker rotate through 2^64 of them. The
	// default is 64.
	IPv6Bits int
}

// Validate reports whether g is usable. Zero IPv6Bits means the default.
func (g Grouping) Validate() error {
	if g.IPv6Bits != 0 && (g.IPv6Bits < 16 || g.IPv6Bits > 128) {
		return fmt.Errorf("spraydetect: ipv6_prefix must be between 16 and 128, got %d", g.IPv6Bits)
	}
	return nil
}

// Prefix returns the prefix a counts as: a /32 for IPv4 and a /IPv6Bits for
// IPv6.
func (g Grouping) Prefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
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

// Contains reports whether a lies in one of the ranges.
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
