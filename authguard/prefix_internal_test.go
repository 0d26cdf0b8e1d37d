package authguard

import (
	"net/netip"
	"testing"
)

// TestHasherPrefix_HashesAsTheText: a prefix hashed from its bytes is the
// hash of its text, so that no key changes (and no counter is lost on an
// upgrade).
func TestHasherPrefix_HashesAsTheText(t *testing.T) {
	h := newHasher([]byte("0123456789abcdef0123456789abcdef"))
	tests := []netip.Prefix{
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("203.0.113.7/32"),
		netip.MustParsePrefix("2001:db8:1234:5678::/64"),
		netip.MustParsePrefix("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/128"),
		netip.MustParsePrefix("::ffff:203.0.113.0/120"),
		netip.MustParsePrefix("::/0"),
		{}, // the zero Prefix: "invalid Prefix", as String says
	}
	for _, p := range tests {
		if got, want := h.prefix("acme", p), h.subject("acme", "ip", p.String()); got != want {
			t.Errorf("prefix(%v) = %s, want %s", p, got, want)
		}
	}
}
