package client

import (
	"github.com/tollgate-auth/tollgate/internal/accountfold"
	"strings"
	"sync"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"
)

// foldAccount is the form of an account (and of an e-mail destination) that
// the FailOpen allowance hashes: tollgate's own normalisation
// (authguard.NormalizeAccount, RFC 8265's UsernameCaseMapped profile on each
// word), so that every spelling tollgate counts as one account shares one
// allowance. White space is collapsed; each word is width folded ("ａｌｉｃｅ"
// is "alice"), loses its zero-width joiners and non-joiners, is case folded
// in full ("Straße" is "strasse", "İ" is "i"), loses a dot above on i or j,
// is lower-cased and put in NFC.
//
// Where tollgate would refuse the account (control, format and symbol
// characters, stacked marks, a broken Bidi Rule, invalid UTF-8, too long)
// this folds it all the same, since the client cannot answer for tollgate:
// the spelling gets a key of its own, as it would have a counter of its own
// if tollgate accepted it. The clients in other languages fold alike; the
// vectors of clients/testdata/account_fold.json, written from
// NormalizeAccount itself, hold all three to tollgate.
func foldAccount(s string) string {
	if out, ok := foldASCII(s); ok {
		return out
	}
	var b strings.Builder
	for word := range strings.FieldsSeq(s) {
		w := foldWord(word)
		if w == "" { // it held only characters that are removed
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// foldASCII is foldAccount for s made only of printable ASCII and ASCII
// white space, on which the profile comes down to lower-casing A-Z; it
// reports false for any other s.
func foldASCII(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '!' || c > '~') && !asciiSpace(c) {
			return "", false
		}
	}
	return strings.ToLower(strings.Join(strings.Fields(s), " ")), true
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// foldPool holds folders: a cases.Caser keeps state and must not be shared
// between goroutines.
var foldPool = sync.Pool{New: func() any {
	return &folders{fold: cases.Fold(), lower: cases.Lower(language.Und, cases.HandleFinalSigma(false))}
}}

// folders are a case folder and a lower-caser.
type folders struct{ fold, lower cases.Caser }

// foldWord is authguard's enforceUserpart without its refusals, in its
// order: width folding, the joiners dropped, NFD, case folding and the dot
// above dropped, then the profile's own width folding, lower case (the
// precis package's: no final sigma) and NFC.
func foldWord(w string) string {
	w = norm.NFD.String(accountfold.DropJoiners(width.Fold.String(w)))
	f := foldPool.Get().(*folders)
	defer foldPool.Put(f)
	w = accountfold.DropDotAbove(f.fold.String(w))
	return norm.NFC.String(f.lower.String(width.Fold.String(w)))
}
