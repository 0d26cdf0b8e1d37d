package authguard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"sync"
)

// hashBytes is how much of an HMAC-SHA-256 a subject hash keeps: 128 bits,
// far beyond any collision an attacker could aim at without the key.
const hashBytes = 16

// hashLen is the length of an encoded subject hash.
var hashLen = base64.RawURLEncoding.EncodedLen(hashBytes)

// macPool computes HMAC-SHA-256 under one key with pooled hashers (an HMAC
// costs several allocations to set up) and pooled input buffers.
type macPool struct {
	sync.Pool
}

// pooledMAC is an HMAC and the buffer its input and output go through, so
// that a sum allocates nothing.
type pooledMAC struct {
	mac hash.Hash
	buf []byte
}

func newMacPool(key []byte) *macPool {
	p := &macPool{}
	p.New = func() any { return &pooledMAC{mac: hmac.New(sha256.New, key), buf: make([]byte, 0, 256)} }
	return p
}

// sum returns HMAC(first ‖ 0 ‖ parts[0] ‖ 0 ‖ parts[1] ‖ …).
func (p *macPool) sum(first []byte, parts ...string) [sha256.Size]byte {
	m := p.Get().(*pooledMAC)
	b := append(m.buf[:0], first...)
	for _, part := range parts {
		b = append(b, 0)
		b = append(b, part...)
	}
	m.mac.Reset()
	m.mac.Write(b)
	b = m.mac.Sum(b[:0])
	var out [sha256.Size]byte
	copy(out[:], b)
	if cap(b) <= 4096 { // keep the buffer unless an odd input grew it large
		m.buf = b
	}
	p.Put(m)
	return out
}

// hasher computes keyed subject hashes. The key is derived from the
// service's secret, so a dump of the store reveals no identifier.
type hasher struct {
	mac *macPool
}

func newHasher(key []byte) *hasher { return &hasher{mac: newMacPool(key)} }

// subject hashes one subject of a kind ("account", "ip", "fp", "device") for a
// tenant. The encoded result has a fixed length whatever the input.
func (h *hasher) subject(tenant, kind, value string) string {
	sum := h.mac.sum([]byte(tenant), kind, value)
	var b [24]byte // hashLen (22) fits: one allocation, the string
	return string(base64.RawURLEncoding.AppendEncode(b[:0], sum[:hashBytes]))
}

// storeKey builds <prefix>:<tenant>:<flow>:<signal>:<hash>; the prefix is
// "tg" unless configured.
func storeKey(prefix, tenant, flow, signal, hash string) string {
	b := make([]byte, 0, len(prefix)+1+len(tenant)+1+len(flow)+1+len(signal)+1+len(hash))
	b = append(b, prefix...)
	b = append(b, ':')
	b = append(b, tenant...)
	b = append(b, ':')
	b = append(b, flow...)
	b = append(b, ':')
	b = append(b, signal...)
	b = append(b, ':')
	b = append(b, hash...)
	return string(b)
}

// deriveKey derives an independent key for one purpose from the secret.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("tollgate/v1/" + purpose))
	return m.Sum(nil)
}

// randomID returns a fresh unguessable identifier of fixed length.
func randomID() string {
	var b [hashBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
