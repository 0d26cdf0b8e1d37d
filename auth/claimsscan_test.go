package auth

// The scanning claims decoder that decodeClaims replaced, kept as the
// oracle of FuzzClaimsDifferential: claims.UnmarshalJSON and
// internal/jsonscan's functions (now internal/testkit/jsonoracle), as they were.

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/internal/testkit/jsonoracle"
)

// scanClaims is claims.UnmarshalJSON by scanning.
func scanClaims(b []byte, c *claims) error {
	i := jsonoracle.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errClaimsNotObject
	}
	var seen uint8
	for i = jsonoracle.SkipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end := jsonoracle.StringEnd(b, i)
		name, err := jsonString(b[i:end])
		if err != nil {
			return err
		}
		i = jsonoracle.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errClaimsNotObject
		}
		i = jsonoracle.SkipSpace(b, i+1)
		end = jsonoracle.ValueEnd(b, i)
		raw := b[i:end]
		i = jsonoracle.SkipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = jsonoracle.SkipSpace(b, i+1)
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
	for i := jsonoracle.SkipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		end := jsonoracle.ValueEnd(raw, i)
		s, err := jsonString(raw[i:end])
		if err != nil {
			return err
		}
		aud = append(aud, s)
		if i = jsonoracle.SkipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = jsonoracle.SkipSpace(raw, i+1)
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
