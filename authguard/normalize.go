package authguard

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// foldPool holds case folders: a cases.Caser keeps state and must not be
// shared between goroutines.
var foldPool = sync.Pool{New: func() any { c := cases.Fold(); return &c }}

// maxNormalizedBytes caps an identifier after normalisation, which can
// lengthen it (NFKC expands some characters).
const maxNormalizedBytes = 4 * MaxAccountBytes

// NormalizeAccount returns the form of an account identifier that is hashed:
// surrounding white space trimmed, Unicode NFKC applied and case folded, so
// that "Alice@X.com " and "alice@x.com" share one counter, as do full-width
// and ASCII forms. It rejects empty, over-long, invalid UTF-8 and control
// characters.
func NormalizeAccount(s string) (string, error) {
	if len(s) > MaxAccountBytes {
		return "", &InputError{Field: "account", Detail: "must be at most 256 bytes"}
	}
	if !utf8.ValidString(s) {
		return "", &InputError{Field: "account", Detail: "must be valid UTF-8"}
	}
	s = norm.NFKC.String(strings.TrimSpace(s))
	c := foldPool.Get().(*cases.Caser)
	s = c.String(s)
	foldPool.Put(c)
	s = strings.TrimSpace(s)
	if s == "" {
		return "", &InputError{Field: "account", Detail: "must not be empty"}
	}
	if len(s) > maxNormalizedBytes {
		return "", &InputError{Field: "account", Detail: "is too long after normalisation"}
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "", &InputError{Field: "account", Detail: "must not contain control characters"}
	}
	return s, nil
}
