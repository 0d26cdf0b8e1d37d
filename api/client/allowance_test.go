package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// downURL is an address where tollgate was and nothing listens any more:
// every call is refused.
func downURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// refusing is an http.RoundTripper for which tollgate is down: it fails
// every call at once, without a network, for tests that make many.
type refusing struct{}

func (refusing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection refused")
}

// downClient is a client of a tollgate that is down, on clock, with cfg's
// other fields; fast uses the refusing transport instead of a closed port.
func downClient(t *testing.T, clock *testclock.Clock, fast bool, cfg client.Config) *client.Client {
	t.Helper()
	cfg.Now = clock.Now
	if fast {
		cfg.HTTPClient = &http.Client{Transport: refusing{}}
	}
	return newClient(t, downURL(t), cfg)
}

// attackerIP is the i-th of many IPv4 addresses an attacker rotates
// through.
func attackerIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }

// wantAllowanceDelay checks that v is FailOpen's answer past its
// allowance: a fallback delay of delay, with both reasons and no token.
func wantAllowanceDelay(t *testing.T, v client.Verdict, delay time.Duration) {
	t.Helper()
	if !v.Fallback || v.Action != wire.ActionDelay || v.DelayMS != delay.Milliseconds() || v.RetryAfter != int64(delay/time.Second) ||
		v.Attempt != "" || v.DeviceToken != "" || !slices.Equal(v.Reasons, []string{client.ReasonFallback, client.ReasonFallbackAllowance}) {
		t.Errorf("verdict = %+v, want a fallback delay of %v with reasons %s, %s", v, delay, client.ReasonFallback, client.ReasonFallbackAllowance)
	}
}

// proceeded checks a FailOpen verdict while tollgate is down: a fallback
// proceed, or the allowance's delay. It reports whether it proceeded.
func proceeded(t *testing.T, v client.Verdict, err error) bool {
	t.Helper()
	if !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("error = %v, want ErrUnavailable", err)
	}
	if v.Action == wire.ActionProceed {
		wantFallback(t, v, wire.ActionProceed)
		return true
	}
	wantAllowanceDelay(t, v, client.FallbackDelay)
	return false
}

// wantStats compares the counters of c's Stats (not the tracked sizes)
// with want's.
func wantStats(t *testing.T, c *client.Client, want client.Stats) {
	t.Helper()
	got := c.Stats()
	if got.FailOpenProceeds != want.FailOpenProceeds || got.FailOpenRefusedAccount != want.FailOpenRefusedAccount ||
		got.FailOpenRefusedAddress != want.FailOpenRefusedAddress {
		t.Errorf("Stats = %+v, want proceeds %d, refused for the account %d, for the address %d", got,
			want.FailOpenProceeds, want.FailOpenRefusedAccount, want.FailOpenRefusedAddress)
	}
}

// The brute force of issue 21 while tollgate is down: 100 checks a second
// on one account, each from another address. A FailOpen client lets the
// allowance through, exactly, and delays the rest as FailDelay would.
func TestClient_FailOpenDuringAnOutageLetsThroughAtMostTheAllowancePerAccount(t *testing.T) {
	clock := testclock.New(testclock.Epoch)
	c := downClient(t, clock, false, client.Config{})
	var got []bool
	for i := range 100 {
		v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(i)}, client.FailOpen)
		got = append(got, proceeded(t, v, err))
		noSecrets(t, err)
		clock.Advance(10 * time.Millisecond)
	}
	want := make([]bool, 100)
	for i := range client.DefaultFailOpenPerAccount {
		want[i] = true
	}
	if !slices.Equal(got, want) {
		t.Errorf("proceeds = %v, want the first %d only", got, client.DefaultFailOpenPerAccount)
	}
	wantStats(t, c, client.Stats{FailOpenProceeds: 5, FailOpenRefusedAccount: 95})
	if s := c.Stats(); s.TrackedAccounts != 1 || s.TrackedAddresses != 5 || s.Evicted != 0 {
		t.Errorf("Stats = %+v, want 1 account and the 5 addresses that proceeded tracked", s)
	}
}

// Spelling the account otherwise (case, white space) gets no fresh
// allowance; neither does a phone number spelt otherwise, or sent on
// another channel, for a send.
func TestClient_FailOpenAllowanceCannotBeDodgedByRespellingTheAccount(t *testing.T) {
	c := downClient(t, testclock.New(testclock.Epoch), false, client.Config{})
	ctx := context.Background()
	for i := range 5 {
		v, err := c.Check(ctx, wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(i)}, client.FailOpen)
		if !proceeded(t, v, err) {
			t.Fatalf("check %d was refused within the allowance", i+1)
		}
	}
	for i, account := range []string{"ALICE@EXAMPLE.COM", "Alice@Example.com", " alice@example.com", "alice@example.com\t", "\u00a0Alice@example.com"} {
		v, err := c.Check(ctx, wire.CheckRequest{Flow: "login", Account: account, IP: attackerIP(100 + i)}, client.FailOpen)
		if proceeded(t, v, err) {
			t.Errorf("%q got a fresh allowance", account)
		}
	}
	for i := range 5 {
		v, err := c.SendOTP(ctx, wire.SendRequest{Destination: aliceSMS, Channel: wire.ChannelSMS, IP: attackerIP(200 + i)}, client.FailOpen)
		if !proceeded(t, v, err) {
			t.Fatalf("send %d was refused within the allowance", i+1)
		}
	}
	for i, req := range []wire.SendRequest{
		{Destination: "+447400123456", Channel: wire.ChannelSMS},
		{Destination: "+44-7400-123456", Channel: wire.ChannelSMS},
		{Destination: aliceSMS, Channel: wire.ChannelVoice},
		{Destination: aliceSMS, Channel: wire.ChannelWhatsApp},
	} {
		req.IP = attackerIP(300 + i)
		v, err := c.SendOTP(ctx, req, client.FailOpen)
		if proceeded(t, v, err) {
			t.Errorf("%+v got a fresh allowance", req)
		}
	}
}

// fiveSpellings are one account written five ways that tollgate counts as
// one (authguard.NormalizeAccount gives alice for each): full-width
// letters, a zero-width joiner, a zero-width non-joiner, İ (whose case fold
// is i and a dot above, the dot dropped) and a full-width capital.
var fiveSpellings = []string{
	"\uff41\uff4c\uff49\uff43\uff45@example.com",
	"al\u200dice@example.com",
	"al\u200cice@example.com",
	"al\u0130ce@example.com",
	"\uff21lice@example.com",
}

// The allowance folds an account as tollgate does, so that the spellings
// it counts as one share one allowance during an outage: 5 proceeds for
// the five spellings, where a fold of case and white space alone gave each
// its own 5 (25).
func TestFailOpen_FiveSpellingsOfOneAccountShareOneAllowance(t *testing.T) {
	for _, s := range fiveSpellings {
		if got, err := authguard.NormalizeAccount(s); got != alice || err != nil {
			t.Fatalf("NormalizeAccount(%+q) = %q, %v: not one account to tollgate", s, got, err)
		}
	}
	c := downClient(t, testclock.New(testclock.Epoch), true, client.Config{})
	n := 0
	for i, account := range fiveSpellings {
		for j := range client.DefaultFailOpenPerAccount {
			v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: account, IP: attackerIP(i*10 + j)}, client.FailOpen)
			if proceeded(t, v, err) {
				n++
			}
		}
	}
	if n != client.DefaultFailOpenPerAccount {
		t.Errorf("the five spellings got %d fallback proceeds, want %d", n, client.DefaultFailOpenPerAccount)
	}
}

// Spraying during an outage: many accounts from one address (or from one
// IPv6 /64, whose addresses one subscriber holds). The address gets its
// allowance, the rest are delayed.
func TestClient_FailOpenAllowancePerAddressStopsSprayingDuringAnOutage(t *testing.T) {
	tests := []struct {
		name string
		ip   func(i int) string
	}{
		{"one IPv4 address", func(int) string { return "192.0.2.66" }},
		{"an IPv4 address, mapped or not", func(i int) string { return [2]string{"192.0.2.66", "::ffff:192.0.2.66"}[i%2] }},
		{"rotating within one IPv6 /64", func(i int) string { return fmt.Sprintf("2001:db8:1:2:%x::%x", i, i+1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := downClient(t, testclock.New(testclock.Epoch), true, client.Config{})
			var n int
			for i := range 200 {
				req := wire.CheckRequest{Flow: "login", Account: fmt.Sprintf("user%d@example.com", i), IP: tt.ip(i)}
				v, err := c.Check(context.Background(), req, client.FailOpen)
				if proceeded(t, v, err) {
					n++
				}
			}
			if n != client.DefaultFailOpenPerAddress {
				t.Errorf("%d of 200 accounts sprayed proceeded, want %d", n, client.DefaultFailOpenPerAddress)
			}
			wantStats(t, c, client.Stats{FailOpenProceeds: 50, FailOpenRefusedAddress: 150})
			// The refused calls spent nothing of their accounts' allowance.
			if s := c.Stats(); s.TrackedAccounts != 50 || s.TrackedAddresses != 1 {
				t.Errorf("Stats = %+v, want the 50 accounts that proceeded and 1 address tracked", s)
			}
		})
	}
}

// allowanceStep is one step of a refill table: advance the clock, make
// checks on one account, and expect so many to proceed.
type allowanceStep struct {
	name     string
	advance  time.Duration
	checks   int
	proceeds int
}

// runAllowanceSteps runs steps against c, each check on alice from a
// fresh address.
func runAllowanceSteps(t *testing.T, c *client.Client, clock *testclock.Clock, steps []allowanceStep) {
	t.Helper()
	var ip int
	for _, st := range steps {
		clock.Advance(st.advance)
		var n int
		for range st.checks {
			v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(ip)}, client.FailOpen)
			ip++
			if proceeded(t, v, err) {
				n++
			}
		}
		if n != st.proceeds {
			t.Errorf("%s: %d of %d checks proceeded, want %d", st.name, n, st.checks, st.proceeds)
		}
	}
}

// A spent allowance comes back evenly over its window, never more than
// whole: an attacker who waits out an outage gets one guess per
// window/allowance, and an idle account does not bank proceeds.
func TestClient_FailOpenAllowanceRefillsAfterItsWindow(t *testing.T) {
	clock := testclock.New(testclock.Epoch)
	c := downClient(t, clock, false, client.Config{})
	runAllowanceSteps(t, c, clock, []allowanceStep{
		{"t=0: the allowance, then delays", 0, 7, 5},
		{"t=+5m59s: nothing back yet", 5*time.Minute + 59*time.Second, 1, 0},
		{"t=+6m: one back (30m / 5)", time.Second, 2, 1},
		{"t=+11m59s: the next not yet", 5*time.Minute + 59*time.Second, 1, 0},
		{"t=+36m: a window after the last proceed: whole again", 24*time.Minute + time.Second, 7, 5},
		{"t=+126m, after an idle hour and a half: whole, not more", 90 * time.Minute, 7, 5},
	})
	wantStats(t, c, client.Stats{FailOpenProceeds: 16, FailOpenRefusedAccount: 9})

	t.Run("a configured allowance", func(t *testing.T) {
		clock := testclock.New(testclock.Epoch)
		c := downClient(t, clock, false, client.Config{FailOpenPerAccount: 2, FailOpenWindow: time.Hour})
		runAllowanceSteps(t, c, clock, []allowanceStep{
			{"t=0: two", 0, 4, 2},
			{"t=+29m59s: none", 29*time.Minute + 59*time.Second, 1, 0},
			{"t=+30m: one", time.Second, 2, 1},
			{"t=+2h: two", 90 * time.Minute, 3, 2},
		})
	})
}

// An attacker who makes up accounts (and rotates addresses) during an
// outage cannot grow the client's memory past its cap, nor push out the
// account it is guessing on: a full table drops the subject closest to a
// full allowance, a made-up account used once before an exhausted one.
func TestClient_FailOpenMadeUpAccountsCannotGrowMemoryPastTheCap(t *testing.T) {
	clock := testclock.New(testclock.Epoch)
	c := downClient(t, clock, true, client.Config{})
	ctx := context.Background()
	check := func(account, ip string) bool {
		t.Helper()
		v, err := c.Check(ctx, wire.CheckRequest{Flow: "login", Account: account, IP: ip}, client.FailOpen)
		return proceeded(t, v, err)
	}
	for i := range 5 {
		check(alice, attackerIP(i))
	}
	if check(alice, aliceIP) {
		t.Fatal("the allowance did not hold before the rotation")
	}

	const made = client.DefaultFailOpenSubjects
	var before runtime.MemStats
	for round := range 3 {
		if round == 1 {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		for i := range made {
			n := round*made + i
			if !check(fmt.Sprintf("made-up-%d@example.com", n), attackerIP(1000+n)) {
				t.Fatalf("made-up account %d from a fresh address was refused", n)
			}
		}
		clock.Advance(time.Millisecond)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)

	s := c.Stats()
	if s.TrackedAccounts != made || s.TrackedAddresses != made {
		t.Errorf("after %d made-up accounts from as many addresses, Stats = %+v; want %d of each tracked", 3*made, s, made)
	}
	// Accounts: alice and 3 x made made-up ones; addresses: alice's 5 and
	// one per made-up account; made of each kept, alice among them.
	if want := uint64(3*made+1-made) + uint64(3*made+5-made); s.Evicted != want {
		t.Errorf("Evicted = %d, want %d", s.Evicted, want)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("the heap grew by %d bytes over %d made-up accounts past the cap, want it flat", grew, 2*made)
	}
	if check(alice, aliceIP) {
		t.Error("the rotation pushed the account under attack out: it got a fresh allowance")
	}
}

// While an attacker spends alice's allowance and sprays from one address,
// bob, whom nobody attacks, signs in from his own address during the
// outage, even after two typos. (Alice herself is held with her
// attacker: the client cannot tell them apart while tollgate is down.)
func TestClient_FailOpenOwnerOnAFreshAccountStillProceedsDuringTheOutage(t *testing.T) {
	clock := testclock.New(testclock.Epoch)
	c := downClient(t, clock, false, client.Config{})
	ctx := context.Background()
	for i := range 50 {
		c.Check(ctx, wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(i)}, client.FailOpen)
		c.Check(ctx, wire.CheckRequest{Flow: "login", Account: fmt.Sprintf("victim%d@example.com", i), IP: "192.0.2.66"}, client.FailOpen)
		c.Check(ctx, wire.CheckRequest{Flow: "login", Account: fmt.Sprintf("victim%d@example.com", i+50), IP: "192.0.2.66"}, client.FailOpen)
		clock.Advance(10 * time.Millisecond)
	}
	for i := range 3 {
		v, err := c.Check(ctx, wire.CheckRequest{Flow: "login", Account: "bob@example.com", IP: "203.0.113.99"}, client.FailOpen)
		if !proceeded(t, v, err) {
			t.Errorf("bob's attempt %d was refused", i+1)
		}
	}
	v, err := c.Check(ctx, login(), client.FailOpen)
	if proceeded(t, v, err) {
		t.Error("alice's account got past its spent allowance")
	}
}

// Parallel guesses during an outage cannot outrun the allowance: the
// account and the address are spent together, under one lock.
func TestClient_FailOpenParallelGuessesCannotOutrunTheAllowance(t *testing.T) {
	c := downClient(t, testclock.New(testclock.Epoch), false, client.Config{})
	var n atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(i)}, client.FailOpen)
			if proceeded(t, v, err) {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if got := n.Load(); got != client.DefaultFailOpenPerAccount {
		t.Errorf("%d of 100 parallel guesses proceeded, want %d", got, client.DefaultFailOpenPerAccount)
	}
	wantStats(t, c, client.Stats{FailOpenProceeds: 5, FailOpenRefusedAccount: 95})
}

// The flood of issue 21: tollgate sheds (503 overloaded, Retry-After) and
// a FailOpen caller used to let every shed guess through. Now the shed
// calls get the allowance, then the delay FailDelay answers them with
// (tollgate's Retry-After). The server answers as tollgate's shedding
// does, so that the test holds the client whatever the engine admits.
func TestClient_FailOpenShedFloodIsNotABypass(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"type":%q,"title":"Overloaded","status":503,"detail":"tollgate is shedding load"}`, wire.ProblemOverloaded)
	}))
	t.Cleanup(srv.Close)
	clock := testclock.New(testclock.Epoch)
	c := newClient(t, srv.URL, client.Config{Now: clock.Now})

	closed, err := c.Check(context.Background(), login(), client.FailDelay)
	var e *client.Error
	if !errors.As(err, &e) || e.Type != wire.ProblemOverloaded || closed.DelayMS != 2000 {
		t.Fatalf("FailDelay: %+v, %v; want a 2s delay for a 503 overloaded", closed, err)
	}
	var n int
	for i := range 100 {
		v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(i)}, client.FailOpen)
		if !errors.As(err, &e) || e.Type != wire.ProblemOverloaded || !errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("check %d: error = %v, want a 503 overloaded", i, err)
		}
		if v.Action == wire.ActionProceed {
			wantFallback(t, v, wire.ActionProceed)
			n++
			continue
		}
		wantAllowanceDelay(t, v, time.Duration(closed.DelayMS)*time.Millisecond)
		clock.Advance(time.Millisecond)
	}
	if n != client.DefaultFailOpenPerAccount {
		t.Errorf("%d of 100 shed guesses proceeded, want %d", n, client.DefaultFailOpenPerAccount)
	}
	wantStats(t, c, client.Stats{FailOpenProceeds: 5, FailOpenRefusedAccount: 95})
}

// With a limit turned off (a negative value) that limit never holds; with
// both off, FailOpen proceeds on every call as it did before the
// allowance, and Stats still counts them.
func TestClient_FailOpenAllowanceTurnedOff(t *testing.T) {
	tests := []struct {
		name       string
		cfg        client.Config
		oneAccount int // of 100 checks on alice from 100 addresses
		oneAddress int // of 100 checks on 100 accounts from one address
	}{
		{"both limits", client.Config{}, 5, 50},
		{"no account limit", client.Config{FailOpenPerAccount: -1}, 100, 50},
		{"no address limit", client.Config{FailOpenPerAddress: -1}, 5, 100},
		{"neither: the old FailOpen", client.Config{FailOpenPerAccount: -1, FailOpenPerAddress: -1}, 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := downClient(t, testclock.New(testclock.Epoch), true, tt.cfg)
			var a, b int
			for i := range 100 {
				if v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: alice, IP: attackerIP(i)}, client.FailOpen); proceeded(t, v, err) {
					a++
				}
				if v, err := c.Check(context.Background(), wire.CheckRequest{Flow: "login", Account: fmt.Sprint(i), IP: "192.0.2.66"}, client.FailOpen); proceeded(t, v, err) {
					b++
				}
			}
			if a != tt.oneAccount || b != tt.oneAddress {
				t.Errorf("one account: %d proceeds, one address: %d; want %d and %d", a, b, tt.oneAccount, tt.oneAddress)
			}
			if got := c.Stats().FailOpenProceeds; got != uint64(a+b) {
				t.Errorf("Stats().FailOpenProceeds = %d, want %d", got, a+b)
			}
		})
	}
}

// OTP bombing one number while tollgate is down: a FailOpen send gets the
// destination's allowance. Reports let no one in: FailOpen's fallback
// report always proceeds and spends nothing. And while tollgate answers,
// nothing is counted or tracked.
func TestClient_FailOpenAllowanceOnSendsNotReports(t *testing.T) {
	c := downClient(t, testclock.New(testclock.Epoch), false, client.Config{})
	ctx := context.Background()
	var sent int
	for i := range 100 {
		v, err := c.SendOTP(ctx, wire.SendRequest{Destination: aliceSMS, Channel: wire.ChannelSMS, IP: attackerIP(i)}, client.FailOpen)
		if proceeded(t, v, err) {
			sent++
		}
		noSecrets(t, err)
	}
	if sent != client.DefaultFailOpenPerAccount {
		t.Errorf("%d of 100 codes to one number were sent, want %d", sent, client.DefaultFailOpenPerAccount)
	}
	for i := range 100 {
		r, err := c.Report(ctx, wire.ReportRequest{Flow: "login", Account: alice, IP: aliceIP, Outcome: wire.OutcomeFailure}, client.FailOpen)
		if !errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("report %d: %v", i, err)
		}
		wantFallback(t, r, wire.ActionProceed)
	}
	wantStats(t, c, client.Stats{FailOpenProceeds: 5, FailOpenRefusedAccount: 95})
	if v, err := c.Check(ctx, login(), client.FailOpen); !proceeded(t, v, err) {
		t.Error("sends to alice's number and her reports spent her account's allowance")
	}

	t.Run("tollgate answers", func(t *testing.T) {
		ts := startTollgate(t)
		c := newClient(t, ts.URL, client.Config{})
		for range 10 {
			if v, err := c.Check(ctx, login(), client.FailOpen); err != nil || v.Fallback {
				t.Fatalf("Check = %+v, %v; want tollgate's verdict", v, err)
			}
		}
		if s := c.Stats(); s != (client.Stats{}) {
			t.Errorf("Stats = %+v, want nothing counted while tollgate answers", s)
		}
	})
}

// New refuses allowance settings it cannot use.
func TestNew_RefusesUnusableAllowance(t *testing.T) {
	tests := []struct {
		name string
		cfg  client.Config
	}{
		{"a negative window", client.Config{FailOpenWindow: -time.Minute}},
		{"a negative cap", client.Config{FailOpenSubjects: -1}},
		{"a window too short for its allowance", client.Config{FailOpenWindow: 10 * time.Nanosecond, FailOpenPerAddress: 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.BaseURL = "http://127.0.0.1"
			if c, err := client.New(tt.cfg); err == nil || c != nil {
				t.Errorf("New = %v, %v; want an error", c, err)
			}
		})
	}
	if _, err := client.New(client.Config{BaseURL: "http://127.0.0.1", FailOpenWindow: 10 * time.Nanosecond,
		FailOpenPerAccount: -1, FailOpenPerAddress: -1}); err != nil {
		t.Errorf("with both limits off, the window is unused: %v", err)
	}
}
