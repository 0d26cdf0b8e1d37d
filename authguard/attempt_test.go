package authguard

import (
	"strings"
	"testing"
	"time"
)

func TestAttemptToken(t *testing.T) {
	s := newAttemptSigner([]byte("attempt-key-attempt-key-attempt-"))
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	dev, id := randomID(), randomID()
	tests := []attempt{
		{id: id},
		{id: id, device: dev},
		{id: id, device: dev, exempt: true},
		{id: id, shadow: true},
	}
	for _, a := range tests {
		tok := s.sign("t", "login", "acct", a, now.Add(time.Minute))
		if len(tok) != attemptTokenLen {
			t.Errorf("%+v: token length %d, want %d", a, len(tok), attemptTokenLen)
		}
		got, ok := s.parse(tok, "t", "login", "acct", now)
		if !ok || got != a {
			t.Errorf("parse(sign(%+v)) = %+v, %v", a, got, ok)
		}
		for _, bad := range []struct{ name, tenant, flow, account string }{
			{"other tenant", "u", "login", "acct"},
			{"other flow", "t", "otp_verify", "acct"},
			{"other account", "t", "login", "acct2"},
		} {
			if _, ok := s.parse(tok, bad.tenant, bad.flow, bad.account, now); ok {
				t.Errorf("%s: token verified", bad.name)
			}
		}
		if _, ok := s.parse(tok, "t", "login", "acct", now.Add(time.Minute)); ok {
			t.Error("expired token verified")
		}
		for i := range tok { // every single-character change is caught
			if tok[i] == '.' {
				continue
			}
			c := byte('A')
			if tok[i] == 'A' {
				c = 'B'
			}
			forged := tok[:i] + string(c) + tok[i+1:]
			if _, ok := s.parse(forged, "t", "login", "acct", now); ok {
				t.Fatalf("token with byte %d changed verified", i)
			}
		}
	}
	other := newAttemptSigner([]byte("another-key-another-key-another-"))
	if _, ok := other.parse(s.sign("t", "login", "acct", tests[0], now.Add(time.Minute)), "t", "login", "acct", now); ok {
		t.Error("token verified under another key")
	}
}

func FuzzAttemptToken(f *testing.F) {
	s := newAttemptSigner([]byte("attempt-key-attempt-key-attempt-"))
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	f.Add(s.sign("t", "login", "acct", attempt{id: randomID(), exempt: true}, now.Add(time.Hour)))
	f.Add("")
	f.Add(strings.Repeat("A", attemptTokenLen))
	f.Fuzz(func(t *testing.T, tok string) {
		a, ok := s.parse(tok, "t", "login", "acct", now)
		if ok && (len(a.id) != hashLen || (a.device != "" && len(a.device) != hashLen)) {
			t.Fatalf("verified a malformed token: %+v", a)
		}
	})
}
