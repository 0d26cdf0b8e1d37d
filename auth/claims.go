package auth

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/golang-jwt/jwt/v5"
)

// claims are the claims of a tollgate token.
//
// They are decoded strictly (UnmarshalJSON): encoding/json alone would
// match "Tenant" or "EXP" to these fields (it ignores case), keep the last
// of two "tenant" members, and, through jwt.NumericDate, take "exp": "17e8"
// (a string) for a date. A token is only as trustworthy as the code that
// built it; an issuer that copies user input into a claim must not thereby
// let a user add a second "tenant" that wins.
type claims struct {
	jwt.RegisteredClaims
	Tenant string `json:"tenant,omitempty"`
	Scope  string `json:"scope,omitempty"`
}

// maxDateSeconds bounds the dates dateFrom decodes.
const maxDateSeconds = 1 << 40

var (
	errClaimsNotObject = errors.New("claims are not a JSON object")
	errDuplicateClaim  = errors.New("a claim appears twice")
	errClaimType       = errors.New("a claim has the wrong JSON type")
	errNumericDate     = errors.New("a date claim is not a JSON number of seconds")
)

// UnmarshalJSON decodes the claims tollgate reads (iss, sub, aud, exp, nbf,
// iat, tenant, scope) with case-sensitive names, refusing a claim given
// twice, a claim of the wrong JSON type and a date that is not a number.
// null means absent. Other claims are skipped.
//
// b is valid JSON: json.Unmarshal checks the whole input before it calls
// an UnmarshalJSON method. decodeClaims reads it with go-json-experiment's
// jsontext.Decoder, member by member.
func (c *claims) UnmarshalJSON(b []byte) error {
	return decodeClaims(b, c)
}

// claimOptions are the options claims decode with. encoding/json has
// already accepted the claims as valid JSON, which it does with duplicate
// names and invalid UTF-8 (decoded as U+FFFD): the claims tollgate reads
// are refused twice by decodeClaims itself, other claims are skipped.
var claimOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decodeClaims decodes b into c; see claims.UnmarshalJSON.
func decodeClaims(b []byte, c *claims) error {
	return json.Unmarshal(b, (*claimsFrom)(c), claimOptions)
}

// claimsFrom is claims decoding from a jsontext.Decoder.
type claimsFrom claims

// UnmarshalJSONFrom reads the top-level members one by one, decoding the
// claims tollgate reads and skipping the others.
func (c *claimsFrom) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if d.PeekKind() != '{' {
		return errClaimsNotObject
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	var seen uint8
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		var bit uint8
		switch tok.String() {
		case "iss":
			bit, err = 1<<0, stringFrom(d, &c.Issuer)
		case "sub":
			bit, err = 1<<1, stringFrom(d, &c.Subject)
		case "aud":
			bit, err = 1<<2, audienceFrom(d, &c.Audience)
		case "exp":
			bit, err = 1<<3, dateFrom(d, &c.ExpiresAt)
		case "nbf":
			bit, err = 1<<4, dateFrom(d, &c.NotBefore)
		case "iat":
			bit, err = 1<<5, dateFrom(d, &c.IssuedAt)
		case "tenant":
			bit, err = 1<<6, stringFrom(d, &c.Tenant)
		case "scope":
			bit, err = 1<<7, stringFrom(d, &c.Scope)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return err
		}
		if seen&bit != 0 {
			return errDuplicateClaim
		}
		seen |= bit
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	return nil
}

// stringFrom decodes a JSON string or null into dst.
func stringFrom(d *jsontext.Decoder, dst *string) error {
	switch d.PeekKind() {
	case 'n':
		return d.SkipValue()
	case '"':
		return json.UnmarshalDecode(d, dst)
	}
	return errClaimType
}

// audienceFrom decodes aud, a string or an array of strings, or null.
func audienceFrom(d *jsontext.Decoder, dst *jwt.ClaimStrings) error {
	switch d.PeekKind() {
	case 'n':
		return d.SkipValue()
	case '"':
		var s string
		if err := json.UnmarshalDecode(d, &s); err != nil {
			return err
		}
		*dst = jwt.ClaimStrings{s}
		return nil
	case '[':
	default:
		return errClaimType
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	var aud jwt.ClaimStrings
	for d.PeekKind() == '"' {
		var s string
		if err := json.UnmarshalDecode(d, &s); err != nil {
			return err
		}
		aud = append(aud, s)
	}
	if d.PeekKind() != ']' {
		return errClaimType
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	*dst = aud
	return nil
}

// dateFrom decodes an RFC 7519 NumericDate, a JSON number of seconds since
// the epoch, as jwt.NumericDate does, or null.
func dateFrom(d *jsontext.Decoder, dst **jwt.NumericDate) error {
	switch d.PeekKind() {
	case 'n':
		return d.SkipValue()
	case '0':
	default:
		return errNumericDate
	}
	v, err := d.ReadValue()
	if err != nil {
		return err
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return errNumericDate
	}
	// Clamp far dates (the year 36812 and beyond) so that the conversion
	// to int64 below stays exact; they remain far past or far future.
	// jwt.NumericDate does not: it turns exp 1e300 into a date in the past.
	f = max(-maxDateSeconds, min(f, maxDateSeconds))
	sec, frac := math.Modf(f)
	*dst = jwt.NewNumericDate(time.Unix(int64(sec), int64(frac*1e9)))
	return nil
}
