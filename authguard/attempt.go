package authguard

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"
)

// Attempt tokens name one attempt a check let go ahead; the caller hands
// them back with its report and never looks inside. They are compact and
// cheap because every check signs one and every report verifies one:
//
//	base64url(payload) "." base64url(tag)
//	payload = version(1) | expiry, Unix seconds (8) | flags (1) |
//	          device id (16, zeros for none) | attempt id (16)
//	tag     = HMAC-SHA-256(attempt key, payload | tenant | flow | account hash)[:16]
//
// The tenant, flow and account hash are bound by the tag without being
// carried, so a token only verifies for the call it was issued for, and
// every token has the same length whatever the account.
const (
	attemptVersion = 1
	attemptPayload = 1 + 8 + 1 + hashBytes + hashBytes
	attemptTag     = 16
	flagShadow     = 1 << 0
	flagExempt     = 1 << 1
	flagDevice     = 1 << 2
	flagKnown      = 1 << 3 // a step-up ticket's device came from a valid device token
)

var (
	strictB64         = base64.RawURLEncoding.Strict()
	attemptPayloadLen = base64.RawURLEncoding.EncodedLen(attemptPayload)
	attemptTokenLen   = attemptPayloadLen + 1 + base64.RawURLEncoding.EncodedLen(attemptTag)
)

// attempt is what an attempt token says.
type attempt struct {
	device string // device id (base64url) the check trusted, or ""
	id     string // attempt id (base64url)
	exempt bool   // the check spent the device's own allowance
	shadow bool   // shadow mode would have refused the attempt
	known  bool   // a step-up ticket's: device is the one the login's device token named
}

type attemptSigner struct {
	mac *macPool
}

func newAttemptSigner(key []byte) *attemptSigner { return &attemptSigner{mac: newMacPool(key)} }

func (s *attemptSigner) tag(payload []byte, tenant, flow, account string, out []byte) []byte {
	sum := s.mac.sum(payload, tenant, flow, account)
	return append(out, sum[:attemptTag]...)
}

func (s *attemptSigner) sign(tenant, flow, account string, a attempt, expires time.Time) string {
	return s.seal(attemptVersion, tenant, flow, account, a, expires)
}

// seal signs a token of the attempt layout under version: attemptVersion
// for attempt tokens, ticketVersion for step-up tickets (stepup.go), so
// that neither passes for the other.
func (s *attemptSigner) seal(version byte, tenant, flow, account string, a attempt, expires time.Time) string {
	var p [attemptPayload]byte
	p[0] = version
	binary.BigEndian.PutUint64(p[1:9], uint64(expires.Unix()))
	if a.shadow {
		p[9] |= flagShadow
	}
	if a.exempt {
		p[9] |= flagExempt
	}
	if a.known {
		p[9] |= flagKnown
	}
	if a.device != "" {
		p[9] |= flagDevice
		base64.RawURLEncoding.Decode(p[10:10+hashBytes], []byte(a.device))
	}
	base64.RawURLEncoding.Decode(p[10+hashBytes:], []byte(a.id))
	var t [attemptTag]byte
	tag := s.tag(p[:], tenant, flow, account, t[:0])

	var b strings.Builder
	b.Grow(attemptTokenLen)
	var buf [64]byte
	n := base64.RawURLEncoding.EncodedLen(len(p))
	base64.RawURLEncoding.Encode(buf[:n], p[:])
	b.Write(buf[:n])
	b.WriteByte('.')
	n = base64.RawURLEncoding.EncodedLen(len(tag))
	base64.RawURLEncoding.Encode(buf[:n], tag)
	b.Write(buf[:n])
	return b.String()
}

// attemptStatus is what parse found in a report's attempt token.
type attemptStatus uint8

const (
	// attemptValid: issued by this engine's key for this tenant, flow and
	// account, and not expired.
	attemptValid attemptStatus = iota
	// attemptMissing: no token at all.
	attemptMissing
	// attemptMalformed: not the shape of an attempt token (length,
	// encoding, version).
	attemptMalformed
	// attemptForged: the tag does not verify. The token was forged or
	// altered, or issued for another tenant, flow or account (the tag binds
	// them without carrying them, so these cannot be told apart), or under
	// another secret.
	attemptForged
	// attemptExpired: the tag verifies, but the token is past its expiry.
	attemptExpired
)

// parse verifies token for this tenant, flow and account at now. Only an
// attemptValid status comes with the attempt.
func (s *attemptSigner) parse(token, tenant, flow, account string, now time.Time) (attempt, attemptStatus) {
	return s.open(attemptVersion, token, tenant, flow, account, now)
}

// open is parse for tokens sealed under version.
func (s *attemptSigner) open(version byte, token, tenant, flow, account string, now time.Time) (attempt, attemptStatus) {
	if token == "" {
		return attempt{}, attemptMissing
	}
	if len(token) != attemptTokenLen || token[attemptPayloadLen] != '.' {
		return attempt{}, attemptMalformed
	}
	var p [attemptPayload]byte
	var got [attemptTag]byte
	// Strict decoding: one token, one spelling (the tag's last character has
	// spare bits a lenient decoder would ignore).
	if n, err := strictB64.Decode(p[:], []byte(token[:attemptPayloadLen])); err != nil || n != attemptPayload {
		return attempt{}, attemptMalformed
	}
	if n, err := strictB64.Decode(got[:], []byte(token[attemptPayloadLen+1:])); err != nil || n != attemptTag {
		return attempt{}, attemptMalformed
	}
	var t [attemptTag]byte
	if !hmac.Equal(got[:], s.tag(p[:], tenant, flow, account, t[:0])) {
		return attempt{}, attemptForged
	}
	if p[0] != version { // signed by us, so a version this build does not read, or the other kind
		return attempt{}, attemptMalformed
	}
	if int64(binary.BigEndian.Uint64(p[1:9])) <= now.Unix() {
		return attempt{}, attemptExpired
	}
	a := attempt{
		id:     base64.RawURLEncoding.EncodeToString(p[10+hashBytes:]),
		exempt: p[9]&flagExempt != 0,
		shadow: p[9]&flagShadow != 0,
		known:  p[9]&flagKnown != 0,
	}
	if p[9]&flagDevice != 0 {
		a.device = base64.RawURLEncoding.EncodeToString(p[10 : 10+hashBytes])
	}
	return a, attemptValid
}
