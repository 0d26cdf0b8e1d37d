package challenge_test

import (
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/challenge"
)

// BenchmarkVerify is the server's cost of one proof-of-work verification
// that passes: parse, HMAC, one SHA-256, a spend in the memory store.
// Verification costs the same at any difficulty, so the solutions are
// found before the timer at 1 bit.
func BenchmarkVerify(b *testing.B) {
	c, _ := newChallenger(b, challenge.Config{TTL: time.Hour, Difficulty: 1})
	sols := make([]challenge.Solution, b.N)
	for i := range sols {
		ch := issue(b, c, challenge.IssueOptions{})
		sols[i] = challenge.Solution{Token: ch.Token, Nonce: solve(b, ch)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if r, err := c.Verify(ctx, "", "", sols[i]); err != nil || !r.Solved {
			b.Fatalf("Verify %d = %+v, %v", i, r, err)
		}
	}
}

// BenchmarkVerify_Forged is the cost of refusing a forged token: one HMAC,
// no hash of the nonce, no store.
func BenchmarkVerify_Forged(b *testing.B) {
	c, _ := newChallenger(b, challenge.Config{})
	other, _ := newChallenger(b, challenge.Config{Secret: []byte("another secret of 32 bytes......")})
	ch := issue(b, other, challenge.IssueOptions{})
	s := challenge.Solution{Token: ch.Token, Nonce: solve(b, ch)}
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := c.Verify(ctx, "", "", s); r.Reason != challenge.ReasonInvalid {
			b.Fatal(r)
		}
	}
}

// BenchmarkHold is the cost of sealing a 1 KiB login body and keeping it
// in memory.
func BenchmarkHold(b *testing.B) {
	c, _ := newChallenger(b, challenge.Config{Store: challenge.NewMemoryStore(challenge.MemoryConfig{MaxBytes: 1 << 40})})
	sub := challenge.Submission{Method: "POST", Path: "/login", ContentType: "application/x-www-form-urlencoded", Body: make([]byte, 1024)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Hold(ctx, "", sub); err != nil {
			b.Fatal(err)
		}
	}
}
