package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/internal/jsonscan"
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

// maxDateSeconds bounds the dates dateClaim decodes.
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
// an UnmarshalJSON method. The scan below relies on that for the structure
// of b (it never reads out of bounds whatever b is), and walks the top-level
// members without a json.Decoder, which allocates for every token.
func (c *claims) UnmarshalJSON(b []byte) error {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errClaimsNotObject
	}
	var seen uint8
	for i = jsonscan.SkipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end := jsonscan.StringEnd(b, i)
		name, err := jsonString(b[i:end])
		if err != nil {
			return err
		}
		i = jsonscan.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errClaimsNotObject
		}
		i = jsonscan.SkipSpace(b, i+1)
		end = jsonscan.ValueEnd(b, i)
		raw := b[i:end]
		i = jsonscan.SkipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.SkipSpace(b, i+1)
		}

		var bit uint8
		switch name {
		case "iss":
			bit, err = 1<<0, stringClaim(raw, &c.Issuer)
		case "sub":
			bit, err = 1<<1, stringClaim(raw, &c.Subject)
		case "aud":
			bit, err = 1<<2, audienceClaim(raw, &c.Audience)
		case "exp":
			bit, err = 1<<3, dateClaim(raw, &c.ExpiresAt)
		case "nbf":
			bit, err = 1<<4, dateClaim(raw, &c.NotBefore)
		case "iat":
			bit, err = 1<<5, dateClaim(raw, &c.IssuedAt)
		case "tenant":
			bit, err = 1<<6, stringClaim(raw, &c.Tenant)
		case "scope":
			bit, err = 1<<7, stringClaim(raw, &c.Scope)
		default:
			continue
		}
		if err != nil {
			return err
		}
		if seen&bit != 0 {
			return errDuplicateClaim
		}
		seen |= bit
	}
	if i >= len(b) || b[i] != '}' {
		return errClaimsNotObject
	}
	return nil
}

// stringClaim decodes a JSON string or null into dst.
func stringClaim(raw []byte, dst *string) error {
	if string(raw) == "null" {
		return nil
	}
	s, err := jsonString(raw)
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

// audienceClaim decodes aud, a string or an array of strings, or null.
func audienceClaim(raw []byte, dst *jwt.ClaimStrings) error {
	if string(raw) == "null" {
		return nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		s, err := jsonString(raw)
		if err != nil {
			return err
		}
		*dst = jwt.ClaimStrings{s}
		return nil
	}
	var aud jwt.ClaimStrings
	for i := jsonscan.SkipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		end := jsonscan.ValueEnd(raw, i)
		s, err := jsonString(raw[i:end])
		if err != nil {
			return err
		}
		aud = append(aud, s)
		if i = jsonscan.SkipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = jsonscan.SkipSpace(raw, i+1)
		}
	}
	*dst = aud
	return nil
}

// dateClaim decodes an RFC 7519 NumericDate, a JSON number of seconds
// since the epoch, as jwt.NumericDate does, or null.
func dateClaim(raw []byte, dst **jwt.NumericDate) error {
	if string(raw) == "null" {
		return nil
	}
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return errNumericDate
	}
	f, err := strconv.ParseFloat(string(raw), 64)
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

// jsonString decodes raw, which must be a JSON string.
func jsonString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errClaimType
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errClaimType
	}
	return s, nil
}
