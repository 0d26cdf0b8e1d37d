// Package phonenum reads phone numbers with libphonenumber's metadata
// (github.com/nyaruka/phonenumbers): whether a number in international form
// is valid, and its E.164 form, region, country calling code and type. It
// is the one package of the engine that imports phonenumbers, whose
// metadata costs milliseconds and megabytes at init; authguard's
// ParseDestination checks a number's shape before it asks Parse.
package phonenum

import (
	"errors"
	"fmt"

	"github.com/nyaruka/phonenumbers"
)

// Type is a phone number's type as libphonenumber determines it from the
// number alone. The numbering plans of North America (+1: the United
// States, Canada and the Caribbean) and a few other countries, such as
// Mexico and Chile, do not tell mobile from fixed-line numbers: their numbers
// come back as FixedLineOrMobile, not Mobile. A number ported to another
// network keeps the type of its original range. authguard.NumberType is
// this type.
type Type uint8

// The number types. On the wire and in configuration they are "fixed_line",
// "mobile", "fixed_line_or_mobile", "toll_free", "premium_rate",
// "shared_cost", "voip", "personal_number", "pager", "uan", "voicemail" and
// "unknown".
const (
	FixedLine Type = iota + 1
	Mobile
	FixedLineOrMobile
	TollFree
	PremiumRate
	SharedCost
	VoIP
	Personal
	Pager
	UAN // a universal access ("company") number
	Voicemail
	// Unknown matches no range of the number's region. A parsed Number
	// never has it: such a number is not valid.
	Unknown
)

// typeNames holds each number type's wire name, indexed by Type.
var typeNames = [...]string{
	FixedLine:         "fixed_line",
	Mobile:            "mobile",
	FixedLineOrMobile: "fixed_line_or_mobile",
	TollFree:          "toll_free",
	PremiumRate:       "premium_rate",
	SharedCost:        "shared_cost",
	VoIP:              "voip",
	Personal:          "personal_number",
	Pager:             "pager",
	UAN:               "uan",
	Voicemail:         "voicemail",
	Unknown:           "unknown",
}

// types maps libphonenumber's types to Type.
var types = map[phonenumbers.PhoneNumberType]Type{
	phonenumbers.FIXED_LINE:           FixedLine,
	phonenumbers.MOBILE:               Mobile,
	phonenumbers.FIXED_LINE_OR_MOBILE: FixedLineOrMobile,
	phonenumbers.TOLL_FREE:            TollFree,
	phonenumbers.PREMIUM_RATE:         PremiumRate,
	phonenumbers.SHARED_COST:          SharedCost,
	phonenumbers.VOIP:                 VoIP,
	phonenumbers.PERSONAL_NUMBER:      Personal,
	phonenumbers.PAGER:                Pager,
	phonenumbers.UAN:                  UAN,
	phonenumbers.VOICEMAIL:            Voicemail,
	phonenumbers.UNKNOWN:              Unknown,
}

// String returns the number type's name. A value that is none of the
// constants, such as an e-mail destination's 0, is "NumberType(0)".
func (t Type) String() string {
	if t < FixedLine || t > Unknown {
		return fmt.Sprintf("NumberType(%d)", t)
	}
	return typeNames[t]
}

// TypeOf returns the Type of one of libphonenumber's types, and whether it
// has one.
func TypeOf(t phonenumbers.PhoneNumberType) (Type, bool) {
	typ, ok := types[t]
	return typ, ok
}

// Number is a valid phone number: in an assigned range of its region and
// of the right length for it.
type Number struct {
	// E164 is the number in E.164 ("+14155550123").
	E164 string
	// Region is the number's ISO 3166-1 alpha-2 region ("US", "GB"), or
	// "001" for a non-geographic number (+800, +882 and the like).
	Region string
	// CallingCode is the number's country calling code (1, 44).
	CallingCode int
	// Type is the number's type; never Unknown.
	Type Type
}

// Parse's errors.
var (
	// ErrCallingCode: the number's country calling code is not assigned.
	ErrCallingCode = errors.New("phonenum: the country calling code is not assigned")
	// ErrInvalid: the number does not parse, has an extension, or is not
	// valid by libphonenumber's metadata.
	ErrInvalid = errors.New("phonenum: not a valid phone number")
)

// Parse reads s, a number in international form ("+" and digits, which
// separators may part), as libphonenumber does: with no default region,
// so a number without "+" is not valid. libphonenumber is lenient (it
// skips leading text, reads letters as keypad digits and strips trailing
// text): check the shape of s first.
func Parse(s string) (Number, error) {
	num, err := phonenumbers.Parse(s, "")
	if errors.Is(err, phonenumbers.ErrInvalidCountryCode) {
		return Number{}, ErrCallingCode
	}
	if err != nil || num.GetExtension() != "" {
		return Number{}, ErrInvalid
	}
	// phonenumbers.IsValidNumber(num) is GetNumberType(num) != UNKNOWN:
	// both match the number against the metadata of the region that
	// GetRegionCodeForNumber finds. Asking once saves running most of the
	// regular expressions twice.
	// authguard's TestParseDestination_ValidExactlyWhenIsValidNumber holds
	// them equal.
	pt := phonenumbers.GetNumberType(num)
	typ, known := types[pt]
	region := phonenumbers.GetRegionCodeForNumber(num)
	if pt == phonenumbers.UNKNOWN || !known || region == "" || region == phonenumbers.UNKNOWN_REGION {
		return Number{}, ErrInvalid // UNKNOWN means not valid
	}
	return Number{
		E164:        phonenumbers.Format(num, phonenumbers.E164),
		Region:      region,
		CallingCode: int(num.GetCountryCode()),
		Type:        typ,
	}, nil
}
