package authguard_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// heldHarness is an engine on a memory store with the held-subjects index
// on, whose store counts its calls.
type heldHarness struct {
	t     *testing.T
	e     *authguard.Engine
	clock *testclock.Clock
	store *countingStore
}

func newHeldHarness(t *testing.T, heldBytes int64) *heldHarness {
	t.Helper()
	return newHeldHarnessPolicy(t, heldBytes, "")
}

// newHeldHarnessPolicy is newHeldHarness on the policy policyYAML changes.
func newHeldHarnessPolicy(t *testing.T, heldBytes int64, policyYAML string) *heldHarness {
	t.Helper()
	h := &heldHarness{t: t, clock: testclock.New(time.Time{})}
	h.store = &countingStore{Store: memstore.New(memstore.Config{Now: h.clock.Now})}
	p, err := policyfile.LoadPolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	h.e, err = authguard.New(authguard.Config{Policy: p, Store: h.store, Secret: secret, Now: h.clock.Now, HeldBytes: heldBytes})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fail sends wrong passwords for account from ip until a check is held
// back, and returns how many failures that took.
func (h *heldHarness) failUntilHeld(account, ip string) int {
	h.t.Helper()
	ctx := context.Background()
	for i := range 50 {
		v, err := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip, CaptchaSolved: true})
		if err != nil {
			h.t.Fatal(err)
		}
		if v.Action != authguard.Proceed {
			return i
		}
		if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
			h.t.Fatal(err)
		}
	}
	h.t.Fatalf("50 failures did not hold the account back")
	return 0
}

func (h *heldHarness) list(req authguard.HeldListRequest) authguard.HeldPage {
	h.t.Helper()
	if err := h.e.FlushHeld(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	page, err := h.e.ListHeld(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	return page
}

func (h *heldHarness) action(account, ip string) authguard.Action {
	h.t.Helper()
	v, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: account, IP: ip, CaptchaSolved: true})
	if err != nil {
		h.t.Fatal(err)
	}
	return v.Action
}

func subjectsOf(page authguard.HeldPage) []string {
	var out []string
	for _, x := range page.Subjects {
		out = append(out, x.Subject)
	}
	slices.Sort(out)
	return out
}

var heldAccounts = []string{"alice@example.com", "bob@example.com", "carol@example.com"}

func TestHeld_TheOperatorListsTheAccountsHeldInLogin(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	for i, a := range heldAccounts {
		h.failUntilHeld(a, fmt.Sprintf("198.51.100.%d", i+1))
	}
	// dave fails once: under his free failures, he is held by nothing.
	ctx := context.Background()
	v, _ := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "Dave@Example.com", IP: "198.51.100.9"})
	h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "Dave@Example.com", IP: "198.51.100.9", Outcome: authguard.Failure, Attempt: v.Attempt})

	page := h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})
	if got, want := subjectsOf(page), heldAccounts; !slices.Equal(got, want) {
		t.Fatalf("held accounts in login = %q, want %q", got, want)
	}
	now := h.clock.Now()
	for _, x := range page.Subjects {
		if x.Flow != "login" || x.Kind != authguard.HeldAccount || x.Rule != "account_backoff" || !x.WaitUntil.After(now) || !x.Until.After(x.WaitUntil) {
			t.Errorf("entry %+v: want login, account, account_backoff, a wait still to run", x)
		}
	}
	if got := page.Counts["login:account"]; got != 3 {
		t.Errorf("Counts[login:account] = %d, want 3", got)
	}

	// Paged two at a time, the pages hold the three once each.
	first := h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount, Limit: 2})
	if len(first.Subjects) != 2 || first.Next == "" {
		t.Fatalf("first page of 2: %d subjects, next %q", len(first.Subjects), first.Next)
	}
	second := h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount, Limit: 2, Cursor: first.Next})
	if got := append(subjectsOf(first), subjectsOf(second)...); len(got) != 3 || second.Next != "" {
		t.Errorf("pages: %q then %q (next %q), want the three accounts once", subjectsOf(first), subjectsOf(second), second.Next)
	}

	// Once their waits have run out they are no longer listed.
	h.clock.Advance(48 * time.Hour)
	if got := h.list(authguard.HeldListRequest{Flow: "login"}).Subjects; len(got) != 0 {
		t.Errorf("after the holds ran out the index lists %d subjects, want 0", len(got))
	}
}

func TestHeld_BulkUnlockFreesEveryHeldAccountInOneCall(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	ips := map[string]string{}
	for i, a := range heldAccounts {
		ips[a] = fmt.Sprintf("198.51.100.%d", i+1)
		h.failUntilHeld(a, ips[a])
	}
	if err := h.e.FlushHeld(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dry, err := h.e.ResetHeld(ctx, authguard.HeldResetRequest{Flow: "login", Kind: authguard.HeldAccount, Reason: "ticket 12", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Matched != 3 || dry.Reset != 0 {
		t.Fatalf("dry run = %+v, want 3 matched and none reset", dry)
	}
	for _, a := range heldAccounts {
		if got := h.action(a, ips[a]); got == authguard.Proceed {
			t.Fatalf("after a dry run %s proceeds: a dry run changed state", a)
		}
	}
	res, err := h.e.ResetHeld(ctx, authguard.HeldResetRequest{Flow: "login", Kind: authguard.HeldAccount, Reason: "ticket 12"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 3 || res.Reset != 3 || res.Keys == 0 {
		t.Errorf("reset = %+v, want 3 matched, 3 reset, keys deleted", res)
	}
	for _, a := range heldAccounts {
		if got := h.action(a, ips[a]); got != authguard.Proceed {
			t.Errorf("after the bulk unlock %s gets %v, want proceed", a, got)
		}
	}
	if got := h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount}).Subjects; len(got) != 0 {
		t.Errorf("after the unlock the index lists %d accounts, want 0", len(got))
	}
}

func TestHeld_ResetByListFreesOnlyTheNamed(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	for i, a := range heldAccounts {
		h.failUntilHeld(a, fmt.Sprintf("198.51.100.%d", i+1))
	}
	h.e.FlushHeld(context.Background())
	res, err := h.e.ResetHeld(context.Background(), authguard.HeldResetRequest{Flow: "login", Subjects: []string{"bob@example.com"}, Reason: "owner called"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reset != 1 {
		t.Errorf("reset = %+v, want 1", res)
	}
	if got, want := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})), []string{"alice@example.com", "carol@example.com"}; !slices.Equal(got, want) {
		t.Errorf("still held = %q, want %q", got, want)
	}
	if got := h.action("alice@example.com", "198.51.100.1"); got == authguard.Proceed {
		t.Error("alice, not named, was freed")
	}
}

func TestHeld_AFloodOfHeldAttackersDoesNotGrowTheIndexPastItsBound(t *testing.T) {
	const bound = 4 << 10
	h := newHeldHarness(t, bound)
	const n = 120
	for i := range n {
		h.failUntilHeld(fmt.Sprintf("victim%d@example.com", i), fmt.Sprintf("10.%d.%d.1", i/200, i%200))
	}
	page := h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount, Limit: authguard.MaxHeldPage})
	held := len(page.Subjects)
	if held == 0 || held >= n {
		t.Fatalf("index holds %d of %d held accounts under a %d-byte bound, want some but not all", held, n, bound)
	}
	// Each entry is at least its field and a sealed value: about 150 bytes.
	if held*120 > bound {
		t.Errorf("index holds %d entries, more than %d bytes can", held, bound)
	}
	if s := h.e.HeldStats(); s.Dropped == 0 || s.Dropped+int64(held) < n {
		t.Errorf("stats = %+v with %d held: what was dropped is not counted", s, held)
	}
	// The index is a view: every account it dropped is still held back.
	for i := range n {
		if got := h.action(fmt.Sprintf("victim%d@example.com", i), fmt.Sprintf("10.%d.%d.1", i/200, i%200)); got == authguard.Proceed {
			t.Fatalf("victim%d proceeds: dropping its index entry freed it", i)
		}
	}
}

// heldCounter counts the index's writes of a store that keeps it.
type heldCounter struct {
	*countingStore
	puts atomic.Int64
}

func (c *heldCounter) PutHeld(context.Context, string, []authguard.HeldRecord, int64, time.Time) (int, error) {
	c.puts.Add(1)
	return 0, nil
}
func (c *heldCounter) ListHeld(context.Context, string, time.Time) ([]authguard.HeldRecord, error) {
	return nil, nil
}
func (c *heldCounter) DeleteHeld(context.Context, string, []string) error { return nil }

func TestHeld_ACheckThatHoldsNobodyWritesNothing(t *testing.T) {
	run := func(heldBytes int64) (calls, puts int64) {
		clock := testclock.New(time.Time{})
		store := &heldCounter{countingStore: &countingStore{Store: memstore.New(memstore.Config{Now: clock.Now})}}
		p, err := policyfile.LoadPolicy(nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := authguard.New(authguard.Config{Policy: p, Store: store, Secret: secret, Now: clock.Now, HeldBytes: heldBytes})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range 100 {
			a, ip := fmt.Sprintf("user%d@example.com", i), fmt.Sprintf("203.0.113.%d", i)
			v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: a, IP: ip})
			if err != nil || v.Action != authguard.Proceed {
				t.Fatalf("check %d: %v %v", i, v.Action, err)
			}
			outcome := authguard.Success
			if i%2 == 0 {
				outcome = authguard.Failure // one failure holds no one
			}
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: outcome, Attempt: v.Attempt}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.FlushHeld(ctx); err != nil {
			t.Fatal(err)
		}
		return store.calls.Load(), store.puts.Load()
	}
	offCalls, _ := run(0)
	onCalls, puts := run(authguard.DefaultHeldBytes)
	if puts != 0 {
		t.Errorf("100 logins that held nobody wrote the index %d times, want 0", puts)
	}
	if onCalls != offCalls {
		t.Errorf("with the index on the store was called %d times, off %d: want no extra call", onCalls, offCalls)
	}
}

func TestHeld_AnAddressOverItsSprayLimitIsListedAsAnIP(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	ctx := context.Background()
	const ip = "192.0.2.77"
	held := false
	for i := range 200 {
		a := fmt.Sprintf("sprayed%d@example.com", i)
		v, err := h.e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: a, IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Proceed {
			held = true
			break
		}
		h.e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
	}
	if !held {
		t.Fatal("200 accounts sprayed from one address were never held back")
	}
	page := h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldIP})
	if got := subjectsOf(page); !slices.Equal(got, []string{ip}) {
		t.Errorf("held addresses = %q, want [%s]", got, ip)
	}
}

func TestHeld_BadInputIsRefusedAndChangesNothing(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	h.failUntilHeld("alice@example.com", "198.51.100.1")
	ctx := context.Background()
	for _, req := range []authguard.HeldListRequest{{Flow: "nope"}, {Limit: -1}, {Limit: 1001}, {Cursor: "!!"}, {Cursor: "YWJj"}} {
		if _, err := h.e.ListHeld(ctx, req); !isInputError(err) {
			t.Errorf("ListHeld(%+v) = %v, want an input error", req, err)
		}
	}
	for _, req := range []authguard.HeldResetRequest{{Reason: "x"}, {Flow: "login"}, {Flow: "login", Reason: "x", Subjects: []string{""}}} {
		if _, err := h.e.ResetHeld(ctx, req); !isInputError(err) {
			t.Errorf("ResetHeld(%+v) = %v, want an input error", req, err)
		}
	}
	if got := h.action("alice@example.com", "198.51.100.1"); got == authguard.Proceed {
		t.Error("a refused reset freed alice")
	}
}

func TestHeld_OffByDefault(t *testing.T) {
	h := newHeldHarness(t, 0)
	if _, err := h.e.ListHeld(context.Background(), authguard.HeldListRequest{}); err != authguard.ErrHeldOff {
		t.Errorf("ListHeld with the index off = %v, want ErrHeldOff", err)
	}
}

func isInputError(err error) bool {
	_, ok := err.(*authguard.InputError)
	return ok
}

func FuzzParseHeldCursor(f *testing.F) {
	for _, s := range []string{"", "bG9naW46YWNjb3VudDpoYXNo", "!!", "YWJj", "bG9naW46YWNjb3VudDo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		field, err := authguard.ParseHeldCursor(c)
		if err != nil {
			if _, ok := err.(*authguard.InputError); !ok {
				t.Fatalf("error %v is not an input error", err)
			}
			return
		}
		if c != "" && len(field) > 256 {
			t.Fatalf("a cursor of %d bytes decoded", len(field))
		}
	})
}

func TestHeld_AOneSubjectResetTakesItOutOfTheIndex(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	for i, a := range heldAccounts {
		h.failUntilHeld(a, fmt.Sprintf("198.51.100.%d", i+1))
	}
	if _, err := h.e.Reset(context.Background(), authguard.ResetRequest{Flow: "login", Account: "Bob@Example.com", Reason: "owner called"}); err != nil {
		t.Fatal(err)
	}
	if got, want := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})), []string{"alice@example.com", "carol@example.com"}; !slices.Equal(got, want) {
		t.Errorf("after bob's reset the index lists %q, want %q", got, want)
	}
	// Held again, he is listed again.
	h.failUntilHeld("bob@example.com", "198.51.100.2")
	if got := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})); len(got) != 3 {
		t.Errorf("bob held again: the index lists %q, want the three", got)
	}
}

// A password change clears the account's password counters without the
// operator's Reset: the index must not go on listing the owner as held
// (an operator bulk-unlocking the list would reset her for nothing, and
// the list would overstate who an attack holds) until its entry expires.
func TestHeld_APasswordChangeTakesTheAccountOutOfTheIndex(t *testing.T) {
	h := newHeldHarness(t, authguard.DefaultHeldBytes)
	for i, a := range heldAccounts {
		h.failUntilHeld(a, fmt.Sprintf("198.51.100.%d", i+1))
	}
	if got := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})); len(got) != 3 {
		t.Fatalf("the index lists %q, want the three", got)
	}
	if _, err := h.e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: "Bob@Example.com", IP: "203.0.113.9", Outcome: authguard.PasswordChanged}); err != nil {
		t.Fatal(err)
	}
	if got, want := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})), []string{"alice@example.com", "carol@example.com"}; !slices.Equal(got, want) {
		t.Errorf("after bob's password change the index lists %q, want %q", got, want)
	}
	// Held again, he is listed again.
	h.failUntilHeld("bob@example.com", "198.51.100.2")
	if got := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})); len(got) != 3 {
		t.Errorf("bob held again: the index lists %q, want the three", got)
	}
}

// A passkey success that success_clears the password's counters frees
// the account in login: the index lists it no more. Without the policy's
// success_clears the same success clears nothing and it stays listed.
func TestHeld_ASuccessThatClearsAnotherFlowTakesTheAccountOutOfItsIndex(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy string
		want   []string
	}{
		{"the default clears nothing", "", []string{"alice@example.com", "bob@example.com", "carol@example.com"}},
		{"success_clears: [login]", "flows:\n  passkey:\n    success_clears: [login]\n", []string{"alice@example.com", "carol@example.com"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHeldHarnessPolicy(t, authguard.DefaultHeldBytes, tt.policy)
			for i, a := range heldAccounts {
				h.failUntilHeld(a, fmt.Sprintf("198.51.100.%d", i+1))
			}
			ctx := context.Background()
			v, err := h.e.Check(ctx, authguard.CheckRequest{Flow: "passkey", Account: "Bob@Example.com", IP: "203.0.113.9"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.e.Report(ctx, authguard.ReportRequest{Flow: "passkey", Account: "Bob@Example.com", IP: "203.0.113.9", Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
				t.Fatal(err)
			}
			if got := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})); !slices.Equal(got, tt.want) {
				t.Errorf("after bob's passkey success the index lists %q, want %q", got, tt.want)
			}
		})
	}
}

// gatedHeld is a store that keeps the index, whose writes wait until gate
// is closed: the write-behind's lag, made as long as the test wants.
type gatedHeld struct {
	*countingStore
	gate chan struct{}
	mu   sync.Mutex
	recs map[string]authguard.HeldRecord
}

func (g *gatedHeld) PutHeld(_ context.Context, _ string, recs []authguard.HeldRecord, _ int64, _ time.Time) (int, error) {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range recs {
		g.recs[r.Field] = r
	}
	return 0, nil
}
func (g *gatedHeld) ListHeld(context.Context, string, time.Time) ([]authguard.HeldRecord, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []authguard.HeldRecord
	for _, r := range g.recs {
		out = append(out, r)
	}
	return out, nil
}
func (g *gatedHeld) DeleteHeld(_ context.Context, _ string, fields []string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range fields {
		delete(g.recs, f)
	}
	return nil
}

// On a store that keeps the index (Redis), the write of the check that
// found the owner held waits in the write-behind queue. Her password
// change right after must not be undone by that write landing after its
// delete: the delete waits behind it.
func TestHeld_AWriteStillQueuedDoesNotListAnAccountAPasswordChangeCleared(t *testing.T) {
	clock := testclock.New(time.Time{})
	store := &gatedHeld{countingStore: &countingStore{Store: memstore.New(memstore.Config{Now: clock.Now})},
		gate: make(chan struct{}), recs: map[string]authguard.HeldRecord{}}
	p, err := policyfile.LoadPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: store, Secret: secret, Now: clock.Now, HeldBytes: authguard.DefaultHeldBytes})
	if err != nil {
		t.Fatal(err)
	}
	h := &heldHarness{t: t, e: e, clock: clock, store: store.countingStore}
	h.failUntilHeld("bob@example.com", "198.51.100.2") // its index write waits at the gate
	if _, err := e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: "bob@example.com", IP: "203.0.113.9", Outcome: authguard.PasswordChanged}); err != nil {
		t.Fatal(err)
	}
	close(store.gate)
	if got := subjectsOf(h.list(authguard.HeldListRequest{Flow: "login", Kind: authguard.HeldAccount})); len(got) != 0 {
		t.Errorf("after bob's password change the index lists %q, want no one", got)
	}
}
