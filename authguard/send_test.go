package authguard_test

// One-time-code sends (POST /v1/otp/send) on the built-in otp_send flow.
// Each test is named after the attack that would break its promise.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// send asks for one send; invalid input fails the test.
func (h *harness) send(req authguard.SendRequest) authguard.Verdict {
	h.t.Helper()
	v, err := h.e.Send(context.Background(), req)
	if err != nil {
		h.t.Fatalf("send %+v: %v", req, err)
	}
	return v
}

// exampleNumber is libphonenumber's example number of a type in a region
// (or, for "", the first region that has one), in E.164.
func exampleNumber(t *testing.T, region string, typ phonenumbers.PhoneNumberType) string {
	t.Helper()
	regions := []string{region}
	if region == "" {
		regions = slices.Sorted(maps.Keys(phonenumbers.GetSupportedRegions()))
	}
	for _, r := range regions {
		if n := phonenumbers.GetExampleNumberForType(r, typ); n != nil {
			return phonenumbers.Format(n, phonenumbers.E164)
		}
	}
	t.Fatalf("no example %v number for %q", typ, region)
	return ""
}

// victim is a UK mobile number.
const victim = "+44 7400 123456"

// insistent asks for codes for 24 hours from next(i), waiting out every
// delay and solving every CAPTCHA, and returns how many were sent.
func (h *harness) insistent(next func(i int) authguard.SendRequest) int {
	h.t.Helper()
	start, sent := h.clock.Now(), 0
	for i := 0; h.clock.Now().Sub(start) < day; i++ {
		req := next(i)
		v := h.send(req)
		if v.Action == authguard.Captcha {
			req.CaptchaSolved = true
			v = h.send(req)
		}
		switch v.Action {
		case authguard.Proceed:
			sent++
			h.clock.Advance(time.Second)
		case authguard.Delay:
			h.clock.Advance(v.Delay)
		default:
			h.t.Fatalf("send %d: %v %v", i, v.Action, v.Reasons)
		}
		if i > 100_000 {
			h.t.Fatal("runaway loop")
		}
	}
	return sent
}

// TestSend_OTPBombingFromAThousandAddressesSendsTenADay: an attacker who
// asks for codes to one victim's phone from 1,000 addresses (and two
// channels), waiting out every delay and solving every CAPTCHA, gets 10
// codes sent in 24 hours, whoever asks from wherever.
func TestSend_OTPBombingFromAThousandAddressesSendsTenADay(t *testing.T) {
	h := newHarness(t, "")
	sent := h.insistent(func(i int) authguard.SendRequest {
		ch := "sms"
		if i%2 == 1 {
			ch = "voice"
		}
		return authguard.SendRequest{Destination: victim, Channel: ch, IP: addr(i % 1000)}
	})
	if sent != 10 {
		t.Errorf("%d codes sent to one phone in 24 hours, want 10 (destination_daily)", sent)
	}
}

// TestSend_OTPBombingSpellingsShareOneCounter: the same number spelled with
// spaces, dashes, dots and parentheses is one destination, so spelling it
// differently buys nothing.
func TestSend_OTPBombingSpellingsShareOneCounter(t *testing.T) {
	h := newHarness(t, "")
	spellings := []string{"+447400123456", "+44 7400 123456", "+44-7400-123-456", "+44 (7400) 123.456", "+44 7400123456"}
	if v := h.send(authguard.SendRequest{Destination: spellings[0], Channel: "sms", IP: addr(1)}); v.Action != authguard.Proceed {
		t.Fatalf("first code: %v %v", v.Action, v.Reasons)
	}
	for _, s := range spellings[1:] {
		v := h.send(authguard.SendRequest{Destination: s, Channel: "sms", IP: addr(2)})
		if v.Action != authguard.Delay || v.Reasons[0] != "destination_backoff" {
			t.Errorf("%q right after %q: %v %v, want a delay by destination_backoff", s, spellings[0], v.Action, v.Reasons)
		}
	}
}

// TestSend_OneInboxInManySpellingsGetsTenCodesADay: the bomber sent
// one Gmail inbox 30 of 30 codes at once in 30 +tag spellings (1,000 a day
// with 100 spellings, 32 times the budget with dots alone): each spelling
// was a destination of its own. Now the quota subject is the mailbox, so a
// day of sends through a hundred spellings, dots, tags and googlemail.com,
// from a thousand addresses, delivers 10.
func TestSend_OneInboxInManySpellingsGetsTenCodesADay(t *testing.T) {
	h := newHarness(t, "")
	spell := func(i int) string {
		local := "victim"
		if i%3 == 1 {
			local = "vic.tim"
		}
		domain := "gmail.com"
		if i%5 == 2 {
			domain = "GoogleMail.com"
		}
		return fmt.Sprintf("%s+%d@%s", local, i%100, domain)
	}
	sent := h.insistent(func(i int) authguard.SendRequest {
		return authguard.SendRequest{Destination: spell(i), Channel: "email", IP: addr(i % 1000)}
	})
	if sent != 10 {
		t.Errorf("%d codes sent to one inbox in 24 hours through 100 spellings, want 10 (destination_daily)", sent)
	}
}

// TestSend_ResendAfter30sGoesOut: a user who does not get the first code and
// asks again 30 seconds later gets the second at once; asking again at once
// waits out the rest of the 30 seconds, and nothing is counted for it.
func TestSend_ResendAfter30sGoesOut(t *testing.T) {
	h := newHarness(t, "")
	req := authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(7)}
	if v := h.send(req); v.Action != authguard.Proceed {
		t.Fatalf("first code: %v %v", v.Action, v.Reasons)
	}
	h.clock.Advance(10 * time.Second)
	v := h.send(req)
	if v.Action != authguard.Delay || v.Delay != 20*time.Second {
		t.Fatalf("resend after 10s: %v %v, want a delay of 20s", v.Action, v.Delay)
	}
	h.clock.Advance(20 * time.Second)
	if v := h.send(req); v.Action != authguard.Proceed {
		t.Fatalf("resend after 30s: %v %v %v, want proceed", v.Action, v.Delay, v.Reasons)
	}
	h.clock.Advance(30 * time.Second)
	if v := h.send(req); v.Action != authguard.Delay || v.Delay != 30*time.Second {
		t.Fatalf("third code 30s after the second: %v %v, want a delay of 30s more (1 minute after the second)", v.Action, v.Delay)
	}
}

// TestSend_PumpingPremiumRateNumbersSendsNothing: premium-rate and
// shared-cost numbers, where pumped messages earn money, are denied before
// any rule counts them, CAPTCHA or not, and the denial writes nothing.
func TestSend_PumpingPremiumRateNumbersSendsNothing(t *testing.T) {
	h := newHarness(t, "")
	for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST} {
		number := exampleNumber(t, "", typ)
		for i := range 50 {
			ops := h.store.ops.Load()
			v := h.send(authguard.SendRequest{Destination: number, Channel: "voice", IP: addr(i), CaptchaSolved: i%2 == 0})
			if v.Action != authguard.Deny || len(v.Reasons) != 1 || v.Reasons[0] != authguard.ReasonNumberType {
				t.Fatalf("type %v, send %d: %v %v, want deny number_type", typ, i, v.Action, v.Reasons)
			}
			if n := h.store.ops.Load() - ops; n != 0 {
				t.Fatalf("a denied send ran %d store operations", n)
			}
		}
	}
}

// TestSend_PumpingSequentialNumbersOfOneBlockStops: a botnet (a fresh
// address for every request) that does not solve CAPTCHAs walks once
// through 1,000 sequential mobile numbers of one block: prefix_destinations
// sends 5 in the first hour and 15 in 24 hours, then asks every request for
// a CAPTCHA. (Going round the block again is what the conversion rules
// hold: scenarios/otp-pumping-sequential.yaml.)
func TestSend_PumpingSequentialNumbersOfOneBlockStops(t *testing.T) {
	h := newHarness(t, "")
	rng := rand.New(rand.NewPCG(3, 4))
	sent, firstHour := 0, 0
	start := h.clock.Now()
	for i := range 1000 {
		h.clock.Advance(86 * time.Second) // 1,000 requests over 24 hours
		v := h.send(authguard.SendRequest{Destination: fmt.Sprintf("+44 7400 123%03d", i), Channel: "sms", IP: addr(rng.IntN(60000))})
		switch v.Action {
		case authguard.Proceed:
			sent++
			if h.clock.Now().Sub(start) <= time.Hour {
				firstHour++
			}
		case authguard.Captcha:
			if v.Reasons[0] != "prefix_destinations" && v.Reasons[0] != "low_conversion" {
				t.Fatalf("request %d: captcha for %v", i, v.Reasons)
			}
		default:
			t.Fatalf("request %d: %v %v", i, v.Action, v.Reasons)
		}
	}
	if sent != 15 || firstHour != 5 {
		t.Errorf("%d codes sent in 24 hours, %d in the first hour; want 15 and 5", sent, firstHour)
	}
}

// TestSend_RealUsersOfOtherBlocksAreNotSlowedByPumping: while one block is
// pumped, a real user whose number is in another block gets a code at once.
func TestSend_RealUsersOfOtherBlocksAreNotSlowedByPumping(t *testing.T) {
	h := newHarness(t, "")
	for i := range 200 {
		h.send(authguard.SendRequest{Destination: fmt.Sprintf("+44 7400 123%03d", i), Channel: "sms", IP: addr(i)})
	}
	v := h.send(authguard.SendRequest{Destination: "+44 7400 987654", Channel: "sms", IP: addr(300)})
	if v.Action != authguard.Proceed {
		t.Errorf("a user of another block: %v %v, want proceed", v.Action, v.Reasons)
	}
}

// TestSend_NATOfficeOfThreeHundredIsNeverSlowed: 300 people behind one
// address each ask for a code during one 8-hour working day (one every 96
// seconds), and one in ten asks again a minute later because the first did
// not arrive: nobody waits or sees a CAPTCHA.
func TestSend_NATOfficeOfThreeHundredIsNeverSlowed(t *testing.T) {
	h := newHarness(t, "")
	const office = "198.51.100.20"
	sent := 0
	for i := range 300 {
		number := fmt.Sprintf("+44 7400 %06d", i*1000+i%1000)
		for try := range 1 + btoi(i%10 == 0) {
			if try > 0 {
				h.clock.Advance(time.Minute)
			}
			v := h.send(authguard.SendRequest{Destination: number, Channel: "sms", IP: office})
			if v.Action != authguard.Proceed {
				t.Fatalf("person %d, try %d: %v %v", i, try, v.Action, v.Reasons)
			}
			sent++
		}
		h.clock.Advance(96 * time.Second)
	}
	if sent != 330 {
		t.Errorf("%d codes sent, want 330", sent)
	}
}

// TestSend_FreshSlash64sOfOneSlash48ShareOneDestinationBudget: an attacker
// holding one IPv6 /48 asks for codes to made-up e-mail addresses, each
// from a /64 of its own, to send mail in bulk (or to fill a store with
// destination counters). ip_destinations counts per /64, so each /64 had 60
// an hour; ip_destinations_48 counts the /48's distinct destinations.
func TestSend_FreshSlash64sOfOneSlash48ShareOneDestinationBudget(t *testing.T) {
	h := newHarness(t, "")
	sent, held := 0, 0
	for i := range 1000 { // one an hour's 3.6 s apart
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0x00, 0x42, byte(i >> 8), byte(i), 15: 1}
		v := h.send(authguard.SendRequest{Destination: fmt.Sprintf("made-up-%d@example.com", i), Channel: "email", IP: netip.AddrFrom16(a).String()})
		switch {
		case v.Action == authguard.Proceed:
			sent++
		case v.Action == authguard.Captcha && slices.Equal(v.Reasons, []authguard.Reason{"ip_destinations"}):
			held++
		default:
			t.Fatalf("send %d: %v %v", i, v.Action, v.Reasons)
		}
		h.clock.Advance(3600 * time.Millisecond)
	}
	if sent != 120 || held != 880 {
		t.Errorf("%d codes sent and %d held in an hour from one /48, want 120 and 880", sent, held)
	}
}

// TestSend_IPv6OfficeOfThreeHundredIsNeverSlowed: the NAT office's day on
// IPv6, where each of the 300 has a /64 of the office's /48.
func TestSend_IPv6OfficeOfThreeHundredIsNeverSlowed(t *testing.T) {
	h := newHarness(t, "")
	for i := range 300 {
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0x00, 0x43, byte(i >> 8), byte(i), 15: 1}
		number := fmt.Sprintf("+44 7400 %06d", i*1000+i%1000)
		for try := range 1 + btoi(i%10 == 0) {
			if try > 0 {
				h.clock.Advance(time.Minute)
			}
			if v := h.send(authguard.SendRequest{Destination: number, Channel: "sms", IP: netip.AddrFrom16(a).String()}); v.Action != authguard.Proceed {
				t.Fatalf("person %d, try %d: %v %v", i, try, v.Action, v.Reasons)
			}
		}
		h.clock.Advance(96 * time.Second)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSend_CountryLists: deny_countries refuses a region or a calling code,
// allow_countries everything else; e-mail has no country.
func TestSend_CountryLists(t *testing.T) {
	us := exampleNumber(t, "US", phonenumbers.MOBILE)
	h := newHarness(t, `
flows:
  otp_send:
    deny_countries: ["+1"]
  gb_only:
    template: otp_send
    allow_countries: [GB]
`)
	cases := []struct {
		flow, dest, channel string
		want                authguard.Action
	}{
		{"otp_send", us, "sms", authguard.Deny},
		{"otp_send", victim, "sms", authguard.Proceed},
		{"gb_only", us, "sms", authguard.Deny},
		{"gb_only", "+44 7400 654321", "sms", authguard.Proceed},
		{"gb_only", "someone@example.com", "email", authguard.Proceed},
	}
	for _, c := range cases {
		v := h.send(authguard.SendRequest{Flow: c.flow, Destination: c.dest, Channel: c.channel, IP: addr(9)})
		if v.Action != c.want || (c.want == authguard.Deny && v.Reasons[0] != authguard.ReasonCountry) {
			t.Errorf("%s %s: %v %v, want %v", c.flow, c.dest, v.Action, v.Reasons, c.want)
		}
	}
}

// TestSend_BadInputChangesNothing: every unusable send is an *InputError
// naming its field, and runs no store operation.
func TestSend_BadInputChangesNothing(t *testing.T) {
	h := newHarness(t, "")
	cases := []struct {
		req   authguard.SendRequest
		field string
	}{
		{authguard.SendRequest{Destination: "+44 7400", Channel: "sms", IP: "192.0.2.1"}, "destination"},
		{authguard.SendRequest{Destination: "07400 123456", Channel: "sms", IP: "192.0.2.1"}, "destination"},
		{authguard.SendRequest{Destination: "alice@example.com", Channel: "sms", IP: "192.0.2.1"}, "destination"},
		{authguard.SendRequest{Destination: victim, Channel: "email", IP: "192.0.2.1"}, "destination"},
		{authguard.SendRequest{Destination: "a@b@example.com", Channel: "email", IP: "192.0.2.1"}, "destination"},
		{authguard.SendRequest{Destination: victim, Channel: "pigeon", IP: "192.0.2.1"}, "channel"},
		{authguard.SendRequest{Destination: victim, IP: "192.0.2.1"}, "channel"},
		{authguard.SendRequest{Channel: "sms", IP: "192.0.2.1"}, "destination"},
		{authguard.SendRequest{Destination: victim, Channel: "sms"}, "ip"},
		{authguard.SendRequest{Destination: victim, Channel: "sms", IP: "192.0.2.1", Flow: "login"}, "flow"},
		{authguard.SendRequest{Destination: victim, Channel: "sms", IP: "192.0.2.1", Flow: "nope"}, "flow"},
	}
	for _, c := range cases {
		ops := h.store.ops.Load()
		_, err := h.e.Send(context.Background(), c.req)
		var ie *authguard.InputError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%+v: %v, want an input error on %s", c.req, err, c.field)
		}
		if n := h.store.ops.Load() - ops; n != 0 {
			t.Errorf("%+v: %d store operations", c.req, n)
		}
	}
	_, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: "otp_send", Account: "a", IP: "192.0.2.1"})
	var ie *authguard.InputError
	if !errors.As(err, &ie) || ie.Field != "flow" {
		t.Errorf("a check on otp_send: %v, want an input error on flow", err)
	}
}

// budgetPolicy is otp_send with a budget small enough to spend in a test:
// an SMS costs 1 (3 to the US), a voice call 4; a CAPTCHA past 8 units,
// nothing past 10.
const budgetPolicy = `
flows:
  otp_send:
    prices:
      sms: {default: 1, "+1": 3}
      voice: {default: 4}
      email: {default: 0}
    rules:
      - {name: spend_captcha, limit: 8}
      - {name: spend_budget, limit: 10}
`

// TestSend_PumpingCannotSpendPastTheBudget: a botnet that solves CAPTCHAs
// and walks many blocks (every per-destination and per-block rule sees
// little) spends the tenant's day: near the budget every send needs a
// CAPTCHA, past it no code goes out, at any price, until the next day.
// E-mail, which costs nothing, still goes.
func TestSend_PumpingCannotSpendPastTheBudget(t *testing.T) {
	h := newHarness(t, budgetPolicy)
	spent, captchas := 0, 0
	price := map[string]int{"sms": 1, "voice": 4}
	for i := range 40 {
		ch := []string{"sms", "voice"}[i%2]
		req := authguard.SendRequest{Destination: fmt.Sprintf("+44 7400 %03d%03d", i, i), Channel: ch, IP: addr(i)}
		v := h.send(req)
		if v.Action == authguard.Captcha {
			if v.Reasons[0] != "spend_budget" {
				t.Fatalf("send %d: captcha for %v", i, v.Reasons)
			}
			captchas++
			req.CaptchaSolved = true
			v = h.send(req)
		}
		switch v.Action {
		case authguard.Proceed:
			spent += price[ch]
		case authguard.Deny:
			if v.Reasons[0] != "spend_budget" {
				t.Fatalf("send %d: deny for %v", i, v.Reasons)
			}
		default:
			t.Fatalf("send %d: %v %v", i, v.Action, v.Reasons)
		}
	}
	if spent > 10 || spent < 7 || captchas == 0 {
		t.Errorf("spent %d of a budget of 10, %d CAPTCHAs on the way", spent, captchas)
	}
	if v := h.send(authguard.SendRequest{Destination: "+1 415-555-0123", Channel: "sms", IP: addr(99), CaptchaSolved: true}); v.Action != authguard.Deny {
		t.Errorf("a US SMS past the budget: %v %v, want deny", v.Action, v.Reasons)
	}
	if v := h.send(authguard.SendRequest{Destination: "ann@example.com", Channel: "email", IP: addr(98)}); v.Action != authguard.Proceed {
		t.Errorf("an e-mail, which costs nothing, past the budget: %v %v, want proceed", v.Action, v.Reasons)
	}
	h.clock.Advance(day)
	if v := h.send(authguard.SendRequest{Destination: "+44 7400 999999", Channel: "sms", IP: addr(97)}); v.Action != authguard.Proceed {
		t.Errorf("the next day: %v %v, want proceed", v.Action, v.Reasons)
	}
}

// TestSend_PricesByCountry: a region or calling code's price replaces the
// channel's default, and a rule's limit below the highest price is refused.
func TestSend_PricesByCountry(t *testing.T) {
	h := newHarness(t, `
flows:
  otp_send:
    prices:
      sms: {default: 1, "+1": 3}
    rules:
      - {name: spend_captcha, off: true}
      - {name: spend_budget, limit: 4}
`)
	us := authguard.SendRequest{Destination: "+1 415-555-0123", Channel: "sms", IP: addr(1)}
	if v := h.send(us); v.Action != authguard.Proceed {
		t.Fatalf("a US SMS at 3 of 4: %v %v", v.Action, v.Reasons)
	}
	us.Destination = "+1 415-555-0199"
	if v := h.send(us); v.Action != authguard.Deny {
		t.Fatalf("a second US SMS, 6 of 4: %v %v, want deny", v.Action, v.Reasons)
	}
	if v := h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(2)}); v.Action != authguard.Proceed {
		t.Fatalf("a UK SMS at 4 of 4: %v %v", v.Action, v.Reasons)
	}
	_, err := policyfile.LoadPolicy([]byte(`
flows:
  otp_send:
    prices:
      voice: {default: 50}
    rules:
      - {name: spend_budget, limit: 40}
`))
	if err == nil || !strings.Contains(err.Error(), "highest price (50) is above the limit (40)") {
		t.Errorf("a budget below a price: %v", err)
	}
}

// verify checks a code on otp_verify and reports it right, naming the
// destination it was sent to, as a login system does once the user types
// the code.
func (h *harness) verify(account, ip, destination, channel string) {
	h.t.Helper()
	v := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: account, IP: ip})
	if v.Action != authguard.Proceed {
		h.t.Fatalf("verify check: %v %v", v.Action, v.Reasons)
	}
	h.report(authguard.ReportRequest{Flow: "otp_verify", Account: account, IP: ip, Outcome: authguard.Success,
		Attempt: v.Attempt, Destination: destination, Channel: channel})
}

// TestSend_CountryUnderPumpingNeedsCaptchaWhileOthersDoNot: a botnet pumps
// codes to numbers of one country (France here), spread over many blocks
// so that no block rule sees much, and never verifies them; meanwhile real
// users in Britain receive and verify theirs. Once the French volume is
// enough to judge (50 an hour) with almost nothing verified, French sends
// need a CAPTCHA (low_conversion); British users are never asked for one.
// An hour later, with real French users verifying, France recovers.
func TestSend_CountryUnderPumpingNeedsCaptchaWhileOthersDoNot(t *testing.T) {
	h := newHarness(t, "")
	pumped, held := 0, 0
	for i := range 300 {
		h.clock.Advance(10 * time.Second)
		fr := fmt.Sprintf("+33 6 12 %02d %02d %02d", i%97, (i*7)%100, (i*13)%100)
		v := h.send(authguard.SendRequest{Destination: fr, Channel: "sms", IP: addr(1000 + i)})
		switch {
		case v.Action == authguard.Proceed:
			pumped++
		case v.Action == authguard.Captcha && slices.Contains(v.Reasons, "low_conversion"):
			held++
		default:
			t.Fatalf("French send %d: %v %v", i, v.Action, v.Reasons)
		}
		if i%3 == 0 { // a British user asks for a code and verifies it
			gb := fmt.Sprintf("+44 7400 %06d", i*1000+i%1000)
			if v := h.send(authguard.SendRequest{Destination: gb, Channel: "sms", IP: addr(i)}); v.Action != authguard.Proceed {
				t.Fatalf("British user %d: %v %v", i, v.Action, v.Reasons)
			}
			h.verify(gb, addr(i), gb, "sms")
		}
	}
	if pumped > 60 || held < 200 {
		t.Errorf("%d French codes pumped, %d held for a CAPTCHA; want about 50 sent and the rest held", pumped, held)
	}
	t.Logf("%d French codes sent, %d held", pumped, held)

	// Two hours on, real French users ask for codes and verify them.
	h.clock.Advance(2 * time.Hour)
	for i := range 60 {
		h.clock.Advance(30 * time.Second)
		fr := fmt.Sprintf("+33 6 13 %02d %02d %02d", i, (i*3)%100, (i*11)%100)
		if v := h.send(authguard.SendRequest{Destination: fr, Channel: "sms", IP: addr(5000 + i)}); v.Action != authguard.Proceed {
			t.Fatalf("French user %d after the attack: %v %v", i, v.Action, v.Reasons)
		}
		h.verify(fr, addr(5000+i), fr, "sms")
	}
}

// TestVerify_DestinationOnlyWhereItIsVerified: a report names a
// destination only on a flow that verifies a send flow's codes, with a
// channel, and the destination must parse.
func TestVerify_DestinationOnlyWhereItIsVerified(t *testing.T) {
	h := newHarness(t, "")
	cases := []struct {
		req   authguard.ReportRequest
		field string
	}{
		{authguard.ReportRequest{Flow: "login", Account: "a", IP: "192.0.2.1", Outcome: authguard.Success, Destination: victim, Channel: "sms"}, "destination"},
		{authguard.ReportRequest{Flow: "otp_verify", Account: "a", IP: "192.0.2.1", Outcome: authguard.Success, Destination: victim}, "channel"},
		{authguard.ReportRequest{Flow: "otp_verify", Account: "a", IP: "192.0.2.1", Outcome: authguard.Success, Channel: "sms"}, "destination"},
		{authguard.ReportRequest{Flow: "otp_verify", Account: "a", IP: "192.0.2.1", Outcome: authguard.Success, Destination: "+44 12", Channel: "sms"}, "destination"},
	}
	for _, c := range cases {
		ops := h.store.ops.Load()
		_, err := h.e.Report(context.Background(), c.req)
		var ie *authguard.InputError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%+v: %v, want an input error on %s", c.req, err, c.field)
		}
		if n := h.store.ops.Load() - ops; n != 0 {
			t.Errorf("%+v: %d store operations", c.req, n)
		}
	}
}

// TestVerify_GuessingOnePhonesCodesUnderManyAccounts: an attacker who
// guesses the codes sent to one phone, under a new account name (or
// session) each time, from many addresses, waiting out every delay, gets
// as many guesses in 24 hours as against one account: the checks name the
// destination, and destination_backoff counts it whatever the account and
// however many new codes are sent.
func TestVerify_GuessingOnePhonesCodesUnderManyAccounts(t *testing.T) {
	h := newHarness(t, "")
	start, proceeded := h.clock.Now(), 0
	for i := 0; h.clock.Now().Sub(start) < day; i++ {
		req := authguard.CheckRequest{Flow: "otp_verify", Account: fmt.Sprint("session-", i), IP: addr(i % 1000),
			Destination: victim, Channel: "sms"}
		v := h.check(req)
		switch v.Action {
		case authguard.Proceed:
			proceeded++
			h.report(authguard.ReportRequest{Flow: req.Flow, Account: req.Account, IP: req.IP, Outcome: authguard.Failure,
				Attempt: v.Attempt, Destination: victim, Channel: "sms"})
			h.clock.Advance(time.Second)
		case authguard.Delay:
			if v.Reasons[0] != "destination_backoff" {
				t.Fatalf("guess %d: delayed by %v", i, v.Reasons)
			}
			h.clock.Advance(v.Delay)
		default:
			t.Fatalf("guess %d: %v %v", i, v.Action, v.Reasons)
		}
		if i > 100_000 {
			t.Fatal("runaway loop")
		}
	}
	if proceeded != 59 {
		t.Errorf("%d guesses at one phone's codes in 24 hours, want 59 (as against one account)", proceeded)
	}
}

// TestVerify_DeviceTokensOfManyAccountsCannotMultiplyGuessesAtOnePhone:
// the attacker owns 20 accounts, verifies each once on a phone of
// its own (earning each an otp_verify device token), then points every
// account's code step at the victim's phone. destination_backoff counted
// only clients without a token, so each token skipped it: 60 immediate
// guesses, 1,500 a day with 100 accounts. It counts every client now, so the
// victim's codes get the destination's 59 a day, however many accounts and
// tokens guess at them.
func TestVerify_DeviceTokensOfManyAccountsCannotMultiplyGuessesAtOnePhone(t *testing.T) {
	h := newHarness(t, "")
	const accounts = 20
	tokens := make([]string, accounts)
	for i := range tokens {
		account, own := fmt.Sprint("attacker-", i), fmt.Sprintf("+44 7400 %06d", 500_000+i)
		v := h.check(authguard.CheckRequest{Flow: "otp_verify", Account: account, IP: addr(i)})
		r := h.report(authguard.ReportRequest{Flow: "otp_verify", Account: account, IP: addr(i), Outcome: authguard.Success,
			Attempt: v.Attempt, Destination: own, Channel: "sms"})
		if r.DeviceToken == "" {
			t.Fatalf("account %d earned no device token", i)
		}
		tokens[i] = r.DeviceToken
	}
	start, guesses := h.clock.Now(), 0
	for i := 0; h.clock.Now().Sub(start) < day; i++ {
		n := i % accounts
		req := authguard.CheckRequest{Flow: "otp_verify", Account: fmt.Sprint("attacker-", n), IP: addr(1000 + i%1000),
			DeviceToken: tokens[n], Destination: victim, Channel: "sms"}
		v := h.check(req)
		switch v.Action {
		case authguard.Proceed:
			guesses++
			h.report(authguard.ReportRequest{Flow: req.Flow, Account: req.Account, IP: req.IP, Outcome: authguard.Failure,
				Attempt: v.Attempt, DeviceToken: req.DeviceToken, Destination: victim, Channel: "sms"})
		case authguard.Delay:
			if n == accounts-1 { // every account has met the delay: wait it out
				h.clock.Advance(v.Delay)
			}
		default:
			t.Fatalf("guess %d: %v %v", i, v.Action, v.Reasons)
		}
		if i > 1_000_000 {
			t.Fatal("runaway loop")
		}
	}
	if guesses > 59 {
		t.Errorf("%d guesses at one phone's codes in 24 hours through %d accounts' device tokens, want at most 59", guesses, accounts)
	}
}

// TestSend_KnownDeviceBehindABusyNATGetsItsCode: once an address has asked
// for codes to 60 numbers within the hour, its next request needs a
// CAPTCHA (ip_destinations); a user behind it whose device token a login
// success returned goes ahead, while the rules that count every client
// (here, the bombing limit on the user's own number) still count it. A
// token for another account, or a forged one, is ignored.
func TestSend_KnownDeviceBehindABusyNATGetsItsCode(t *testing.T) {
	h := newHarness(t, "")
	const nat = "198.51.100.30"
	for i := range 60 {
		h.clock.Advance(time.Second)
		number := fmt.Sprintf("+44 7400 %06d", i*1000+i)
		if v := h.send(authguard.SendRequest{Destination: number, Channel: "sms", IP: nat}); v.Action != authguard.Proceed {
			t.Fatalf("code %d: %v %v", i, v.Action, v.Reasons)
		}
		h.verify(number, nat, number, "sms")
	}
	login := h.report(authguard.ReportRequest{Flow: "login", Account: "ann@example.com", IP: nat, Outcome: authguard.Success})
	if login.DeviceToken == "" {
		t.Fatal("no device token from a login success")
	}
	ann := authguard.SendRequest{Destination: "+44 7400 999001", Channel: "sms", IP: nat, Account: "ann@example.com"}
	if v := h.send(ann); v.Action != authguard.Captcha || v.Reasons[0] != "ip_destinations" {
		t.Fatalf("without her token: %v %v, want a CAPTCHA by ip_destinations", v.Action, v.Reasons)
	}
	for _, c := range []struct{ name, token, account string }{
		{"another account's token", login.DeviceToken, "bob@example.com"},
		{"a forged token", login.DeviceToken[:len(login.DeviceToken)-2] + "AA", "ann@example.com"},
	} {
		req := ann
		req.DeviceToken, req.Account = c.token, c.account
		if v := h.send(req); v.Action != authguard.Captcha {
			t.Errorf("%s: %v %v, want a CAPTCHA", c.name, v.Action, v.Reasons)
		}
	}
	ann.DeviceToken = login.DeviceToken
	if v := h.send(ann); v.Action != authguard.Proceed {
		t.Fatalf("with her login's device token: %v %v, want proceed", v.Action, v.Reasons)
	}
	if v := h.send(ann); v.Action != authguard.Delay || v.Reasons[0] != "destination_backoff" {
		t.Errorf("again at once: %v %v, want a delay by destination_backoff (it counts every client)", v.Action, v.Reasons)
	}
}

// FuzzSendInput: any send, and any destination on a verify check or report,
// is a verdict or an InputError naming its field that reached no store.
func FuzzSendInput(f *testing.F) {
	f.Add("", "+44 7400 123456", "sms", "192.0.2.1", "", "")
	f.Add("otp_send", "Alice@Example.COM", "email", "2001:db8::1", "alice", "x.y.z")
	f.Add("otp_send", "+44 (0)20 7946 0958", "voice", "192.0.2.1", "", "")
	f.Add("otp_verify", "+449012345678", "whatsapp", "192.0.2.1", "a", "")
	f.Add("login", "tel:+14155550123", "fax", "::1", "", "")
	h := newHarness(f, "")
	f.Fuzz(func(t *testing.T, flow, dest, channel, ip, account, token string) {
		before := h.store.calls.Load()
		_, err := h.e.Send(context.Background(), authguard.SendRequest{Flow: flow, Destination: dest, Channel: channel, IP: ip, Account: account, DeviceToken: token})
		checkRejected(t, h, err, before)
		before = h.store.calls.Load()
		_, err = h.e.Check(context.Background(), authguard.CheckRequest{Flow: "otp_verify", Account: "a", IP: "192.0.2.1", Destination: dest, Channel: channel})
		checkRejected(t, h, err, before)
		before = h.store.calls.Load()
		_, err = h.e.Report(context.Background(), authguard.ReportRequest{Flow: "otp_verify", Account: "a", IP: "192.0.2.1", Outcome: authguard.Success, Destination: dest, Channel: channel})
		checkRejected(t, h, err, before)
	})
}

// TestExplain_WhyWasIDelayed: after an attacker's failures, Explain shows
// the account's counter (its failures and wait) and the delay a check would
// get, and changes nothing: the next check still gets that delay, no
// longer.
func TestExplain_WhyWasIDelayed(t *testing.T) {
	h := newHarness(t, "")
	for range 7 {
		h.report(authguard.ReportRequest{Flow: "login", Account: "ann@example.com", IP: "203.0.113.5", Outcome: authguard.Failure})
	}
	ops := h.store.ops.Load()
	x, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if x.Verdict.Action != authguard.Delay || x.Verdict.Reasons[0] != "account_backoff" {
		t.Errorf("verdict %+v, want a delay by account_backoff", x.Verdict)
	}
	var acct *authguard.RuleState
	for i := range x.Rules {
		if x.Rules[i].Rule == "account_backoff" {
			acct = &x.Rules[i]
		}
		if x.Rules[i].Subject != "account" && x.Rules[i].Subject != "device" {
			t.Errorf("rule %s on %s shown without an IP", x.Rules[i].Rule, x.Rules[i].Subject)
		}
	}
	if acct == nil || acct.Count != 7 || acct.Wait <= 0 || acct.Wait != x.Verdict.Delay {
		t.Fatalf("account_backoff %+v, verdict delay %v", acct, x.Verdict.Delay)
	}
	if n := h.store.ops.Load() - ops; n != int64(len(x.Rules)) {
		t.Errorf("%d store ops for %d rules", n, len(x.Rules))
	}
	v := h.check(authguard.CheckRequest{Flow: "login", Account: "ann@example.com", IP: "198.51.100.9"})
	if v.Action != authguard.Delay || v.Delay != x.Verdict.Delay {
		t.Errorf("the next check: %v %v, want the explained delay %v", v.Action, v.Delay, x.Verdict.Delay)
	}
	// A destination in a send flow: its quotas, and a premium number's deny.
	h.send(authguard.SendRequest{Destination: victim, Channel: "sms", IP: addr(1)})
	x, err = h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "otp_send", Destination: victim, Channel: "sms"})
	if err != nil || x.Verdict.Action != authguard.Delay || x.Verdict.Reasons[0] != "destination_backoff" {
		t.Errorf("a destination just sent a code: %+v, %v", x.Verdict, err)
	}
	x, _ = h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "otp_send", Destination: "+449012345678", Channel: "voice"})
	if x.Verdict.Action != authguard.Deny {
		t.Errorf("a premium number: %+v, want deny", x.Verdict)
	}
	if _, err := h.e.Explain(context.Background(), authguard.ExplainRequest{Flow: "nope"}); err == nil {
		t.Error("an unknown flow was explained")
	}
}

// TestReset_UnlocksAnAccountAndNothingElse: "how do I unlock this user?"
// A reset of the account clears its counters in the flow (devices
// included): its next check proceeds. The attacker's address keeps its
// failures; another account and another flow keep theirs. A reset of the
// address clears the address's own rules, and a reset needs a reason.
func TestReset_UnlocksAnAccountAndNothingElse(t *testing.T) {
	h := newHarness(t, "")
	const attacker = "203.0.113.5"
	for _, acct := range []string{"ann@example.com", "bob@example.com"} {
		for range 7 {
			h.report(authguard.ReportRequest{Flow: "login", Account: acct, IP: attacker, Outcome: authguard.Failure})
		}
	}
	h.report(authguard.ReportRequest{Flow: "otp_verify", Account: "ann@example.com", IP: attacker, Outcome: authguard.Failure})
	ctx := context.Background()
	if _, err := h.e.Reset(ctx, authguard.ResetRequest{Flow: "login", Account: "ann@example.com"}); err == nil {
		t.Fatal("a reset without a reason")
	}
	n, err := h.e.Reset(ctx, authguard.ResetRequest{Flow: "login", Account: "ANN@example.com", Reason: "owner called the desk"})
	if err != nil || n == 0 {
		t.Fatalf("reset: %d keys, %v", n, err)
	}
	if v := h.check(authguard.CheckRequest{Flow: "login", Account: "ann@example.com", IP: "198.51.100.1"}); v.Action != authguard.Proceed {
		t.Errorf("ann after her reset: %v %v", v.Action, v.Reasons)
	}
	if v := h.check(authguard.CheckRequest{Flow: "login", Account: "bob@example.com", IP: "198.51.100.1"}); v.Action != authguard.Delay {
		t.Errorf("bob, not reset: %v, want delay", v.Action)
	}
	x, err := h.e.Explain(ctx, authguard.ExplainRequest{Flow: "login", IP: attacker})
	if err != nil {
		t.Fatal(err)
	}
	failures := -1
	for _, r := range x.Rules {
		if r.Rule == "ip_failures" {
			failures = r.Count
		}
	}
	if failures != 14 {
		t.Errorf("the attacker's address holds %d failures after ann's reset, want 14", failures)
	}
	if x, _ := h.e.Explain(ctx, authguard.ExplainRequest{Flow: "otp_verify", Account: "ann@example.com"}); x.Rules[0].Count != 1 {
		t.Errorf("ann's otp_verify counter after a login reset: %+v", x.Rules[0])
	}
	if n, err := h.e.Reset(ctx, authguard.ResetRequest{Flow: "login", IP: attacker, Reason: "a NAT office, not an attacker"}); err != nil || n == 0 {
		t.Fatalf("reset of the address: %d, %v", n, err)
	}
	x, _ = h.e.Explain(ctx, authguard.ExplainRequest{Flow: "login", IP: attacker})
	for _, r := range x.Rules {
		if r.Count != 0 && r.Subject == "ip" {
			t.Errorf("after the address's reset %s holds %d", r.Rule, r.Count)
		}
	}
}

// TestTenants_HashUnderTheirOwnSecrets: a tenant with a secret of its own
// has its subjects hashed under that secret, so a dump of its keys reveals
// nothing to whoever holds the deployment's secret or another tenant's,
// and two tenants' keys for one account differ.
func TestTenants_HashUnderTheirOwnSecrets(t *testing.T) {
	shopSecret := []byte("the shop tenant's own secret, 32+ bytes")
	engine := func(secret []byte, tenants map[string][]byte) *authguard.Engine {
		e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{}), Secret: secret, TenantSecrets: tenants})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	keys := func(e *authguard.Engine, tenant string) string {
		k, err := e.AccountKeys(tenant, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	e := engine(secret, map[string][]byte{"shop": shopSecret})
	if keys(e, "shop") != keys(engine(shopSecret, nil), "shop") {
		t.Error("the shop's keys are not hashed under the shop's secret")
	}
	if keys(e, "shop") == keys(engine(secret, nil), "shop") {
		t.Error("the shop's keys are hashed under the deployment's secret")
	}
	if keys(e, "bank") != keys(engine(secret, nil), "bank") {
		t.Error("a tenant without a secret of its own is not hashed under the deployment's")
	}
	if _, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{}), Secret: secret,
		TenantSecrets: map[string][]byte{"shop": []byte("short")}}); err == nil {
		t.Error("a short tenant secret was accepted")
	}
}

// TestTenants_HaveTheirOwnPolicy: a tenant with a policy of its own is
// held by it (2 free failures), others by the deployment's (5).
func TestTenants_HaveTheirOwnPolicy(t *testing.T) {
	strict, err := policyfile.LoadPolicy([]byte("flows:\n  login:\n    rules: [{name: account_backoff, free: 2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{}), Secret: secret,
		TenantPolicies: map[string]*authguard.Policy{"bank": strict}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tenant := range []string{"bank", "shop"} {
		for range 2 {
			if _, err := e.Report(ctx, authguard.ReportRequest{Tenant: tenant, Flow: "login", Account: "ann", IP: "192.0.2.1", Outcome: authguard.Failure}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for tenant, want := range map[string]authguard.Action{"bank": authguard.Delay, "shop": authguard.Proceed} {
		v, err := e.Check(ctx, authguard.CheckRequest{Tenant: tenant, Flow: "login", Account: "ann", IP: "192.0.2.1"})
		if err != nil || v.Action != want {
			t.Errorf("%s after 2 failures: %v %v, want %v", tenant, v.Action, err, want)
		}
	}
}

// TestSend_OneMailDomainIsNotABlock: e-mail addresses have no block (a
// domain such as gmail.com is everybody's): sixty users of one domain ask
// for codes within an hour from their own addresses and none is asked for
// a CAPTCHA, where numbers of one block of 1,000 would be after five.
func TestSend_OneMailDomainIsNotABlock(t *testing.T) {
	h := newHarness(t, "")
	for i := range 60 {
		h.clock.Advance(time.Minute)
		v := h.send(authguard.SendRequest{Destination: fmt.Sprintf("user%d@gmail.com", i), Channel: "email", IP: addr(i)})
		if v.Action != authguard.Proceed {
			t.Fatalf("user %d of one mail domain: %v %v", i, v.Action, v.Reasons)
		}
	}
}

// TestSend_QuotedAndCommentedSpellingsOfOneMailboxAreRefused: RFC 5321 and
// 5322 spell the mailbox alice@example.com as a quoted string ("alice"),
// with quoted-pairs ("\a\l\i\c\e", 32 ways) or with comments (alice(1),
// alice(2) and so on without end). Were each a destination of its own, each
// would get its own destination_daily and destination_backoff, and an
// attacker could bomb one mailbox without limit. Each is refused as input
// and runs no store operation; the plain address still gets its code.
func TestSend_QuotedAndCommentedSpellingsOfOneMailboxAreRefused(t *testing.T) {
	h := newHarness(t, "")
	spellings := []string{
		`"alice"@example.com`,
		`"al\ice"@example.com`,
		`"\a\l\i\c\e"@example.com`,
		`al\ice@example.com`,
		"alice(1)@example.com",
		"alice(2)@example.com",
		"(x)alice@example.com",
		"＂alice＂@example.com",
		".alice@example.com",
		"alice.@example.com",
		"al..ice@example.com",
	}
	for i, s := range spellings {
		req := authguard.SendRequest{Destination: s, Channel: "email", IP: addr(i)}
		ops := h.store.ops.Load()
		_, err := h.e.Send(context.Background(), req)
		var ie *authguard.InputError
		if !errors.As(err, &ie) || ie.Field != "destination" {
			t.Errorf("%q: %v, want an input error on destination", s, err)
		}
		if n := h.store.ops.Load() - ops; n != 0 {
			t.Errorf("%q: %d store operations", s, n)
		}
	}
	if v := h.send(authguard.SendRequest{Destination: "alice@example.com", Channel: "email", IP: addr(100)}); v.Action != authguard.Proceed {
		t.Errorf("alice@example.com after its refused spellings: %v %v, want proceed", v.Action, v.Reasons)
	}
}
