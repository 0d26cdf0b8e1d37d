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
		got, st := s.parse(tok, "t", "login", "acct", now)
		if st != attemptValid || got != a {
			t.Errorf("parse(sign(%+v)) = %+v, %v", a, got, st)
		}
		for _, bad := range []struct{ name, tenant, flow, account string }{
			{"other tenant", "u", "login", "acct"},
			{"other flow", "t", "otp_verify", "acct"},
			{"other account", "t", "login", "acct2"},
		} {
			if _, st := s.parse(tok, bad.tenant, bad.flow, bad.account, now); st != attemptForged {
				t.Errorf("%s: status %d, want attemptForged", bad.name, st)
			}
		}
		if _, st := s.parse(tok, "t", "login", "acct", now.Add(time.Minute)); st != attemptExpired {
			t.Errorf("expired token: status %d, want attemptExpired", st)
		}
		// An expired token issued for another call is forged, not expired:
		// only a token that verifies says how old it is.
		if _, st := s.parse(tok, "t", "login", "acct2", now.Add(time.Minute)); st != attemptForged {
			t.Errorf("expired token of another account: status %d, want attemptForged", st)
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
			if _, st := s.parse(forged, "t", "login", "acct", now); st != attemptForged && st != attemptMalformed {
				t.Fatalf("token with byte %d changed: status %d", i, st)
			}
		}
	}
	other := newAttemptSigner([]byte("another-key-another-key-another-"))
	if _, st := other.parse(s.sign("t", "login", "acct", tests[0], now.Add(time.Minute)), "t", "login", "acct", now); st != attemptForged {
		t.Errorf("token under another key: status %d, want attemptForged", st)
	}
	for _, tt := range []struct {
		name, tok string
		want      attemptStatus
	}{
		{"empty", "", attemptMissing},
		{"garbage", "garbage", attemptMalformed},
		{"a JWT", "eyJhbGciOiJIUzI1NiJ9.e30.x", attemptMalformed},
		{"right length, not base64url", strings.Repeat("*", attemptTokenLen), attemptMalformed},
		{"right length, no dot", strings.Repeat("A", attemptTokenLen), attemptMalformed},
	} {
		if _, st := s.parse(tt.tok, "t", "login", "acct", now); st != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, st, tt.want)
		}
	}
}

func FuzzAttemptToken(f *testing.F) {
	s := newAttemptSigner([]byte("attempt-key-attempt-key-attempt-"))
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	f.Add(s.sign("t", "login", "acct", attempt{id: randomID(), exempt: true}, now.Add(time.Hour)))
	f.Add("")
	f.Add(strings.Repeat("A", attemptTokenLen))
	f.Fuzz(func(t *testing.T, tok string) {
		a, st := s.parse(tok, "t", "login", "acct", now)
		if (st == attemptMissing) != (tok == "") || st > attemptExpired {
			t.Fatalf("parse(%q): status %d", tok, st)
		}
		if st == attemptValid && (len(a.id) != hashLen || (a.device != "" && len(a.device) != hashLen)) {
			t.Fatalf("verified a malformed token: %+v", a)
		}
	})
}

// A step-up ticket is an attempt token's layout under another version and
// another flow binding: neither ever verifies as the other, and a mutated
// ticket never verifies.
func FuzzStepUpTicket(f *testing.F) {
	s := newAttemptSigner([]byte("attempt-key-attempt-key-attempt-"))
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	// Fixed ids: each fuzzing process makes its own seeds, which must be
	// the coordinator's.
	const device, id = "ehy-zRfSHEieZGw-HXvhsA", "u0kcEsR2K871h4W7jUD1tw"
	ticket := s.seal(ticketVersion, "t", ticketFlow("login"), "acct", attempt{device: device, id: id, known: true}, now.Add(time.Hour))
	token := s.sign("t", ticketFlow("login"), "acct", attempt{id: id}, now.Add(time.Hour))
	f.Add(ticket)
	f.Add(token)
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		a, st := s.open(ticketVersion, tok, "t", ticketFlow("login"), "acct", now)
		if (st == attemptMissing) != (tok == "") || st > attemptExpired {
			t.Fatalf("open(%q): status %d", tok, st)
		}
		if st == attemptValid && (tok != ticket || len(a.device) != hashLen || !a.known) {
			t.Fatalf("verified %q as a ticket: %+v", tok, a)
		}
		if _, st := s.parse(tok, "t", ticketFlow("login"), "acct", now); st == attemptValid && tok != token {
			t.Fatalf("verified %q as an attempt token", tok)
		}
		if _, st := s.open(ticketVersion, tok, "t", ticketFlow("login"), "other", now); st == attemptValid {
			t.Fatalf("verified %q as another account's ticket", tok)
		}
	})
}
