package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// entry adds an entry through h's engine; invalid input fails the test.
func (h *harness) entry(req authguard.EntryRequest) authguard.Entry {
	h.t.Helper()
	if req.TTL == 0 {
		req.TTL = time.Hour
	}
	if req.Reason == "" {
		req.Reason = "ticket 4711"
	}
	x, err := h.e.AddEntry(context.Background(), req)
	if err != nil {
		h.t.Fatalf("AddEntry %+v: %v", req, err)
	}
	return x
}

// TestEntries_BlockedRangeRefusesEveryAccountAlike: a block entry on a
// botnet's range answers every check from it with the same delay, until
// the entry expires, before any rule counts: an account that exists and
// one that does not get the same answer, and the store is not touched.
func TestEntries_BlockedRangeRefusesEveryAccountAlike(t *testing.T) {
	h := newHarness(t, "")
	h.attempt("alice", "198.51.100.1", authguard.Success, "") // alice exists
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", TTL: 2 * time.Hour})
	ops := h.store.ops.Load()
	var got []string
	for _, account := range []string{"alice", "no-such-user"} {
		v := h.check(authguard.CheckRequest{Account: account, IP: "203.0.113.77"})
		if v.Action != authguard.Delay || v.Delay != 2*time.Hour || fmt.Sprint(v.Reasons) != "[blocked]" {
			t.Errorf("%s from the blocked range: %v %v %v, want delay 2h [blocked]", account, v.Action, v.Delay, v.Reasons)
		}
		got = append(got, masked(v))
	}
	if got[0] != got[1] {
		t.Errorf("an account that exists and one that does not differ: %s vs %s", got[0], got[1])
	}
	if n := h.store.ops.Load() - ops; n != 0 {
		t.Errorf("refused checks ran %d store operations, want 0", n)
	}
	h.clock.Advance(time.Hour)
	if v := h.check(authguard.CheckRequest{Account: "bob", IP: "203.0.113.77"}); v.Delay != time.Hour {
		t.Errorf("an hour later: delay %v, want the hour left", v.Delay)
	}
	if v := h.check(authguard.CheckRequest{Account: "bob", IP: "203.0.114.1"}); v.Action != authguard.Proceed {
		t.Errorf("outside the range: %v, want proceed", v.Action)
	}
	if v := h.report(authguard.ReportRequest{Account: "bob", IP: "203.0.113.9", Outcome: authguard.Failure}); v.Action != authguard.Delay || fmt.Sprint(v.Reasons) != "[blocked]" {
		t.Errorf("a report from the range answers the next attempt's verdict: %v %v, want delay [blocked]", v.Action, v.Reasons)
	}
}

// TestEntries_AllowedOfficeSkipsIPRulesButNotAccountBackoff: an allow entry
// for an office's range lets 50 of its users fail without a CAPTCHA for
// the address, but an attacker inside the office still cannot guess one
// account's password faster than account_backoff allows.
func TestEntries_AllowedOfficeSkipsIPRulesButNotAccountBackoff(t *testing.T) {
	spray := func(h *harness) (captchas int) {
		for i := range 50 {
			if v := h.attempt(fmt.Sprint("user", i), "192.0.2.10", authguard.Failure, ""); v.Action == authguard.Captcha {
				captchas++
			}
		}
		return captchas
	}
	if n := spray(newHarness(t, "")); n == 0 {
		t.Fatal("without the entry the office got no CAPTCHA: the test shows nothing")
	}
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryAllow, IPRange: "192.0.2.0/24", Reason: "office move"})
	if n := spray(h); n != 0 {
		t.Errorf("allowed office: %d CAPTCHAs for 50 users, want 0", n)
	}
	for range 5 {
		h.attempt("target", "192.0.2.10", authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "target", IP: "192.0.2.10"}); v.Action != authguard.Delay || fmt.Sprint(v.Reasons) != "[account_backoff]" {
		t.Errorf("5 failures on one account from the allowed office: %v %v, want delay [account_backoff]", v.Action, v.Reasons)
	}
}

// TestEntries_LongestPrefixWins: an office allowed inside a blocked /16 is
// let through, and one address blocked inside the allowed office is not.
func TestEntries_LongestPrefixWins(t *testing.T) {
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "198.18.0.0/16"})
	h.entry(authguard.EntryRequest{Kind: authguard.EntryAllow, IPRange: "198.18.7.0/24"})
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "198.18.7.66"})
	for _, tt := range []struct {
		ip   string
		want authguard.Action
	}{{"198.18.9.1", authguard.Delay}, {"198.18.7.1", authguard.Proceed}, {"198.18.7.66", authguard.Delay}, {"198.19.0.1", authguard.Proceed}} {
		if v := h.check(authguard.CheckRequest{Account: "a", IP: tt.ip}); v.Action != tt.want {
			t.Errorf("%s: %v, want %v", tt.ip, v.Action, tt.want)
		}
	}
}

// TestEntries_6to4CannotEscapeABlockedIPv4: the 6to4, Teredo and
// IPv4-mapped forms of a blocked IPv4 address are blocked too; an allowed IPv4's 6to4 form is not
// allowed, since anyone on IPv6 can send from it.
func TestEntries_6to4CannotEscapeABlockedIPv4(t *testing.T) {
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "198.51.100.0/24"})
	h.entry(authguard.EntryRequest{Kind: authguard.EntryAllow, IPRange: "192.0.2.0/24"})
	ctx := context.Background()
	for _, ip := range []string{
		"2002:c633:6407::1",                    // 6to4 of 198.51.100.7
		"2001:0:4136:e378:8000:63bf:39cc:9bf8", // Teredo of 198.51.100.7 (the client's bits inverted)
		"::ffff:198.51.100.7",                  // IPv4-mapped
	} {
		v := h.check(authguard.CheckRequest{Account: "a", IP: ip})
		if got := fmt.Sprint(v.Action, " ", v.Reasons); got != "delay [blocked]" {
			t.Errorf("%s, a form of a blocked IPv4: %s, want delay [blocked]", ip, got)
		}
	}
	x, err := h.e.Explain(ctx, authguard.ExplainRequest{Flow: "login", IP: "2002:c000:0201::1"}) // 6to4 of 192.0.2.1
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Entries) != 0 {
		t.Errorf("the 6to4 form of an allowed IPv4 matched %d entries, want none", len(x.Entries))
	}
	if !hasRule(x, "ip_rate") {
		t.Error("the 6to4 form of an allowed IPv4 skips the IP rules")
	}
}

func hasRule(x authguard.Explanation, name string) bool {
	for _, r := range x.Rules {
		if r.Rule == name {
			return true
		}
	}
	return false
}

// TestEntries_CaptchaEntryPassesASolvedCaptcha: a captcha entry asks every
// client of the range for a CAPTCHA; a solved one goes on to the rules,
// which count it.
func TestEntries_CaptchaEntryPassesASolvedCaptcha(t *testing.T) {
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryCaptcha, IPRange: "2001:db8:aa::/48"})
	if v := h.check(authguard.CheckRequest{Account: "a", IP: "2001:db8:aa:1::9"}); v.Action != authguard.Captcha || fmt.Sprint(v.Reasons) != "[blocked]" {
		t.Errorf("captcha entry: %v %v, want captcha [blocked]", v.Action, v.Reasons)
	}
	for i := range 5 {
		v := h.check(authguard.CheckRequest{Account: "a", IP: "2001:db8:aa:1::9", CaptchaSolved: true})
		if v.Action != authguard.Proceed {
			t.Fatalf("solved CAPTCHA %d: %v, want proceed", i, v.Action)
		}
		h.report(authguard.ReportRequest{Account: "a", IP: "2001:db8:aa:1::9", Outcome: authguard.Failure, Attempt: v.Attempt})
	}
	if v := h.check(authguard.CheckRequest{Account: "a", IP: "2001:db8:aa:1::9", CaptchaSolved: true}); v.Action != authguard.Delay {
		t.Errorf("5 failures behind solved CAPTCHAs: %v, want delay (the rules still count)", v.Action)
	}
}

// TestEntries_ExpireOnTheirOwn: an entry stops applying when it expires,
// with no refresh and no removal.
func TestEntries_ExpireOnTheirOwn(t *testing.T) {
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", TTL: 10 * time.Minute})
	h.clock.Advance(10*time.Minute - time.Millisecond)
	if v := h.check(authguard.CheckRequest{Account: "a", IP: "203.0.113.1"}); v.Action != authguard.Delay || v.Delay != time.Millisecond {
		t.Errorf("1 ms before expiry: %v %v, want delay 1ms", v.Action, v.Delay)
	}
	h.clock.Advance(time.Millisecond)
	if v := h.check(authguard.CheckRequest{Account: "a", IP: "203.0.113.1"}); v.Action != authguard.Proceed {
		t.Errorf("at expiry: %v, want proceed", v.Action)
	}
	if l, err := h.e.ListEntries(context.Background(), "", ""); err != nil || len(l) != 0 {
		t.Errorf("ListEntries after expiry = %d entries, %v; want none", len(l), err)
	}
}

// TestEntries_AnotherInstanceAppliesThemOnceItRefreshes: entries live in
// the store, so an engine sharing it applies another's entry after
// RefreshEntries, and stops applying a removed one likewise.
func TestEntries_AnotherInstanceAppliesThemOnceItRefreshes(t *testing.T) {
	h := newHarness(t, "")
	other, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: h.store, Secret: secret, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func() authguard.Action {
		v, err := other.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "a", IP: "203.0.113.5"})
		if err != nil {
			t.Fatal(err)
		}
		return v.Action
	}
	x := h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24"})
	if got := check(); got != authguard.Proceed {
		t.Errorf("before its refresh the other instance answers %v, want proceed (it has not read the entry)", got)
	}
	if err := other.RefreshEntries(ctx); err != nil {
		t.Fatal(err)
	}
	if got := check(); got != authguard.Delay {
		t.Errorf("after its refresh: %v, want delay", got)
	}
	if ok, err := h.e.RemoveEntry(ctx, "", x.ID); !ok || err != nil {
		t.Fatalf("RemoveEntry = %v, %v", ok, err)
	}
	if err := other.RefreshEntries(ctx); err != nil {
		t.Fatal(err)
	}
	if got := check(); got != authguard.Proceed {
		t.Errorf("after the removal and a refresh: %v, want proceed", got)
	}
}

// TestEntries_StillAppliedWhileTheStoreIsDown: an instance keeps the
// entries it read while the store does not answer, so an outage is no way
// round a block.
func TestEntries_StillAppliedWhileTheStoreIsDown(t *testing.T) {
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24"})
	h.store.fail.Store(true)
	if err := h.e.RefreshEntries(context.Background()); err == nil {
		t.Error("RefreshEntries on a failing store: no error")
	}
	if v := h.check(authguard.CheckRequest{Account: "a", IP: "203.0.113.1"}); v.Action != authguard.Delay || fmt.Sprint(v.Reasons) != "[blocked]" {
		t.Errorf("store down: %v %v, want delay [blocked]", v.Action, v.Reasons)
	}
	if v := h.check(authguard.CheckRequest{Account: "a", IP: "198.51.100.1"}); v.Action != authguard.Proceed {
		t.Errorf("store down, outside the range: %v, want the fallback's proceed", v.Action)
	}
}

// TestEntries_TenantsAreApart: one tenant's entries neither apply to
// another's calls nor show in its list, and cannot be removed by it.
func TestEntries_TenantsAreApart(t *testing.T) {
	clock := testclock.New(time.Time{})
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{Now: clock.Now}),
		Secret: secret, Now: clock.Now, Tenants: []string{"shop", "bank"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x, err := e.AddEntry(ctx, authguard.EntryRequest{Tenant: "shop", Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", TTL: time.Hour, Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]authguard.Action{"shop": authguard.Delay, "bank": authguard.Proceed} {
		v, err := e.Check(ctx, authguard.CheckRequest{Tenant: tenant, Flow: "login", Account: "a", IP: "203.0.113.1"})
		if err != nil || v.Action != want {
			t.Errorf("%s: %v %v, want %v", tenant, v.Action, err, want)
		}
	}
	if l, _ := e.ListEntries(ctx, "bank", ""); len(l) != 0 {
		t.Errorf("bank lists %d entries, want 0", len(l))
	}
	if ok, _ := e.RemoveEntry(ctx, "bank", x.ID); ok {
		t.Error("bank removed shop's entry")
	}
	if l, _ := e.ListEntries(ctx, "shop", ""); len(l) != 1 {
		t.Errorf("shop lists %d entries, want 1", len(l))
	}
	if _, err := e.AddEntry(ctx, authguard.EntryRequest{Tenant: "other", Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", TTL: time.Hour, Reason: "r"}); !errors.Is(err, authguard.ErrInvalidInput) {
		t.Errorf("an unconfigured tenant: %v, want an input error", err)
	}
}

// TestEntries_BadInputChangesNothing: every malformed entry is an
// *InputError on the right field, and nothing is stored.
func TestEntries_BadInputChangesNothing(t *testing.T) {
	h := newHarness(t, "")
	for _, tt := range []struct {
		name  string
		req   authguard.EntryRequest
		field string
	}{
		{"no kind", authguard.EntryRequest{IPRange: "192.0.2.0/24"}, "kind"},
		{"no subject", authguard.EntryRequest{Kind: authguard.EntryBlock}, "ip_range"},
		{"two subjects", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24", Country: "FR"}, "ip_range"},
		{"host bits set", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.1/24"}, "ip_range"},
		{"too wide an IPv4 range", authguard.EntryRequest{Kind: authguard.EntryAllow, IPRange: "0.0.0.0/0"}, "ip_range"},
		{"too wide an IPv6 range", authguard.EntryRequest{Kind: authguard.EntryAllow, IPRange: "2000::/3"}, "ip_range"},
		{"zone", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "fe80::1%eth0"}, "ip_range"},
		{"mapped", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "::ffff:192.0.2.0/120"}, "ip_range"},
		{"garbage range", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24, 10.0.0.0/8"}, "ip_range"},
		{"prefix without +", authguard.EntryRequest{Kind: authguard.EntryBlock, DestinationPrefix: "4477009"}, "destination_prefix"},
		{"prefix too long", authguard.EntryRequest{Kind: authguard.EntryBlock, DestinationPrefix: "+1234567890123456"}, "destination_prefix"},
		{"country of three letters", authguard.EntryRequest{Kind: authguard.EntryBlock, Country: "FRA"}, "country"},
		{"country on a login flow", authguard.EntryRequest{Kind: authguard.EntryBlock, Country: "FR", Flow: "login"}, "flow"},
		{"unknown flow", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24", Flow: "nope"}, "flow"},
		{"no reason", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24", TTL: time.Hour, Reason: ""}, "reason"},
		{"a long reason", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24", Reason: strings.Repeat("x", 201)}, "reason"},
		{"too short", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24", TTL: time.Second}, "expires_in"},
		{"too long", authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "192.0.2.0/24", TTL: 31 * 24 * time.Hour}, "expires_in"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if req.TTL == 0 {
				req.TTL = time.Hour
			}
			if req.Reason == "" && tt.field != "reason" {
				req.Reason = "r"
			}
			_, err := h.e.AddEntry(context.Background(), req)
			var ie *authguard.InputError
			if !errors.As(err, &ie) || ie.Field != tt.field {
				t.Errorf("AddEntry: %v, want an input error on %s", err, tt.field)
			}
		})
	}
	if l, err := h.e.ListEntries(context.Background(), "", ""); err != nil || len(l) != 0 {
		t.Errorf("after bad input: %d entries, %v; want none", len(l), err)
	}
}

// TestEntries_AtMostMaxEntriesPerTenant: a tenant holds at most
// MaxEntries; more is refused until one expires or is removed.
func TestEntries_AtMostMaxEntriesPerTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("adds MaxEntries entries one by one: runs in the full make test, not under -short")
	}
	h := newHarness(t, "")
	var first authguard.Entry
	for i := range authguard.MaxEntries {
		x := h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)})
		if i == 0 {
			first = x
		}
	}
	req := authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "10.200.0.0/24", TTL: time.Hour, Reason: "r"}
	if _, err := h.e.AddEntry(context.Background(), req); !errors.Is(err, authguard.ErrTooManyEntries) {
		t.Fatalf("entry %d: %v, want ErrTooManyEntries", authguard.MaxEntries+1, err)
	}
	if ok, err := h.e.RemoveEntry(context.Background(), "", first.ID); !ok || err != nil {
		t.Fatalf("RemoveEntry = %v, %v", ok, err)
	}
	if _, err := h.e.AddEntry(context.Background(), req); err != nil {
		t.Errorf("after a removal: %v", err)
	}
}

// TestEntries_StoreHoldsNoRawRange: the store keeps an IP range and a
// destination prefix only as keyed hashes; listings say only their length.
func TestEntries_StoreHoldsNoRawRange(t *testing.T) {
	h := newHarness(t, "")
	for _, req := range []authguard.EntryRequest{
		{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24"},
		{Kind: authguard.EntryBlock, IPRange: "2001:db8:77::/48"},
		{Kind: authguard.EntryBlock, DestinationPrefix: "+4477009"},
	} {
		h.entry(req)
		h.clock.Advance(time.Second) // listed oldest first
	}
	values, err := h.mem.Entries(context.Background(), "tg:default:_admin:entries:v1")
	if err != nil || len(values) != 3 {
		t.Fatalf("Entries = %d, %v; want 3", len(values), err)
	}
	for _, v := range values {
		for _, raw := range []string{"203.0.113", "2001:db8", "4477009", "203", "7700"} {
			if strings.Contains(v, raw) {
				t.Errorf("stored entry %s contains %q", v, raw)
			}
		}
	}
	l, _ := h.e.ListEntries(context.Background(), "", "")
	got := []string{}
	for _, x := range l {
		got = append(got, fmt.Sprint(x.Scope, "/", x.Length, "/", x.IPv6))
	}
	if want := "[ip_range/24/false ip_range/48/true destination_prefix/7/false]"; fmt.Sprint(got) != want {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// TestEntries_ExplainSaysWhichEntryDecided: a support desk asking why an
// address is refused sees the entry, its reason and expiry.
func TestEntries_ExplainSaysWhichEntryDecided(t *testing.T) {
	h := newHarness(t, "")
	x := h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", Reason: "botnet, ticket 9"})
	got, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "login", IP: "203.0.113.4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 1 || got.Entries[0].ID != x.ID || got.Entries[0].Reason != "botnet, ticket 9" {
		t.Errorf("Entries = %+v, want the block", got.Entries)
	}
	if got.Verdict.Action != authguard.Delay || fmt.Sprint(got.Verdict.Reasons) != "[blocked]" {
		t.Errorf("Verdict = %v %v, want delay [blocked]", got.Verdict.Action, got.Verdict.Reasons)
	}
}

// TestEntries_FlowAndShadow: an entry for one flow leaves the others alone,
// and a shadow flow records a block but answers proceed.
func TestEntries_FlowAndShadow(t *testing.T) {
	h := newHarness(t, "flows:\n  otp_verify:\n    mode: shadow\n")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", Flow: "login"})
	if v := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: "a", IP: "203.0.113.1"}); v.Action != authguard.Proceed {
		t.Errorf("otp_verify under a login entry: %v, want proceed", v.Action)
	}
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24"})
	h.events = nil
	if v := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: "a", IP: "203.0.113.1"}); v.Action != authguard.Proceed {
		t.Errorf("shadow otp_verify: answered %v, want proceed", v.Action)
	}
	if ev := h.events[len(h.events)-1]; ev.Computed.Action != authguard.Delay {
		t.Errorf("shadow otp_verify computed %v, want delay", ev.Computed.Action)
	}
}

// TestEntries_BlockedCountryIsDeniedOthersAreNot: a country entry denies
// sends to that country's numbers and only those; e-mail has no country.
func TestEntries_BlockedCountryIsDeniedOthersAreNot(t *testing.T) {
	h := newHarness(t, "")
	fr := exampleNumber(t, "FR", phonenumbers.MOBILE)
	h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, Country: "fr"})
	h.entry(authguard.EntryRequest{Kind: authguard.EntryCaptcha, DestinationPrefix: "+447400"})
	for _, tt := range []struct {
		dest, channel, want string
	}{
		{fr, "sms", "deny [blocked]"},
		{fr, "voice", "deny [blocked]"},
		{victim, "sms", "captcha [blocked]"},
		{"+44 7911 123456", "sms", "proceed []"},
		{"someone@example.fr", "email", "proceed []"},
	} {
		v := h.send(authguard.SendRequest{Destination: tt.dest, Channel: tt.channel, IP: "198.51.100.1"})
		if got := fmt.Sprint(v.Action, " ", v.Reasons); got != tt.want {
			t.Errorf("%s by %s: %s, want %s", tt.dest, tt.channel, got, tt.want)
		}
	}
}

// TestEntries_AllowedBlockSkipsItsRulesNotTheDestinationQuota: an allow
// entry for a block of test numbers lets sequential numbers of it through
// prefix_destinations, but bombing one number of it still gets 10 codes a
// day (destination_daily), whoever asks.
func TestEntries_AllowedBlockSkipsItsRulesNotTheDestinationQuota(t *testing.T) {
	h := newHarness(t, "")
	h.entry(authguard.EntryRequest{Kind: authguard.EntryAllow, DestinationPrefix: "+44740012", TTL: 48 * time.Hour, Reason: "QA numbers"})
	rng := rand.New(rand.NewPCG(3, 4))
	sent := 0
	for i := range 40 {
		h.clock.Advance(time.Minute)
		v := h.send(authguard.SendRequest{Destination: fmt.Sprintf("+44 7400 123%03d", i), Channel: "sms", IP: addr(rng.IntN(60000))})
		if v.Action == authguard.Proceed {
			sent++
		}
	}
	if sent != 40 {
		t.Errorf("%d of 40 numbers of the allowed block got a code, want 40 (prefix_destinations would stop at 5)", sent)
	}
	if n := h.insistent(func(i int) authguard.SendRequest {
		return authguard.SendRequest{Destination: "+44 7400 123999", Channel: "sms", IP: addr(i % 1000)}
	}); n != 10 {
		t.Errorf("bombing one number of the allowed block: %d codes a day, want 10", n)
	}
}

// FuzzAddEntry: no input makes AddEntry panic; what it accepts it lists
// back as it was added, and what it refuses it does not store.
func FuzzAddEntry(f *testing.F) {
	for _, s := range [][4]string{
		{"203.0.113.0/24", "", "", "1h"}, {"2001:db8::/32", "", "", "30d"}, {"192.0.2.1", "", "", "1m"},
		{"", "+4477009", "", "7d"}, {"", "", "fr", "90m"}, {"fe80::1%eth0", "", "", "1h"},
		{"::ffff:1.2.3.4/128", "", "", "1h"}, {"", "+", "", "1h"}, {"", "", "001", "1h"}, {"1.2.3.4/33", "", "", "-1h"},
	} {
		f.Add(s[0], s[1], s[2], s[3], uint8(2))
	}
	h := newHarness(f, "")
	f.Fuzz(func(t *testing.T, ipRange, prefix, country, ttl string, kind uint8) {
		d, _ := time.ParseDuration(ttl)
		before, _ := h.e.ListEntries(context.Background(), "", "")
		x, err := h.e.AddEntry(context.Background(), authguard.EntryRequest{
			Kind: authguard.EntryKind(kind % 5), IPRange: ipRange, DestinationPrefix: prefix, Country: country, TTL: d, Reason: "fuzz",
		})
		after, _ := h.e.ListEntries(context.Background(), "", "")
		if err != nil {
			if len(after) != len(before) {
				t.Fatalf("a refused entry changed the list: %d → %d (%v)", len(before), len(after), err)
			}
			return
		}
		found := false
		for _, y := range after {
			if y.ID == x.ID {
				found = y.Scope == x.Scope && y.Length == x.Length && y.IPv6 == x.IPv6 && y.Country == x.Country && y.Kind == x.Kind && y.Expires.Equal(x.Expires)
			}
		}
		if !found {
			t.Fatalf("entry %+v is not listed as added", x)
		}
		if ok, err := h.e.RemoveEntry(context.Background(), "", x.ID); !ok || err != nil {
			t.Fatalf("RemoveEntry = %v, %v", ok, err)
		}
	})
}

// slowEntries holds the first Entries read it sees, after reading, until
// release is closed: a periodic refresh that read before a write.
type slowEntries struct {
	*countingStore
	first   atomic.Bool
	read    chan struct{}
	release chan struct{}
}

func (s *slowEntries) Entries(ctx context.Context, key string) ([]string, error) {
	v, err := s.countingStore.Entries(ctx, key)
	if s.first.CompareAndSwap(false, true) {
		close(s.read)
		<-s.release
	}
	return v, err
}

// TestEntries_AStaleRefreshCannotDropANewEntry: a refresh that read the
// entries before this instance added one finishes after the add; the
// instance still applies the new entry.
func TestEntries_AStaleRefreshCannotDropANewEntry(t *testing.T) {
	h := newHarness(t, "")
	slow := &slowEntries{countingStore: h.store, read: make(chan struct{}), release: make(chan struct{})}
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: slow, Secret: secret, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	done := make(chan error)
	go func() { done <- e.RefreshEntries(ctx) }()
	<-slow.read // the refresh has read: no entries
	if _, err := e.AddEntry(ctx, authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: "203.0.113.0/24", TTL: time.Hour, Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "a", IP: "203.0.113.1"})
	if err != nil || v.Action != authguard.Delay {
		t.Errorf("after a stale refresh finished: %v %v, want delay (the new entry)", v.Action, err)
	}
}

// TestEntries_MadeInOneMillisecondListInTheOrderMade: ListEntries promises
// oldest first; entries made while the clock stays in one millisecond
// (a script denying and allowing at once) must not come back in the order
// of their random ids.
func TestEntries_MadeInOneMillisecondListInTheOrderMade(t *testing.T) {
	h := newHarness(t, "")
	var made []string
	for i := range 12 {
		x := h.entry(authguard.EntryRequest{Kind: authguard.EntryBlock, IPRange: fmt.Sprintf("203.0.%d.0/24", i)})
		made = append(made, x.ID)
	}
	l, err := h.e.ListEntries(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, x := range l {
		listed = append(listed, x.ID)
	}
	if strings.Join(listed, " ") != strings.Join(made, " ") {
		t.Errorf("listed %v, want the order made %v", listed, made)
	}
}
