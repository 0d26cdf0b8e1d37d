package client

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// A browser's login form that meets a captcha verdict is held on the server
// while the browser solves its challenge, so that the end user does not type
// her password again: the page the browser gets holds a random handle and
// the challenge, never the submission (a server must not echo a password
// into HTML, sealed or not). The submission is sealed with AES-256-GCM under
// a key derived from GuardConfig.HoldKey, bound to the path it was posted to
// and the challenge issued for it, and kept under a hash of the handle: a
// copy of the store reads nothing, and a handle is no use with another
// challenge or on another route. It is given back once, to the post of a
// solved challenge that names the handle; tollgate spends the challenge, so
// two posts of one page cannot both go on.

// HoldStore keeps sealed submissions for a short time. Keys are hex SHA-256
// hashes of the handles; values are opaque sealed bytes. A site of several
// instances behind one address shares one (a Redis, a database table), so
// that the post of a challenge page reaches its submission on any instance.
// A Guard also keeps the logins waiting for their second factor here.
//
// A HoldStore may also have a method TakeHold(ctx, key) ([]byte, error)
// that returns a value and removes it at once (GETDEL in Redis), as
// MemoryHolds does: the Guard then spends a step-up code once even when two
// posts of it arrive together. Without it the Guard reads, then deletes,
// and two such posts could both sign in.
type HoldStore interface {
	// PutHold keeps value under key for ttl. An error (ErrHoldsFull, the
	// store not answering) means nothing is held: the Guard answers the
	// captcha verdict without a challenge page.
	PutHold(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// GetHold returns the value under key, or nil (and no error) when there
	// is none or it expired.
	GetHold(ctx context.Context, key string) ([]byte, error)
	// DeleteHold removes key, if it is there.
	DeleteHold(ctx context.Context, key string) error
}

// ErrHoldsFull is what a MemoryHolds answers when it holds as much as it
// may.
var ErrHoldsFull = errors.New("client: the hold store is full")

// MemoryHoldsConfig configures a MemoryHolds.
type MemoryHoldsConfig struct {
	// MaxBytes bounds the bytes of the values held; past it PutHold
	// answers ErrHoldsFull until some expire or are taken. A login form is
	// well under 1 KiB sealed. The default is 8 MiB.
	MaxBytes int64
	// MaxHolds bounds how many values are held. The default is 20,000.
	MaxHolds int
	// Now is the clock expiry is measured by. The default is time.Now.
	Now func() time.Time
}

// MemoryHolds is a HoldStore in the process's memory, bounded by bytes and
// by count: for a site of one instance (or sticky sessions). An attacker
// who floods captcha verdicts can fill it; the end users then get the
// captcha answer without a challenge page until holds expire, and nothing
// grows past the bounds. Safe for concurrent use.
type MemoryHolds struct {
	mu       sync.Mutex
	m        map[string]memHold
	order    []memOrder // insertion order, to drop expired holds
	bytes    int64
	maxBytes int64
	maxHolds int
	now      func() time.Time
}

type memHold struct {
	value   []byte
	expires time.Time
}

type memOrder struct {
	key     string
	expires time.Time
}

var _ HoldStore = (*MemoryHolds)(nil)

// NewMemoryHolds returns an empty MemoryHolds for cfg.
func NewMemoryHolds(cfg MemoryHoldsConfig) *MemoryHolds {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 8 << 20
	}
	if cfg.MaxHolds <= 0 {
		cfg.MaxHolds = 20_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MemoryHolds{m: map[string]memHold{}, maxBytes: cfg.MaxBytes, maxHolds: cfg.MaxHolds, now: cfg.Now}
}

// PutHold keeps value under key for ttl, or answers ErrHoldsFull.
func (s *MemoryHolds) PutHold(_ context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	if old, ok := s.m[key]; ok {
		s.bytes -= int64(len(old.value))
		delete(s.m, key)
	}
	if len(s.m) >= s.maxHolds || s.bytes+int64(len(value)) > s.maxBytes {
		return ErrHoldsFull
	}
	exp := now.Add(ttl)
	s.m[key] = memHold{value: append([]byte(nil), value...), expires: exp}
	s.bytes += int64(len(value))
	s.order = append(s.order, memOrder{key, exp})
	if len(s.order) > 2*s.maxHolds {
		s.compact()
	}
	return nil
}

// GetHold returns the value under key, or nil.
func (s *MemoryHolds) GetHold(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	if !ok || !s.now().Before(h.expires) {
		return nil, nil
	}
	return append([]byte(nil), h.value...), nil
}

// TakeHold returns the value under key and removes it, at once: of two
// calls for one key, one gets the value and the other nil. A Guard uses it
// when its HoldStore has it, so that one second-factor code signs in once
// even when posted twice at the same moment.
func (s *MemoryHolds) TakeHold(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	if !ok {
		return nil, nil
	}
	s.bytes -= int64(len(h.value))
	delete(s.m, key)
	if !s.now().Before(h.expires) {
		return nil, nil
	}
	return h.value, nil
}

// DeleteHold removes key.
func (s *MemoryHolds) DeleteHold(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.m[key]; ok {
		s.bytes -= int64(len(h.value))
		delete(s.m, key)
	}
	return nil
}

// Len is how many values are held, expired ones not yet dropped included.
func (s *MemoryHolds) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// sweep drops the holds that expired, oldest first: they were put in
// order, each with about the same time to live.
func (s *MemoryHolds) sweep(now time.Time) {
	i := 0
	for ; i < len(s.order) && !now.Before(s.order[i].expires); i++ {
		o := s.order[i]
		if h, ok := s.m[o.key]; ok && h.expires.Equal(o.expires) {
			s.bytes -= int64(len(h.value))
			delete(s.m, o.key)
		}
	}
	if i > 0 {
		s.order = append(s.order[:0], s.order[i:]...)
	}
}

// compact rebuilds the order from the holds left: holds taken before they
// expired leave their place in it behind.
func (s *MemoryHolds) compact() {
	kept := s.order[:0]
	for _, o := range s.order {
		if h, ok := s.m[o.key]; ok && h.expires.Equal(o.expires) {
			kept = append(kept, o)
		}
	}
	s.order = kept
}

// handleBytes is a handle's randomness: 256 bits.
const handleBytes = 32

// handleLen is a handle's length in base64url.
var handleLen = base64.RawURLEncoding.EncodedLen(handleBytes)

// newHandle is a fresh random handle.
func newHandle() string {
	var b [handleBytes]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// wellFormedHandle reports whether s could be a handle newHandle made.
func wellFormedHandle(s string) bool {
	if len(s) != handleLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

// holdKey is the store key of handle: its hash, so that the store never
// holds the handle that unseals it.
func holdKey(handle string) string {
	sum := sha256.Sum256([]byte("tollgate client hold\x00" + handle))
	return hex.EncodeToString(sum[:])
}

// sealer seals and opens held submissions.
type sealer struct{ aead cipher.AEAD }

// newSealer derives the sealing key from key (HMAC-SHA-256 under a label
// of its own, so that the caller's key is never used as it is).
func newSealer(key []byte) (*sealer, error) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tollgate client hold seal v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal is a random nonce followed by plain sealed with binding (and the
// handle) as associated data.
func (s *sealer) seal(handle string, binding, plain []byte) []byte {
	n := s.aead.NonceSize()
	out := make([]byte, n, n+len(plain)+s.aead.Overhead())
	rand.Read(out)
	return s.aead.Seal(out, out, plain, holdAD(handle, binding))
}

// open is seal's inverse; false for a blob that was not sealed for handle
// and binding.
func (s *sealer) open(handle string, binding, blob []byte) ([]byte, bool) {
	n := s.aead.NonceSize()
	if len(blob) < n+s.aead.Overhead() {
		return nil, false
	}
	plain, err := s.aead.Open(nil, blob[:n], blob[n:], holdAD(handle, binding))
	return plain, err == nil
}

func holdAD(handle string, binding []byte) []byte {
	ad := make([]byte, 0, len(handle)+1+len(binding))
	ad = append(ad, handle...)
	ad = append(ad, 0)
	return append(ad, binding...)
}
