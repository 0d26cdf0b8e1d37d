package authguard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/bidirule"
	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// invisible lists the code points used to give one account many spellings:
// default-ignorables, bidi controls, tag characters, variation selectors,
// Hangul fillers and other format characters.
var invisible = []struct {
	name  string
	r     rune
	folds bool // removed; otherwise refused
}{
	{"zero width space", '\u200b', false},
	{"zero width non-joiner", '\u200c', true},
	{"zero width joiner", '\u200d', true},
	{"word joiner", '\u2060', false},
	{"soft hyphen", '\u00ad', false},
	{"byte order mark", '\ufeff', false},
	{"combining grapheme joiner", '\u034f', false},
	{"Mongolian vowel separator", '\u180e', false},
	{"Mongolian free variation selector", '\u180b', false},
	{"left-to-right mark", '\u200e', false},
	{"right-to-left mark", '\u200f', false},
	{"Arabic letter mark", '\u061c', false},
	{"left-to-right embedding", '\u202a', false},
	{"right-to-left embedding", '\u202b', false},
	{"pop directional formatting", '\u202c', false},
	{"left-to-right override", '\u202d', false},
	{"right-to-left override", '\u202e', false},
	{"left-to-right isolate", '\u2066', false},
	{"right-to-left isolate", '\u2067', false},
	{"first strong isolate", '\u2068', false},
	{"pop directional isolate", '\u2069', false},
	{"function application", '\u2061', false},
	{"invisible times", '\u2062', false},
	{"inhibit symmetric swapping", '\u206a', false},
	{"language tag", '\U000E0001', false},
	{"tag space", '\U000E0020', false},
	{"tag latin small letter a", '\U000E0061', false},
	{"cancel tag", '\U000E007F', false},
	{"variation selector 1", '\ufe00', false},
	{"variation selector 16 (emoji)", '\ufe0f', false},
	{"variation selector 17", '\U000E0100', false},
	{"variation selector 256", '\U000E01EF', false},
	{"Hangul choseong filler", '\u115f', false},
	{"Hangul jungseong filler", '\u1160', false},
	{"Hangul filler", '\u3164', false},
	{"halfwidth Hangul filler", '\uffa0', false},
	{"Khmer vowel inherent aq", '\u17b4', false},
	{"shorthand format letter overlap", '\U0001BCA0', false},
	{"interlinear annotation anchor", '\ufff9', false},
	{"null", '\u0000', false},
	{"escape", '\u001b', false},
	{"delete", '\u007f', false},
}

func TestNormalize_InvisibleCharactersAreRejectedOrFolded(t *testing.T) {
	visible := mustNormalize(t, "alice@example.com")
	for _, tt := range invisible {
		for _, in := range []string{
			string(tt.r) + "alice@example.com",
			"al" + string(tt.r) + "ice@example.com",
			"alice" + string(tt.r) + "@example.com",
			"alice@example.com" + string(tt.r),
			"al" + string(tt.r) + string(tt.r) + "ice@example.com",
		} {
			t.Run(fmt.Sprintf("%s/%+q", tt.name, in), func(t *testing.T) {
				got, err := NormalizeAccount(in)
				if tt.folds {
					if err != nil || got != visible {
						t.Errorf("NormalizeAccount(%+q) = %+q, %v, want %+q", in, got, err, visible)
					}
					return
				}
				wantInputError(t, in, got, err)
			})
		}
	}
	// Every code point of the blocks the attack drew from.
	blocks := []struct{ lo, hi rune }{
		{0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x206f}, {0xfe00, 0xfe0f},
		{0x180b, 0x180f}, {0xe0000, 0xe007f}, {0xe0100, 0xe01ef},
	}
	for _, bl := range blocks {
		for r := bl.lo; r <= bl.hi; r++ {
			in := "al" + string(r) + "ice@example.com"
			if got, err := NormalizeAccount(in); err == nil && got != visible {
				t.Errorf("NormalizeAccount(%+q) = %+q, want %+q or an error", in, got, visible)
			} else if err != nil {
				wantInputError(t, in, got, err)
			}
		}
	}
}

// TestNormalize_JoinersAreRemovedWhereScriptsAllowThem: PRECIS keeps a
// zero-width (non-)joiner after a virama or between Arabic-script letters;
// it only picks a glyph form, so it goes.
func TestNormalize_JoinersAreRemovedWhereScriptsAllowThem(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"Devanagari half form (ZWJ after virama)", "क्\u200dष", "क्ष"},
		{"Devanagari explicit virama (ZWNJ after virama)", "क्\u200cष", "क्ष"},
		{"Persian word with ZWNJ", "می\u200cخواهم", "میخواهم"},
		{"Malayalam chillu with ZWJ", "ന്\u200d", "ന്"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := NormalizeAccount(tt.in); err != nil || got != tt.want {
				t.Errorf("NormalizeAccount(%+q) = %+q, %v, want %+q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNormalize_SpellingVariantsShareOneCounter(t *testing.T) {
	tests := []struct {
		name     string
		want     string
		variants []string
	}{
		{"case", "alice@example.com", []string{"Alice@Example.com", "ALICE@EXAMPLE.COM", "aLiCe@eXaMpLe.CoM"}},
		{"surrounding white space", "alice@example.com", []string{" alice@example.com", "alice@example.com\t", "\r\n alice@example.com \v\f", "\u00a0alice@example.com\u3000", "\u2003alice@example.com\u0085"}},
		{"full width", "alice@example.com", []string{"ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ", "ＡＬＩＣＥ@example.com"}},
		{"NFC and NFD", "josé", []string{"Jos\u00e9", "Jose\u0301", "JOS\u00c9", "JOSE\u0301", "ｊｏｓｅ\u0301"}},
		{"canonical order of marks", "\u1ec7", []string{"e\u0323\u0302", "e\u0302\u0323", "\u00ea\u0323", "\u1eb9\u0302", "E\u0302\u0323"}},
		{"Hangul syllable and jamo", "한", []string{"\u1112\u1161\u11ab"}},
		{"sharp s folds to ss", "strasse", []string{"Straße", "STRASSE", "STRA\u1e9eE", "strasse"}},
		{"final sigma folds to sigma", "σοφοσ", []string{"ΣΟΦΟΣ", "σοφος", "Σοφος"}},
		{"dotted capital I loses the dot i has anyway", "istanbul", []string{"\u0130stanbul", "\u0130STANBUL", "ISTANBUL", "i\u0307stanbul", "ｉ\u0307stanbul"}},
		{"Cherokee", "\uab70\uab71", []string{"\u13a0\u13a1", "\u13a0\uab71"}},
		{"ligature folds to its letters", "finn", []string{"\ufb01nn", "Finn"}},
		{"sign compatibility", "kelvin", []string{"\u212aelvin"}},
		{"half-width katakana", "ユーザー", []string{"ﾕｰｻﾞｰ", "ユーザー"}},
		{"J with caron", "\u01f0", []string{"J\u030c", "j\u030c"}},
		{"internal white space", "+1 415 555 0123", []string{"+1  415 555 0123", " +1\t415\n555\r\n0123 ", "+1\u00a0415\u2009555\u30000123", "+1\u202f415\u2002555\u205f0123"}},
		{"words of several scripts", "nguyễn văn an", []string{"Nguyễn Văn An", "NGUYỄN  VĂN  AN", "Nguye\u0302\u0303n Va\u0306n An"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range tt.variants {
				if got, err := NormalizeAccount(v); err != nil || got != tt.want {
					t.Errorf("NormalizeAccount(%+q) = %+q, %v, want %+q", v, got, err, tt.want)
				}
			}
		})
	}
}

func TestNormalize_StackedCombiningMarksRejected(t *testing.T) {
	tests := []struct{ name, in string }{
		{"acute twice", "jose\u0301\u0301"},
		{"acute twice on a precomposed letter", "jos\u00e9\u0301"},
		{"acute twice, reordered together by NFC", "jose\u0301\u0323\u0301"},
		{"Thai tone mark twice", "สมชา\u0e48\u0e48ย"},
		{"voiced mark twice (half width)", "ｶﾞﾞ"},
		{"five marks on one letter", "a\u0300\u0301\u0302\u0303\u0304"},
		{"Zalgo", "z\u0336\u0321\u0327\u0322\u0358a"},
		{"mark starting the identifier", "\u0301alice"},
		{"mark starting a word", "alice \u0301smith"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeAccount(tt.in)
			wantInputError(t, tt.in, got, err)
			if ie := (*InputError)(nil); errors.As(err, &ie) && !strings.Contains(ie.Detail, "combining mark") {
				t.Errorf("NormalizeAccount(%+q): detail %q, want the combining-mark rule", tt.in, ie.Detail)
			}
		})
	}
	for _, ok := range []string{"a\u0300\u0301\u0302\u0303", "nguyễn", "שָּׁלוֹם", "กี่", "བསྒྲུབས", "e\u0301\u0300"} {
		if _, err := NormalizeAccount(ok); err != nil {
			t.Errorf("NormalizeAccount(%+q) = %v, want accepted", ok, err)
		}
	}
}

// realIdentifiers are identifiers people log in with; each must keep
// working, as its normalised form.
var realIdentifiers = []struct{ name, in, want string }{
	{"ASCII e-mail", "alice@example.com", "alice@example.com"},
	{"e-mail with + and .", "Alice.Smith+Tag@Example.COM", "alice.smith+tag@example.com"},
	{"e-mail with apostrophe", "o'brien@example.ie", "o'brien@example.ie"},
	{"e-mail with every ASCII atext character", "a!#$%&'*+-/=?^_`{|}~b@example.com", "a!#$%&'*+-/=?^_`{|}~b@example.com"},
	{"user name", "user_name-01", "user_name-01"},
	{"phone number", "+1 (415) 555-0123", "+1 (415) 555-0123"},
	{"E.164 number", "+14155550123", "+14155550123"},
	{"Spanish", "José", "josé"},
	{"Spanish e-mail", "José.García@correo.es", "josé.garcía@correo.es"},
	{"non-ASCII word ending in a full stop", "josé.", "josé."},
	{"non-ASCII word starting with a digit", "1ère", "1ère"},
	{"German", "Jürgen Müller", "jürgen müller"},
	{"Polish", "Łukasz", "łukasz"},
	{"Turkish", "Şükrü Ağaoğlu", "şükrü ağaoğlu"},
	{"Turkish dotless i", "ılgın", "ılgın"},
	{"Vietnamese", "Nguyễn Văn An", "nguyễn văn an"},
	{"Greek", "Ελένη", "ελένη"},
	{"Russian", "Дмитрий", "дмитрий"},
	{"Japanese katakana", "ユーザー", "ユーザー"},
	{"Japanese with a middle dot", "ジョン・スミス", "ジョン・スミス"},
	{"Chinese", "张伟", "张伟"},
	{"Korean", "김민준", "김민준"},
	{"Arabic", "أحمد", "أحمد"},
	{"Arabic with digits", "أحمد123", "أحمد123"},
	{"Hebrew", "דוד", "דוד"},
	{"Hebrew with points", "שָׁלוֹם", "שָׁלוֹם"},
	{"Persian", "مریم", "مریم"},
	{"Devanagari", "प्रिया शर्मा", "प्रिया शर्मा"},
	{"Tamil", "முருகன்", "முருகன்"},
	{"Thai", "สมชาย", "สมชาย"},
	{"Amharic", "ሰላም", "ሰላም"},
	{"Catalan middle dot", "Paral·lel", "paral·lel"},
}

func TestNormalize_RealIdentifiersStillWork(t *testing.T) {
	for _, tt := range realIdentifiers {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := NormalizeAccount(tt.in); err != nil || got != tt.want {
				t.Errorf("NormalizeAccount(%+q) = %+q, %v, want %+q", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestNormalize_KnownRefusals pins identifiers people could type that the
// profile refuses. Each is refused, never counted apart.
func TestNormalize_KnownRefusals(t *testing.T) {
	tests := []struct{ name, in string }{
		{"typographic apostrophe (smart punctuation)", "o\u2019brien@example.ie"},
		{"Hebrew local part, ASCII domain (Bidi Rule)", "דוד@example.com"},
		{"right-to-left word starting with a digit (Bidi Rule)", "1דוד"},
		{"Arabic word ending in punctuation (Bidi Rule)", "أحمد."},
		{"ideographic variation sequence", "葛\U000E0100城"},
		{"emoji", "alice\U0001F600"},
		{"emoji with variation selector", "\u2764\ufe0falice"},
		{"circled digit", "user\u2460"},
		{"superscript digit", "user\u00b2"},
		{"Roman numeral", "louis\u216b"},
		{"titlecase digraph", "\u01c5emal"},
		{"en dash", "anne\u2013marie"},
		{"middle dot outside Catalan l·l", "john\u00b7smith"},
		{"ideographic full stop", "张伟\u3002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeAccount(tt.in)
			wantInputError(t, tt.in, got, err)
		})
	}
}

func TestNormalize_Limits(t *testing.T) {
	tests := []struct {
		name, in   string
		wantDetail string // "" when accepted
	}{
		{"empty", "", "must not be empty"},
		{"blank", " \t\r\n\u3000", "must not be empty"},
		{"only joiners", "\u200d \u200c", "must not be empty"},
		{"at the input cap", strings.Repeat("a", MaxAccountBytes), ""},
		{"over the input cap", strings.Repeat("a", MaxAccountBytes+1), "must be at most 256 bytes"},
		{"over the input cap with white space", strings.Repeat(" ", MaxAccountBytes) + "a", "must be at most 256 bytes"},
		{"invalid UTF-8", "al\xffice", "must be valid UTF-8"},
		{"invalid UTF-8 alone", "\xc3", "must be valid UTF-8"},
		{"sharp s at the cap folds to twice the letters", strings.Repeat("ß", MaxAccountBytes/2), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeAccount(tt.in)
			if tt.wantDetail == "" {
				if err != nil || got == "" {
					t.Errorf("NormalizeAccount(%+q) = %+q, %v, want accepted", tt.in, got, err)
				}
				return
			}
			wantInputError(t, tt.in, got, err)
			if ie := (*InputError)(nil); errors.As(err, &ie) && ie.Detail != tt.wantDetail {
				t.Errorf("NormalizeAccount(%+q): detail %q, want %q", tt.in, ie.Detail, tt.wantDetail)
			}
		})
	}
}

func TestNormalize_Idempotent(t *testing.T) {
	var inputs []string
	for _, tt := range realIdentifiers {
		inputs = append(inputs, tt.in)
	}
	inputs = append(inputs, "STRA\u1e9eE", "\u0130STANBUL", "\ufb01nn", "ﾕｰｻﾞｰ", "\u13a0\u13a1", "J\u030c", "\u1fb3", "\u03b1\u0345", "\u0390", "\u212b", "k\u212a")
	for _, in := range inputs {
		once, err := NormalizeAccount(in)
		if err != nil {
			t.Errorf("NormalizeAccount(%+q): %v", in, err)
			continue
		}
		if twice, err := NormalizeAccount(once); err != nil || twice != once {
			t.Errorf("NormalizeAccount(%+q) = %+q, but NormalizeAccount(%+q) = %+q, %v", in, once, once, twice, err)
		}
	}
}

// TestNormalize_ASCIIFastPathMatchesProfile compares the fast path with the
// general one on random strings of printable ASCII and ASCII white space.
func TestNormalize_ASCIIFastPathMatchesProfile(t *testing.T) {
	const alphabet = " \t\n\v\f\r!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []string{"", " ", "a", "A", "a b", " a  B ", "\t\n", "~", "!"}
	for range 20_000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for i := 0; i < 128; i++ { // every ASCII byte, alone and in a word
		inputs = append(inputs, string(rune(i)), "a"+string(rune(i))+"B")
	}
	for _, in := range inputs {
		checkASCIIFastPath(t, in)
	}
}

func checkASCIIFastPath(t *testing.T, in string) {
	t.Helper()
	fast, ok := normalizeASCII(in)
	if !ok {
		return
	}
	slow, err := normalizeUnicode(in)
	if err != nil || slow != fast {
		t.Fatalf("normalizeASCII(%+q) = %+q, but normalizeUnicode gives %+q, %v", in, fast, slow, err)
	}
}

// TestNormalize_ProfileIsUsernameCaseMapped checks that enforceProfile
// differs from precis.UsernameCaseMapped only by accepting left-to-right
// words that x/text's Bidi Rule refuses.
func TestNormalize_ProfileIsUsernameCaseMapped(t *testing.T) {
	words := []string{"josé.", "1ère", "_zoë_", "(ελένη)", "1דוד", "דוד.", "a\u05d0", "Alice", "ａｌｉｃｅ", "\u0301a"}
	for _, tt := range realIdentifiers {
		words = append(words, strings.Fields(tt.in)...)
	}
	for _, w := range words {
		checkProfile(t, w)
	}
}

func checkProfile(t *testing.T, w string) {
	t.Helper()
	want, wantErr := precis.UsernameCaseMapped.String(w)
	got, err := enforceProfile(w)
	switch {
	case wantErr == nil && (err != nil || got != want):
		t.Fatalf("enforceProfile(%+q) = %+q, %v; UsernameCaseMapped gives %+q", w, got, err, want)
	case wantErr != nil && err == nil && (!errors.Is(wantErr, bidirule.ErrInvalid) || bidirule.DirectionString(got) == bidi.RightToLeft):
		t.Fatalf("enforceProfile(%+q) = %+q, but UsernameCaseMapped refuses it: %v", w, got, wantErr)
	}
}

func wantInputError(t *testing.T, in, got string, err error) {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) || ie.Field != "account" || ie.Detail == "" {
		t.Fatalf("NormalizeAccount(%+q) = %+q, %v, want an *InputError for account", in, got, err)
	}
	if got != "" {
		t.Errorf("NormalizeAccount(%+q) returned %+q with its error", in, got)
	}
}

func mustNormalize(t *testing.T, s string) string {
	t.Helper()
	out, err := NormalizeAccount(s)
	if err != nil {
		t.Fatalf("NormalizeAccount(%+q): %v", s, err)
	}
	return out
}

// FuzzNormalizeAccount holds every input to checkNormalizeAccount.
func FuzzNormalizeAccount(f *testing.F) {
	for _, tt := range realIdentifiers {
		f.Add(tt.in)
	}
	for _, tt := range invisible {
		f.Add("al" + string(tt.r) + "ice")
	}
	for _, s := range []string{"", " ", "A  b\t", "\u0130\u0307", "\u00df\u0345", "ｶﾞﾞ", "e\u0301\u0301", "\u1fb3", "J\u030c", "ǅ", "\u13a0", "ﾞ", "ｉ\u0307", "i\u200d\u0307", "a\u0323\u0307", "a\u0301\u200d\u0323\u0301", "\u0345", "1דוד", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(checkNormalizeAccount)
}

// TestNormalize_RandomUnicodeHoldsInvariants runs FuzzNormalizeAccount's
// checks on random words drawn from characters that interact: marks, i and
// j, İ, joiners, width forms, final sigma, iota subscript, Hangul jamo and
// right-to-left letters.
func TestNormalize_RandomUnicodeHoldsInvariants(t *testing.T) {
	alphabet := []rune("aeijIJsSkK1 .'\u0130\u0131\u00df\u1e9e\u03c3\u03c2\u03a3\u0390\u1fb3\u0345\u0300\u0301\u0307\u0308\u0323\u0316\u0302\u200c\u200d\u200b\uff49\uff2a\uff76\uff9e\u3099\u1100\u1161\u11a8\ud55c\u05d0\u05b8\u0627\u0661\u06f1\u0915\u094d\u0937\u0e01\u0e48\u13a0\uab70\u212a\ufb01\u01f0\u00b7l\u30fb\u30ab\u3000")
	rng := rand.New(rand.NewPCG(3, 4))
	n := 30_000
	if testing.Short() {
		n = 7_500 // the first quarter of the same strings; make test checks them all
	}
	for range n {
		r := make([]rune, 1+rng.IntN(8))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkNormalizeAccount(t, string(r))
	}
}

// checkNormalizeAccount: s is either refused with an *InputError for account
// or becomes a non-empty, valid, stable identifier of at most
// maxNormalizedBytes with no invisible, control or bidi character, the same
// for every canonically equivalent spelling.
func checkNormalizeAccount(t *testing.T, s string) {
	t.Helper()
	out, err := NormalizeAccount(s)
	if err != nil {
		wantInputError(t, s, out, err)
		if ie := (*InputError)(nil); errors.As(err, &ie) && len(s) >= 4 && strings.Contains(ie.Detail, s) {
			t.Fatalf("NormalizeAccount(%+q): detail %q repeats the value", s, ie.Detail)
		}
	} else {
		checkNormal(t, s, out)
	}
	if !utf8.ValidString(s) || len(s) > MaxAccountBytes {
		return // refused before any of what follows runs
	}
	checkASCIIFastPath(t, s)
	for _, w := range strings.Fields(s) {
		checkProfile(t, w)
	}
	for _, form := range []norm.Form{norm.NFC, norm.NFD} {
		v := form.String(s)
		if len(v) > MaxAccountBytes {
			continue
		}
		got, gotErr := NormalizeAccount(v)
		if (err == nil) != (gotErr == nil) || got != out {
			t.Fatalf("NormalizeAccount(%+q) = %+q, %v, but the canonically equivalent %+q gives %+q, %v", s, out, err, v, got, gotErr)
		}
	}
}

func checkNormal(t *testing.T, in, out string) {
	t.Helper()
	if out == "" || !utf8.ValidString(out) || len(out) > maxNormalizedBytes {
		t.Fatalf("NormalizeAccount(%+q) = %+q: empty, invalid or %d bytes long", in, out, len(out))
	}
	if strings.HasPrefix(out, " ") || strings.HasSuffix(out, " ") || strings.Contains(out, "  ") {
		t.Fatalf("NormalizeAccount(%+q) = %+q: white space not collapsed", in, out)
	}
	for _, r := range out {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Bidi_Control, unicode.Join_Control) ||
			unicode.IsSpace(r) && r != ' ' {
			t.Fatalf("NormalizeAccount(%+q) = %+q: holds %U", in, out, r)
		}
	}
	for _, w := range strings.Split(out, " ") {
		if stackedMarks(norm.NFD.String(w)) {
			t.Fatalf("NormalizeAccount(%+q) = %+q: stacked combining marks", in, out)
		}
	}
	if again, err := NormalizeAccount(out); err != nil || again != out {
		t.Fatalf("NormalizeAccount(%+q) = %+q, but NormalizeAccount(%+q) = %+q, %v", in, out, out, again, err)
	}
}

func BenchmarkNormalizeAccount(b *testing.B) {
	for _, bb := range []struct{ name, in string }{
		{"ascii-normal", "alice.smith+tag@example.com"},
		{"ascii-mixed-case", "Alice.Smith+Tag@Example.com"},
		{"unicode", "José.Müller@Exämple.de"},
		{"worst-case", strings.Repeat("\u0390", MaxAccountBytes/2)}, // every character decomposes into three
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NormalizeAccount(bb.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleNormalizeAccount() {
	for _, s := range []string{"Alice@Example.com ", "ａｌｉｃｅ@example.com", "al\u200dice@example.com", "STRASSE", "Straße"} {
		acct, _ := NormalizeAccount(s)
		fmt.Println(acct)
	}
	_, err := NormalizeAccount("al\u200bice@example.com")
	fmt.Println(err)
	// Output:
	// alice@example.com
	// alice@example.com
	// alice@example.com
	// strasse
	// strasse
	// authguard: invalid account: must hold only letters, digits, combining marks and ASCII punctuation: invisible, control, format, symbol and compatibility characters are refused
}
