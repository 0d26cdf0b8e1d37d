package hibp

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strings"
)

// PrefixLen and SuffixLen are the lengths in hex digits of the two halves
// of a SHA-1 hash in the range protocol: 5 sent, 35 kept.
const (
	PrefixLen = 5
	SuffixLen = 35
)

// Hash returns the SHA-1 of the UTF-8 bytes of password, as typed (no
// folding, no trimming), split into the range prefix (5 hex digits) and the
// suffix (35 hex digits), both upper case.
func Hash(password string) (prefix, suffix string) {
	sum := sha1.Sum([]byte(password))
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	return h[:PrefixLen], h[PrefixLen:]
}

// ValidPrefix reports whether s is a range prefix: exactly 5 hex digits,
// either case.
func ValidPrefix(s string) bool {
	if len(s) != PrefixLen {
		return false
	}
	for i := range len(s) {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// Count returns how many times the range body rangeBody says the password
// whose suffix is suffix was seen in breaches, or 0 if it is not there.
//
// The body is lines of SUFFIX:COUNT separated by CRLF or LF; each line is
// trimmed of CR and spaces; the suffix is compared case-insensitively; COUNT
// is a decimal integer and may have leading zeros. A line with count 0 is
// padding (the Add-Padding convention) and never a match. A malformed line
// (no colon, a count that is not a decimal integer or overflows int64) is
// skipped, so a damaged body can only make Count return 0, never panic. An
// empty suffix matches nothing.
func Count(rangeBody []byte, suffix string) int64 {
	suffix = strings.TrimSpace(suffix)
	if suffix == "" {
		return 0
	}
	for len(rangeBody) > 0 {
		var line []byte
		line, rangeBody, _ = bytes.Cut(rangeBody, []byte{'\n'})
		line = bytes.Trim(line, " \r\t")
		s, c, ok := bytes.Cut(line, []byte{':'})
		if !ok || !equalFold(bytes.TrimSpace(s), suffix) {
			continue
		}
		n, ok := parseCount(bytes.TrimSpace(c))
		if ok && n > 0 {
			return n
		}
	}
	return 0
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// parseCount reads a non-empty run of decimal digits (leading zeros
// allowed), refusing anything that does not fit an int64.
func parseCount(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
