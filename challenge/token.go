package challenge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// token is a challenge as signed: its version, kind, difficulty, expiry
// (Unix milliseconds) and random id. On the wire it is base64url (no
// padding) of those 27 bytes and 16 bytes of HMAC-SHA-256 over them, the
// tenant and the handle: 58 characters.
type token struct {
	kind       Kind
	difficulty uint8
	expires    int64
	id         [16]byte
}

const (
	tokenVersion = 1
	tokenBody    = 1 + 1 + 1 + 8 + 16
	tokenMAC     = 16
	tokenRaw     = tokenBody + tokenMAC
	// TokenLen is the length of every token on the wire.
	TokenLen = (tokenRaw*8 + 5) / 6
)

// body is t's signed bytes.
func (t token) body() [tokenBody]byte {
	var b [tokenBody]byte
	b[0], b[1], b[2] = tokenVersion, byte(t.kind), t.difficulty
	binary.BigEndian.PutUint64(b[3:11], uint64(t.expires))
	copy(b[11:], t.id[:])
	return b
}

// mac is the token's tag: over the body, the tenant and the handle, each
// length-prefixed so that no two pairs give the same input.
func (c *Challenger) mac(body []byte, tenant, handle string) []byte {
	m := hmac.New(sha256.New, c.tokenKey)
	var n [4]byte
	binary.BigEndian.PutUint16(n[:2], uint16(len(tenant)))
	binary.BigEndian.PutUint16(n[2:], uint16(len(handle)))
	m.Write(body)
	m.Write(n[:])
	m.Write([]byte(tenant))
	m.Write([]byte(handle))
	return m.Sum(nil)[:tokenMAC]
}

// sign returns t's wire form for tenant and handle.
func (c *Challenger) sign(t token, tenant, handle string) string {
	b := t.body()
	raw := append(b[:], c.mac(b[:], tenant, handle)...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// parseToken decodes a token's wire form without checking its tag: false
// when it is not one. It is the parser a client's token meets first.
func parseToken(s string) (token, []byte, bool) {
	var t token
	if len(s) != TokenLen {
		return t, nil, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) != tokenRaw || raw[0] != tokenVersion {
		return t, nil, false
	}
	t.kind, t.difficulty = Kind(raw[1]), raw[2]
	if t.kind.String() == "unknown" || (t.kind == ProofOfWork) != (t.difficulty != 0) || t.difficulty > MaxDifficulty {
		return t, nil, false
	}
	t.expires = int64(binary.BigEndian.Uint64(raw[3:11]))
	copy(t.id[:], raw[11:tokenBody])
	return t, raw, true
}

// WellFormedToken reports whether s has the form of a token (its length,
// alphabet, version and fields); whether it is authentic, unexpired and
// solved is for Verify.
func WellFormedToken(s string) bool {
	_, _, ok := parseToken(s)
	return ok
}

// open parses s and checks its tag for tenant and handle and its expiry:
// the token, or the Reason it fails.
func (c *Challenger) open(s, tenant, handle string) (token, Reason) {
	t, raw, ok := parseToken(s)
	if !ok {
		return t, ReasonMalformed
	}
	if len(tenant) > 0xffff || len(handle) > 0xffff || !hmac.Equal(raw[tokenBody:], c.mac(raw[:tokenBody], tenant, handle)) {
		return t, ReasonInvalid
	}
	if c.cfg.Now().UnixMilli() >= t.expires {
		return t, ReasonExpired
	}
	return t, ""
}
