package authguard

import (
	"errors"
	"github.com/tollgate-auth/tollgate/internal/accountfold"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/secure/bidirule"
	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"
)

// foldPool holds case folders: a cases.Caser keeps state and must not be
// shared between goroutines.
var foldPool = sync.Pool{New: func() any { c := cases.Fold(); return &c }}

// maxNormalizedBytes caps an identifier after normalisation, which can
// lengthen it (decomposition and case folding expand some characters).
const maxNormalizedBytes = 4 * MaxAccountBytes

// maxMarksPerBase caps a run of combining marks (Mn, Me) on one character.
// Real names need at most three: Vietnamese stacks two (ệ), pointed Hebrew
// three (שָּׁ), Thai a vowel and a tone mark, a Tibetan stack three. Longer
// runs are "Zalgo" text, and each extra mark is another spelling that
// renders much like the last.
const maxMarksPerBase = 4

// userpartProfile is RFC 8265's UsernameCaseMapped profile (width folding,
// lower case, NFC, the IdentifierClass of RFC 8264) as precis builds
// precis.UsernameCaseMapped, less its BidiRule option: x/text applies that
// rule to every non-ASCII string, refusing "josé." or "1ère" (a left-to-right
// word must start with a letter and end with a letter or digit), while RFC
// 8265 applies it only to strings with right-to-left characters
// (golang/go#17383). enforceProfile applies it that way.
var userpartProfile = precis.NewIdentifier(precis.FoldWidth, precis.LowerCase(), precis.Norm(norm.NFC))

// NormalizeAccount returns the form of an account identifier that is hashed,
// so that every spelling of one identifier shares one counter. It applies
// RFC 8265's UsernameCaseMapped profile to each space-separated word:
//
//   - White space (ASCII or Unicode) around and between words is trimmed and
//     collapsed: the words are joined with one ASCII space.
//   - Case is folded (full Unicode case folding, then lower case): "ALICE",
//     "Alice" and "alice" are one; so are "STRASSE", "Straße" and "strasse",
//     and "ΣΟΦΟΣ" and "σοφος".
//   - Full- and half-width forms become their usual forms ("ａｌｉｃｅ" is
//     "alice"); canonically equivalent spellings (é as one code point or as
//     e and U+0301) become NFC.
//   - Zero-width joiners and non-joiners (U+200C, U+200D) are removed, and
//     so is a dot above (U+0307) on i or j, whose own dot it replaces.
//
// Everything else a user cannot see or type as a letter is refused with an
// *InputError rather than kept: control, format and other default-ignorable
// characters (zero-width space, soft hyphen, BOM, word joiner, variation
// selectors, tag characters, bidi controls), non-ASCII symbols, punctuation
// and emoji, compatibility forms such as ① (ﬁ folds to fi), a word with
// right-to-left letters that breaks the Bidi Rule (RFC 5893), and stacked
// combining marks: the same mark twice in a row, more than maxMarksPerBase
// on one character, or one that starts a word. Printable ASCII is always
// accepted. Input over MaxAccountBytes or not valid UTF-8 is refused too.
//
// Identifiers that differ visibly stay apart: tollgate cannot know that an
// auth system matches more loosely, such as phone numbers with and without
// spaces ("+1 415 555 0123", "+14155550123"), accent-insensitive database
// collations, or confusable letters from other scripts (Cyrillic "а" for
// Latin "a"). Such a system should send the identifier it looks the account
// up by, such as the E.164 number or the stored user name, or every variant
// it accepts gets a budget of its own.
func NormalizeAccount(s string) (string, error) {
	if len(s) > MaxAccountBytes {
		return "", accountError("must be at most 256 bytes")
	}
	out, ok := normalizeASCII(s)
	if !ok {
		if !utf8.ValidString(s) {
			return "", accountError("must be valid UTF-8")
		}
		var err error
		if out, err = normalizeUnicode(s); err != nil {
			return "", err
		}
	}
	if out == "" {
		return "", accountError("must not be empty")
	}
	if len(out) > maxNormalizedBytes {
		return "", accountError("is too long after normalisation")
	}
	return out, nil
}

func accountError(detail string) error { return &InputError{Field: "account", Detail: detail} }

// normalizeASCII is normalizeUnicode for s made only of printable ASCII and
// ASCII white space, without allocating when s is already normal; it reports
// false for any other s. On such input normalizeUnicode comes down to this:
// strings.Fields splits on exactly these white space bytes, decomposition,
// width folding and the zero-width removals change nothing, case folding and
// lower-casing map A-Z to a-z and nothing else, the IdentifierClass allows
// every byte from 0x21 to 0x7E, and the Bidi Rule and the combining-mark
// rule have nothing to find. FuzzNormalizeAccount checks the equivalence.
func normalizeASCII(s string) (string, bool) {
	normal, space := true, true // space: at the start or after white space
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			normal = normal && c == ' ' && !space
			space = true
		case c < '!' || c > '~':
			return "", false
		default:
			normal = normal && (c < 'A' || c > 'Z')
			space = false
		}
	}
	if normal && (!space || s == "") {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	pending := false // a space is owed before the next word
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' {
			pending = b.Len() > 0
			continue
		}
		if pending {
			b.WriteByte(' ')
			pending = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// normalizeUnicode is NormalizeAccount for valid UTF-8 of any kind, before
// the checks on its result.
func normalizeUnicode(s string) (string, error) {
	var b strings.Builder
	for word := range strings.FieldsSeq(s) {
		w, err := enforceUserpart(word)
		if err != nil {
			return "", err
		}
		if w == "" { // it held only characters that are removed
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String(), nil
}

// enforceUserpart applies the profile and tollgate's own rules to one word.
func enforceUserpart(w string) (string, error) {
	// Width folding first turns ｉ into the i that DropDotAbove looks for
	// and ﾞ into the mark stackedMarks counts. Joiners go before the marks
	// around them are put in canonical order. Decomposing makes case
	// folding treat canonically equivalent spellings alike (Unicode's
	// canonical caseless match), exposes the dot above in İ, and shows
	// stackedMarks every mark in canonical order. The profile only composes
	// and lower-cases after that, which adds or moves no mark.
	w = norm.NFD.String(accountfold.DropJoiners(width.Fold.String(w)))
	c := foldPool.Get().(*cases.Caser)
	w = c.String(w)
	foldPool.Put(c)
	w = accountfold.DropDotAbove(w)
	out, err := enforceProfile(w)
	if errors.Is(err, bidirule.ErrInvalid) {
		return "", accountError("must follow the Bidi Rule (RFC 5893) in a word with right-to-left letters: start with one, end with one or a digit, and hold no left-to-right letters")
	}
	if err != nil {
		return "", profileError(w)
	}
	if stackedMarks(w) {
		return "", accountError("must not repeat a combining mark, stack more than 4 on one character, or start a word with one")
	}
	return out, nil
}

// enforceProfile applies UsernameCaseMapped to w, the Bidi Rule only if w
// has right-to-left characters.
func enforceProfile(w string) (string, error) {
	out, err := userpartProfile.String(w)
	if err != nil {
		return "", err
	}
	if bidirule.DirectionString(out) == bidi.RightToLeft && !bidirule.ValidString(out) {
		return "", bidirule.ErrInvalid
	}
	return out, nil
}

// profileError says why userpartProfile refused w: a character outside the
// IdentifierClass, or one allowed only in a context w does not give it.
func profileError(w string) error {
	allowed := userpartProfile.Allowed()
	if strings.ContainsFunc(norm.NFC.String(w), func(r rune) bool { return !allowed.Contains(r) }) {
		return accountError("must hold only letters, digits, combining marks and ASCII punctuation: invisible, control, format, symbol and compatibility characters are refused")
	}
	return accountError("uses a joining or script-specific character where its script does not allow it")
}

// stackedMarks reports whether decomposed w repeats a combining mark (Mn,
// Me) consecutively, puts more than maxMarksPerBase on one character, or
// starts with one.
func stackedMarks(w string) bool {
	run, prev := 0, rune(-1)
	for i, r := range w {
		if !unicode.In(r, unicode.Mn, unicode.Me) {
			run, prev = 0, -1
			continue
		}
		if i == 0 || r == prev {
			return true
		}
		if run++; run > maxMarksPerBase {
			return true
		}
		prev = r
	}
	return false
}
