package authguard_test

// Each test here is named after an attack by someone who has read the code,
// and pins the promise that attack would break. docs/design.md lists them.

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

const day = 24 * time.Hour

// guessFor runs one guess (check, and a failure report when it proceeds) and
// returns the verdict of the check.
func (h *harness) guessFor(req authguard.CheckRequest) authguard.Verdict {
	h.t.Helper()
	v := h.check(req)
	if v.Action == authguard.Proceed {
		h.report(authguard.ReportRequest{Flow: req.Flow, Account: req.Account, IP: req.IP,
			Outcome: authguard.Failure, Attempt: v.Attempt, DeviceToken: req.DeviceToken})
	}
	return v
}

// patient runs guesses for 24 hours, waiting out every delay and solving
// every CAPTCHA, and returns how many went ahead. next builds each guess.
func (h *harness) patient(next func(i int) authguard.CheckRequest) int {
	h.t.Helper()
	start, proceeded := h.clock.Now(), 0
	for i := 0; h.clock.Now().Sub(start) < day; i++ {
		req := next(i)
		v := h.guessFor(req)
		switch v.Action {
		case authguard.Proceed:
			proceeded++
		case authguard.Captcha:
			req.CaptchaSolved = true
			if h.guessFor(req).Action == authguard.Proceed {
				proceeded++
			}
		case authguard.Delay:
			h.clock.Advance(v.Delay)
		}
		if i > 1_000_000 {
			h.t.Fatal("runaway loop")
		}
	}
	return proceeded
}

func addr(i int) string { return netip.AddrFrom4([4]byte{203, 0, byte(i >> 8), byte(i)}).String() }

// Hole 1: an attacker who knows the password logs in again and again and
// uses each fresh device token for undelayed OTP guesses.
func TestOTP_FreshLoginsCannotBuyOTPGuesses(t *testing.T) {
	for _, tt := range []struct {
		name, policy string
	}{
		{"default: otp_verify trusts only its own tokens", ""},
		{"login and otp_verify share trust", "flows:\n  otp_verify:\n    device_trust: login\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.policy)
			guesses := h.patient(func(i int) authguard.CheckRequest {
				ip := addr(i % 5000)
				login := h.attempt("ann@example.com", ip, authguard.Success, "") // knows the password
				return authguard.CheckRequest{Flow: "otp_verify", Account: "ann@example.com", IP: ip, DeviceToken: login.DeviceToken}
			})
			bound, _ := h.e.Policy().Flow("otp_verify").MaxFailuresPerDay()
			t.Logf("%d OTP guesses in 24h (bound %d)", guesses, bound)
			if guesses > bound || bound > 100 {
				t.Errorf("%d OTP guesses in 24h, want at most the flow's bound %d (and that at most 100)", guesses, bound)
			}
		})
	}
}

// Hole 1, the other half: during that attack the owner's own device, known
// to otp_verify, still goes ahead at once.
func TestOTP_OwnersDeviceProceedsWhileAnAttackerGuesses(t *testing.T) {
	h := newHarness(t, "")
	v := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: "ann", IP: "198.51.100.9"})
	owner := h.report(authguard.ReportRequest{Flow: "otp_verify", Account: "ann", IP: "198.51.100.9", Outcome: authguard.Success, Attempt: v.Attempt})
	for i := range 200 {
		login := h.attempt("ann", addr(i), authguard.Success, "")
		if v := h.guessFor(authguard.CheckRequest{Flow: "otp_verify", Account: "ann", IP: addr(i), DeviceToken: login.DeviceToken}); v.Action == authguard.Delay {
			h.clock.Advance(time.Second)
		}
	}
	for i := range 3 {
		if v := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: "ann", IP: "198.51.100.9", DeviceToken: owner.DeviceToken}); v.Action != authguard.Proceed {
			t.Fatalf("owner's device, check %d: %v %v, want proceed", i, v.Action, v.Reasons)
		}
	}
}

// Hole 5: an attacker behind the owner's address (carrier NAT, office, the
// same /64) sprays accounts and floods checks; the owner, with a device
// token, is neither delayed nor challenged, and the sprayer is still stopped.
func TestDevice_SprayerOnTheOwnersAddressCannotSlowTheOwner(t *testing.T) {
	h := newHarness(t, "")
	const nat = "192.0.2.77"
	owner := h.attempt("olga@example.com", nat, authguard.Success, "").DeviceToken
	sprayed := 0
	for i := range 300 { // 300 accounts, then a flood, all from the NAT address
		if v := h.guessFor(authguard.CheckRequest{Account: fmt.Sprintf("victim%d@example.com", i), IP: nat}); v.Action == authguard.Proceed {
			sprayed++
		}
	}
	for range 60 {
		for range 21 { // 21 checks a second from that address
			h.check(authguard.CheckRequest{Account: "someone@example.com", IP: nat})
		}
		v := h.check(authguard.CheckRequest{Account: "olga@example.com", IP: nat, DeviceToken: owner})
		if v.Action != authguard.Proceed {
			t.Fatalf("owner with a device token: %v %v, want proceed", v.Action, v.Reasons)
		}
		h.report(authguard.ReportRequest{Account: "olga@example.com", IP: nat, Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: owner})
		h.clock.Advance(time.Second)
	}
	if sprayed > 20 {
		t.Errorf("sprayer checked %d accounts before a CAPTCHA, want at most 20", sprayed)
	}
}

// Hole 6: a thief with a stolen device token guesses for 24 hours while an
// untrusted attacker does too. All counters of the account together stay
// within the flow's bound, and the owner's other device is not slowed.
func TestDevice_StolenTokenCannotMultiplyTheBudget(t *testing.T) {
	h := newHarness(t, "")
	f := h.e.Policy().Flow("login")
	stolen := h.attempt("sam@example.com", "198.51.100.5", authguard.Success, "").DeviceToken
	other := h.attempt("sam@example.com", "198.51.100.6", authguard.Success, "").DeviceToken

	thief := h.patient(func(i int) authguard.CheckRequest {
		return authguard.CheckRequest{Account: "sam@example.com", IP: addr(i), DeviceToken: stolen}
	})
	if want := f.Rule("device_backoff").DeviceFree + f.Rule("device_backoff").Backoff.MaxFailuresIn(day); thief > want {
		t.Errorf("thief got %d guesses in 24h, want at most device_free + the shared counter's %d", thief, want)
	}
	h.clock.Set(h.clock.Now().Add(-day)) // the same day, now the untrusted attacker
	attacker := h.patient(func(i int) authguard.CheckRequest {
		return authguard.CheckRequest{Account: "sam@example.com", IP: addr(i)}
	})
	bound, _ := f.MaxFailuresPerDay()
	t.Logf("thief %d + attacker %d in 24h (bound %d)", thief, attacker, bound)
	if thief+attacker > bound || bound > 100 {
		t.Errorf("thief %d + attacker %d guesses, want at most %d (at most 100)", thief, attacker, bound)
	}
	for i := range 3 {
		if v := h.check(authguard.CheckRequest{Account: "sam@example.com", IP: "198.51.100.6", DeviceToken: other}); v.Action != authguard.Proceed {
			t.Fatalf("owner's other device, check %d: %v %v, want proceed", i, v.Action, v.Reasons)
		}
	}
}

// Hole 7: random /64s of one /48 spray fresh accounts for 24 hours.
func TestSpray_RandomSlash64sOfOneSlash48(t *testing.T) {
	h := newHarness(t, "")
	rng := rand.New(rand.NewPCG(7, 48))
	checked, n := 0, 20_000 // one every 4.32 s, 24 hours
	if testing.Short() {
		n = 5_000 // 6 hours: at 50 an hour the /48 reaches its day's 200 in the fourth
	}
	for i := range n {
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0x00, 0x42}
		for j := 6; j < 16; j++ {
			a[j] = byte(rng.Uint32())
		}
		if v := h.guessFor(authguard.CheckRequest{Account: fmt.Sprintf("user%d", i), IP: netip.AddrFrom16(a).String()}); v.Action == authguard.Proceed {
			checked++
		}
		h.clock.Advance(4320 * time.Millisecond)
	}
	if checked > 200 {
		t.Errorf("a /48 checked %d accounts in %v without a CAPTCHA, want at most 200", checked, time.Duration(n)*4320*time.Millisecond)
	}
}

// Hole 7: 6to4 addresses of one IPv4 address are that address.
func TestSpray_6to4AddressesCountAsTheirIPv4(t *testing.T) {
	h := newHarness(t, "")
	checked := 0
	for i := range 500 { // 500 /64s of 2002:c000:0207::/48, i.e. of 192.0.2.7
		ip := fmt.Sprintf("2002:c000:207:%x::1", i)
		if v := h.guessFor(authguard.CheckRequest{Account: fmt.Sprintf("user%d", i), IP: ip}); v.Action == authguard.Proceed {
			checked++
		}
	}
	if checked > 10 {
		t.Errorf("one IPv4 through 6to4 checked %d accounts at once, want at most 10 (ip_spray's hour)", checked)
	}
}

// Hole 8 and the bound of holes 1 and 6: the built-in flows' figures are
// the ones default_policy.yaml states, and within NIST's 100.
func TestPolicy_BuiltInFlowsStayWithinNIST(t *testing.T) {
	p := builtinpolicy.Policy()
	for _, tt := range []struct {
		flow                        string
		account, shared, everything int
	}{
		{"login", 62, 13, 90},
		{"otp_verify", 59, 13, 81},
	} {
		f := p.Flow(tt.flow)
		if got := f.Rule("account_backoff").Backoff.MaxFailuresIn(day); got != tt.account {
			t.Errorf("%s: account counter allows %d a day, the policy comment says %d", tt.flow, got, tt.account)
		}
		if got := f.Rule("device_backoff").Backoff.MaxFailuresIn(day); got != tt.shared {
			t.Errorf("%s: shared device counter allows %d a day, the policy comment says %d", tt.flow, got, tt.shared)
		}
		if got, ok := f.MaxFailuresPerDay(); !ok || got != tt.everything || got > 100 {
			t.Errorf("%s: %d failed checks a day in all, the policy comment says %d (NIST: at most 100)", tt.flow, got, tt.everything)
		}
	}
}

// Hole 8, measured on the engine: a patient OTP guesser, waiting out every
// delay.
func TestOTP_PatientGuesserStaysWithin100ADay(t *testing.T) {
	h := newHarness(t, "")
	got := h.patient(func(i int) authguard.CheckRequest {
		return authguard.CheckRequest{Flow: "otp_verify", Account: "ann", IP: addr(i)}
	})
	if want := h.e.Policy().Flow("otp_verify").Rule("account_backoff").Backoff.MaxFailuresIn(day); got != want {
		t.Errorf("patient OTP guesser: %d guesses in 24h, want the computed %d", got, want)
	}
}

// Hole 9: a caller that retries its report (a timeout, a queue redelivery)
// sends one success 12 times. The attempt settles once.
func TestReport_ReplayedSuccessSettlesOnce(t *testing.T) {
	worlds := [2]*harness{newHarness(t, ""), newHarness(t, "")}
	var probes [2][]authguard.Action
	for w, h := range worlds {
		for i := range 10 { // 10 failures, waiting out the delays
			h.clock.Advance(h.check(authguard.CheckRequest{Account: "rita", IP: addr(1)}).Delay)
			h.attempt("rita", addr(i), authguard.Failure, "")
		}
		h.clock.Advance(h.check(authguard.CheckRequest{Account: "rita", IP: addr(1)}).Delay)
		v := h.check(authguard.CheckRequest{Account: "rita", IP: "198.51.100.1"})
		replays := 1
		if w == 1 {
			replays = 12
		}
		for range replays {
			// After 10 failures the account is under attack: each replay
			// answers step_up with a ticket, never a device token.
			r := h.report(authguard.ReportRequest{Account: "rita", IP: "198.51.100.1", Outcome: authguard.Success, Attempt: v.Attempt})
			if r.Action != authguard.StepUp || r.Attempt == "" || r.DeviceToken != "" {
				t.Fatalf("a replayed success answered %v %v, want the same shape each time: step_up with a ticket", r.Action, r.Reasons)
			}
		}
		for i := range 6 {
			probes[w] = append(probes[w], h.guessFor(authguard.CheckRequest{Account: "rita", IP: addr(100 + i)}).Action)
		}
	}
	if fmt.Sprint(probes[0]) != fmt.Sprint(probes[1]) {
		t.Errorf("after 1 report: %v; after 12: %v — a replay changed the counter", probes[0], probes[1])
	}
	// The last delay had run out while the owner logged in: one attempt is
	// due, then the delay again — not 5 free attempts.
	if want := fmt.Sprint([]authguard.Action{authguard.Proceed, authguard.Delay, authguard.Delay, authguard.Delay, authguard.Delay, authguard.Delay}); fmt.Sprint(probes[1]) != want {
		t.Errorf("after 10 failures and a replayed success: %v, want %v", probes[1], want)
	}
}

// Hole 9, failures: a failure reported twice is counted once.
func TestReport_ReplayedFailureCountsOnce(t *testing.T) {
	h := newHarness(t, "")
	for range 4 {
		v := h.check(authguard.CheckRequest{Account: "ted", IP: addr(2)})
		for range 5 {
			h.report(authguard.ReportRequest{Account: "ted", IP: addr(2), Outcome: authguard.Failure, Attempt: v.Attempt})
		}
	}
	if v := h.guessFor(authguard.CheckRequest{Account: "ted", IP: addr(2)}); v.Action != authguard.Proceed {
		t.Fatalf("fifth attempt: %v, want proceed (4 failures, each counted once)", v.Action)
	}
	if v := h.check(authguard.CheckRequest{Account: "ted", IP: addr(2)}); v.Action != authguard.Delay {
		t.Fatalf("sixth attempt: %v, want delay", v.Action)
	}
}

// Hole 10: at 4 failures the owner logs in; the attacker's next probes must
// answer exactly as they do for an account that does not exist.
func TestLogin_OwnersSuccessIsInvisibleToTheAttacker(t *testing.T) {
	var seen [2][]string
	for w, account := range []string{"exists@example.com", "nobody@example.com"} {
		h := newHarness(t, "")
		for i := range 4 {
			h.attempt(account, addr(i), authguard.Failure, "")
		}
		h.clock.Advance(time.Minute)
		if w == 0 { // the owner, from home, without cookies
			h.attempt(account, "198.51.100.1", authguard.Success, "")
		}
		h.clock.Advance(time.Minute)
		for i := range 3 {
			v := h.guessFor(authguard.CheckRequest{Account: account, IP: addr(10 + i)})
			seen[w] = append(seen[w], fmt.Sprintf("%v %v", v.Action, v.Delay))
		}
	}
	if fmt.Sprint(seen[0]) != fmt.Sprint(seen[1]) {
		t.Errorf("attacker's view after the owner's login: %v; of an account nobody owns: %v", seen[0], seen[1])
	}
}

// TestLogin_AnOwnersLoginInProgressIsInvisibleWithItsDevice: an attacker
// keeps an account one failure short of its delays and probes it while its
// owner may be logging in, to learn whether the owner is there and whether
// the password was right. The owner's check reserves a failure until its
// report, so without a device token the probes do tell: that is the limit
// README states. With the device token its owner's success returned, the
// owner's check counts on the device's own allowance, and the attacker's
// view is the same whether the owner logs in and succeeds, fails, or is not
// there at all.
func TestLogin_AnOwnersLoginInProgressIsInvisibleWithItsDevice(t *testing.T) {
	const account = "victim@example.com"
	views := func(withDevice bool) (succeeds, fails, absent string) {
		var seen [3][]string
		for w := range 3 {
			h := newHarness(t, "")
			device := h.attempt(account, "198.51.100.1", authguard.Success, "").DeviceToken
			if !withDevice {
				device = ""
			}
			h.clock.Advance(time.Hour)
			for i := range 4 {
				h.attempt(account, addr(i), authguard.Failure, "")
			}
			h.clock.Advance(time.Minute)
			var owner authguard.Verdict
			if w < 2 {
				owner = h.check(authguard.CheckRequest{Account: account, IP: "198.51.100.1", DeviceToken: device})
			}
			h.clock.Advance(100 * time.Millisecond)
			v := h.check(authguard.CheckRequest{Account: account, IP: addr(50)})
			seen[w] = append(seen[w], fmt.Sprintf("%v %v", v.Action, v.Delay))
			if v.Action == authguard.Proceed {
				h.report(authguard.ReportRequest{Account: account, IP: addr(50), Outcome: authguard.Failure, Attempt: v.Attempt})
			}
			if w < 2 {
				out := []authguard.Outcome{authguard.Success, authguard.Failure}[w]
				h.report(authguard.ReportRequest{Account: account, IP: "198.51.100.1", Outcome: out, Attempt: owner.Attempt, DeviceToken: device})
			}
			h.clock.Advance(100 * time.Millisecond)
			v = h.check(authguard.CheckRequest{Account: account, IP: addr(51)})
			seen[w] = append(seen[w], fmt.Sprintf("%v %v", v.Action, v.Delay))
		}
		return fmt.Sprint(seen[0]), fmt.Sprint(seen[1]), fmt.Sprint(seen[2])
	}
	s, f, a := views(true)
	t.Logf("with the device: success %s, failure %s, nobody %s", s, f, a)
	if s != f || s != a {
		t.Errorf("with the owner's device the attacker tells apart a success %s, a failure %s and nobody %s", s, f, a)
	}
	s, f, a = views(false)
	t.Logf("without a device: success %s, failure %s, nobody %s", s, f, a)
	if s == a {
		t.Errorf("without a device a login in progress no longer shows (%s): README's limit is out of date", s)
	}
}

// Hole 4: 41 spellings of one account (invisible characters, bidi
// controls, tags, variation selectors, stacked marks, case and width) must
// not get 41 budgets: each is either the same counter or refused.
func TestNormalisation_InvisibleSpellingsShareOneBudget(t *testing.T) {
	h := newHarness(t, "")
	const visible = "victim@example.com"
	var spellings []string
	for _, r := range []rune{0x200B, 0x200C, 0x200D, 0x2060, 0x00AD, 0xFEFF, 0x034F, 0x180E,
		0x202E, 0x202D, 0x2066, 0x2069, 0x200E, 0x200F, 0xE0041, 0xE007F, 0xFE0F, 0xFE00, 0xE0100, 0x115F} {
		spellings = append(spellings, "vic"+string(r)+"tim@example.com", string(r)+visible)
	}
	spellings = append(spellings, "VICTIM@EXAMPLE.COM", "ｖｉｃｔｉｍ@example.com", " victim@example.com ",
		"victim@example.com\u0301\u0301", "victim@example.com\u0301\u0302\u0303\u0304\u0305")
	proceeded, refused := 0, 0
	for _, account := range append(spellings, visible) {
		for range 3 { // each spelling tries a few guesses
			v, err := h.e.Check(t.Context(), authguard.CheckRequest{Flow: "login", Account: account, IP: addr(len(account))})
			if err != nil {
				refused++
				break
			}
			if v.Action == authguard.Proceed {
				proceeded++
				h.report(authguard.ReportRequest{Account: account, IP: addr(len(account)), Outcome: authguard.Failure, Attempt: v.Attempt})
			}
		}
	}
	t.Logf("%d spellings: %d refused, %d guesses went ahead", len(spellings)+1, refused, proceeded)
	if f := h.e.Policy().Flow("login"); proceeded > f.Rule("account_backoff").Backoff.Free {
		t.Errorf("%d guesses went ahead at once over %d spellings, want at most the one account's %d free", proceeded, len(spellings)+1, f.Rule("account_backoff").Backoff.Free)
	}
}

// victimInBackoff returns an engine on a small memory store (2,000 keys, 4
// shards) whose victim@example.com has 10 failures, the delays waited out,
// and the delay its next check gets.
func victimInBackoff(t *testing.T) (*harness, *memstore.Store, authguard.Verdict) {
	t.Helper()
	clock := testclock.New(time.Time{})
	mem := memstore.New(memstore.Config{MaxEntries: 2000, Shards: 4, Now: clock.Now})
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: mem, Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: e, clock: clock, mem: mem}
	for i := range 10 {
		h.clock.Advance(h.check(authguard.CheckRequest{Account: "victim@example.com", IP: addr(i)}).Delay)
		h.attempt("victim@example.com", addr(i), authguard.Failure, "")
	}
	before := h.check(authguard.CheckRequest{Account: "victim@example.com", IP: addr(99)})
	if before.Action != authguard.Delay {
		t.Fatalf("victim after 10 failures: %v, want delay", before.Action)
	}
	return h, mem, before
}

// Hole 2: a flood of checks on made-up accounts from fresh IPv6 /64s tries
// to push a victim's counter, in backoff, out of a full memory store so that
// its next check has free attempts again.
func TestMemory_FreshSubjectFloodCannotResetAVictim(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of 100,000 checks: runs in the full make test, not under -short")
	}
	h, mem, before := victimInBackoff(t)
	for i := range 100_000 { // 50 times the store's size in fresh subjects
		a := [16]byte{0x2a, 0x00, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)} // a /48 of its own: no aggregate limit refuses it
		h.guessFor(authguard.CheckRequest{Account: fmt.Sprintf("made-up-%d@example.com", i), IP: netip.AddrFrom16(a).String()})
	}
	if st := mem.Stats(); st.Entries > 2000 || st.Evicted < 90_000 {
		t.Fatalf("store: %+v, want at most 2000 entries and the flood evicted", st)
	}
	if v := h.check(authguard.CheckRequest{Account: "victim@example.com", IP: addr(98)}); v.Action != authguard.Delay || v.Delay < before.Delay-time.Second {
		t.Errorf("victim after the flood: %v %v, want still the delay of about %v", v.Action, v.Delay, before.Delay)
	}
}

// Hole 2b: the same flood through the send flow. An e-mail code sent to a
// made-up address leaves that address's destination_backoff (free 1) at its
// limit: a key that restricts its subject, protected, one for each send, and
// nothing per address holds e-mail back. Before keys were grouped by rule a
// shard full of them evicted its least recently used protected key, the
// victim's login counter among them.
func TestMemory_EmailSendFloodCannotResetAVictim(t *testing.T) {
	h, mem, before := victimInBackoff(t)
	e := h.e
	sent := 0
	for i := range 6000 { // three times the store's size, each from a /64 of its own
		a := [16]byte{0x2a, 0x00, byte(i >> 8), byte(i)}
		v, err := e.Send(t.Context(), authguard.SendRequest{Destination: fmt.Sprintf("made-up-%d@example.com", i), Channel: "email", IP: netip.AddrFrom16(a).String()})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action == authguard.Proceed {
			sent++
		}
	}
	st := mem.Stats()
	t.Logf("%d of 6000 codes sent; store %+v", sent, st)
	if sent < 5000 || st.Protected < 1500 || st.EvictedProtected == 0 {
		t.Fatalf("the flood did not fill the store with protected keys (%d sent, %+v): the test no longer tests the attack", sent, st)
	}
	if v := h.check(authguard.CheckRequest{Account: "victim@example.com", IP: addr(98)}); v.Action != authguard.Delay || v.Delay < before.Delay-time.Second {
		t.Errorf("victim after the flood: %v %v, want still the delay of about %v", v.Action, v.Delay, before.Delay)
	}
}

// TestOTPVerify_ARepeatedWrongCodeIsCountedAgain: "same wrong password
// once" would let an attacker who gets a new code sent every few hours type
// the same few values again and again uncharged: each was wrong against an
// old code but is a new guess against the new one. otp_verify has no such
// window: every wrong code is counted.
func TestOTPVerify_ARepeatedWrongCodeIsCountedAgain(t *testing.T) {
	h := newHarness(t, "")
	const account = "victim@example.com"
	var got []string
	for i := range 5 {
		req := authguard.CheckRequest{Flow: "otp_verify", Account: account, IP: addr(i), PasswordFingerprint: "000000"}
		v := h.check(req)
		got = append(got, fmt.Sprint(v.Action))
		if v.Action == authguard.Proceed {
			h.report(authguard.ReportRequest{Flow: "otp_verify", Account: account, IP: addr(i), Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "000000"})
		}
	}
	if want := "[proceed proceed proceed delay delay]"; fmt.Sprint(got) != want {
		t.Errorf("one wrong code typed five times: %v, want %s (3 free, then delays)", got, want)
	}
}
