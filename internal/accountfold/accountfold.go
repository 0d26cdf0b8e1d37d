// Package accountfold holds the two steps of tollgate's account fold that
// golang.org/x/text does not: the engine's normalisation (authguard) and the
// clients' fail-open allowance (api/client) call the same code, so the two
// cannot drift apart (clients/testdata/account_fold.json holds the whole
// fold, in every client, to the engine's).
package accountfold

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DropJoiners removes zero-width joiners and non-joiners (U+200C, U+200D).
// PRECIS allows them between some Indic and Arabic-script letters, where
// they only choose a glyph form; anywhere else it refuses them.
func DropJoiners(w string) string { return joiners.Replace(w) }

var joiners = strings.NewReplacer("\u200c", "", "\u200d", "")

// DropDotAbove removes from decomposed, case-folded w each U+0307 COMBINING
// DOT ABOVE on i or j that comes before any other mark above: it takes the
// place of the letter's own dot, so "i\u0307" looks like "i" (and is what
// İ becomes when case folded).
func DropDotAbove(w string) string {
	if !strings.ContainsRune(w, '\u0307') {
		return w
	}
	var b strings.Builder
	b.Grow(len(w))
	var base rune      // the last character with combining class 0
	markAbove := false // a mark above has followed base
	for i := 0; i < len(w); {
		r, size := utf8.DecodeRuneInString(w[i:])
		ccc := norm.NFD.PropertiesString(w[i:]).CCC()
		i += size
		switch {
		case r == '\u0307' && (base == 'i' || base == 'j') && !markAbove:
			continue
		case ccc == 0:
			base, markAbove = r, false
		case ccc == 230:
			markAbove = true
		}
		b.WriteRune(r)
	}
	return b.String()
}
