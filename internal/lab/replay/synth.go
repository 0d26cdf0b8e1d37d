package replay

import (
	"encoding/hex"
	"net/netip"
)

// synth maps the opaque keys of recorded events to synthetic identifiers
// that the engine can take and hash again, keeping what the rules look at:
// equal keys give equal identifiers, different keys different ones, and
// the IPv6 prefixes nest as the recorded ones did. It keeps one entry per
// distinct address prefix; accounts and fingerprints need none.
//
// A synthetic address is not the recorded one: a candidate policy's
// allow_list names real ranges, and matches synthetic addresses only by
// chance, so replay cannot tell what an allow list would change.
type synth struct {
	// addrs maps an IPKey's P (its /32 or /64) to the address made for it.
	addrs map[string]string
	// v4 is the last IPv4 address made, as a counter.
	v4 uint32
	// n48 counts the /48s made under 3000::/4.
	n48 uint64
	// p48 and p56 map a /48's and a /56's key to the block made for it.
	p48 map[string]*block
	p56 map[string]*block
}

// block is a synthetic IPv6 prefix (a /48 or a /56) and how many of its
// 256 sub-prefixes (/56s or /64s) are taken.
type block struct {
	prefix [16]byte
	used   int
}

func newSynth() *synth {
	return &synth{addrs: map[string]string{}, p48: map[string]*block{}, p56: map[string]*block{}}
}

// account returns the synthetic account of an account key: "h" and the
// key's bytes in lower-case hex, which PRECIS leaves as it is, so that no
// folding can merge two keys. An empty key gives "".
func (s *synth) account(key string) string {
	if key == "" {
		return ""
	}
	b := make([]byte, 1+hex.EncodedLen(len(key)))
	b[0] = 'h'
	hex.Encode(b[1:], []byte(key))
	return string(b)
}

// ip returns the synthetic address of k ("" for an invalid key). IPv4
// keys get 0.0.0.1, 0.0.0.2, ... in the order they are first seen. An IPv6
// key's /48 gets the next /48 of 3000::/4 (clear of 6to4's 2002::/16 and
// Teredo's 2001::/32, which the engine counts as IPv4), its /56 the next of
// that /48's 256 /56s, its /64 the next of that /56's 256 /64s: a real /48
// has exactly 256 /56s and a /56 256 /64s, so no two keys meet. A key
// without its /48 or /56, or one more than a block holds (which recorded
// keys cannot make), gets a fresh block.
func (s *synth) ip(k IPKey) string {
	if !k.Valid() {
		return ""
	}
	if a, ok := s.addrs[k.P]; ok {
		return a
	}
	var a netip.Addr
	if !k.V6 {
		s.v4++
		if s.v4 == 0 { // 2^32 distinct addresses: wrap past 0.0.0.0
			s.v4 = 1
		}
		v := s.v4
		a = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	} else {
		b56 := s.block56(k.P48, k.P56)
		p := b56.prefix
		p[7] = byte(b56.used)
		b56.used++
		p[15] = 1
		a = netip.AddrFrom16(p)
	}
	str := a.String()
	s.addrs[k.P] = str
	return str
}

// block56 returns the /56 of key p56 within the /48 of key p48, making
// them when new.
func (s *synth) block56(p48, p56 string) *block {
	if b, ok := s.p56[p56]; ok && p56 != "" && b.used < 256 {
		return b
	}
	b48, ok := s.p48[p48]
	if !ok || p48 == "" || b48.used >= 256 {
		b48 = s.fresh48()
		if p48 != "" {
			s.p48[p48] = b48
		}
	}
	b := &block{prefix: b48.prefix}
	b.prefix[6] = byte(b48.used)
	b48.used++
	if p56 != "" {
		s.p56[p56] = b
	}
	return b
}

// fresh48 is the next /48 of 3000::/4.
func (s *synth) fresh48() *block {
	n := s.n48 & (1<<44 - 1)
	s.n48++
	var b block
	b.prefix[0] = 0x30 | byte(n>>40)
	b.prefix[1] = byte(n >> 32)
	b.prefix[2] = byte(n >> 24)
	b.prefix[3] = byte(n >> 16)
	b.prefix[4] = byte(n >> 8)
	b.prefix[5] = byte(n)
	return &b
}
