package spraydetect_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

func TestEmbeddedIPv4(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" when EmbeddedIPv4 must report false
	}{
		// 6to4, RFC 3056: 2002:V4HI:V4LO::/48, the IPv4 address in bits 16-47.
		// 2002:c000:0204::1: c0.00.02.04 = 192.0.2.4.
		{"6to4", "2002:c000:0204::1", "192.0.2.4"},
		// The subnet ID and interface ID (bits 48-127) do not matter.
		{"6to4, other /64 of the same /48", "2002:c000:204:ffff:1a2b:3c4d:5e6f:7081", "192.0.2.4"},
		// c6.33.64.07 = 198.51.100.7.
		{"6to4, other IPv4", "2002:c633:6407::1", "198.51.100.7"},
		// 0a.00.00.01 = 10.0.0.1: bogus on the internet, still one source.
		{"6to4 of a private IPv4", "2002:a00:1::1", "10.0.0.1"},
		{"6to4 of 0.0.0.0", "2002::", "0.0.0.0"},
		{"6to4 of 127.0.0.1", "2002:7f00:1::1", "127.0.0.1"},
		{"6to4, all ones", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "255.255.255.255"},
		// netip keeps a zone on any IPv6 address; it plays no part.
		{"6to4 with a zone", "2002:c000:204::1%eth0", "192.0.2.4"},

		// Teredo, RFC 4380 section 4: 2001:0000:SERVER:FLAGS:PORT:CLIENT,
		// with PORT and CLIENT inverted. The RFC's example,
		// 2001:0000:4136:e378:8000:63bf:3fff:fdd2: server 41.36.e3.78 =
		// 65.54.227.120, flags 8000 (cone NAT), port 63bf^ffff = 9c40 =
		// 40000, client 3f.ff.fd.d2 ^ ff.ff.ff.ff = c0.00.02.2d = 192.0.2.45.
		{"Teredo, RFC 4380 example", "2001:0000:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"},
		// Server 198.51.100.1 = c6.33.64.01, no flags, port 0; client
		// 203.0.113.7 = cb.00.71.07, inverted 34.ff.8e.f8.
		{"Teredo, other server and client", "2001:0:c633:6401::34ff:8ef8", "203.0.113.7"},
		// Same client behind another server, flags and port: same IPv4.
		{"Teredo, RFC client via another server", "2001:0:cb00:7101:ffff:1234:3fff:fdd2", "192.0.2.45"},
		// An all-zero client field inverts to all ones, and back.
		{"Teredo, zero client field", "2001::", "255.255.255.255"},
		{"Teredo, all-ones client field", "2001::ffff:ffff", "0.0.0.0"},
		{"Teredo, last server address", "2001:0:ffff:ffff::3fff:fdd2", "192.0.2.45"},
		{"Teredo with a zone", "2001:0:4136:e378:8000:63bf:3fff:fdd2%1", "192.0.2.45"},

		{"IPv4", "192.0.2.4", ""},
		{"IPv4-mapped (Prefix unmaps it instead)", "::ffff:192.0.2.4", ""},
		{"IPv4-mapped 6to4-looking bits", "::ffff:32.2.192.0", ""},
		{"IPv4-compatible, deprecated", "::c000:204", ""},
		{"unspecified", "::", ""},
		{"loopback", "::1", ""},
		{"native IPv6", "2001:db8::1", ""},
		{"just before 6to4", "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"just after 6to4", "2003::c000:204", ""},
		{"6to4 digits in the wrong group", "2102::1", ""},
		{"just after Teredo (2001:1::/32)", "2001:1::3fff:fdd2", ""},
		{"PCP anycast 2001:1::1", "2001:1::1", ""},
		{"benchmarking 2001:2::/48", "2001:2::3fff:fdd2", ""},
		{"ORCHID 2001:10::/28", "2001:10::c000:204", ""},
		{"ORCHIDv2 2001:20::/28", "2001:20::c000:204", ""},
		{"NAT64 well-known prefix", "64:ff9b::192.0.2.4", ""},
		{"NAT64 local-use prefix", "64:ff9b:1::c000:204", ""},
		{"ISATAP interface ID", "2001:db8::200:5efe:c000:204", ""},
		{"link-local ISATAP", "fe80::5efe:c000:204", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := netip.MustParseAddr(tt.in)
			got, ok := spraydetect.EmbeddedIPv4(a)
			if tt.want == "" {
				if ok || got != a {
					t.Errorf("EmbeddedIPv4(%v) = %v, %v, want %v, false", a, got, ok, a)
				}
				return
			}
			if want := netip.MustParseAddr(tt.want); !ok || got != want {
				t.Errorf("EmbeddedIPv4(%v) = %v, %v, want %v, true", a, got, ok, want)
			}
		})
	}
	if got, ok := spraydetect.EmbeddedIPv4(netip.Addr{}); ok || got.IsValid() {
		t.Errorf("EmbeddedIPv4(zero Addr) = %v, %v, want the zero Addr, false", got, ok)
	}
}

// sixToFour returns a random 6to4 address of v4's /48.
func sixToFour(r *rand.Rand, v4 netip.Addr) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	binary.BigEndian.PutUint64(b[:8], r.Uint64())
	b[0], b[1] = 0x20, 0x02
	copy(b[2:6], v4.AsSlice())
	return netip.AddrFrom16(b)
}

// teredo returns a Teredo address for client v4 with a random server, flags
// and port.
func teredo(r *rand.Rand, v4 netip.Addr) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], r.Uint64())
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	b[0], b[1], b[2], b[3] = 0x20, 0x01, 0, 0
	for i, c := range v4.As4() {
		b[12+i] = ^c
	}
	return netip.AddrFrom16(b)
}

// TestGrouping_6to4CountsAsItsIPv4: the holder of one IPv4 address owns the
// 2^80 addresses (2^16 /64s) of its 6to4 /48; rotating through them must not
// make it more than one client, whatever IPv6Bits is.
func TestGrouping_6to4CountsAsItsIPv4(t *testing.T) {
	testEmbeddedRotation(t, sixToFour)
}

// TestGrouping_TeredoCountsAsItsIPv4: a Teredo client can write any server
// address, flags and port into its address; all of them are its one IPv4
// address.
func TestGrouping_TeredoCountsAsItsIPv4(t *testing.T) {
	testEmbeddedRotation(t, teredo)
}

func testEmbeddedRotation(t *testing.T, embed func(*rand.Rand, netip.Addr) netip.Addr) {
	t.Helper()
	r := rand.New(rand.NewPCG(4380, 3056))
	for _, v4 := range []string{"192.0.2.4", "10.0.0.1", "0.0.0.0", "255.255.255.255"} {
		v4 := netip.MustParseAddr(v4)
		for _, bits := range []int{0, 16, 32, 48, 56, 64, 128} {
			g := spraydetect.Grouping{IPv6Bits: bits}
			want := g.Prefix(v4)
			if want != netip.PrefixFrom(v4, 32) {
				t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want %v/32", bits, v4, want, v4)
			}
			seen := map[netip.Prefix]bool{}
			for range 1000 {
				a := embed(r, v4)
				got := g.Prefix(a)
				seen[got] = true
				if got != want {
					t.Errorf("Grouping{%d}.Prefix(%v) = %v, want %v, the prefix of %v", bits, a, got, want, v4)
					break
				}
			}
			if len(seen) != 1 {
				t.Errorf("Grouping{%d}: 1000 addresses embedding %v gave %d prefixes, want 1", bits, v4, len(seen))
			}
		}
	}
}

// TestGrouping_TeredoClientsOfOneServerAreApart: the /64 of a Teredo address
// is 2001:0:SERVER, shared by every client of a Teredo server; one abusive
// client must not spend the budget of all of them.
func TestGrouping_TeredoClientsOfOneServerAreApart(t *testing.T) {
	g := spraydetect.Grouping{}
	a := netip.MustParseAddr("2001:0:4136:e378:8000:63bf:3fff:fdd2") // client 192.0.2.45
	b := netip.MustParseAddr("2001:0:4136:e378:8000:63bf:3fff:fdd1") // client 192.0.2.46
	if pa, pb := g.Prefix(a), g.Prefix(b); pa == pb {
		t.Errorf("Prefix(%v) = Prefix(%v) = %v, want the two clients apart", a, b, pa)
	}
}

// TestAllowList_6to4DoesNotInheritIPv4Pass: an allow-listed IPv4 office must
// not cover the 6to4 or Teredo forms of its address. Anyone who can send from
// 2002::/16 or 2001::/32 can write any IPv4 address into them, so they prove
// nothing; Grouping may count them as the IPv4 address, AllowList must not
// trust them as it.
func TestAllowList_6to4DoesNotInheritIPv4Pass(t *testing.T) {
	l, err := spraydetect.ParseAllowList([]string{"192.0.2.4", "198.51.100.0/24", "2002:cb00:7107::/48"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"the office itself", "192.0.2.4", true},
		{"the office, IPv4-mapped", "::ffff:192.0.2.4", true},
		{"6to4 of the office", "2002:c000:204::1", false},
		{"6to4 of the office, other /64", "2002:c000:204:beef::1", false},
		{"Teredo of the office", "2001:0:4136:e378:8000:63bf:3fff:fdfb", false},
		{"office range", "198.51.100.7", true},
		{"6to4 of an address in the office range", "2002:c633:6407::1", false},
		{"Teredo of an address in the office range", "2001:0:4136:e378::39cc:9bf8", false},
		// Trusting a 6to4 site takes an explicit entry; it does not cover
		// the IPv4 address either.
		{"explicitly listed 6to4 /48", "2002:cb00:7107:1::1", true},
		{"the IPv4 of the listed 6to4 /48", "203.0.113.7", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := spraydetect.ParseIP(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Contains(a); got != tt.want {
				t.Errorf("Contains(%v) = %v, want %v", a, got, tt.want)
			}
		})
	}
	// Counting still merges them: the 6to4 form spends the office's budget.
	g := spraydetect.Grouping{}
	office, sixToFour := netip.MustParseAddr("192.0.2.4"), netip.MustParseAddr("2002:c000:204::1")
	if g.Prefix(sixToFour) != g.Prefix(office) {
		t.Errorf("Prefix(%v) = %v, want Prefix(%v) = %v", sixToFour, g.Prefix(sixToFour), office, g.Prefix(office))
	}
}

func TestWidePrefix(t *testing.T) {
	tests := []struct {
		name string
		in   string
		bits int
		want string // "" when WidePrefix must report false
	}{
		{"/48", "2001:db8:7:1ff:1:2:3:4", 48, "2001:db8:7::/48"},
		{"/56", "2001:db8:7:1ff:1:2:3:4", 56, "2001:db8:7:100::/56"},
		{"/64", "2001:db8:7:1ff:1:2:3:4", 64, "2001:db8:7:1ff::/64"},
		{"/16, the shortest", "2001:db8:7:1ff:1:2:3:4", 16, "2001::/16"},
		{"/128, the longest", "2001:db8:7:1ff:1:2:3:4", 128, "2001:db8:7:1ff:1:2:3:4/128"},
		{"zone is dropped", "fe80::1%eth0", 48, "fe80::/48"},
		{"NAT64 is native IPv6 here", "64:ff9b::192.0.2.4", 48, "64:ff9b::/48"},
		{"IPv4-compatible is native IPv6 here", "::192.0.2.4", 48, "::/48"},
		{"just outside Teredo", "2001:1::1", 48, "2001:1::/48"},
		{"just outside 6to4", "2003::1", 16, "2003::/16"},
		{"IPv4", "192.0.2.4", 48, ""},
		{"IPv4, bits 32", "192.0.2.4", 32, ""},
		{"IPv4-mapped", "::ffff:192.0.2.4", 48, ""},
		{"IPv4-mapped, bits 96", "::ffff:192.0.2.4", 96, ""},
		{"6to4", "2002:c000:204::1", 48, ""},
		{"6to4, bits 16", "2002:c000:204::1", 16, ""},
		{"Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2", 48, ""},
		{"Teredo, bits 32", "2001:0:4136:e378:8000:63bf:3fff:fdd2", 32, ""},
		{"bits 15", "2001:db8::1", 15, ""},
		{"bits 129", "2001:db8::1", 129, ""},
		{"bits 0", "2001:db8::1", 0, ""},
		{"bits -48", "2001:db8::1", -48, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := netip.MustParseAddr(tt.in)
			got, ok := spraydetect.WidePrefix(a, tt.bits)
			if tt.want == "" {
				if ok || got.IsValid() {
					t.Errorf("WidePrefix(%v, %d) = %v, %v, want the zero Prefix, false", a, tt.bits, got, ok)
				}
				return
			}
			if want := netip.MustParsePrefix(tt.want); !ok || got != want {
				t.Errorf("WidePrefix(%v, %d) = %v, %v, want %v, true", a, tt.bits, got, ok, want)
			}
		})
	}
	if got, ok := spraydetect.WidePrefix(netip.Addr{}, 48); ok || got.IsValid() {
		t.Errorf("WidePrefix(zero Addr, 48) = %v, %v, want the zero Prefix, false", got, ok)
	}
}

// TestWidePrefix_Slash64RotationWithinSlash48: a customer spraying from
// random /64s of its /48 is a new client at every /64, but one /48 and
// at most 256 /56s.
func TestWidePrefix_Slash64RotationWithinSlash48(t *testing.T) {
	r := rand.New(rand.NewPCG(48, 56))
	slash48 := netip.MustParsePrefix("2001:db8:7::/48")
	g := spraydetect.Grouping{}
	clients := map[netip.Prefix]bool{}
	wantSlash56s := map[netip.Prefix]bool{}
	gotSlash56s := map[netip.Prefix]bool{}
	const n = 2000
	for range n {
		b := slash48.Addr().As16()
		binary.BigEndian.PutUint16(b[6:8], uint16(r.Uint32())) // subnet ID: which /64
		binary.BigEndian.PutUint64(b[8:], r.Uint64())          // interface ID
		a := netip.AddrFrom16(b)
		clients[g.Prefix(a)] = true

		if p, ok := spraydetect.WidePrefix(a, 48); !ok || p != slash48 {
			t.Fatalf("WidePrefix(%v, 48) = %v, %v, want %v, true", a, p, ok, slash48)
		}
		// The /56 by hand: keep bytes 0-6 (the /48 and the first byte of
		// the subnet ID), zero the rest.
		var w [16]byte
		copy(w[:7], b[:7])
		want := netip.PrefixFrom(netip.AddrFrom16(w), 56)
		p, ok := spraydetect.WidePrefix(a, 56)
		if !ok || p != want {
			t.Fatalf("WidePrefix(%v, 56) = %v, %v, want %v, true", a, p, ok, want)
		}
		wantSlash56s[want] = true
		gotSlash56s[p] = true
	}
	if len(clients) < n*9/10 {
		t.Fatalf("%d random /64s gave only %d per-client prefixes; the test no longer shows the rotation", n, len(clients))
	}
	if len(gotSlash56s) != len(wantSlash56s) || len(gotSlash56s) > 256 {
		t.Errorf("%d random /64s of one /48 gave %d /56s, want %d (at most 256)", n, len(gotSlash56s), len(wantSlash56s))
	}
}

// FuzzGrouping checks Prefix, EmbeddedIPv4 and WidePrefix on any IPv6
// address (hi and lo are its two halves; FuzzParseIP covers IPv4) and any
// prefix lengths.
func FuzzGrouping(f *testing.F) {
	for _, s := range []string{
		"2001:db8:7:1ff::1", "2002:c000:204::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
		"2001:1::1", "2003::1", "::ffff:192.0.2.4", "::192.0.2.4", "64:ff9b::192.0.2.4", "::", "2002::", "2001::",
	} {
		b := netip.MustParseAddr(s).As16()
		f.Add(binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]), 64, 48)
	}
	f.Add(uint64(0x2002ffffffffffff), ^uint64(0), 0, 16)
	f.Add(uint64(0x20010000ffffffff), ^uint64(0), 128, 128)
	f.Add(uint64(0x2001000000000000), uint64(0), 16, 15)
	f.Add(uint64(0x2001000100000000), uint64(0), 17, 129)
	sixToFour, teredo := netip.MustParsePrefix("2002::/16"), netip.MustParsePrefix("2001::/32")
	f.Fuzz(func(t *testing.T, hi, lo uint64, ipv6Bits, wideBits int) {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], hi)
		binary.BigEndian.PutUint64(b[8:], lo)
		a := netip.AddrFrom16(b)
		if ipv6Bits != 0 {
			ipv6Bits = 16 + (ipv6Bits%113+113)%113 // a valid IPv6Bits, 16..128
		}
		g := spraydetect.Grouping{IPv6Bits: ipv6Bits}
		if err := g.Validate(); err != nil {
			t.Fatalf("Grouping{%d}.Validate() = %v", ipv6Bits, err)
		}

		v4, embeds := spraydetect.EmbeddedIPv4(a)
		if want := sixToFour.Contains(a) || teredo.Contains(a); embeds != want {
			t.Fatalf("EmbeddedIPv4(%v) reports %v, want %v", a, embeds, want)
		}
		p := g.Prefix(a)
		if !p.IsValid() || p != p.Masked() {
			t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want a valid masked prefix", ipv6Bits, a, p)
		}
		switch {
		case embeds:
			// The embedded IPv4 is the one the address routes back to.
			if !v4.Is4() {
				t.Fatalf("EmbeddedIPv4(%v) = %v, not IPv4", a, v4)
			}
			if sixToFour.Contains(a) {
				if w := v4.As4(); !netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x02, w[0], w[1], w[2], w[3]}), 48).Contains(a) {
					t.Fatalf("EmbeddedIPv4(%v) = %v, but %v is not in its 6to4 /48", a, v4, a)
				}
			} else if w := v4.As4(); [4]byte{^b[12], ^b[13], ^b[14], ^b[15]} != w {
				t.Fatalf("EmbeddedIPv4(%v) = %v, not the inverted last 32 bits", a, v4)
			}
			if want := netip.PrefixFrom(v4, 32); p != want || p != g.Prefix(v4) {
				t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want %v, the prefix of %v", ipv6Bits, a, p, want, v4)
			}
			// Counting merges, trust does not: listing the IPv4 address does
			// not allow the address that embeds it.
			l, err := spraydetect.ParseAllowList([]string{v4.String()})
			if err != nil {
				t.Fatal(err)
			}
			if l.Contains(a) {
				t.Fatalf("an allow list of %v contains %v", v4, a)
			}
		case a.Is4In6():
			if want := netip.PrefixFrom(a.Unmap(), 32); p != want {
				t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want %v", ipv6Bits, a, p, want)
			}
		default:
			wantBits := ipv6Bits
			if wantBits == 0 {
				wantBits = 64
			}
			if !p.Contains(a) || p.Bits() != wantBits {
				t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want the /%d containing it", ipv6Bits, a, p, wantBits)
			}
		}

		w, ok := spraydetect.WidePrefix(a, wideBits)
		native := !embeds && !a.Is4In6()
		if want := native && wideBits >= 16 && wideBits <= 128; ok != want {
			t.Fatalf("WidePrefix(%v, %d) reports %v, want %v", a, wideBits, ok, want)
		}
		if !ok {
			if w.IsValid() {
				t.Fatalf("WidePrefix(%v, %d) = %v with false, want the zero Prefix", a, wideBits, w)
			}
			return
		}
		if !w.Contains(a) || w.Bits() != wideBits || w != w.Masked() {
			t.Fatalf("WidePrefix(%v, %d) = %v, want the masked /%d containing it", a, wideBits, w, wideBits)
		}
		// An aggregate no longer than the client prefix covers all of it.
		if wideBits <= p.Bits() && (!w.Contains(p.Addr()) || w.Bits() > p.Bits()) {
			t.Fatalf("WidePrefix(%v, %d) = %v does not cover Prefix = %v", a, wideBits, w, p)
		}
	})
}
