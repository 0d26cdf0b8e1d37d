package authguard

import (
	"fmt"
	"strings"
	"testing"
)

// mailboxCase is a set of spellings of one mailbox and the Mailbox they all
// parse to.
type mailboxCase struct {
	name      string
	spellings []string
	mailbox   string
}

// mailboxCases are the spellings the tests and the fuzz target start from.
func mailboxCases() []mailboxCase {
	return append(append(plusTagCases(), gmailCases()...), providerCases()...)
}

func plusTagCases() []mailboxCase {
	var hundred []string
	for i := range 100 {
		hundred = append(hundred, fmt.Sprintf("victim+%d@gmail.com", i))
	}
	return []mailboxCase{
		{"a hundred numbered tags at Gmail", hundred, "victim@gmail.com"},
		{"tags at Gmail", []string{"victim@gmail.com", "victim+1@gmail.com", "victim+2@gmail.com", "victim+@gmail.com", "victim+a+b@gmail.com", "victim+.x@gmail.com", "victim+otp-login@gmail.com"}, "victim@gmail.com"},
		{"tags at Outlook.com", []string{"victim@outlook.com", "victim+1@outlook.com", "Victim+Shop@Outlook.com"}, "victim@outlook.com"},
		{"tags at Hotmail", []string{"victim@hotmail.com", "victim+1@hotmail.com"}, "victim@hotmail.com"},
		{"tags at iCloud", []string{"victim@icloud.com", "victim+1@icloud.com"}, "victim@icloud.com"},
		{"tags at Fastmail", []string{"victim@fastmail.com", "victim+1@fastmail.com"}, "victim@fastmail.com"},
		{"tags at Yahoo, which has none, merge nothing real", []string{"victim@yahoo.com", "victim+1@yahoo.com"}, "victim@yahoo.com"},
		{"tags at any domain", []string{"victim@example.com", "victim+1@example.com", "victim+2@example.com", "VICTIM+OTP@EXAMPLE.COM."}, "victim@example.com"},
		{"tags keep the dots of other domains", []string{"vic.tim@example.com", "vic.tim+1@example.com"}, "vic.tim@example.com"},
		{"full-width plus", []string{"victim＋1@example.com", "ｖｉｃｔｉｍ＋２@example.com"}, "victim@example.com"},
		{"tags on an internationalised mailbox", []string{"josé@bücher.example", "josé+1@bücher.example", "JOSÉ+2@XN--BCHER-KVA.EXAMPLE"}, "josé@xn--bcher-kva.example"},
	}
}

func gmailCases() []mailboxCase {
	return []mailboxCase{
		{"dots at Gmail", []string{"victim@gmail.com", "v.ictim@gmail.com", "v.i.c.t.i.m@gmail.com", "vic.tim@gmail.com", "V.I.C.T.I.M@GMAIL.COM"}, "victim@gmail.com"},
		{"Googlemail is Gmail", []string{"victim@googlemail.com", "Victim@GoogleMail.com.", "vic.tim@googlemail.com"}, "victim@gmail.com"},
		{"dots and tags at Gmail", []string{"vic.tim+1@gmail.com", "v.i.c.t.i.m+2@googlemail.com", "victim.+3@gmail.com"}, "victim@gmail.com"},
		{"full-width dots and letters at Gmail", []string{"ｖｉｃ．ｔｉｍ@gmail.com", "vic．tim@ｇｍａｉｌ．ｃｏｍ"}, "victim@gmail.com"},
	}
}

func providerCases() []mailboxCase {
	return []mailboxCase{
		{"Proton ignores dots, hyphens and underscores", []string{"alice.jones@proton.me", "alice_jones@proton.me", "alice-jones@proton.me", "a.l-i_c.e.jones+x@proton.me", "alicejones@proton.me"}, "alicejones@proton.me"},
		{"Proton's four domains are one", []string{"alicejones@protonmail.com", "alice.jones@protonmail.ch", "alice-jones@pm.me", "Alice_Jones+1@PM.ME"}, "alicejones@proton.me"},
		{"iCloud's three domains are one", []string{"victim@icloud.com", "victim@me.com", "victim@mac.com", "Victim+1@Me.Com"}, "victim@icloud.com"},
		{"Fastmail subdomain addresses", []string{"alice@fastmail.com", "shop@alice.fastmail.com", "a.b+c@alice.fastmail.com", "x@deep.er.alice.fastmail.com", "ALICE@ALICE.FASTMAIL.COM"}, "alice@fastmail.com"},
		{"Fastmail subdomain addresses at fastmail.fm", []string{"joecitizen@fastmail.fm", "companyname@joecitizen.fastmail.fm", "joecitizen+x@fastmail.fm"}, "joecitizen@fastmail.fm"},
	}
}

// checkOneMailbox runs the spellings of each case and checks they parse to
// its Mailbox, while Normalized, where a code goes, keeps a spelling's tag.
func checkOneMailbox(t *testing.T, tests []mailboxCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, in := range tt.spellings {
				d, err := ParseDestination(ChannelEmail, in, 3)
				if err != nil {
					t.Fatalf("ParseDestination(email, %+q, 3): %v", in, err)
				}
				if got, want := d.Mailbox, tt.mailbox; got != want {
					t.Errorf("ParseDestination(email, %+q, 3).Mailbox = %q, want %q", in, got, want)
				}
				if tagged := strings.ContainsAny(in, "+＋"); tagged != strings.Contains(d.Normalized, "+") {
					t.Errorf("ParseDestination(email, %+q, 3).Normalized = %q: the tag is not kept as sent", in, d.Normalized)
				}
				checkMailbox(t, in, d)
			}
		})
	}
}

// Before Mailbox, each "+" tag of one inbox was a destination of its own: 30
// codes at once to one inbox in 30 spellings, 1,000 a day with 100.
func TestMailbox_PlusTagsOfOneInboxAreOneMailbox(t *testing.T) {
	checkOneMailbox(t, plusTagCases())
}

// Gmail ignores dots, so an address of n letters has 2^(n-1) spellings
// (32 for "victim"), and googlemail.com doubles them.
func TestMailbox_GmailDotsAndGooglemailAreOneMailbox(t *testing.T) {
	checkOneMailbox(t, gmailCases())
}

// Proton's transparent characters, Proton's and iCloud's extra domains and
// Fastmail's subdomain addresses spell one mailbox in many ways.
func TestMailbox_ProviderSpellingsAreOneMailbox(t *testing.T) {
	checkOneMailbox(t, providerCases())
}

// Upper case, full-width forms, Unicode and A-label domains and a trailing
// dot spell one mailbox as Normalized does, tags and provider rules or not.
func TestMailbox_IDNAAndCaseSpellingsAreOneMailbox(t *testing.T) {
	checkOneMailbox(t, []mailboxCase{
		{"IDNA domain", []string{"josé+1@Bücher.example", "JOSÉ@xn--bcher-kva.example.", "josé+2@BÜCHER.EXAMPLE"}, "josé@xn--bcher-kva.example"},
		{"upper case at Gmail", []string{"ALICE+OTP@GMAIL.COM", "A.Lice@Gmail.Com"}, "alice@gmail.com"},
		{"full-width forms at Gmail", []string{"ＡＬＩＣＥ＋１@ｇｍａｉｌ．ｃｏｍ", "ａ．ｌｉｃｅ@ｇｏｏｇｌｅｍａｉｌ．ｃｏｍ"}, "alice@gmail.com"},
		{"ideographic full stop in the domain", []string{"alice@me。com", "alice+1@icloud。com"}, "alice@icloud.com"},
	})
}

// The rules merge only what a provider documents: other domains, Outlook's
// dots, other characters and other Fastmail users stay apart.
func TestMailbox_DifferentMailboxesStayApart(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"one name at Gmail and at Outlook.com", "alice@gmail.com", "alice@outlook.com"},
		{"Outlook.com's dots count", "a.lice@outlook.com", "alice@outlook.com"},
		{"Outlook.com and Hotmail are two domains", "alice@outlook.com", "alice@hotmail.com"},
		{"iCloud's dots count", "a.lice@icloud.com", "alice@icloud.com"},
		{"a hosted domain's dots count", "a.lice@example.com", "alice@example.com"},
		{"hyphens count outside Proton", "alice-jones@gmail.com", "alicejones@gmail.com"},
		{"underscores count outside Proton", "alice_jones@outlook.com", "alicejones@outlook.com"},
		{"a subdomain of gmail.com is not Gmail", "alice@mail.gmail.com", "alice@gmail.com"},
		{"a domain ending in gmail.com is not Gmail", "alice@notgmail.com", "alice@gmail.com"},
		{"Gmail under another domain is not Gmail", "alice@gmail.com.example", "alice@gmail.com"},
		{"two Fastmail users' subdomains", "x@alice.fastmail.com", "x@bob.fastmail.com"},
		{"fastmail.com and fastmail.fm are two domains", "alice@fastmail.com", "alice@fastmail.fm"},
		{"subdomains of other domains are kept", "x@alice.example.com", "alice@example.com"},
		{"a hyphen is not Yahoo's tag here", "alice-shop@yahoo.com", "alice@yahoo.com"},
		{"what comes before the tag counts", "alice+1@gmail.com", "alicf+1@gmail.com"},
		{"a Unicode letter is not its base letter", "josé@gmail.com", "jose@gmail.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			da, err := ParseDestination(ChannelEmail, tt.a, 3)
			if err != nil {
				t.Fatalf("ParseDestination(email, %q, 3): %v", tt.a, err)
			}
			db, err := ParseDestination(ChannelEmail, tt.b, 3)
			if err != nil {
				t.Fatalf("ParseDestination(email, %q, 3): %v", tt.b, err)
			}
			if da.Mailbox == db.Mailbox {
				t.Errorf("%q and %q both have Mailbox %q", tt.a, tt.b, da.Mailbox)
			}
		})
	}
}

// A phone's Mailbox is its E.164 number, whatever its spelling.
func TestMailbox_PhoneIsItsE164(t *testing.T) {
	for _, in := range []string{"+1 415-555-0123", "+1 (415) 555.0123", "+14155550123"} {
		d, err := ParseDestination(ChannelSMS, in, 3)
		if err != nil {
			t.Fatalf("ParseDestination(sms, %q, 3): %v", in, err)
		}
		if got, want := d.Mailbox, "+14155550123"; got != want {
			t.Errorf("ParseDestination(sms, %q, 3).Mailbox = %q, want %q", in, got, want)
		}
	}
}

// Every domain in mailboxRules is spelt as ParseDestination normalises it
// and is its provider's only row; a canonical domain is one of the row's;
// the ignored characters are ASCII punctuation other than "+" and "@".
func TestMailboxRules_AreNormalised(t *testing.T) {
	if len(mailboxRules) == 0 {
		t.Fatal("no mailbox rules")
	}
	for _, r := range mailboxRules {
		if r.Provider == "" || len(r.Domains) == 0 {
			t.Errorf("rule %+v: no provider or no domains", r)
		}
		for _, d := range r.Domains {
			got, err := normalizeDomain(d)
			if err != nil || got != d {
				t.Errorf("%s: domain %q normalises to %q, %v", r.Provider, d, got, err)
			}
			if mailboxRuleOf[d] == nil || mailboxRuleOf[d].Provider != r.Provider {
				t.Errorf("%s: domain %q maps to %v", r.Provider, d, mailboxRuleOf[d])
			}
		}
		if r.Canonical != "" && !strings.Contains(" "+strings.Join(r.Domains, " ")+" ", " "+r.Canonical+" ") {
			t.Errorf("%s: canonical domain %q is not one of %q", r.Provider, r.Canonical, r.Domains)
		}
		for i := 0; i < len(r.Ignore); i++ {
			if c := r.Ignore[i]; c >= 0x80 || c == '+' || c == '@' || strings.IndexByte("._-", c) < 0 {
				t.Errorf("%s: ignores %q", r.Provider, c)
			}
		}
	}
}
