package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// countingStore wraps a store, counts calls and operations, and fails on demand.
type countingStore struct {
	authguard.Store
	fail  atomic.Bool
	calls atomic.Int64
	ops   atomic.Int64
}

func (c *countingStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	c.calls.Add(1)
	c.ops.Add(int64(len(ops)))
	if c.fail.Load() {
		return nil, fmt.Errorf("test: %w", authguard.ErrStoreUnavailable)
	}
	return c.Store.Do(ctx, ops)
}

// DeleteMatching passes an administrator's reset on to the memory store.
func (c *countingStore) DeleteMatching(ctx context.Context, pattern string) (int, error) {
	return c.Store.(authguard.KeyDeleter).DeleteMatching(ctx, pattern)
}

// The entry calls pass through to the memory store, and fail with Do.
func (c *countingStore) PutEntry(ctx context.Context, key, id, value string, ttl time.Duration, max int) error {
	if c.fail.Load() {
		return fmt.Errorf("test: %w", authguard.ErrStoreUnavailable)
	}
	return c.Store.(authguard.EntryStore).PutEntry(ctx, key, id, value, ttl, max)
}

func (c *countingStore) Entries(ctx context.Context, key string) ([]string, error) {
	if c.fail.Load() {
		return nil, fmt.Errorf("test: %w", authguard.ErrStoreUnavailable)
	}
	return c.Store.(authguard.EntryStore).Entries(ctx, key)
}

func (c *countingStore) RemoveEntry(ctx context.Context, key, id string) (bool, error) {
	if c.fail.Load() {
		return false, fmt.Errorf("test: %w", authguard.ErrStoreUnavailable)
	}
	return c.Store.(authguard.EntryStore).RemoveEntry(ctx, key, id)
}

type harness struct {
	t      testing.TB
	e      *authguard.Engine
	clock  *testclock.Clock
	mem    *memstore.Store
	store  *countingStore
	events []authguard.Event
	mu     sync.Mutex
	// notes records the engine's notices: every test of the engine runs
	// with a Notifier set (notice_test.go).
	notes noticeRecorder
}

func newHarness(t testing.TB, policyYAML string) *harness {
	t.Helper()
	h := &harness{t: t, clock: testclock.New(time.Time{})}
	h.mem = memstore.New(memstore.Config{Now: h.clock.Now})
	h.store = &countingStore{Store: h.mem}
	p, err := policyfile.LoadPolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	h.e, err = authguard.New(authguard.Config{
		Policy: p, Store: h.store, Secret: secret, Now: h.clock.Now,
		Fallback: memstore.New(memstore.Config{Now: h.clock.Now}),
		Observe: func(ev authguard.Event) {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		},
		Notifier: &h.notes,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) check(req authguard.CheckRequest) authguard.Verdict {
	h.t.Helper()
	if req.Flow == "" {
		req.Flow = "login"
	}
	v, err := h.e.Check(context.Background(), req)
	if err != nil {
		h.t.Fatalf("Check: %v", err)
	}
	return v
}

func (h *harness) report(req authguard.ReportRequest) authguard.Verdict {
	h.t.Helper()
	if req.Flow == "" {
		req.Flow = "login"
	}
	v, err := h.e.Report(context.Background(), req)
	if err != nil {
		h.t.Fatalf("Report: %v", err)
	}
	return v
}

// attempt is one check and, when it proceeds, a report of outcome.
func (h *harness) attempt(account, ip string, outcome authguard.Outcome, device string) authguard.Verdict {
	h.t.Helper()
	v := h.check(authguard.CheckRequest{Account: account, IP: ip, DeviceToken: device})
	if v.Action != authguard.Proceed {
		return v
	}
	return h.report(authguard.ReportRequest{Account: account, IP: ip, Outcome: outcome, Attempt: v.Attempt, DeviceToken: device})
}

func TestLogin_ParallelGuessesCannotOutrunBudget(t *testing.T) {
	h := newHarness(t, "")
	var proceeded atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			v, err := h.e.Check(context.Background(), authguard.CheckRequest{
				Flow: "login", Account: "victim@example.com", IP: fmt.Sprintf("198.51.%d.%d", i/250, i%250), CaptchaSolved: true,
			})
			if err != nil {
				t.Error(err)
				return
			}
			if v.Action == authguard.Proceed {
				proceeded.Add(1)
			}
		})
	}
	wg.Wait()
	free := h.e.Policy().Flow("login").Rule("account_backoff").Backoff.Free
	if got := proceeded.Load(); got != int64(free) {
		t.Errorf("%d of 1000 concurrent checks proceeded, want exactly the %d free attempts", got, free)
	}
}

func TestLogin_HammeringDuringDelayDoesNotExtendIt(t *testing.T) {
	h := newHarness(t, "")
	for range 5 {
		if v := h.attempt("bob", "192.0.2.1", authguard.Failure, ""); v.Action == authguard.Captcha {
			t.Fatalf("unexpected captcha: %+v", v)
		}
	}
	v := h.check(authguard.CheckRequest{Account: "bob", IP: "192.0.2.1"})
	if v.Action != authguard.Delay || v.Delay != time.Second || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Fatalf("after 5 failures: got %v %v %v, want delay 1s account_backoff", v.Action, v.Delay, v.Reasons)
	}
	for range 100 {
		h.check(authguard.CheckRequest{Account: "bob", IP: "192.0.2.1"})
	}
	h.clock.Advance(time.Second)
	if v := h.check(authguard.CheckRequest{Account: "bob", IP: "192.0.2.1"}); v.Action != authguard.Proceed {
		t.Errorf("after waiting the delay: got %v, want proceed", v.Action)
	}
}

func TestLogin_DelaysGrowAndCap(t *testing.T) {
	h := newHarness(t, "")
	var got []time.Duration
	for range 20 {
		v := h.attempt("carol", "192.0.2.2", authguard.Failure, "")
		got = append(got, v.Delay)
		h.clock.Advance(v.Delay)
	}
	want := []time.Duration{0, 0, 0, 0, time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("delay after failure %d = %v, want %v", i+1, got[i], w)
		}
	}
	if last := got[len(got)-1]; last != 30*time.Minute {
		t.Errorf("delay after 20 failures = %v, want the 30m cap", last)
	}
}

func TestReport_SuccessRefundsOnlyItsOwnAttempt(t *testing.T) {
	h := newHarness(t, "")
	for range 4 {
		h.attempt("dave", "192.0.2.3", authguard.Failure, "")
	}
	v := h.attempt("dave", "192.0.2.3", authguard.Success, "")
	if v.Action != authguard.Proceed || v.DeviceToken == "" {
		t.Fatalf("success: got %+v, want proceed with a device token", v)
	}
	// The success's own charge is gone, the 4 failures stay: one more
	// attempt is free, then the delay starts (from another address: the
	// success made 192.0.2.3 a known network of dave's).
	if v := h.attempt("dave", "192.0.2.4", authguard.Failure, ""); v.Action != authguard.Delay {
		t.Fatalf("fifth failure after the success: %v, want delay (the success cleared nothing else)", v.Action)
	}
}

func TestReport_ReplayedFailureIsCountedOnce(t *testing.T) {
	h := newHarness(t, "")
	for range 4 {
		v := h.check(authguard.CheckRequest{Account: "gina", IP: "192.0.2.6", PasswordFingerprint: "fp-x"})
		for range 3 { // a retrying caller
			h.report(authguard.ReportRequest{Account: "gina", IP: "192.0.2.6", Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "fp-x"})
		}
	}
	// One wrong password (fp-x) was charged once; the repeats went ahead
	// uncharged ("same wrong password once"); replays changed nothing.
	for i := range 3 {
		if v := h.check(authguard.CheckRequest{Account: "gina", IP: "192.0.2.6"}); v.Action != authguard.Proceed {
			t.Fatalf("check %d: %v, want proceed", i, v.Action)
		}
	}
}

func TestLogin_AttemptTokenExpires(t *testing.T) {
	h := newHarness(t, "")
	v := h.check(authguard.CheckRequest{Account: "hank", IP: "192.0.2.7"})
	h.clock.Advance(11 * time.Minute) // attempt_ttl is 10m
	// The late success cannot settle the attempt: it stays counted.
	h.report(authguard.ReportRequest{Account: "hank", IP: "192.0.2.7", Outcome: authguard.Success, Attempt: v.Attempt})
	for i := range 4 {
		if v := h.check(authguard.CheckRequest{Account: "hank", IP: "192.0.2.7"}); v.Action != authguard.Proceed {
			t.Fatalf("check %d: %v", i, v.Action)
		}
	}
	if v := h.check(authguard.CheckRequest{Account: "hank", IP: "192.0.2.7"}); v.Action != authguard.Delay {
		t.Fatalf("sixth attempt: %v, want delay (the expired attempt still counts)", v.Action)
	}
}

func TestDevice_AttackerCannotDelayTheOwnersKnownDevice(t *testing.T) {
	h := newHarness(t, "")
	owner := h.attempt("ivy@example.com", "198.51.100.7", authguard.Success, "")
	device := owner.DeviceToken
	for i := range 40 { // attacker, rotating addresses, waiting out delays
		h.clock.Advance(h.check(authguard.CheckRequest{Account: "ivy@example.com", IP: "203.0.113.250"}).Delay)
		h.attempt("ivy@example.com", fmt.Sprintf("203.0.113.%d", i), authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "ivy@example.com", IP: "203.0.113.200"}); v.Action != authguard.Delay {
		t.Fatalf("attacker after 40 failures: %v, want delay", v.Action)
	}
	v := h.check(authguard.CheckRequest{Account: "Ivy@Example.com", IP: "198.51.100.7", DeviceToken: device})
	if v.Action != authguard.Proceed {
		t.Fatalf("owner with device token: %v %v, want proceed", v.Action, v.Reasons)
	}
	r := h.report(authguard.ReportRequest{Account: "ivy@example.com", IP: "198.51.100.7", Outcome: authguard.Success, Attempt: v.Attempt})
	if r.DeviceToken == "" {
		t.Fatal("success returned no device token")
	}
	// The owner's device token keeps working on another account? No: it
	// is bound to Ivy's account and ignored for others.
	for range 5 {
		h.attempt("jack@example.com", "198.51.100.8", authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "jack@example.com", IP: "198.51.100.8", DeviceToken: device}); v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Errorf("another account's device token: %v %v, want account_backoff delay", v.Action, v.Reasons)
	}
}

func TestDevice_ExpiredOrForgedTokenIsUntrusted(t *testing.T) {
	h := newHarness(t, "")
	tok := h.attempt("kim", "198.51.100.9", authguard.Success, "").DeviceToken
	for range 5 {
		h.attempt("kim", "203.0.113.9", authguard.Failure, "")
	}
	tests := []struct {
		name, token string
		advance     time.Duration
		want        authguard.Action
	}{
		{"valid", tok, 0, authguard.Proceed},
		{"forged signature", tok[:len(tok)-3] + "abc", 0, authguard.Delay},
		{"alg none", "eyJhbGciOiJub25lIn0.eyJ0IjoiZGVmYXVsdCJ9.", 0, authguard.Delay},
		{"expired", tok, 91 * 24 * time.Hour, authguard.Proceed}, // counters forgotten too; checked below
	}
	// From another address than the one kim signed in from: that one is a
	// known network of hers, which goes ahead with no token at all.
	for _, tt := range tests[:3] {
		if v := h.check(authguard.CheckRequest{Account: "kim", IP: "198.51.100.10", DeviceToken: tt.token}); v.Action != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, v.Action, tt.want)
		}
	}
	// After expiry the token is untrusted: failures land on the account counter.
	h.clock.Advance(91 * 24 * time.Hour)
	for range 5 {
		h.attempt("kim", "198.51.100.9", authguard.Failure, tok)
	}
	if v := h.check(authguard.CheckRequest{Account: "kim", IP: "198.51.100.9", DeviceToken: tok}); v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Errorf("expired token: %v %v, want account_backoff delay", v.Action, v.Reasons)
	}
}

func TestLogin_SameWrongPasswordCountsOnce(t *testing.T) {
	h := newHarness(t, "")
	for range 20 { // a phone retrying an old password
		v := h.check(authguard.CheckRequest{Account: "lee", IP: "192.0.2.10", PasswordFingerprint: "old"})
		if v.Action != authguard.Proceed {
			t.Fatalf("retry of the same wrong password: %v, want proceed", v.Action)
		}
		h.report(authguard.ReportRequest{Account: "lee", IP: "192.0.2.10", Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "old"})
	}
	for i := range 4 {
		if v := h.check(authguard.CheckRequest{Account: "lee", IP: "192.0.2.10", PasswordFingerprint: fmt.Sprint("new", i)}); v.Action != authguard.Proceed {
			t.Fatalf("new password %d: %v", i, v.Action)
		} else {
			h.report(authguard.ReportRequest{Account: "lee", IP: "192.0.2.10", Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: fmt.Sprint("new", i)})
		}
	}
	if v := h.check(authguard.CheckRequest{Account: "lee", IP: "192.0.2.10", PasswordFingerprint: "new9"}); v.Action != authguard.Delay {
		t.Errorf("after 5 distinct wrong passwords: %v, want delay", v.Action)
	}
}

func TestSpray_OneIPManyAccountsNeedsCaptcha(t *testing.T) {
	h := newHarness(t, "")
	for i := range 10 {
		if v := h.attempt(fmt.Sprintf("user%d", i), "203.0.113.50", authguard.Failure, ""); v.Action != authguard.Proceed {
			t.Fatalf("account %d: %v %v", i, v.Action, v.Reasons)
		}
	}
	v := h.check(authguard.CheckRequest{Account: "user10", IP: "203.0.113.50"})
	if v.Action != authguard.Captcha || v.Reasons[0] != authguard.ReasonIPSpray {
		t.Fatalf("11th account: %v %v, want captcha ip_spray", v.Action, v.Reasons)
	}
	if v := h.check(authguard.CheckRequest{Account: "user10", IP: "203.0.113.50", CaptchaSolved: true}); v.Action != authguard.Proceed {
		t.Errorf("11th account with CAPTCHA solved: %v", v.Action)
	}
	if v := h.check(authguard.CheckRequest{Account: "user11", IP: "203.0.113.51"}); v.Action != authguard.Proceed {
		t.Errorf("another IP: %v", v.Action)
	}
}

func TestSpray_IPv6RotationWithinSlash64(t *testing.T) {
	h := newHarness(t, "")
	for i := range 10 {
		h.attempt(fmt.Sprintf("user%d", i), fmt.Sprintf("2001:db8:1:2:%x::1", i+1), authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "user10", IP: "2001:db8:1:2:ffff:ffff:ffff:fffe"}); v.Action != authguard.Captcha {
		t.Errorf("11th account from the same /64: %v, want captcha", v.Action)
	}
	if v := h.check(authguard.CheckRequest{Account: "user10", IP: "2001:db8:1:3::1"}); v.Action != authguard.Proceed {
		t.Errorf("from the next /64: %v, want proceed", v.Action)
	}
}

func TestSpray_SuccessesKeepANATOfficeClear(t *testing.T) {
	h := newHarness(t, "")
	// 90 colleagues behind one address, every one of them mistyping once
	// before getting in, all within the first hour of the day (ip_failures
	// allows 100 an hour, attempts in flight included).
	for i := range 90 {
		h.clock.Advance(36 * time.Second)
		h.attempt(fmt.Sprintf("colleague%d", i), "192.0.2.99", authguard.Failure, "")
		if v := h.attempt(fmt.Sprintf("colleague%d", i), "192.0.2.99", authguard.Success, ""); v.Action != authguard.Proceed {
			t.Fatalf("colleague %d: %v %v", i, v.Action, v.Reasons)
		}
	}
}

func TestSpray_OnePasswordAcrossManyIPs(t *testing.T) {
	h := newHarness(t, "")
	n := 0
	for i := range 100 {
		v := h.check(authguard.CheckRequest{Account: fmt.Sprintf("victim%d", i), IP: fmt.Sprintf("198.18.%d.1", i), PasswordFingerprint: "Summer2026!"})
		if v.Action == authguard.Captcha {
			if v.Reasons[0] != authguard.ReasonPasswordSpray {
				t.Fatalf("reasons %v, want password_spray", v.Reasons)
			}
			break
		}
		n++
		h.report(authguard.ReportRequest{Account: fmt.Sprintf("victim%d", i), IP: fmt.Sprintf("198.18.%d.1", i), Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "Summer2026!"})
	}
	if n != 10 {
		t.Errorf("%d accounts tried with one password before a CAPTCHA, want 10", n)
	}
}

func TestIPRate_FloodGuard(t *testing.T) {
	h := newHarness(t, "")
	var first authguard.Verdict
	for i := range 201 {
		v := h.check(authguard.CheckRequest{Account: fmt.Sprint("f", i), IP: "203.0.113.77", CaptchaSolved: true})
		if v.Action != authguard.Proceed {
			first = v
			if i != 200 {
				t.Errorf("refused at check %d, want at 201 (burst 200)", i+1)
			}
			break
		}
	}
	if first.Action != authguard.Delay || first.Reasons[0] != authguard.ReasonIPRate || first.Delay != 50*time.Millisecond {
		t.Errorf("201st check: %+v, want delay 50ms ip_rate", first)
	}
}

func TestAllowList_SkipsIPRulesButNotAccountRules(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    allow_list: [192.0.2.0/24]\n")
	for i := range 50 {
		if v := h.attempt(fmt.Sprint("a", i), "192.0.2.1", authguard.Failure, ""); v.Action != authguard.Proceed {
			t.Fatalf("allow-listed account %d: %v", i, v.Action)
		}
	}
	for range 5 {
		h.attempt("same", "192.0.2.1", authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "same", IP: "192.0.2.1"}); v.Action != authguard.Delay {
		t.Errorf("account backoff from an allow-listed address: %v, want delay", v.Action)
	}
}

func TestShadow_AnswersProceedAndRecordsTheVerdict(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    mode: shadow\n")
	for range 5 {
		h.attempt("nina", "192.0.2.11", authguard.Failure, "")
	}
	v := h.check(authguard.CheckRequest{Account: "nina", IP: "192.0.2.11"})
	if v.Action != authguard.Proceed || v.Attempt == "" {
		t.Fatalf("shadow: %+v, want proceed with an attempt", v)
	}
	ev := h.events[len(h.events)-1]
	if ev.Computed.Action != authguard.Delay || ev.Answer.Action != authguard.Proceed {
		t.Errorf("event: computed %v answered %v, want delay/proceed", ev.Computed.Action, ev.Answer.Action)
	}
	// Reporting the refused attempt changes nothing, as in enforce mode no
	// report would have come.
	h.report(authguard.ReportRequest{Account: "nina", IP: "192.0.2.11", Outcome: authguard.Failure, Attempt: v.Attempt})
	h.clock.Advance(time.Second)
	h.check(authguard.CheckRequest{Account: "nina", IP: "192.0.2.11"})
	if ev := h.events[len(h.events)-1]; ev.Computed.Action != authguard.Proceed {
		t.Errorf("after the 1s delay: computed %v, want proceed", ev.Computed.Action)
	}
}

func TestFailOpen_AnswersFromTheFallback(t *testing.T) {
	h := newHarness(t, "")
	h.store.fail.Store(true)
	for range 5 {
		h.attempt("olga", "192.0.2.12", authguard.Failure, "")
	}
	v := h.check(authguard.CheckRequest{Account: "olga", IP: "192.0.2.12"})
	if v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Errorf("fail-open: %v %v, want the fallback's account_backoff delay", v.Action, v.Reasons)
	}
	ev := h.events[len(h.events)-1]
	if ev.Source != authguard.SourceFallback || !errors.Is(ev.StoreErr, authguard.ErrStoreUnavailable) {
		t.Errorf("event source %v err %v, want fallback and the store error", ev.Source, ev.StoreErr)
	}
	// Before the write-back the store never saw these failures, and the
	// first check after the outage proceeded: five guesses lost to it. Now
	// they ride ahead of that check and the store counts them first.
	h.store.fail.Store(false)
	if v := h.check(authguard.CheckRequest{Account: "olga", IP: "192.0.2.12"}); v.Action != authguard.Delay || v.Reasons[0] != authguard.ReasonAccountBackoff {
		t.Errorf("store back: %v %v, want the delay of the 5 failures the fallback counted, written back", v.Action, v.Reasons)
	}
	if ev := h.events[len(h.events)-1]; ev.Source != authguard.SourceStore {
		t.Errorf("store back: source %v, want the store", ev.Source)
	}
}

func TestFailClosed_AnswersDelayUnavailable(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    fail_mode: closed\n")
	h.store.fail.Store(true)
	v := h.check(authguard.CheckRequest{Account: "pat", IP: "192.0.2.13"})
	if v.Action != authguard.Delay || v.Delay != 2*time.Second || v.Reasons[0] != authguard.ReasonUnavailable || v.Attempt != "" {
		t.Errorf("fail-closed: %+v, want delay 2s unavailable", v)
	}
}

// The same sequence of outcomes for an account that exists and one that
// does not must give the same verdicts and cost the same store work; the
// tokens differ in content only, never in length.
func TestUniformity_UnknownAccountLooksLikeAKnownOne(t *testing.T) {
	run := func(account string) (out []string, calls, ops int64) {
		h := newHarness(t, "")
		script := []authguard.Outcome{authguard.Failure, authguard.Failure, authguard.Success, authguard.Failure, authguard.Failure, authguard.Failure, authguard.Failure, authguard.Failure, authguard.Failure, authguard.Failure}
		for _, o := range script {
			v := h.check(authguard.CheckRequest{Account: account, IP: "192.0.2.20", PasswordFingerprint: "pw"})
			out = append(out, masked(v))
			if v.Action == authguard.Proceed {
				out = append(out, masked(h.report(authguard.ReportRequest{Account: account, IP: "192.0.2.20", Outcome: o, Attempt: v.Attempt, PasswordFingerprint: "pw"})))
			}
			h.clock.Advance(v.Delay)
		}
		return out, h.store.calls.Load(), h.store.ops.Load()
	}
	known, kc, ko := run("alice@example.com")
	unknown, uc, uo := run("no-such-user-with-a-much-longer-name@example.org")
	if strings.Join(known, "\n") != strings.Join(unknown, "\n") {
		t.Errorf("verdicts differ:\nknown:\n%s\nunknown:\n%s", strings.Join(known, "\n"), strings.Join(unknown, "\n"))
	}
	if kc != uc || ko != uo {
		t.Errorf("store work differs: known %d calls/%d ops, unknown %d/%d", kc, ko, uc, uo)
	}
}

// masked is the verdict's JSON with token contents replaced by their length.
func masked(v authguard.Verdict) string {
	v.Attempt = strings.Repeat("x", len(v.Attempt))
	v.DeviceToken = strings.Repeat("x", len(v.DeviceToken))
	b, _ := v.MarshalJSON()
	return string(b)
}

func TestNormalisation_SharesOneCounter(t *testing.T) {
	h := newHarness(t, "")
	for _, a := range []string{"Quinn@Example.COM", " quinn@example.com", "ｑｕｉｎｎ@example.com", "QUINN@EXAMPLE.COM\t", "quinn@example.com"} {
		h.attempt(a, "192.0.2.21", authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "quinn@example.com", IP: "192.0.2.22"}); v.Action != authguard.Delay {
		t.Errorf("5 failures under 5 spellings: %v, want delay", v.Action)
	}
}

func TestStore_HoldsNoRawIdentifier(t *testing.T) {
	h := newHarness(t, "")
	accounts := []string{"raw-alice@example.com", "raw-bob"}
	ips := []string{"203.0.113.61", "2001:db8:77::5"}
	for _, a := range accounts {
		for _, ip := range ips {
			v := h.check(authguard.CheckRequest{Account: a, IP: ip, PasswordFingerprint: "raw-fingerprint"})
			h.report(authguard.ReportRequest{Account: a, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "raw-fingerprint"})
		}
	}
	keys := h.mem.Keys()
	if len(keys) == 0 {
		t.Fatal("no keys")
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "tg:default:login:") {
			t.Errorf("key %q lacks the tg:<tenant>:<flow>: prefix", k)
		}
		for _, raw := range append(append(accounts, ips...), "raw", "203.0.113", "2001:db8") {
			if strings.Contains(k, raw) {
				t.Errorf("key %q contains %q", k, raw)
			}
		}
	}
}

func TestBadInput_IsAnInputErrorAndChangesNothing(t *testing.T) {
	long := strings.Repeat("a", 257)
	checks := []struct {
		name  string
		req   authguard.CheckRequest
		field string
	}{
		{"unknown flow", authguard.CheckRequest{Flow: "nope", Account: "a", IP: "192.0.2.1"}, "flow"},
		{"empty account", authguard.CheckRequest{Flow: "login", Account: "  ", IP: "192.0.2.1"}, "account"},
		{"account over the cap", authguard.CheckRequest{Flow: "login", Account: long, IP: "192.0.2.1"}, "account"},
		{"account not UTF-8", authguard.CheckRequest{Flow: "login", Account: "a\xff", IP: "192.0.2.1"}, "account"},
		{"account with control character", authguard.CheckRequest{Flow: "login", Account: "a\x00b", IP: "192.0.2.1"}, "account"},
		{"invalid IP", authguard.CheckRequest{Flow: "login", Account: "a", IP: "999.1.1.1"}, "ip"},
		{"IPv6 with zone", authguard.CheckRequest{Flow: "login", Account: "a", IP: "fe80::1%eth0"}, "ip"},
		{"CIDR", authguard.CheckRequest{Flow: "login", Account: "a", IP: "192.0.2.0/24"}, "ip"},
		{"empty IP", authguard.CheckRequest{Flow: "login", Account: "a"}, "ip"},
		{"fingerprint over the cap", authguard.CheckRequest{Flow: "login", Account: "a", IP: "192.0.2.1", PasswordFingerprint: long}, "password_fingerprint"},
		{"device token over the cap", authguard.CheckRequest{Flow: "login", Account: "a", IP: "192.0.2.1", DeviceToken: strings.Repeat("x", 1025)}, "device_token"},
		{"bad tenant", authguard.CheckRequest{Tenant: "Bad Tenant", Flow: "login", Account: "a", IP: "192.0.2.1"}, "tenant"},
	}
	h := newHarness(t, "")
	for _, tt := range checks {
		_, err := h.e.Check(context.Background(), tt.req)
		var ie *authguard.InputError
		if !errors.As(err, &ie) || !errors.Is(err, authguard.ErrInvalidInput) || ie.Field != tt.field {
			t.Errorf("%s: err %v, want an InputError on %q", tt.name, err, tt.field)
		}
	}
	_, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: "a", IP: "192.0.2.1", Outcome: 9})
	if ie := (*authguard.InputError)(nil); !errors.As(err, &ie) || ie.Field != "outcome" {
		t.Errorf("invalid outcome: %v", err)
	}
	if n := h.store.calls.Load(); n != 0 {
		t.Errorf("bad input reached the store %d times", n)
	}
}

// FuzzCheckInput feeds arbitrary fields to Check and Report: never a panic;
// an error is always an *InputError, and a rejected call never reaches the
// store.
func FuzzCheckInput(f *testing.F) {
	f.Add("login", "alice@example.com", "192.0.2.1", "", "fp", false, uint8(1))
	f.Add("login", "ｑ", "::ffff:1.2.3.4", "eyJhbGciOiJIUzI1NiJ9.e30.x", "", true, uint8(2))
	f.Add("otp_verify", "\u0130", "fe80::1%eth0", "a.b.c", "\xff", false, uint8(0))
	f.Add("login", "\u00df\u0345", "2001:db8::1", "", "", false, uint8(3))
	h := newHarness(f, "")
	f.Fuzz(func(t *testing.T, flow, account, ip, token, fp string, solved bool, outcome uint8) {
		before := h.store.calls.Load()
		_, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: flow, Account: account, IP: ip, DeviceToken: token, PasswordFingerprint: fp, CaptchaSolved: solved})
		checkRejected(t, h, err, before)
		before = h.store.calls.Load()
		_, err = h.e.Report(context.Background(), authguard.ReportRequest{Flow: flow, Account: account, IP: ip, Attempt: token, DeviceToken: token, PasswordFingerprint: fp, Outcome: authguard.Outcome(outcome)})
		checkRejected(t, h, err, before)
	})
}

func checkRejected(t *testing.T, h *harness, err error, callsBefore int64) {
	t.Helper()
	if err == nil {
		return
	}
	var ie *authguard.InputError
	if !errors.As(err, &ie) || ie.Field == "" || ie.Detail == "" {
		t.Fatalf("error %v is not an InputError with field and detail", err)
	}
	if h.store.calls.Load() != callsBefore {
		t.Fatalf("rejected input (%v) reached the store", err)
	}
}

func TestLogin_OwnersSuccessDoesNotResetTheAttackersProgress(t *testing.T) {
	h := newHarness(t, "")
	for i := range 12 { // the attacker reaches a long delay
		h.clock.Advance(h.check(authguard.CheckRequest{Account: "uma", IP: "203.0.113.1"}).Delay)
		h.attempt("uma", fmt.Sprintf("203.0.113.%d", i+10), authguard.Failure, "")
	}
	before := h.check(authguard.CheckRequest{Account: "uma", IP: "203.0.113.99"}).Delay
	h.clock.Advance(before) // the owner, without cookies, waits, gets in and passes the second factor
	v := h.passStepUp("uma", "198.51.100.1", h.attempt("uma", "198.51.100.1", authguard.Success, ""))
	if v.DeviceToken == "" {
		t.Fatal("no device token")
	}
	// The attacker's delay had run out while the owner waited, so it gets
	// one attempt; had the success reset the counter it would get five.
	if v := h.attempt("uma", "203.0.113.98", authguard.Failure, ""); v.Action != authguard.Delay || v.Delay < before {
		t.Errorf("attacker's next failure after the owner's success: %v %v, want a delay of at least %v", v.Action, v.Delay, before)
	}
	// With the device token the success returned, the owner goes straight in.
	if v := h.check(authguard.CheckRequest{Account: "uma", IP: "198.51.100.1", DeviceToken: v.DeviceToken}); v.Action != authguard.Proceed {
		t.Errorf("owner with device token: %v", v.Action)
	}
}

// A check refused for one reason must not refresh another signal's window:
// hammering during a delay does not extend anything.
func TestSpray_HammeringDuringADelayDoesNotKeepAnAccountInTheWindow(t *testing.T) {
	h := newHarness(t, "flows:\n  login:\n    rules:\n      - {name: ip_spray, windows: [{window: 1h, limit: 2}]}\n      - {name: account_backoff, free: 1, base: 2h, max: 2h, forget_after: 3h}\n")
	h.attempt("a", "203.0.113.5", authguard.Failure, "")
	for m := 1; m <= 58; m++ {
		h.clock.Advance(time.Minute)
		if v := h.check(authguard.CheckRequest{Account: "a", IP: "203.0.113.5"}); v.Action != authguard.Delay {
			t.Fatalf("minute %d: %v, want delay", m, v.Action)
		}
	}
	h.clock.Advance(3 * time.Minute) // 61m: a's failure has left the hour
	for _, acct := range []string{"b", "c"} {
		if v := h.check(authguard.CheckRequest{Account: acct, IP: "203.0.113.5"}); v.Action != authguard.Proceed {
			t.Errorf("%s at 61m: %v %v, want proceed", acct, v.Action, v.Reasons)
		}
	}
}

func TestStoreErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("redisstore: %w: %w", authguard.ErrStoreUnavailable, context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("%w: %w", authguard.ErrStoreUnavailable, authguard.ErrCircuitOpen), "circuit_open"},
		{fmt.Errorf("%w: dial tcp: connection refused", authguard.ErrStoreUnavailable), "unavailable"},
		{timeoutErr{}, "timeout"},
		{fmt.Errorf("redisstore: op 0: %w: OOM command not allowed", authguard.ErrStoreFull), "full"},
	}
	for _, tt := range tests {
		if got := authguard.StoreErrorKind(tt.err); got != tt.want {
			t.Errorf("StoreErrorKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }
