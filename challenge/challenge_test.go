package challenge_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

var ctx = context.Background()

// testSecret is 32 bytes, as a server's.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// testDifficulty keeps the tests' solving short (256 hashes on average);
// verification costs one hash whatever the difficulty.
const testDifficulty = 8

// newChallenger returns a Challenger on a memory store and a test clock,
// with cfg's fields laid over those defaults.
func newChallenger(t testing.TB, cfg challenge.Config) (*challenge.Challenger, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(time.Time{})
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	if cfg.Difficulty == 0 {
		cfg.Difficulty = testDifficulty
	}
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if cfg.Store == nil {
		cfg.Store = challenge.NewMemoryStore(challenge.MemoryConfig{Now: cfg.Now})
	}
	c, err := challenge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, clock
}

// solve finds the first nonce whose hash has at least ch.Difficulty zero
// bits, as the browser's solver does.
func solve(t testing.TB, ch challenge.Challenge) string {
	t.Helper()
	return findNonce(t, ch.Token, func(bits int) bool { return bits >= ch.Difficulty })
}

// findNonce returns the first nonce, in decimal, whose hash's zero bits
// satisfy ok.
func findNonce(t testing.TB, token string, ok func(bits int) bool) string {
	t.Helper()
	for n := uint64(0); n < 1<<26; n++ {
		if ok(challenge.LeadingZeroBits(challenge.WorkHash(token, n))) {
			return uitoa(n)
		}
	}
	t.Fatal("no nonce found")
	return ""
}

func uitoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func issue(t testing.TB, c *challenge.Challenger, o challenge.IssueOptions) challenge.Challenge {
	t.Helper()
	ch, err := c.Issue(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// verify verifies and fails the test on an infrastructure error.
func verify(t testing.TB, c *challenge.Challenger, tenant, handle string, s challenge.Solution) challenge.Result {
	t.Helper()
	r, err := c.Verify(ctx, tenant, handle, s)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if r.Solved != (r.Reason == challenge.ReasonSolved) {
		t.Fatalf("Verify = %+v: Solved and Reason disagree", r)
	}
	return r
}

func TestVerify_ASolvedChallengeVerifiesOnceAndNeverTwice(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	ch := issue(t, c, challenge.IssueOptions{})
	s := challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}
	if got := verify(t, c, "", "", s); !got.Solved {
		t.Fatalf("first Verify = %+v, want solved", got)
	}
	for i := range 3 {
		if got, want := verify(t, c, "", "", s).Reason, challenge.ReasonReplayed; got != want {
			t.Fatalf("replay %d: Reason = %q, want %q", i+1, got, want)
		}
	}
}

func TestVerify_AnExpiredChallengeFails(t *testing.T) {
	c, clock := newChallenger(t, challenge.Config{TTL: time.Minute})
	ch := issue(t, c, challenge.IssueOptions{})
	if got, want := ch.Expires, clock.Now().Add(time.Minute); !got.Equal(want) {
		t.Errorf("Expires = %v, want %v", got, want)
	}
	s := challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}
	clock.Advance(time.Minute)
	if got, want := verify(t, c, "", "", s).Reason, challenge.ReasonExpired; got != want {
		t.Fatalf("at its expiry: Reason = %q, want %q", got, want)
	}
}

func TestVerify_OneMillisecondBeforeExpiryStillVerifies(t *testing.T) {
	c, clock := newChallenger(t, challenge.Config{TTL: time.Minute})
	ch := issue(t, c, challenge.IssueOptions{})
	clock.Advance(time.Minute - time.Millisecond)
	if got := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}); !got.Solved {
		t.Fatalf("Verify = %+v, want solved", got)
	}
}

func TestVerify_ATamperedTokenFails(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	ch := issue(t, c, challenge.IssueOptions{})
	raw, err := base64.RawURLEncoding.DecodeString(ch.Token)
	if err != nil {
		t.Fatal(err)
	}
	// Every byte of the token flipped in turn: the version and kind make it
	// malformed, anything else breaks the signature. Each tampered token
	// is solved for its own bytes, so only the signature can refuse it.
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		if i == 2 { // the difficulty: lowered to a nonzero value it still parses
			b[i] = 1
		}
		tampered := base64.RawURLEncoding.EncodeToString(b)
		nonce := findNonce(t, tampered, func(bits int) bool { return bits >= testDifficulty })
		got := verify(t, c, "", "", challenge.Solution{Token: tampered, Nonce: nonce})
		if got.Solved || (got.Reason != challenge.ReasonInvalid && got.Reason != challenge.ReasonMalformed) {
			t.Errorf("byte %d flipped: Verify = %+v, want invalid or malformed", i, got)
		}
	}
	if got := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}); !got.Solved {
		t.Fatalf("the untampered token: Verify = %+v, want solved", got)
	}
}

func TestVerify_AnotherSecretsTokenFails(t *testing.T) {
	other, _ := newChallenger(t, challenge.Config{Secret: []byte("another secret of 32 bytes......")})
	c, _ := newChallenger(t, challenge.Config{})
	ch := issue(t, other, challenge.IssueOptions{})
	if got, want := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}).Reason, challenge.ReasonInvalid; got != want {
		t.Fatalf("Reason = %q, want %q", got, want)
	}
}

func TestVerify_ASolutionForChallengeANeverVerifiesB(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	a := issue(t, c, challenge.IssueOptions{})
	b := issue(t, c, challenge.IssueOptions{})
	nonceA := solve(t, a)
	// b's hash with a's nonce must have too few zero bits, or the test
	// proves nothing; pick another a until it does.
	for tries := 0; challenge.LeadingZeroBits(challenge.WorkHash(b.Token, mustNonce(t, nonceA))) >= testDifficulty; tries++ {
		if tries == 20 { // 1 in 256 each: never, unless the hash ignores the token
			t.Fatal("a's nonce solves b every time: the hash does not depend on the challenge")
		}
		a = issue(t, c, challenge.IssueOptions{})
		nonceA = solve(t, a)
	}
	if got, want := verify(t, c, "", "", challenge.Solution{Token: b.Token, Nonce: nonceA}).Reason, challenge.ReasonInsufficientWork; got != want {
		t.Fatalf("a's nonce on b: Reason = %q, want %q", got, want)
	}
	if got := verify(t, c, "", "", challenge.Solution{Token: a.Token, Nonce: nonceA}); !got.Solved {
		t.Fatalf("a's nonce on a: %+v, want solved", got)
	}
}

func mustNonce(t testing.TB, s string) uint64 {
	n, ok := challenge.ParseNonce(s)
	if !ok {
		t.Fatalf("ParseNonce(%q) failed", s)
	}
	return n
}

func TestVerify_ANonceWithTooFewZeroBitsFails(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	ch := issue(t, c, challenge.IssueOptions{})
	short := findNonce(t, ch.Token, func(bits int) bool { return bits == ch.Difficulty-1 })
	if got, want := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: short}).Reason, challenge.ReasonInsufficientWork; got != want {
		t.Fatalf("a nonce one bit short: Reason = %q, want %q", got, want)
	}
	// The short nonce spent nothing: the real solution still verifies.
	if got := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}); !got.Solved {
		t.Fatalf("then the solution: %+v, want solved", got)
	}
}

func TestVerify_TheDifficultyIsTheTokensNotTheCallers(t *testing.T) {
	hard, _ := newChallenger(t, challenge.Config{Difficulty: 12})
	ch := issue(t, hard, challenge.IssueOptions{})
	if ch.Difficulty != 12 {
		t.Fatalf("Difficulty = %d, want 12", ch.Difficulty)
	}
	easy := findNonce(t, ch.Token, func(bits int) bool { return bits >= 4 && bits < 12 })
	if got, want := verify(t, hard, "", "", challenge.Solution{Token: ch.Token, Nonce: easy}).Reason, challenge.ReasonInsufficientWork; got != want {
		t.Fatalf("Reason = %q, want %q", got, want)
	}
}

func TestVerify_ATenantsTokenFailsForAnotherTenant(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	ch := issue(t, c, challenge.IssueOptions{Tenant: "acme"})
	s := challenge.Solution{Token: ch.Token, Nonce: solve(t, ch)}
	// "acne" is as long as "acme": the tenant's bytes are signed, not
	// only its length.
	for _, other := range []string{"globex", "acne"} {
		if got, want := verify(t, c, other, "", s).Reason, challenge.ReasonInvalid; got != want {
			t.Fatalf("tenant %s: Reason = %q, want %q", other, got, want)
		}
	}
	if got, want := verify(t, c, "", "", s).Reason, challenge.ReasonInvalid; got != want {
		t.Fatalf("the default tenant: Reason = %q, want %q", got, want)
	}
	if got := verify(t, c, "acme", "", s); !got.Solved {
		t.Fatalf("its tenant: %+v, want solved", got)
	}
}

func TestVerify_BadSolutionsAreMalformed(t *testing.T) {
	c, _ := newChallenger(t, challenge.Config{})
	ch := issue(t, c, challenge.IssueOptions{})
	nonce := solve(t, ch)
	tests := []struct {
		name string
		s    challenge.Solution
	}{
		{"no token", challenge.Solution{Nonce: nonce}},
		{"no nonce", challenge.Solution{Token: ch.Token}},
		{"a signed nonce", challenge.Solution{Token: ch.Token, Nonce: "+" + nonce}},
		{"a leading zero", challenge.Solution{Token: ch.Token, Nonce: "0" + nonce}},
		{"2^64", challenge.Solution{Token: ch.Token, Nonce: "18446744073709551616"}},
		{"a token too short", challenge.Solution{Token: ch.Token[1:], Nonce: nonce}},
		{"a token with padding", challenge.Solution{Token: ch.Token[:len(ch.Token)-2] + "==", Nonce: nonce}},
		{"a provider not configured", challenge.Solution{Provider: challenge.Turnstile, Response: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verify(t, c, "", "", tt.s)
			if got.Solved {
				t.Fatalf("Verify = %+v, want not solved", got)
			}
		})
	}
	if got := verify(t, c, "", "", challenge.Solution{Token: ch.Token, Nonce: nonce}); !got.Solved {
		t.Fatalf("after the bad ones, the solution: %+v, want solved", got)
	}
}

func TestVerify_AFullSpentStoreRefusesRatherThanForgets(t *testing.T) {
	clock := testclock.New(time.Time{})
	store := challenge.NewMemoryStore(challenge.MemoryConfig{MaxSpent: 1, Now: clock.Now})
	c, _ := newChallenger(t, challenge.Config{Store: store, Now: clock.Now})
	a, b := issue(t, c, challenge.IssueOptions{}), issue(t, c, challenge.IssueOptions{})
	if got := verify(t, c, "", "", challenge.Solution{Token: a.Token, Nonce: solve(t, a)}); !got.Solved {
		t.Fatalf("a: %+v", got)
	}
	_, err := c.Verify(ctx, "", "", challenge.Solution{Token: b.Token, Nonce: solve(t, b)})
	if !errors.Is(err, challenge.ErrStoreFull) {
		t.Fatalf("b on a full store: err = %v, want ErrStoreFull", err)
	}
	// Once a's entry expires, b verifies.
	clock.Advance(5 * time.Minute)
	c2, _ := newChallenger(t, challenge.Config{Store: store, Now: clock.Now, TTL: time.Hour})
	d := issue(t, c2, challenge.IssueOptions{})
	if got := verify(t, c2, "", "", challenge.Solution{Token: d.Token, Nonce: solve(t, d)}); !got.Solved {
		t.Fatalf("after a's expiry: %+v", got)
	}
}

func TestNew_RefusesABadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  challenge.Config
	}{
		{"a short secret", challenge.Config{Secret: []byte("short")}},
		{"difficulty 33", challenge.Config{Secret: testSecret, Difficulty: 33}},
		{"a negative difficulty", challenge.Config{Secret: testSecret, Difficulty: -1}},
		{"a provider without a secret", challenge.Config{Secret: testSecret, Providers: []challenge.ProviderConfig{{Kind: challenge.Turnstile, SiteKey: "k"}}}},
		{"proof of work as a provider", challenge.Config{Secret: testSecret, Providers: []challenge.ProviderConfig{{Kind: challenge.ProofOfWork, SiteKey: "k", Secret: "s"}}}},
		{"two of one provider", challenge.Config{Secret: testSecret, Providers: []challenge.ProviderConfig{
			{Kind: challenge.HCaptcha, SiteKey: "k", Secret: "s"}, {Kind: challenge.HCaptcha, SiteKey: "k2", Secret: "s2"}}}},
		{"a page of a provider not configured", challenge.Config{Secret: testSecret, PageKind: challenge.ReCAPTCHA}},
		{"a solution path that is not a path", challenge.Config{Secret: testSecret, SolutionPath: "//evil.example/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := challenge.New(tt.cfg); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}

func TestKind_StringAndParseRoundTrip(t *testing.T) {
	for _, k := range []challenge.Kind{challenge.ProofOfWork, challenge.Turnstile, challenge.HCaptcha, challenge.ReCAPTCHA} {
		got, ok := challenge.ParseKind(k.String())
		if !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", k.String(), got, ok, k)
		}
	}
	if _, ok := challenge.ParseKind("unknown"); ok {
		t.Error(`ParseKind("unknown") succeeded`)
	}
}
