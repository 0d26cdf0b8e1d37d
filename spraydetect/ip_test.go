package spraydetect_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

func TestParseIP(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" when ParseIP must fail
	}{
		{"IPv4", "203.0.113.7", "203.0.113.7"},
		{"IPv4 zero", "0.0.0.0", "0.0.0.0"},
		{"IPv4 broadcast", "255.255.255.255", "255.255.255.255"},
		{"IPv6", "2001:db8::1", "2001:db8::1"},
		{"IPv6 upper case is canonicalised", "2001:DB8::A", "2001:db8::a"},
		{"IPv6 fully expanded", "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
		{"IPv6 unspecified", "::", "::"},
		{"IPv6 loopback", "::1", "::1"},
		{"IPv4-mapped IPv6 is unmapped", "::ffff:192.0.2.1", "192.0.2.1"},
		{"IPv4-mapped in hex is unmapped", "::ffff:c000:201", "192.0.2.1"},
		{"IPv4-mapped expanded is unmapped", "0:0:0:0:0:ffff:192.0.2.1", "192.0.2.1"},
		{"IPv4-compatible (deprecated) stays IPv6", "::192.0.2.1", "::c000:201"},
		{"longest form, 45 characters", "0000:0000:0000:0000:0000:ffff:192.168.100.200", "192.168.100.200"},
		{"zone", "fe80::1%eth0", ""},
		{"zone with a number", "fe80::1%1", ""},
		{"empty zone", "fe80::1%", ""},
		{"IPv4 CIDR", "192.0.2.0/24", ""},
		{"IPv4 /32", "192.0.2.1/32", ""},
		{"IPv6 CIDR", "2001:db8::/64", ""},
		{"IPv4 with port", "1.2.3.4:80", ""},
		{"IPv6 with port", "[::1]:80", ""},
		{"IPv6 in brackets", "[::1]", ""},
		{"empty", "", ""},
		{"space", " ", ""},
		{"leading space", " 1.2.3.4", ""},
		{"trailing space", "1.2.3.4 ", ""},
		{"trailing newline", "1.2.3.4\n", ""},
		{"NUL byte", "1.2.3.4\x00", ""},
		{"over-long", strings.Repeat("1", spraydetect.MaxIPLength+1), ""},
		{"over-long but valid prefix", "1.2.3.4" + strings.Repeat(" ", 100), ""},
		{"garbage", "not an ip", ""},
		{"host name", "localhost", ""},
		{"three octets", "1.2.3", ""},
		{"five octets", "1.2.3.4.5", ""},
		{"trailing dot", "1.2.3.4.", ""},
		{"octet over 255", "1.2.3.256", ""},
		{"negative octet", "1.2.3.-4", ""},
		{"leading zero (netip rejects it: octal or decimal?)", "01.2.3.4", ""},
		{"leading zero in the last octet", "1.2.3.04", ""},
		{"hex IPv4", "0x01020304", ""},
		{"single integer", "16909060", ""},
		{"IPv6 with two ::", "2001::db8::1", ""},
		{"IPv6 group too long", "2001:db8::12345", ""},
		{"IPv6 too many groups", "1:2:3:4:5:6:7:8:9", ""},
		{"IPv4-mapped with leading zero", "::ffff:192.0.2.01", ""},
		{"IPv4-mapped with zone", "::ffff:192.0.2.1%eth0", ""},
		{"unicode digits", "１.２.３.４", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := spraydetect.ParseIP(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ParseIP(%q) = %v, want an error", tt.in, got)
				}
				if !errors.Is(err, spraydetect.ErrInvalidIP) {
					t.Errorf("ParseIP(%q) error = %v, want ErrInvalidIP", tt.in, err)
				}
				if got.IsValid() {
					t.Errorf("ParseIP(%q) = %v with an error, want the zero Addr", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseIP(%q) = %v, want %s", tt.in, err, tt.want)
			}
			if got.String() != tt.want {
				t.Errorf("ParseIP(%q) = %v, want %s", tt.in, got, tt.want)
			}
			if got.Is4In6() {
				t.Errorf("ParseIP(%q) = %v is IPv4-mapped", tt.in, got)
			}
		})
	}
}

// TestParseIP_OneClientOneForm stops an attacker from doubling their budget by
// sending one address in two spellings.
func TestParseIP_OneClientOneForm(t *testing.T) {
	forms := []string{"192.0.2.1", "::ffff:192.0.2.1", "::FFFF:192.0.2.1", "::ffff:c000:0201", "0:0:0:0:0:ffff:c000:201"}
	g := spraydetect.Grouping{IPv6Bits: 64}
	want := netip.MustParsePrefix("192.0.2.1/32")
	for _, s := range forms {
		a, err := spraydetect.ParseIP(s)
		if err != nil {
			t.Fatalf("ParseIP(%q) = %v", s, err)
		}
		if got := g.Prefix(a); got != want {
			t.Errorf("Prefix(ParseIP(%q)) = %v, want %v", s, got, want)
		}
	}
}

func FuzzParseIP(f *testing.F) {
	for _, s := range []string{
		"203.0.113.7", "2001:db8::1", "::ffff:192.0.2.1", "fe80::1%eth0", "1.2.3.4:80",
		"[::1]:80", "10.0.0.0/8", "01.2.3.4", "", " ", "::", "::192.0.2.1",
		"0000:0000:0000:0000:0000:ffff:192.168.100.200",
		"2002:c000:204::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2002::", "2001::",
		"2001:1::1", "64:ff9b::192.0.2.1", "2001:10::1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := spraydetect.ParseIP(s)
		if err != nil {
			if !errors.Is(err, spraydetect.ErrInvalidIP) {
				t.Fatalf("ParseIP(%q) error = %v, want ErrInvalidIP", s, err)
			}
			if a.IsValid() {
				t.Fatalf("ParseIP(%q) = %v and an error", s, a)
			}
			return
		}
		switch {
		case !a.IsValid():
			t.Fatalf("ParseIP(%q) = invalid Addr without an error", s)
		case a.Zone() != "":
			t.Fatalf("ParseIP(%q) = %v has zone %q", s, a, a.Zone())
		case a.Is4In6():
			t.Fatalf("ParseIP(%q) = %v is IPv4-mapped", s, a)
		case len(s) > spraydetect.MaxIPLength:
			t.Fatalf("ParseIP accepted %d characters, over MaxIPLength", len(s))
		}
		b, err := spraydetect.ParseIP(a.String())
		if err != nil || b != a {
			t.Fatalf("ParseIP(%q) = %v, but ParseIP(%q) = %v, %v", s, a, a.String(), b, err)
		}
		// Its prefix is well formed and contains it, or the IPv4 address it
		// embeds.
		for _, bits := range []int{0, 16, 48, 64, 128} {
			p := spraydetect.Grouping{IPv6Bits: bits}.Prefix(a)
			if !p.IsValid() || p != p.Masked() {
				t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want a valid masked prefix", bits, a, p)
			}
			if v4, ok := spraydetect.EmbeddedIPv4(a); ok {
				if !v4.Is4() || p != netip.PrefixFrom(v4, 32) {
					t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want the /32 of its embedded %v", bits, a, p, v4)
				}
			} else if !p.Contains(a) {
				t.Fatalf("Grouping{%d}.Prefix(%v) = %v, want a prefix containing it", bits, a, p)
			}
		}
		// A wide prefix, when there is one, contains it.
		for _, bits := range []int{15, 16, 48, 56, 64, 128, 129} {
			w, ok := spraydetect.WidePrefix(a, bits)
			switch {
			case !ok:
			case !a.Is6():
				t.Fatalf("WidePrefix(%v, %d) = %v, true for IPv4", a, bits, w)
			case !w.Contains(a) || w.Bits() != bits || w != w.Masked():
				t.Fatalf("WidePrefix(%v, %d) = %v, want the masked /%d containing it", a, bits, w, bits)
			}
		}
	})
}

func TestGrouping_Prefix(t *testing.T) {
	tests := []struct {
		name string
		bits int
		in   string
		want string
	}{
		{"IPv4 is a /32", 64, "203.0.113.7", "203.0.113.7/32"},
		{"IPv4 ignores IPv6Bits", 48, "203.0.113.7", "203.0.113.7/32"},
		{"IPv4-mapped given directly is a /32", 64, "::ffff:203.0.113.7", "203.0.113.7/32"},
		{"IPv6 default /64", 0, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"IPv6 /64", 64, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"IPv6 /56", 56, "2001:db8:1:2ff:3:4:5:6", "2001:db8:1:200::/56"},
		{"IPv6 /48", 48, "2001:db8:1:2:3:4:5:6", "2001:db8:1::/48"},
		{"IPv6 /128", 128, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6/128"},
		{"IPv6 /16", 16, "2001:db8:1:2:3:4:5:6", "2001::/16"},
		{"IPv6 with zone drops it", 64, "fe80::1%eth0", "fe80::/64"},
		{"6to4 is its IPv4's /32", 64, "2002:c000:204:1:2:3:4:5", "192.0.2.4/32"},
		{"6to4 ignores IPv6Bits", 16, "2002:c000:204:1:2:3:4:5", "192.0.2.4/32"},
		{"6to4 of a private IPv4 is that IPv4", 64, "2002:a00:1::1", "10.0.0.1/32"},
		{"Teredo is its client's /32", 64, "2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45/32"},
		{"Teredo ignores IPv6Bits", 128, "2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45/32"},
		{"2001:db8::/32 is not Teredo", 64, "2001:db8::3fff:fdd2", "2001:db8::/64"},
		{"NAT64 stays IPv6", 64, "64:ff9b::192.0.2.4", "64:ff9b::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := spraydetect.Grouping{IPv6Bits: tt.bits}
			a := netip.MustParseAddr(tt.in)
			if got := g.Prefix(a); got.String() != tt.want {
				t.Errorf("Grouping{%d}.Prefix(%v) = %v, want %s", tt.bits, a, got, tt.want)
			}
		})
	}
}

// TestSpray_IPv6RotationWithinSlash64: one customer rotating through the
// addresses of their /64 is one client; the neighbouring /64 is another.
func TestSpray_IPv6RotationWithinSlash64(t *testing.T) {
	tests := []struct {
		name      string
		bits      int
		a, b      string
		wantGroup bool
	}{
		{"same /64, far apart", 64, "2001:db8:0:1::1", "2001:db8:0:1:ffff:ffff:ffff:ffff", true},
		{"same /64, random interface IDs", 64, "2001:db8:0:1:1a2b:3c4d:5e6f:7081", "2001:db8:0:1:9abc:def0:1234:5678", true},
		{"neighbouring /64s", 64, "2001:db8:0:1::1", "2001:db8:0:2::1", false},
		{"default is /64: neighbours differ", 0, "2001:db8:0:1::1", "2001:db8:0:2::1", false},
		{"default is /64: same /64 groups", 0, "2001:db8:0:1::1", "2001:db8:0:1::2", true},
		{"/56 groups two /64s of one customer", 56, "2001:db8:0:1::1", "2001:db8:0:2::1", true},
		{"/56 separates neighbouring /56s", 56, "2001:db8:0:1ff::1", "2001:db8:0:200::1", false},
		{"/48 groups across /56s", 48, "2001:db8:7:1ff::1", "2001:db8:7:ff00::1", true},
		{"/48 separates neighbouring /48s", 48, "2001:db8:7::1", "2001:db8:8::1", false},
		{"IPv4 neighbours are never grouped", 48, "192.0.2.1", "192.0.2.2", false},
		{"IPv4 never groups with IPv6", 16, "192.0.2.1", "::c000:201", false},
		{"IPv4-mapped groups with its IPv4", 64, "192.0.2.1", "::ffff:c000:201", true},
		{"6to4 groups with its IPv4", 64, "192.0.2.4", "2002:c000:204:beef::1", true},
		{"6to4 /64s of one /48 group", 64, "2002:c000:204:1::1", "2002:c000:204:2::1", true},
		{"6to4 of neighbouring IPv4s are apart", 16, "2002:c000:204::1", "2002:c000:205::1", false},
		{"Teredo groups with its client's IPv4", 64, "192.0.2.45", "2001:0:4136:e378:8000:63bf:3fff:fdd2", true},
		{"Teredo via two servers groups", 64, "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:c633:6401::3fff:fdd2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := spraydetect.Grouping{IPv6Bits: tt.bits}
			pa, pb := g.Prefix(netip.MustParseAddr(tt.a)), g.Prefix(netip.MustParseAddr(tt.b))
			if got := pa == pb; got != tt.wantGroup {
				t.Errorf("Grouping{%d}: Prefix(%s) = %v, Prefix(%s) = %v; same group = %v, want %v", tt.bits, tt.a, pa, tt.b, pb, got, tt.wantGroup)
			}
		})
	}
}

func TestGrouping_Validate(t *testing.T) {
	tests := []struct {
		bits    int
		wantErr bool
	}{
		{16, false},
		{48, false},
		{56, false},
		{64, false},
		{128, false},
		{15, true},
		{129, true},
		{-64, true},
	}
	for _, tt := range tests {
		err := spraydetect.Grouping{IPv6Bits: tt.bits}.Validate()
		if got := err != nil; got != tt.wantErr {
			t.Errorf("Grouping{%d}.Validate() = %v, want error %v", tt.bits, err, tt.wantErr)
		}
	}
}

// TestGrouping_ZeroMeansDefault: the field documents a default of 64 and
// Prefix treats 0 as 64, so Validate must accept the zero Grouping.
func TestGrouping_ZeroMeansDefault(t *testing.T) {
	if err := (spraydetect.Grouping{}).Validate(); err != nil {
		t.Errorf("Grouping{}.Validate() = %v, want nil (0 means the default, 64)", err)
	}
}

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		wantErr bool
		in, out []string // addresses Contains must accept, and reject
	}{
		{name: "empty list", entries: nil, out: []string{"10.0.0.1", "::1"}},
		{name: "IPv4 CIDR", entries: []string{"10.0.0.0/8"}, in: []string{"10.0.0.0", "10.255.255.255", "::ffff:10.1.2.3"}, out: []string{"11.0.0.0", "9.255.255.255"}},
		{name: "CIDR with host bits is masked", entries: []string{"192.0.2.77/24"}, in: []string{"192.0.2.0", "192.0.2.255"}, out: []string{"192.0.3.0"}},
		{name: "single IPv4", entries: []string{"203.0.113.7"}, in: []string{"203.0.113.7", "::ffff:203.0.113.7"}, out: []string{"203.0.113.8", "203.0.113.6"}},
		{name: "single IPv6", entries: []string{"2001:db8::7"}, in: []string{"2001:db8::7"}, out: []string{"2001:db8::8"}},
		{name: "IPv6 CIDR", entries: []string{"2001:db8:1::/48"}, in: []string{"2001:db8:1:ffff::1"}, out: []string{"2001:db8:2::1"}},
		{name: "IPv4-mapped single address", entries: []string{"::ffff:198.51.100.9"}, in: []string{"198.51.100.9"}, out: []string{"198.51.100.10"}},
		{name: "IPv4-mapped CIDR", entries: []string{"::ffff:198.51.100.0/120"}, in: []string{"198.51.100.200"}, out: []string{"198.51.101.0"}},
		{name: "whitespace is trimmed", entries: []string{"  10.0.0.0/8 ", "\t192.0.2.1\n"}, in: []string{"10.1.1.1", "192.0.2.1"}, out: []string{"192.0.2.2"}},
		{name: "several entries", entries: []string{"10.0.0.0/8", "2001:db8::/32", "203.0.113.7"}, in: []string{"10.9.9.9", "2001:db8:ffff::1", "203.0.113.7"}, out: []string{"172.16.0.1", "2001:db9::1"}},
		{name: "IPv4 range does not cover IPv6", entries: []string{"0.0.0.0/0"}, in: []string{"1.2.3.4"}, out: []string{"2001:db8::1"}},
		{name: "garbage", entries: []string{"office"}, wantErr: true},
		{name: "garbage after good entries", entries: []string{"10.0.0.0/8", "nope"}, wantErr: true},
		{name: "empty entry", entries: []string{""}, wantErr: true},
		{name: "bad prefix length", entries: []string{"10.0.0.0/33"}, wantErr: true},
		{name: "bad IPv6 prefix length", entries: []string{"2001:db8::/129"}, wantErr: true},
		{name: "missing prefix length", entries: []string{"10.0.0.0/"}, wantErr: true},
		{name: "zone", entries: []string{"fe80::1%eth0"}, wantErr: true},
		{name: "zone in CIDR", entries: []string{"fe80::%eth0/64"}, wantErr: true},
		{name: "port", entries: []string{"10.0.0.1:443"}, wantErr: true},
		{name: "range syntax", entries: []string{"10.0.0.1-10.0.0.9"}, wantErr: true},
		{name: "IPv4-mapped CIDR shorter than /96", entries: []string{"::ffff:0.0.0.0/95"}, wantErr: true},
		{name: "leading zero", entries: []string{"010.0.0.0/8"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := spraydetect.ParseAllowList(tt.entries)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseAllowList(%q) = %v ranges, want an error", tt.entries, l.Len())
				}
				if !strings.HasPrefix(err.Error(), "spraydetect: ") {
					t.Errorf("ParseAllowList(%q) error %q lacks the package prefix", tt.entries, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAllowList(%q) = %v", tt.entries, err)
			}
			if got, want := l.Len(), len(tt.entries); got != want {
				t.Errorf("ParseAllowList(%q).Len() = %d, want %d", tt.entries, got, want)
			}
			for _, s := range tt.in {
				if a := netip.MustParseAddr(s); !l.Contains(a) {
					t.Errorf("ParseAllowList(%q).Contains(%v) = false, want true", tt.entries, a)
				}
			}
			for _, s := range tt.out {
				if a := netip.MustParseAddr(s); l.Contains(a) {
					t.Errorf("ParseAllowList(%q).Contains(%v) = true, want false", tt.entries, a)
				}
			}
		})
	}
	if (spraydetect.AllowList{}).Contains(netip.Addr{}) {
		t.Errorf("the empty AllowList contains the zero Addr")
	}
}
