package authguard

import (
	"errors"
	"maps"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// destCase is one valid destination and what it parses to.
type destCase struct {
	name         string
	channel      Channel
	in           string
	prefixDigits int
	want         Destination
}

// destErrorCase is one destination that is refused, and a fragment of the
// detail that says why.
type destErrorCase struct {
	name    string
	channel Channel
	in      string
	field   string
	detail  string
	missing bool
}

// exampleE164 returns libphonenumber's example number of typ for region in
// E.164, rather than a guessed number that its next metadata may not hold.
func exampleE164(t testing.TB, region string, typ phonenumbers.PhoneNumberType) string {
	t.Helper()
	n := phonenumbers.GetExampleNumberForType(region, typ)
	if n == nil {
		t.Fatalf("phonenumbers has no example number of type %v for %s", typ, region)
	}
	return phonenumbers.Format(n, phonenumbers.E164)
}

// phone is the Destination of a phone number on ChannelSMS.
func phone(e164, prefix, region string, cc int, typ NumberType) Destination {
	return Destination{Channel: ChannelSMS, Normalized: e164, Mailbox: e164, Prefix: prefix, Region: region, CallingCode: cc, Type: typ}
}

// email is the Destination of an e-mail address that is its own mailbox.
func email(normalized, domain string) Destination {
	return Destination{Channel: ChannelEmail, Normalized: normalized, Mailbox: normalized, Prefix: domain}
}

// inMailbox is d with Mailbox mailbox.
func inMailbox(d Destination, mailbox string) Destination {
	d.Mailbox = mailbox
	return d
}

func validPhoneCases(t testing.TB) []destCase {
	t.Helper()
	us := phone("+14155550123", "+14155550", "US", 1, NumberFixedLineOrMobile)
	ukMobile := phone("+447400123456", "+447400123", "GB", 44, NumberMobile)
	onVoice, onWhatsApp := us, us
	onVoice.Channel, onWhatsApp.Channel = ChannelVoice, ChannelWhatsApp
	gb := func(typ phonenumbers.PhoneNumberType, want NumberType) destCase {
		e := exampleE164(t, "GB", typ)
		return destCase{"GB example " + want.String(), ChannelSMS, e, 3, phone(e, e[:len(e)-3], "GB", 44, want)}
	}
	// GB has no shared-cost range in libphonenumber's metadata (its 084x
	// and 087x numbers are premium rate there); France has.
	frShared := exampleE164(t, "FR", phonenumbers.SHARED_COST)
	deVoicemail := exampleE164(t, "DE", phonenumbers.VOICEMAIL)
	return []destCase{
		{"US with spaces and dashes", ChannelSMS, "+1 415-555-0123", 3, us},
		{"US in E.164", ChannelSMS, "+14155550123", 3, us},
		{"US with parentheses and dots", ChannelSMS, "+1 (415) 555.0123", 3, us},
		{"US with white space around", ChannelSMS, " +14155550123\n", 3, us},
		{"US on voice", ChannelVoice, "+1 415 555 0123", 3, onVoice},
		{"US on whatsapp", ChannelWhatsApp, "+1-415-555-0123", 3, onWhatsApp},
		{"US, prefix of 1 digit dropped", ChannelSMS, "+14155550123", 1, phone("+14155550123", "+1415555012", "US", 1, NumberFixedLineOrMobile)},
		{"US, prefix of 6 digits dropped", ChannelSMS, "+14155550123", 6, phone("+14155550123", "+14155", "US", 1, NumberFixedLineOrMobile)},
		{"US toll-free", ChannelSMS, "+1 800 234 5678", 3, phone("+18002345678", "+18002345", "US", 1, NumberTollFree)},
		{"UK mobile", ChannelSMS, "+44 7400 123456", 3, ukMobile},
		{"UK London, national prefix in parentheses", ChannelSMS, "+44 (0)20 7946 0958", 3, phone("+442079460958", "+442079460", "GB", 44, NumberFixedLine)},
		{"UK London, national prefix kept", ChannelSMS, "+44 020 7946 0958", 3, phone("+442079460958", "+442079460", "GB", 44, NumberFixedLine)},
		{"UK premium rate", ChannelSMS, "+44 909 8790000", 3, phone("+449098790000", "+449098790", "GB", 44, NumberPremiumRate)},
		gb(phonenumbers.PREMIUM_RATE, NumberPremiumRate),
		gb(phonenumbers.VOIP, NumberVoIP),
		gb(phonenumbers.TOLL_FREE, NumberTollFree),
		gb(phonenumbers.PERSONAL_NUMBER, NumberPersonal),
		gb(phonenumbers.PAGER, NumberPager),
		gb(phonenumbers.UAN, NumberUAN),
		{"FR shared cost", ChannelSMS, frShared, 3, phone(frShared, frShared[:len(frShared)-3], "FR", 33, NumberSharedCost)},
		{"DE voicemail", ChannelSMS, deVoicemail, 3, phone(deVoicemail, deVoicemail[:len(deVoicemail)-3], "DE", 49, NumberVoicemail)},
		{"Rome, in the Vatican's range", ChannelSMS, "+39 06 6988 1234", 3, phone("+390669881234", "+390669881", "VA", 39, NumberFixedLine)},
		{"non-geographic freephone", ChannelSMS, "+800 1234 5678", 3, phone("+80012345678", "+80012345", "001", 800, NumberTollFree)},
		{"Niue, prefix never shorter than the calling code", ChannelSMS, "+683 4002", 6, phone("+6834002", "+683", "NU", 683, NumberFixedLine)},
	}
}

func validEmailCases() []destCase {
	domain253 := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com"
	local64 := strings.Repeat("l", 64)
	return []destCase{
		{"mixed case", ChannelEmail, "Alice@Example.COM", 3, email("alice@example.com", "example.com")},
		{"already normal", ChannelEmail, "alice@example.com", 3, email("alice@example.com", "example.com")},
		{"sub-address kept, dropped from the mailbox", ChannelEmail, "Alice+OTP@Mail.Example.co.uk", 3, inMailbox(email("alice+otp@mail.example.co.uk", "mail.example.co.uk"), "alice@mail.example.co.uk")},
		{"internationalised domain", ChannelEmail, "josé@Bücher.example", 3, email("josé@xn--bcher-kva.example", "xn--bcher-kva.example")},
		{"A-label domain", ChannelEmail, "josé@XN--BCHER-KVA.example", 3, email("josé@xn--bcher-kva.example", "xn--bcher-kva.example")},
		{"trailing dot dropped", ChannelEmail, "bob@example.com.", 3, email("bob@example.com", "example.com")},
		{"full-width forms", ChannelEmail, "ＡＬＩＣＥ@ｅｘａｍｐｌｅ．ｃｏｍ", 3, email("alice@example.com", "example.com")},
		{"ideographic full stop", ChannelEmail, "alice@example。com", 3, email("alice@example.com", "example.com")},
		{"white space around", ChannelEmail, "\talice@example.com ", 3, email("alice@example.com", "example.com")},
		{"local part of 64 bytes", ChannelEmail, local64 + "@example.com", 3, email(local64+"@example.com", "example.com")},
		{"domain of 253 bytes", ChannelEmail, "x@" + domain253, 3, email("x@"+domain253, domain253)},
		{"digits and hyphens in the domain", ChannelEmail, "a@0-9.example-1.net", 3, email("a@0-9.example-1.net", "0-9.example-1.net")},
		{"dots inside the local part", ChannelEmail, "Alice.B.Smith@example.com", 3, email("alice.b.smith@example.com", "example.com")},
		{"full-width dot inside the local part", ChannelEmail, "alice．smith@example.com", 3, email("alice.smith@example.com", "example.com")},
		{"every ASCII symbol of a dot-atom", ChannelEmail, "a!#$%&'*+-/=?^_`{|}~z@example.com", 3, inMailbox(email("a!#$%&'*+-/=?^_`{|}~z@example.com", "example.com"), "a!#$%&'*@example.com")},
		{"every ASCII symbol but + in the mailbox", ChannelEmail, "a!#$%&'*-/=?^_`{|}~z+x@example.com", 3, inMailbox(email("a!#$%&'*-/=?^_`{|}~z+x@example.com", "example.com"), "a!#$%&'*-/=?^_`{|}~z@example.com")},
		{"Gmail's dots and tag, in the mailbox only", ChannelEmail, "Al.Ice+OTP@GoogleMail.com", 3, inMailbox(email("al.ice+otp@googlemail.com", "googlemail.com"), "alice@gmail.com")},
		{"Fastmail subdomain address", ChannelEmail, "shop@Alice.Fastmail.com", 3, inMailbox(email("shop@alice.fastmail.com", "alice.fastmail.com"), "alice@fastmail.com")},
		{"dot before the tag where dots are ignored", ChannelEmail, "alice.+x@gmail.com", 3, inMailbox(email("alice.+x@gmail.com", "gmail.com"), "alice@gmail.com")},
		{"empty tag", ChannelEmail, "alice+@example.com", 3, inMailbox(email("alice+@example.com", "example.com"), "alice@example.com")},
		{"unicode local part", ChannelEmail, "Ünïcödé.ñame@example.com", 3, email("ünïcödé.ñame@example.com", "example.com")},
	}
}

// dotAtomDetail is a fragment of the detail for a local part that is not a
// dot-atom.
const dotAtomDetail = "joined by single dots"

// mailboxDetailFragment is a fragment of the detail for a local part whose
// mailbox name names no mailbox.
const mailboxDetailFragment = "must name a mailbox"

func destErrorCases() []destErrorCase {
	return []destErrorCase{
		{"too short for its region", ChannelSMS, "+1 555", "destination", "is not a valid phone number", false},
		{"unassigned calling code", ChannelSMS, "+999 1234", "destination", "country calling code", false},
		{"unassigned US area code", ChannelSMS, "+1 111 555 0123", "destination", "is not a valid phone number", false},
		{"too long", ChannelSMS, "+44 7400 1234567", "destination", "is not a valid phone number", false},
		{"national format", ChannelSMS, "12345", "destination", "international format, starting with +", false},
		{"national format with separators", ChannelVoice, "(415) 555-0123", "destination", "international format, starting with +", false},
		{"vanity letters", ChannelSMS, "+1 800 FLOWERS", "destination", "digits 0-9", false},
		{"letters only", ChannelSMS, "call me maybe", "destination", "must be a phone number for channel sms", false},
		{"extension", ChannelSMS, "+1 415 555 0123 ext 5", "destination", "digits 0-9", false},
		{"tel URI", ChannelSMS, "tel:+14155550123", "destination", "digits 0-9", false},
		{"two plus signs", ChannelSMS, "++14155550123", "destination", "digits 0-9", false},
		{"full-width digits", ChannelSMS, "+１４１５５５５０１２３", "destination", "digits 0-9", false},
		{"plus alone", ChannelSMS, "+", "destination", "must be a phone number", false},
		{"e-mail on sms", ChannelSMS, "alice@example.com", "destination", "must be a phone number for channel sms", false},
		{"e-mail on whatsapp", ChannelWhatsApp, "alice@example.com", "destination", "must be a phone number for channel whatsapp", false},
		{"no at", ChannelEmail, "no-at", "destination", "must be an e-mail address", false},
		{"two ats", ChannelEmail, "a@b@c", "destination", "exactly one @", false},
		{"full-width at in the local part", ChannelEmail, "a＠b@example.com", "destination", "exactly one @", false},
		{"empty local part", ChannelEmail, "@example.com", "destination", "local part", false},
		{"empty domain", ChannelEmail, "alice@", "destination", "domain", false},
		{"local part of 65 bytes", ChannelEmail, strings.Repeat("l", 65) + "@example.com", "destination", "at most 64 bytes", false},
		{"domain of 254 bytes", ChannelEmail, "x@" + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 58) + ".com", "destination", "at most 253 bytes", false},
		{"label of 64 bytes", ChannelEmail, "x@" + strings.Repeat("a", 64) + ".com", "destination", "labels of 1 to 63", false},
		{"domain with no dot", ChannelEmail, "alice@localhost", "destination", "at least one dot", false},
		{"phone on email", ChannelEmail, "+1 415 555 0123", "destination", "must be an e-mail address for channel email", false},
		{"national phone on email", ChannelEmail, "4155550123", "destination", "must be an e-mail address for channel email", false},
		{"space in the local part", ChannelEmail, "al ice@example.com", "destination", "white space", false},
		{"space before the at", ChannelEmail, "alice @example.com", "destination", "white space", false},
		{"quoted local part", ChannelEmail, `"a b"@example.com`, "destination", "white space", false},
		// RFC 5321 and 5322 spell the mailbox alice@example.com in many more
		// ways, each of which would get a budget of its own.
		{"quoted local part without white space", ChannelEmail, `"alice"@example.com`, "destination", dotAtomDetail, false},
		{"quoted-pair in a quoted local part", ChannelEmail, `"al\ice"@example.com`, "destination", dotAtomDetail, false},
		{"quoted-pair on every letter", ChannelEmail, `"\a\l\i\c\e"@example.com`, "destination", dotAtomDetail, false},
		{"quoted dot-atom after a dot", ChannelEmail, `alice."b"@example.com`, "destination", dotAtomDetail, false},
		{"backslash without quotes", ChannelEmail, `al\ice@example.com`, "destination", dotAtomDetail, false},
		{"comment after the local part", ChannelEmail, "alice(1)@example.com", "destination", dotAtomDetail, false},
		{"comment before the local part", ChannelEmail, "(x)alice@example.com", "destination", dotAtomDetail, false},
		{"unclosed comment", ChannelEmail, "alice(@example.com", "destination", dotAtomDetail, false},
		{"comment in the domain", ChannelEmail, "alice@example.com(1)", "destination", "domain", false},
		{"full-width quotes", ChannelEmail, "＂alice＂@example.com", "destination", dotAtomDetail, false},
		{"full-width parentheses", ChannelEmail, "alice（1）@example.com", "destination", dotAtomDetail, false},
		{"full-width backslash", ChannelEmail, "al＼ice@example.com", "destination", dotAtomDetail, false},
		{"angle brackets", ChannelEmail, "<alice>@example.com", "destination", dotAtomDetail, false},
		{"comma", ChannelEmail, "bob,alice@example.com", "destination", dotAtomDetail, false},
		{"colon and semicolon", ChannelEmail, "x:alice;@example.com", "destination", dotAtomDetail, false},
		{"square brackets", ChannelEmail, "[alice]@example.com", "destination", dotAtomDetail, false},
		{"leading dot in the local part", ChannelEmail, ".alice@example.com", "destination", dotAtomDetail, false},
		{"trailing dot in the local part", ChannelEmail, "alice.@example.com", "destination", dotAtomDetail, false},
		{"two dots in a row", ChannelEmail, "al..ice@example.com", "destination", dotAtomDetail, false},
		{"dot alone", ChannelEmail, ".@example.com", "destination", dotAtomDetail, false},
		{"full-width dots in a row", ChannelEmail, "al．．ice@example.com", "destination", dotAtomDetail, false},
		{"zero-width space in the local part", ChannelEmail, "ali\u200bce@example.com", "destination", "local part must hold only", false},
		{"space in the domain", ChannelEmail, "alice@exa mple.com", "destination", "domain", false},
		{"underscore in the domain", ChannelEmail, "alice@exa_mple.com", "destination", "domain", false},
		{"address literal", ChannelEmail, "alice@[192.0.2.1]", "destination", "domain", false},
		{"IPv4 address as domain", ChannelEmail, "alice@192.0.2.1", "destination", "not an IP address", false},
		{"leading hyphen", ChannelEmail, "alice@-example.com", "destination", "domain", false},
		{"empty label", ChannelEmail, "alice@example..com", "destination", "domain", false},
		{"two trailing dots", ChannelEmail, "alice@example.com..", "destination", "domain", false},
		{"A-label that is not Punycode", ChannelEmail, "alice@xn--a.example", "destination", "domain", false},
		// What is left of a local part once its tag is dropped and its
		// provider's rules are applied must name a mailbox.
		{"local part that is only a tag", ChannelEmail, "+x@example.com", "destination", mailboxDetailFragment, false},
		{"local part that is only a plus", ChannelEmail, "+@gmail.com", "destination", mailboxDetailFragment, false},
		{"local part that is only tags", ChannelEmail, "++x@example.com", "destination", mailboxDetailFragment, false},
		{"dot before the tag", ChannelEmail, "alice.+x@example.com", "destination", mailboxDetailFragment, false},
		{"dot before the tag at Outlook", ChannelEmail, "alice.+x@outlook.com", "destination", mailboxDetailFragment, false},
		{"only characters Proton ignores", ChannelEmail, "-_-@proton.me", "destination", mailboxDetailFragment, false},
		{"only characters Proton ignores, and a tag", ChannelEmail, "_.-+x@pm.me", "destination", mailboxDetailFragment, false},
		{"RTL mailbox name that breaks the Bidi Rule", ChannelEmail, "\u05d0-+1@example.com", "destination", mailboxDetailFragment, false},
		{"empty", ChannelSMS, "", "destination", "is required", true},
		{"white space only", ChannelEmail, " \t ", "destination", "is required", true},
		{"over 256 bytes", ChannelEmail, strings.Repeat("a", 250) + "@example.com", "destination", "at most 256 bytes", false},
		{"invalid UTF-8", ChannelEmail, "al\xffice@example.com", "destination", "valid UTF-8", false},
		{"invalid UTF-8 phone", ChannelSMS, "+1415\xff5550123", "destination", "valid UTF-8", false},
		{"no channel", 0, "+14155550123", "channel", `"sms", "voice", "whatsapp" or "email"`, false},
		{"channel out of range", ChannelEmail + 1, "alice@example.com", "channel", `"sms", "voice", "whatsapp" or "email"`, false},
	}
}

func TestParseDestination_Valid(t *testing.T) {
	tests := append(validPhoneCases(t), validEmailCases()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDestination(tt.channel, tt.in, tt.prefixDigits)
			if err != nil {
				t.Fatalf("ParseDestination(%v, %+q, %d): %v", tt.channel, tt.in, tt.prefixDigits, err)
			}
			if got != tt.want {
				t.Errorf("ParseDestination(%v, %+q, %d) = %+v, want %+v", tt.channel, tt.in, tt.prefixDigits, got, tt.want)
			}
			// The normalised form is a fixed point.
			again, err := ParseDestination(tt.channel, got.Normalized, tt.prefixDigits)
			if err != nil || again != got {
				t.Errorf("ParseDestination(%v, %+q, %d) = %+v, %v, want %+v", tt.channel, got.Normalized, tt.prefixDigits, again, err, got)
			}
		})
	}
}

func TestParseDestination_Invalid(t *testing.T) {
	for _, tt := range destErrorCases() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDestination(tt.channel, tt.in, 3)
			if got != (Destination{}) {
				t.Errorf("ParseDestination(%v, %+q, 3) returned %+v with its error", tt.channel, tt.in, got)
			}
			ie := wantDestinationInputError(t, tt.channel, tt.in, err)
			if ie.Field != tt.field || ie.Missing != tt.missing || !strings.Contains(ie.Detail, tt.detail) {
				t.Errorf("ParseDestination(%v, %+q, 3): %#v, want field %q, missing %v, a detail with %q", tt.channel, tt.in, ie, tt.field, tt.missing, tt.detail)
			}
		})
	}
}

// wantDestinationInputError checks err is an *InputError for destination or
// channel whose detail does not repeat in.
func wantDestinationInputError(t *testing.T, ch Channel, in string, err error) *InputError {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) || ie.Detail == "" || (ie.Field != "destination" && ie.Field != "channel") {
		t.Fatalf("ParseDestination(%v, %+q, 3): %v, want an *InputError for destination or channel", ch, in, err)
	}
	if !errors.Is(err, ErrInvalidInput) {
		t.Errorf("ParseDestination(%v, %+q, 3): %v does not match ErrInvalidInput", ch, in, err)
	}
	if s := strings.TrimSpace(in); len(s) >= 6 && strings.Contains(ie.Detail, s) {
		t.Errorf("ParseDestination(%v, %+q, 3): detail %q repeats the value", ch, in, ie.Detail)
	}
	return ie
}

func TestParseDestination_PrefixDigitsOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 0, 7, 100} {
		_, err := ParseDestination(ChannelSMS, "+14155550123", n)
		if err == nil || errors.Is(err, ErrInvalidInput) {
			t.Errorf("ParseDestination with prefixDigits %d: %v, want a plain error", n, err)
		}
	}
}

// Every example number libphonenumber holds, for every region, type and
// non-geographic calling code, parses in E.164 and in international format
// to itself, with libphonenumber's region and type.
func TestParseDestination_EveryExampleNumber(t *testing.T) {
	var examples []*phonenumbers.PhoneNumber
	for _, region := range slices.Sorted(maps.Keys(phonenumbers.GetSupportedRegions())) {
		for typ := phonenumbers.FIXED_LINE; typ < phonenumbers.UNKNOWN; typ++ {
			if n := phonenumbers.GetExampleNumberForType(region, typ); n != nil {
				examples = append(examples, n)
			}
		}
	}
	for _, cc := range slices.Sorted(maps.Keys(phonenumbers.GetSupportedGlobalNetworkCallingCodes())) {
		if n := phonenumbers.GetExampleNumberForNonGeoEntity(cc); n != nil {
			examples = append(examples, n)
		}
	}
	if len(examples) < 1000 {
		t.Fatalf("only %d example numbers", len(examples))
	}
	for _, n := range examples {
		e164 := phonenumbers.Format(n, phonenumbers.E164)
		want := Destination{
			Channel:     ChannelSMS,
			Normalized:  e164,
			Mailbox:     e164,
			Prefix:      e164[:max(len(e164)-3, len(e164)-len(phonenumbers.GetNationalSignificantNumber(n)))],
			Region:      phonenumbers.GetRegionCodeForNumber(n),
			CallingCode: int(n.GetCountryCode()),
			Type:        numberTypes[phonenumbers.GetNumberType(n)],
		}
		for _, in := range []string{e164, phonenumbers.Format(n, phonenumbers.INTERNATIONAL)} {
			got, err := ParseDestination(ChannelSMS, in, 3)
			if err != nil || got != want {
				t.Errorf("ParseDestination(sms, %+q, 3) = %+v, %v, want %+v", in, got, err, want)
			}
		}
	}
}

// parsePhone takes a number as valid when phonenumbers.GetNumberType finds
// a type, rather than also calling phonenumbers.IsValidNumber. The two agree
// on every example number and on numbers one digit away from one: shorter,
// longer, and with each digit after the first changed two ways.
func TestParseDestination_ValidExactlyWhenIsValidNumber(t *testing.T) {
	var e164s []string
	for _, region := range slices.Sorted(maps.Keys(phonenumbers.GetSupportedRegions())) {
		for typ := phonenumbers.FIXED_LINE; typ < phonenumbers.UNKNOWN; typ++ {
			if n := phonenumbers.GetExampleNumberForType(region, typ); n != nil {
				e164s = append(e164s, phonenumbers.Format(n, phonenumbers.E164))
			}
		}
	}
	for _, cc := range slices.Sorted(maps.Keys(phonenumbers.GetSupportedGlobalNetworkCallingCodes())) {
		if n := phonenumbers.GetExampleNumberForNonGeoEntity(cc); n != nil {
			e164s = append(e164s, phonenumbers.Format(n, phonenumbers.E164))
		}
	}
	valid, invalid := 0, 0
	for i, e := range slices.Compact(slices.Sorted(slices.Values(e164s))) {
		if testing.Short() && i%4 != 0 {
			continue // every fourth example number, spread over the country codes; make test reads them all
		}
		variants := []string{e, e[:len(e)-1], e + "0", e + "9"}
		for i := 2; i < len(e); i++ {
			for _, add := range []byte{1, 5} {
				d := '0' + (e[i]-'0'+add)%10
				variants = append(variants, e[:i]+string(d)+e[i+1:])
			}
		}
		for _, v := range variants {
			n, err := phonenumbers.Parse(v, "")
			if err != nil {
				continue
			}
			want := phonenumbers.IsValidNumber(n)
			if got := phonenumbers.GetNumberType(n) != phonenumbers.UNKNOWN; got != want {
				t.Fatalf("%s: GetNumberType finds a type: %v, IsValidNumber: %v", v, got, want)
			}
			_, err = ParseDestination(ChannelSMS, v, 3)
			if (err == nil) != want {
				t.Fatalf("ParseDestination(sms, %s, 3): %v, but IsValidNumber says %v", v, err, want)
			}
			if want {
				valid++
			} else {
				invalid++
			}
		}
	}
	t.Logf("%d valid and %d invalid numbers", valid, invalid)
}

func TestParseChannel(t *testing.T) {
	for c := ChannelSMS; c <= ChannelEmail; c++ {
		got, err := ParseChannel(c.String())
		if err != nil || got != c {
			t.Errorf("ParseChannel(%q) = %v, %v, want %v", c.String(), got, err, c)
		}
		if got, want := c.Phone(), c != ChannelEmail; got != want {
			t.Errorf("%v.Phone() = %v, want %v", c, got, want)
		}
	}
	for _, s := range []string{"", "SMS", "mail", "e-mail", "phone", "unknown", "sms "} {
		_, err := ParseChannel(s)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != "channel" || !strings.Contains(ie.Detail, `"whatsapp"`) {
			t.Errorf("ParseChannel(%q): %v, want an *InputError for channel that lists the names", s, err)
		}
	}
	for _, c := range []Channel{0, ChannelEmail + 1, 255} {
		if got := c.String(); got != "unknown" {
			t.Errorf("Channel(%d).String() = %q, want unknown", uint8(c), got)
		}
		if c.Phone() {
			t.Errorf("Channel(%d).Phone() = true", uint8(c))
		}
	}
}

func TestParseNumberType(t *testing.T) {
	seen := map[string]bool{}
	for typ := NumberFixedLine; typ <= NumberUnknown; typ++ {
		s := typ.String()
		if seen[s] || strings.HasPrefix(s, "NumberType(") {
			t.Errorf("%d.String() = %q: repeated or missing", uint8(typ), s)
		}
		seen[s] = true
		got, err := ParseNumberType(s)
		if err != nil || got != typ {
			t.Errorf("ParseNumberType(%q) = %v, %v, want %v", s, got, err, typ)
		}
	}
	for _, s := range []string{"", "Mobile", "fixed-line", "voip ", "NumberType(0)", "invalid"} {
		_, err := ParseNumberType(s)
		if err == nil || !strings.Contains(err.Error(), "premium_rate") {
			t.Errorf("ParseNumberType(%q): %v, want an error that lists the names", s, err)
		}
	}
	for _, typ := range []NumberType{0, NumberUnknown + 1} {
		if _, err := ParseNumberType(typ.String()); err == nil {
			t.Errorf("ParseNumberType(%q) succeeded", typ.String())
		}
	}
}

// Every libphonenumber type maps to a NumberType of its own.
func TestNumberType_MapsEveryPhonenumbersType(t *testing.T) {
	seen := map[NumberType]bool{}
	for typ := phonenumbers.FIXED_LINE; typ <= phonenumbers.UNKNOWN; typ++ {
		got, ok := numberTypes[typ]
		if !ok || seen[got] || got < NumberFixedLine || got > NumberUnknown {
			t.Errorf("phonenumbers type %v maps to %v, %v", typ, got, ok)
		}
		seen[got] = true
	}
}

// FuzzParseDestination holds every input on every channel to
// checkParseDestination.
func FuzzParseDestination(f *testing.F) {
	var seeds []string
	for _, tt := range append(validPhoneCases(f), validEmailCases()...) {
		seeds = append(seeds, tt.in)
	}
	for _, tt := range destErrorCases() {
		seeds = append(seeds, tt.in)
	}
	seeds = append(seeds, "+44 (0) 20 7946 0958", "alice@xn--bcher-kva.example.", "a@b.c", "x@١٢٣.example", "a@ß.example", "a@İ.example", "\u05d0@\u05d0.example")
	for _, tt := range mailboxCases() {
		seeds = append(seeds, tt.spellings...)
	}
	seeds = append(seeds, "a.\u0301b+x@gmail.com", "\u05d0.\u05d1+\u0661@gmail.com", "x@a.b.alice.fastmail.fm", "a+b@xn--bcher-kva.fastmail.com", "é-+x@proton.me")
	for _, s := range seeds {
		for c := Channel(0); c <= ChannelEmail+1; c++ {
			f.Add(uint8(c), s)
		}
	}
	f.Fuzz(func(t *testing.T, c uint8, s string) { checkParseDestination(t, Channel(c), s) })
}

// checkParseDestination: s is either refused with an *InputError for
// destination or channel, or becomes a Destination whose Normalized is valid
// UTF-8 of at most 320 bytes with its Prefix as a prefix (phone) or as its
// domain (e-mail), and which Normalized parses to again; see checkMailbox
// for its Mailbox.
func checkParseDestination(t *testing.T, ch Channel, s string) {
	t.Helper()
	d, err := ParseDestination(ch, s, 3)
	if err != nil {
		if d != (Destination{}) {
			t.Fatalf("ParseDestination(%v, %+q, 3) returned %+v with its error", ch, s, d)
		}
		wantDestinationInputError(t, ch, s, err)
		return
	}
	if d.Channel != ch || d.Normalized == "" || !utf8.ValidString(d.Normalized) || len(d.Normalized) > 320 {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: wrong channel, or Normalized empty, invalid or too long", ch, s, d)
	}
	if ch.Phone() {
		if n, err := phonenumbers.Parse(d.Normalized, ""); err != nil || !phonenumbers.IsValidNumber(n) {
			t.Fatalf("ParseDestination(%v, %+q, 3) = %+v, but phonenumbers does not find it valid: %v", ch, s, d, err)
		}
		if !plusDigits(d.Normalized) || !strings.HasPrefix(d.Normalized, d.Prefix) || len(d.Prefix) <= 1 ||
			d.Region == "" || d.CallingCode <= 0 || d.Type == 0 {
			t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: not a phone destination", ch, s, d)
		}
	} else {
		at := strings.LastIndexByte(d.Normalized, '@')
		if at <= 0 || d.Normalized[at+1:] != d.Prefix || d.Region != "" || d.CallingCode != 0 || d.Type != 0 {
			t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: not an e-mail destination", ch, s, d)
		}
		// net/mail reads a quoted or commented address as the dot-atom
		// address of its mailbox; reading Normalized as itself shows it is
		// that one spelling.
		if a, err := mail.ParseAddress(d.Normalized); err != nil || a.Address != d.Normalized {
			t.Fatalf("ParseDestination(%v, %+q, 3) = %+v, but net/mail reads it as %v, %v", ch, s, d, a, err)
		}
	}
	again, err := ParseDestination(ch, d.Normalized, 3)
	if err != nil || again != d {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v, but ParseDestination(%v, %+q, 3) = %+v, %v", ch, s, d, ch, d.Normalized, again, err)
	}
	checkMailbox(t, s, d)
}

// checkMailbox: d, which s parsed to, has a Mailbox of at most 318 bytes of
// valid UTF-8. A phone's is Normalized. An e-mail address's has no "+" in
// its local part and none of the characters its provider ignores, is its
// own Normalized and Mailbox, and is the Mailbox of Normalized with a tag
// added.
func checkMailbox(t *testing.T, s string, d Destination) {
	t.Helper()
	m := d.Mailbox
	if m == "" || !utf8.ValidString(m) || len(m) > 318 {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: Mailbox empty, invalid or too long", d.Channel, s, d)
	}
	if d.Channel.Phone() {
		if m != d.Normalized {
			t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: a phone's Mailbox is not its Normalized", d.Channel, s, d)
		}
		return
	}
	local, domain, ok := strings.Cut(m, "@")
	if !ok || local == "" || strings.IndexByte(local, '+') >= 0 {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: Mailbox has an empty local part or a + in it", d.Channel, s, d)
	}
	if r := mailboxRuleOf[domain]; r != nil && strings.ContainsAny(local, r.Ignore) {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: Mailbox keeps a character of %q, which %s ignores", d.Channel, s, d, r.Ignore, r.Provider)
	}
	if r := mailboxRuleOf[domain]; r != nil && r.Canonical != "" && r.Canonical != domain {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v: Mailbox domain is not %s's canonical %s", d.Channel, s, d, r.Provider, r.Canonical)
	}
	again, err := ParseDestination(d.Channel, m, 3)
	if err != nil || again.Normalized != m || again.Mailbox != m {
		t.Fatalf("ParseDestination(%v, %+q, 3) = %+v, but its Mailbox parses to %+v, %v", d.Channel, s, d, again, err)
	}
	// A tag never makes another mailbox. Adding one can break the Bidi
	// Rule in a right-to-left word, or the 64-byte bound.
	at := strings.LastIndexByte(d.Normalized, '@')
	tagged := d.Normalized[:at] + "+9" + d.Normalized[at:]
	td, err := ParseDestination(d.Channel, tagged, 3)
	fits := at+2 <= maxLocalPartBytes && len(tagged) <= MaxDestinationBytes
	if err == nil && td.Mailbox != m || err != nil && fits && isASCII(d.Normalized) {
		t.Fatalf("ParseDestination(%v, %+q, 3) has Mailbox %q, but %+q parses to %+v, %v", d.Channel, s, m, tagged, td, err)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func BenchmarkParseDestination(b *testing.B) {
	for _, bb := range []struct {
		name string
		ch   Channel
		in   string
	}{
		{"us-phone", ChannelSMS, "+1 415-555-0123"},
		{"uk-phone", ChannelSMS, "+44 7400 123456"},
		{"ascii-email", ChannelEmail, "alice@example.com"},
		{"tagged-gmail", ChannelEmail, "Al.Ice+OTP@gmail.com"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseDestination(bb.ch, bb.in, 3); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
