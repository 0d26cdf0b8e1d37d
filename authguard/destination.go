package authguard

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/tollgate-auth/tollgate/authguard/phonenum"
)

// Channel is how a one-time code travels: sms, voice, whatsapp or email.
type Channel uint8

// The channels. On the wire they are "sms", "voice", "whatsapp" and "email".
const (
	ChannelSMS Channel = iota + 1
	ChannelVoice
	ChannelWhatsApp
	ChannelEmail
)

// channelNames holds each channel's wire name, indexed by Channel.
var channelNames = [...]string{
	ChannelSMS:      "sms",
	ChannelVoice:    "voice",
	ChannelWhatsApp: "whatsapp",
	ChannelEmail:    "email",
}

const channelDetail = `must be "sms", "voice", "whatsapp" or "email"`

// ParseChannel parses a channel's wire name. Any other string gives an
// *InputError for the field "channel".
func ParseChannel(s string) (Channel, error) {
	for c := ChannelSMS; c <= ChannelEmail; c++ {
		if channelNames[c] == s {
			return c, nil
		}
	}
	return 0, &InputError{Field: "channel", Detail: channelDetail}
}

// String returns the channel's wire name, or "unknown".
func (c Channel) String() string {
	if c < ChannelSMS || c > ChannelEmail {
		return "unknown"
	}
	return channelNames[c]
}

// Phone reports whether the channel sends to a phone number: sms, voice and
// whatsapp do.
func (c Channel) Phone() bool { return c >= ChannelSMS && c <= ChannelWhatsApp }

// NumberType is a phone number's type as libphonenumber determines it from
// the number alone (see phonenum.Type). Most numbers in North America are
// NumberFixedLineOrMobile, not NumberMobile.
type NumberType = phonenum.Type

// The number types. On the wire and in configuration they are "fixed_line",
// "mobile", "fixed_line_or_mobile", "toll_free", "premium_rate",
// "shared_cost", "voip", "personal_number", "pager", "uan", "voicemail" and
// "unknown".
const (
	NumberFixedLine         = phonenum.FixedLine
	NumberMobile            = phonenum.Mobile
	NumberFixedLineOrMobile = phonenum.FixedLineOrMobile
	NumberTollFree          = phonenum.TollFree
	NumberPremiumRate       = phonenum.PremiumRate
	NumberSharedCost        = phonenum.SharedCost
	NumberVoIP              = phonenum.VoIP
	NumberPersonal          = phonenum.Personal
	NumberPager             = phonenum.Pager
	NumberUAN               = phonenum.UAN // a universal access ("company") number
	NumberVoicemail         = phonenum.Voicemail
	// NumberUnknown matches no range of the number's region. A parsed
	// Destination never has it: such a number is not valid.
	NumberUnknown = phonenum.Unknown
)

// ParseNumberType parses a number type's name, as configuration spells it.
func ParseNumberType(s string) (NumberType, error) {
	for t := NumberFixedLine; t <= NumberUnknown; t++ {
		if t.String() == s {
			return t, nil
		}
	}
	names := make([]string, 0, NumberUnknown)
	for t := NumberFixedLine; t <= NumberUnknown; t++ {
		names = append(names, t.String())
	}
	return 0, fmt.Errorf("authguard: unknown number type %q: want one of %s", s, strings.Join(names, ", "))
}

// MaxDestinationBytes bounds a destination as sent.
const MaxDestinationBytes = 256

// Limits of RFC 5321 and RFC 1035 on e-mail addresses.
const (
	maxLocalPartBytes = 64
	maxDomainBytes    = 253
	maxLabelBytes     = 63
)

// Destination is a parsed, normalised destination for a one-time code. It
// is never logged or stored: the engine hashes Mailbox and Prefix.
type Destination struct {
	// Channel is the channel the destination was parsed for.
	Channel Channel
	// Normalized is the one spelling of the destination, the address a
	// code is sent to. For a phone it is the number in E.164
	// ("+14155550123"). For an e-mail address it is the local part as
	// NormalizeAccount normalises it, "@", and the domain in lower-case
	// ASCII, internationalised labels as IDNA A-labels
	// ("josé@xn--bcher-kva.example"). It holds valid UTF-8 of at most 318
	// bytes. The local part is case-folded but otherwise kept: sub-addresses
	// ("alice+1", "alice+2") and Gmail's dots stay apart, so a counter on
	// Normalized would give each its own budget. Count on Mailbox.
	Normalized string
	// Mailbox is the mailbox the destination delivers to, the subject that
	// its counters key on: every spelling of one mailbox has one Mailbox.
	// For a phone it is Normalized. For an e-mail address it is Normalized
	// without its "+" tag and with its provider's rules applied
	// ("a.lice+1@googlemail.com" is "alice@gmail.com"); see
	// ParseDestination. It holds valid UTF-8 of at most 318 bytes, no "+"
	// in its local part, and is its own Normalized and Mailbox. It is for
	// counting only: a code goes to Normalized.
	Mailbox string
	// Prefix is the block the destination belongs to. For a phone it is
	// Normalized without its last prefixDigits digits ("+14155550"), but
	// never shorter than "+" and the country calling code. For an e-mail
	// address it is the domain of Normalized, which the engine does not
	// count as a block (a domain such as gmail.com is everybody's).
	Prefix string
	// Region is a phone's ISO 3166-1 alpha-2 region ("US", "GB"), or "001"
	// for a non-geographic number (+800, +882 and the like). It is "" for
	// e-mail.
	Region string
	// CallingCode is a phone's country calling code (1, 44), 0 for e-mail.
	CallingCode int
	// Type is a phone's type, 0 for e-mail. Most numbers in North America
	// are NumberFixedLineOrMobile: see NumberType.
	Type NumberType
}

// Bounds on ParseDestination's prefixDigits.
const (
	minPrefixDigits = 1
	maxPrefixDigits = 6
)

// ParseDestination parses raw, a destination as the caller sent it, for
// channel. prefixDigits (1 to 6) is how many trailing digits a phone's
// Prefix drops. White space around raw is ignored.
//
// On a phone channel (sms, voice, whatsapp) raw must be a number in
// international form: "+", then digits 0-9, which spaces, dots, dashes and
// parentheses may separate ("+44 (0)20 7946 0958"). A national prefix in
// parentheses or after the calling code is dropped, as libphonenumber does.
// Letters (vanity numbers), extensions, tel: URIs and digits other than
// 0-9 are refused. The number must be valid by libphonenumber's metadata:
// in an assigned range and of the right length for its region.
//
// On the email channel raw must be an address with one "@": a local part
// of at most 64 bytes once normalised, and a domain name (Unicode or ASCII,
// with at least one dot and a last label that is not all digits) of at most
// 253 bytes in ASCII. One trailing dot on the domain is dropped. Once
// normalised, the local part must be a dot-atom: words of letters (any
// script), digits and !#$%&'*+-/=?^_`{|}~, joined by single dots. So white
// space, quoted strings ("alice"@, "a b"@), quoted-pairs (al\ice@),
// comments (alice(1)@), the other specials (< > [ ] : ; and comma) and a
// dot at the start, at the end or next to another (.alice@, alice.@,
// al..ice@) are refused, and so are their full-width forms; so are address
// literals ("[192.0.2.1]"). Most of these spell a mailbox that has a
// dot-atom address ("\a\l\i\c\e"@ and alice(1)@ are alice@), so taking
// them would give one mailbox any number of budgets.
//
// An e-mail address's Mailbox, the subject its quotas count, is Normalized
// with these rules applied:
//
//   - On every domain, the local part ends before its first "+": a "+"
//     tag (RFC 5233 sub-addressing, which Gmail, Outlook.com, iCloud,
//     Fastmail, Proton and most mail servers deliver to the untagged
//     mailbox) is dropped. Two mailboxes of one server that differ only
//     after a "+" share one quota: that errs on the side of the mailbox
//     that would otherwise get a budget per tag.
//   - Providers that document which spellings reach one mailbox have a row
//     in a table (docs/otp.md lists it): gmail.com and googlemail.com are one
//     domain that ignores dots in the local part; proton.me,
//     protonmail.com, protonmail.ch and pm.me are one domain that ignores
//     dots, hyphens and underscores; icloud.com, me.com and mac.com are
//     one domain; anything@alice.fastmail.com, or at any subdomain of
//     alice.fastmail.com, is alice@fastmail.com (Fastmail's subdomain
//     addressing), and likewise under fastmail.fm.
//
// What remains of the local part (its mailbox name) must itself be a valid
// local part, or the address is refused: "+x@", "alice.+x@" (except where
// dots are ignored) and a Proton "-_-@" name no mailbox. Other separators
// (qmail's "-"), catch-all domains and a domain's own aliases are the
// domain's configuration, which a parser cannot see: each such spelling
// still has its own Mailbox.
//
// Every input that is refused gives an *InputError for the field
// "destination", or "channel" for a channel that is not one of the
// constants; its Detail never repeats raw. A prefixDigits out of range is
// the caller's bug and gives a plain error.
func ParseDestination(channel Channel, raw string, prefixDigits int) (Destination, error) {
	if prefixDigits < minPrefixDigits || prefixDigits > maxPrefixDigits {
		return Destination{}, fmt.Errorf("authguard: prefixDigits %d out of range %d to %d", prefixDigits, minPrefixDigits, maxPrefixDigits)
	}
	if channel < ChannelSMS || channel > ChannelEmail {
		return Destination{}, &InputError{Field: "channel", Detail: channelDetail}
	}
	if len(raw) > MaxDestinationBytes {
		return Destination{}, destinationError("must be at most 256 bytes")
	}
	if !utf8.ValidString(raw) {
		return Destination{}, destinationError("must be valid UTF-8")
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return Destination{}, &InputError{Field: "destination", Detail: "is required", Missing: true}
	}
	if channel.Phone() {
		return parsePhone(channel, s, prefixDigits)
	}
	return parseEmail(s)
}

func destinationError(detail string) error { return &InputError{Field: "destination", Detail: detail} }

// parsePhone is ParseDestination for a phone channel and trimmed, non-empty s.
func parsePhone(channel Channel, s string, prefixDigits int) (Destination, error) {
	if err := checkPhoneShape(channel, s); err != nil {
		return Destination{}, err
	}
	// With no default region, phonenum.Parse reads s as international: a
	// number without "+" cannot get this far.
	num, err := phonenum.Parse(s)
	if errors.Is(err, phonenum.ErrCallingCode) {
		return Destination{}, destinationError("is not a valid phone number: its country calling code is not assigned")
	}
	if err != nil {
		return Destination{}, destinationError("is not a valid phone number")
	}
	e164, cc, region, typ := num.E164, num.CallingCode, num.Region, num.Type
	ccDigits := 0
	for n := cc; n > 0; n /= 10 {
		ccDigits++
	}
	if ccDigits == 0 || !plusDigits(e164) || len(e164) <= 1+ccDigits {
		// These hold for every valid number; they guard the Prefix below.
		return Destination{}, destinationError("is not a valid phone number")
	}
	end := max(len(e164)-prefixDigits, 1+ccDigits)
	return Destination{
		Channel:     channel,
		Normalized:  e164,
		Mailbox:     e164,
		Prefix:      e164[:end],
		Region:      region,
		CallingCode: cc,
		Type:        typ,
	}, nil
}

// checkPhoneShape refuses s unless it is "+" followed by ASCII digits and
// the separators callers use. It leaves the rest to phonenumbers, which is
// more lenient: it skips leading text, reads letters as keypad digits and
// strips extensions and trailing text.
func checkPhoneShape(channel Channel, s string) error {
	if strings.IndexByte(s, '@') >= 0 {
		return destinationError("must be a phone number for channel " + channel.String())
	}
	digits, other := phoneShape(s)
	switch {
	case other && (digits > 0 || s[0] == '+'):
		return destinationError("must hold only a leading +, digits 0-9, spaces, dots, dashes and parentheses")
	case other || digits == 0:
		return destinationError("must be a phone number for channel " + channel.String())
	case s[0] != '+':
		return destinationError("must be in international format, starting with +")
	}
	return nil
}

func isPhoneSeparator(c byte) bool {
	return c == ' ' || c == '.' || c == '-' || c == '(' || c == ')'
}

// plusDigits reports whether s is "+" and one or more ASCII digits.
func plusDigits(s string) bool {
	if len(s) < 2 || s[0] != '+' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// looksLikePhone reports whether s has the shape checkPhoneShape accepts,
// or the same without the "+".
func looksLikePhone(s string) bool {
	digits, other := phoneShape(s)
	return digits > 0 && !other
}

// phoneShape counts the digits of s and reports whether it holds anything
// but digits, separators and a leading "+".
func phoneShape(s string) (digits int, other bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '+' && i == 0, isPhoneSeparator(c):
		default:
			other = true
		}
	}
	return digits, other
}

// parseEmail is ParseDestination for the email channel and trimmed,
// non-empty s.
func parseEmail(s string) (Destination, error) {
	at := strings.IndexByte(s, '@')
	if at < 0 {
		if looksLikePhone(s) {
			return Destination{}, destinationError("must be an e-mail address for channel email")
		}
		return Destination{}, destinationError("must be an e-mail address: a local part, @ and a domain")
	}
	if strings.IndexByte(s[at+1:], '@') >= 0 {
		return Destination{}, destinationError("must hold exactly one @")
	}
	rawLocal, rawDomain := s[:at], s[at+1:]
	if rawLocal == "" {
		return Destination{}, destinationError("must have a local part before the @")
	}
	if rawDomain == "" {
		return Destination{}, destinationError("must have a domain after the @")
	}
	local, err := normalizeLocalPart(rawLocal)
	if err != nil {
		return Destination{}, err
	}
	domain, err := normalizeDomain(rawDomain)
	if err != nil {
		return Destination{}, err
	}
	normalized := s
	if local != rawLocal || domain != rawDomain {
		normalized = local + "@" + domain
	}
	mailbox, err := mailboxOf(normalized, local, domain)
	if err != nil {
		return Destination{}, err
	}
	return Destination{
		Channel:    ChannelEmail,
		Normalized: normalized,
		Mailbox:    mailbox,
		Prefix:     normalized[len(normalized)-len(domain):],
	}, nil
}

// normalizeLocalPart normalises an e-mail address's local part with
// NormalizeAccount and checks what it gives.
func normalizeLocalPart(raw string) (string, error) {
	if strings.ContainsFunc(raw, unicode.IsSpace) {
		return "", destinationError("must not hold white space in its local part")
	}
	local, err := NormalizeAccount(raw)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return "", destinationError("local part " + ie.Detail)
		}
		return "", destinationError("must have a valid local part")
	}
	switch {
	case len(local) > maxLocalPartBytes:
		return "", destinationError("must have a local part of at most 64 bytes")
	case strings.ContainsFunc(local, unicode.IsSpace):
		return "", destinationError("must not hold white space in its local part")
	case strings.IndexByte(local, '@') >= 0: // a full-width @ folds to one
		return "", destinationError("must hold exactly one @")
	case !dotAtom(local):
		return "", destinationError("must have a local part of letters, digits and !#$%&'*+-/=?^_`{|}~ in words joined by single dots: quotes, backslashes, comments and other punctuation are refused")
	}
	return local, nil
}

// dotAtom reports whether local, a non-empty local part as
// normalizeLocalPart has it so far, is a dot-atom of RFC 5322 (with RFC
// 6532's non-ASCII characters): it holds none of the specials and no dot
// at its ends or next to another. NormalizeAccount has refused the rest of
// what is not atext (controls, white space, non-ASCII punctuation), and
// checking after it catches full-width forms of the specials. A quoted
// string, a quoted-pair or a comment spells a mailbox that has a dot-atom
// spelling, or one that no one hands out ("a..b"@): each would be a
// destination with a budget of its own.
func dotAtom(local string) bool {
	return !strings.ContainsAny(local, `"(),:;<>@[\]`) &&
		local[0] != '.' && local[len(local)-1] != '.' && !strings.Contains(local, "..")
}

// normalizeDomain converts an e-mail address's domain to lower-case ASCII
// with IDNA's lookup profile (UTS #46 mapping, then A-labels), drops one
// trailing dot and checks it is a host name.
func normalizeDomain(raw string) (string, error) {
	d, err := idna.Lookup.ToASCII(strings.ToLower(raw))
	if err != nil {
		return "", destinationError("must have a valid domain name")
	}
	d = strings.TrimSuffix(d, ".")
	switch {
	case d == "":
		return "", destinationError("must have a domain after the @")
	case len(d) > maxDomainBytes:
		return "", destinationError("must have a domain of at most 253 bytes")
	case strings.IndexByte(d, '.') < 0:
		return "", destinationError("must have a domain with at least one dot")
	}
	last := ""
	for label := range strings.SplitSeq(d, ".") {
		if !ldhLabel(label) {
			return "", destinationError("must have a domain of labels of 1 to 63 letters, digits and inner hyphens")
		}
		last = label
	}
	if strings.TrimLeft(last, "0123456789") == "" {
		return "", destinationError("must have a domain name, not an IP address or a numeric top-level label")
	}
	return d, nil
}

// ldhLabel reports whether label is 1 to 63 lower-case ASCII letters,
// digits and hyphens that neither starts nor ends with a hyphen.
func ldhLabel(label string) bool {
	if label == "" || len(label) > maxLabelBytes || label[0] == '-' || label[len(label)-1] == '-' {
		return false
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
