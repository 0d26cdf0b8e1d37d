package authguard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/netip"
	"strings"
	"sync"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/spraydetect"
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
	return p.finish(m, b)
}

// sumText is sum([]byte(tenant), kind, string(value)), value being bytes.
func (p *macPool) sumText(tenant, kind string, value []byte) [sha256.Size]byte {
	m := p.Get().(*pooledMAC)
	b := append(m.buf[:0], tenant...)
	b = append(b, 0)
	b = append(b, kind...)
	b = append(b, 0)
	b = append(b, value...)
	return p.finish(m, b)
}

// finish returns the HMAC of b, which m's buffer holds, and puts m back.
func (p *macPool) finish(m *pooledMAC, b []byte) [sha256.Size]byte {
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

// prefix hashes an IP prefix (the "ip" kind) as subject hashes its text,
// without making the text a string on the heap: an address's prefix is
// hashed on every call, where String made two allocations.
func (h *hasher) prefix(tenant string, p netip.Prefix) string {
	if !p.IsValid() { // AppendTo writes nothing for the zero Prefix, String "invalid Prefix"
		return h.subject(tenant, "ip", p.String())
	}
	var b [64]byte // an IPv6 prefix's longest text is 43 bytes
	text := p.AppendTo(b[:0])
	sum := h.mac.sumText(tenant, "ip", text)
	var out [24]byte
	return string(base64.RawURLEncoding.AppendEncode(out[:0], sum[:hashBytes]))
}

// keyspace is how the store keys of an engine are written: the prefix that
// starts each, and whether a key's subject is a Redis Cluster hash tag.
type keyspace struct {
	// prefix starts every key; "tg" unless configured.
	prefix string
	// tagged writes the first part of a key's subject hash in braces,
	// <prefix>:<tenant>:<flow>:<signal>:{<hash>}[.<second>], so that a
	// Redis Cluster keeps every key of one subject (an account, an
	// address, a fingerprint), in every flow and signal, in one slot: its
	// keys in a check are one call of a multi-op script, not one each. A
	// compound subject is tagged by its first part, the account's when it
	// has one. Only a Cluster store asks for it (SubjectTagger); keys
	// elsewhere keep today's names.
	tagged bool
}

// SubjectTagger is a Store that wants each subject's keys under one Redis
// Cluster hash tag (keyspace.tagged). The store says it, not the engine's
// config, because the layout must be the one its Redis holds (renaming
// every key needs a migration of what is there: redisstore.MigrateKeyLayout)
// and the one its batches group by slot; a memory store or one Redis node
// gains nothing from it and keeps today's names. The engine asks once, in
// New, and its fallback store shares the primary's names (the write-back
// moves counts from one to the other key for key).
type SubjectTagger interface {
	// SubjectTags reports whether the store's keys carry subject hash
	// tags.
	SubjectTags() bool
}

// storeKey builds <prefix>:<tenant>:<flow>:<signal>:<hash>; the prefix is
// "tg" unless configured. A hash of several parts ("<account>.<device>")
// is tagged by its first.
func storeKey(ks keyspace, tenant, flow, signal, hash string) string {
	return joinKey(ks, tenant, flow, signal, "", hash)
}

// storeKeyOf is storeKey of a compound subject: its two hashes joined with
// a dot, in the same one allocation.
func storeKeyOf(ks keyspace, tenant, flow, signal, first, second string) string {
	return joinKey(ks, tenant, flow, signal, "", first, second)
}

// markedKey is storeKey with mark written in front of the subject's hash:
// outside the tag, so that the key is in the subject's slot but out of the
// subject's glob (keyGlob), which wants ':' right before the hash.
func markedKey(ks keyspace, tenant, flow, signal, mark, hash string) string {
	return joinKey(ks, tenant, flow, signal, mark, hash)
}

// keyGlob returns the glob (Redis's SCAN MATCH and KEYS syntax) of every key
// whose subject starts with hash, under flow and signal (each may be "*").
// Braces are literal in a Redis glob; the fields are letters, digits, '-'
// and '_' (and '*'), so nothing else in it is special.
func keyGlob(ks keyspace, tenant, flow, signal, hash string) string {
	if ks.tagged {
		hash = "{" + hash + "}"
	}
	return joinKey(keyspace{prefix: ks.prefix}, tenant, flow, signal, "", hash+"*")
}

// SubjectTaggedKey returns the name a store key of today's layout has with
// subject hash tags (keyspace.tagged), for a migration of a Cluster's keys
// (redisstore.MigrateKeyLayout): <prefix>:<tenant>:<flow>:<signal>:<hash>
// becomes <prefix>:<tenant>:<flow>:<signal>:{<hash's first part>}<rest>,
// and a device generation's g<hash> becomes g{<hash>}. ok is false for a
// key that is not a subject's (an administrator's "_admin" key, a key that
// has a brace already: the held index's, or one tagged before).
func SubjectTaggedKey(key string) (_ string, ok bool) {
	if strings.ContainsAny(key, "{}") {
		return "", false
	}
	f := strings.Split(key, ":")
	if len(f) != 5 || f[1] == "_admin" || f[2] == "_admin" || f[4] == "" {
		return "", false
	}
	ks := keyspace{prefix: f[0], tagged: true}
	subject, mark := f[4], ""
	if f[3] == deviceGenKey && subject[0] == 'g' {
		subject, mark = subject[1:], "g"
	}
	first, _, _ := strings.Cut(subject, ".")
	if len(first) != hashLen || strings.Trim(first, base64URL) != "" {
		return "", false // not a subject's hash (the challenge store's "r:<provider>:<sum>", say)
	}
	return markedKey(ks, f[1], f[2], f[3], mark, subject), true
}

// base64URL are the letters of a subject hash.
const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// joinKey writes a key's fields with ':' between them, then mark, then the
// subject's hashes with '.' between them (the first hash's first part in
// braces when ks is tagged), in one allocation: a Builder grown to size
// hands its bytes over as the string, where a []byte and string(b)
// allocate twice.
func joinKey(ks keyspace, tenant, flow, signal, mark string, hashes ...string) string {
	n := len(ks.prefix) + len(tenant) + len(flow) + len(signal) + 3 + len(mark)
	for _, h := range hashes {
		n += 1 + len(h)
	}
	if ks.tagged {
		n += 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range [...]string{ks.prefix, tenant, flow, signal} {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(f)
	}
	for i, h := range hashes {
		if i == 0 {
			b.WriteByte(':')
			b.WriteString(mark)
			if ks.tagged {
				tag, rest := h, ""
				if j := strings.IndexByte(h, '.'); j >= 0 {
					tag, rest = h[:j], h[j:]
				}
				b.WriteByte('{')
				b.WriteString(tag)
				b.WriteByte('}')
				b.WriteString(rest)
				continue
			}
		} else {
			b.WriteByte('.')
		}
		b.WriteString(h)
	}
	return b.String()
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

// hashOf returns the hash of one part of the request, "" when the request
// does not have it (no fingerprint, an allow-listed address, an IPv4
// client for a wider IPv6 prefix).
func (e *Engine) hashOf(s *subjects, part SubjectPart, ipBits int) string {
	switch part {
	case PartAccount:
		return s.account
	case PartIP:
		if ipBits == 0 || s.ip == "" {
			return s.ip
		}
		p, ok := spraydetect.WidePrefix(s.addr, ipBits)
		if !ok {
			return ""
		}
		return e.hasher(s.tenant).prefix(s.tenant, p)
	case PartFingerprint:
		return s.fp
	case PartTenant:
		return e.hasher(s.tenant).subject(s.tenant, "tenant", "")
	case PartDestination:
		return s.dest
	case PartDestPrefix:
		return s.destPrefix
	case PartCountry:
		return s.country
	}
	return ""
}

// key returns the store key of a rule for this request, or "" when the
// request lacks a part of the rule's subject and the rule does not apply.
// A compound subject joins its parts' hashes with dots, the account's first,
// so that every key of an account starts with the account's hash.
func (e *Engine) key(s *subjects, r *Rule) string {
	hash := ""
	for _, n := range partNames {
		if !r.Subject.Has(n.part) {
			continue
		}
		h := e.hashOf(s, n.part, r.Subject.IPBits)
		if h == "" {
			return ""
		}
		if hash != "" {
			hash += "."
		}
		hash += h
	}
	return storeKey(s.keys, s.tenant, s.flow.Name, r.Key, hash)
}

// AccountKeys returns a glob pattern (as Redis's SCAN MATCH and KEYS take
// it) that matches every store key of one account of a tenant, in every
// flow: the counters of rules on the account, on a compound subject with
// the account, and on its devices. An administrator's reset deletes what it
// matches. The account is normalised as Check normalises it.
func (e *Engine) AccountKeys(tenant, account string) (string, error) {
	if tenant == "" {
		tenant = DefaultTenant
	}
	if !wire.ValidTenant(tenant) {
		return "", &InputError{Field: "tenant", Detail: "must be 1 to 64 lower-case letters, digits, '-' and '_'"}
	}
	acct, err := NormalizeAccount(account)
	if err != nil {
		return "", err
	}
	return keyGlob(e.keys, tenant, "*", "*", e.hasher(tenant).subject(tenant, "account", acct)), nil
}

// member returns what a log rule records for this request: the account or
// IP a Distinct rule counts, or the attempt for a failure log; "" when the
// request has none.
func (e *Engine) member(s *subjects, r *Rule, attempt string) string {
	if r.Algorithm == Distinct {
		return e.hashOf(s, r.Of, 0)
	}
	return attempt
}
