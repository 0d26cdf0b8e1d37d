package client_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
)

var updateVectors = flag.Bool("update", false, "rewrite clients/testdata/account_fold.json from authguard.NormalizeAccount")

// accountFoldCases are the spellings account_fold.json names, each of which
// tollgate accepts; its keys are what NormalizeAccount makes of them.
var accountFoldCases = []struct{ name, in string }{
	{"ASCII: as sent", "alice@example.com"},
	{"ASCII: upper case", "ALICE@Example.COM"},
	{"ASCII: white space around and between words", "  Jane \t Doe\r\n"},
	{"Unicode white space: no-break, em, ideographic, next line", "\u00a0Jane\u2003Q\u3000Doe\u0085X "},
	{"full-width letters", "\uff41\uff4c\uff49\uff43\uff45@example.com"},
	{"a zero-width joiner", "al\u200dice@example.com"},
	{"a zero-width non-joiner", "al\u200cice@example.com"},
	{"a dotted capital I", "al\u0130ce@example.com"},
	{"a full-width capital", "\uff21lice@example.com"},
	{"full-width capitals, at sign and full stop", "\uff21\uff2c\uff29\uff23\uff25\uff20\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25\uff0e\uff23\uff2f\uff2d"},
	{"a word of joiners only is dropped", "alice \u200d\u200c bob"},
	{"full-width digits", "user\uff11\uff12\uff13"},
	{"sharp s", "Stra\u00dfe"},
	{"capital sharp s", "STRA\u1e9eE"},
	{"Greek capitals", "\u03a3\u039f\u03a6\u039f\u03a3"},
	{"Greek final sigma", "\u03c3\u03bf\u03c6\u03bf\u03c2"},
	{"Kelvin sign", "\u212a"},
	{"Angstrom sign", "\u212bngstr\u00f6m"},
	{"ohm sign", "\u2126"},
	{"ligature fi", "\ufb01le"},
	{"long s", "\u017fun"},
	{"Cherokee capitals", "\u13e3\u13b3\u13a9"},
	{"Cherokee small letters", "\uabb3\uab83\uab79"},
	{"Greek capital with prosgegrammeni", "\u1fbc"},
	{"Greek small with ypogegrammeni", "\u1fb3"},
	{"Greek with dialytika and tonos", "\u0390"},
	{"Armenian ligature", "\u0587"},
	{"Georgian Mtavruli", "\u1c90\u1c91\u1c92"},
	{"Deseret, beyond the BMP", "\U00010400\U00010401"},
	{"Adlam", "\U0001e900\U0001e922"},
	{"Vithkuqi (Unicode 14)", "\U00010570\U00010597"},
	{"dotless i stays", "\u0131"},
	{"capital I", "I"},
	{"dotted capital I alone", "\u0130"},
	{"i with a dot above", "i\u0307"},
	{"j with a dot above", "j\u0307"},
	{"a dot above after a mark below is dropped", "i\u0323\u0307"},
	{"a dot above after another mark above stays", "i\u0301\u0307"},
	{"a dot above on another letter stays", "e\u0307"},
	{"dotted capital I with an acute", "\u0130\u0301"},
	{"e acute precomposed", "caf\u00e9"},
	{"e acute decomposed", "cafe\u0301"},
	{"marks below then above", "e\u0323\u0302"},
	{"marks above then below", "e\u0302\u0323"},
	{"Hangul jamo", "\u1100\u1161\u11a8"},
	{"Hangul syllable", "\uac01"},
	{"half-width katakana and a voiced mark", "\uff76\uff9e"},
	{"Cyrillic", "\u0410\u043d\u0434\u0440\u0435\u0439"},
	{"Han", "\u6771\u4eac"},
	{"Hebrew", "\u05e9\u05dc\u05d5\u05dd"},
	{"Arabic", "\u0645\u0631\u062d\u0628\u0627"},
	{"Devanagari with a joiner", "\u0915\u094d\u200d\u0937"},
	{"Persian with a non-joiner", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"},
	{"full-width and accents in two words", "\uff2a\uff41\uff4e\uff45  \u00d0OE"},
}

// accountFoldFile is account_fold.json as NormalizeAccount writes it: the
// cases above, then every character that tollgate accepts alone and
// changes (its width, case and canonical data), then i, each combining
// mark it accepts there, and a dot above (the marks' combining classes,
// which decide whether the dot is dropped and where NFD puts it). Every
// character outside ASCII is written \u-escaped, since canonically
// equivalent spellings look alike.
func accountFoldFile(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("{\n")
	fmt.Fprintf(&b, " \"about\": %s,\n", jsonASCII(`Account fold vectors, written from tollgate's own authguard.NormalizeAccount by api/client's TestVectors_AccountFoldIsNormalizeAccount (go test ./api/client -run TestVectors_AccountFold -update rewrites it; the test fails when it drifts): each client keys its FailOpen allowance by the fold of an account, which for every "in" must be its "key". cases are named spellings; chars are [in, key] for every character tollgate accepts alone and changes; marks are [in, key] for i, each combining mark tollgate accepts there, and U+0307 (the dot above is dropped unless a mark above comes first, and NFD orders the marks by class). unicode_version is the Unicode version of the data the keys come from; every character is assigned in it (tollgate refuses the others). A client whose own Unicode data is older skips, and counts, the vectors with a character it does not know.`))
	fmt.Fprintf(&b, " \"unicode_version\": %s,\n", jsonASCII(norm.Version))
	b.WriteString(" \"cases\": [\n")
	for i, c := range accountFoldCases {
		key, err := authguard.NormalizeAccount(c.in)
		if err != nil {
			t.Fatalf("%s: NormalizeAccount(%+q): %v", c.name, c.in, err)
		}
		fmt.Fprintf(&b, "  {\"name\": %s, \"in\": %s, \"key\": %s}%s\n", jsonASCII(c.name), jsonASCII(c.in), jsonASCII(key), comma(i, len(accountFoldCases)))
	}
	b.WriteString(" ],\n")
	var chars, marks [][2]string
	// Tollgate refuses the rest alone or after any letter (unassigned,
	// private use, control, format, white space), so leaving them out
	// spares a million calls. The tables' ranges mark the runes once:
	// unicode.In on each of the 1.1 million runs five binary searches.
	accepted := make([]bool, utf8.MaxRune+1)
	for _, tab := range []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S} {
		for _, rg := range tab.R16 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				accepted[r] = true
			}
		}
		for _, rg := range tab.R32 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				accepted[r] = true
			}
		}
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !accepted[r] {
			continue
		}
		if key, err := authguard.NormalizeAccount(string(r)); err == nil && key != string(r) {
			chars = append(chars, [2]string{string(r), key})
		}
		if norm.NFD.PropertiesString(string(r)).CCC() == 0 {
			continue
		}
		in := "i" + string(r) + "\u0307"
		if key, err := authguard.NormalizeAccount(in); err == nil {
			marks = append(marks, [2]string{in, key})
		}
	}
	for _, list := range []struct {
		name  string
		pairs [][2]string
		last  bool
	}{{"chars", chars, false}, {"marks", marks, true}} {
		fmt.Fprintf(&b, " %q: [\n", list.name)
		for i, p := range list.pairs {
			fmt.Fprintf(&b, "  [%s, %s]%s\n", jsonASCII(p[0]), jsonASCII(p[1]), comma(i, len(list.pairs)))
		}
		if list.last {
			b.WriteString(" ]\n")
		} else {
			b.WriteString(" ],\n")
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func comma(i, n int) string {
	if i == n-1 {
		return ""
	}
	return ","
}

// jsonASCII is s as a JSON string of printable ASCII: everything else is
// \u-escaped, beyond the BMP as a surrogate pair.
func jsonASCII(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// account_fold.json is what NormalizeAccount makes of its inputs, so that
// the clients' folds are held to tollgate's own; a change of tollgate's
// normalisation (or of its Unicode version) fails here until the file is
// rewritten with -update and the clients pass it.
func TestVectors_AccountFoldIsNormalizeAccount(t *testing.T) {
	want := accountFoldFile(t)
	path := filepath.Join("..", "..", "clients", "testdata", "account_fold.json")
	if *updateVectors {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what authguard.NormalizeAccount writes: rewrite it with go test ./api/client -run TestVectors_AccountFold -update, and run the clients' tests", path)
	}
}

// The Go client's allowance keys each account of account_fold.json by its
// key, as tollgate does.
func TestVectors_AccountFold(t *testing.T) {
	var doc struct {
		About          string `json:"about"`
		UnicodeVersion string `json:"unicode_version"`
		Cases          []struct {
			Name string `json:"name"`
			In   string `json:"in"`
			Key  string `json:"key"`
		} `json:"cases"`
		Chars [][2]string `json:"chars"`
		Marks [][2]string `json:"marks"`
	}
	readVectors(t, "account_fold.json", &doc)
	for _, c := range doc.Cases {
		if got := client.FoldAccount(c.In); got != c.Key {
			t.Errorf("%s: foldAccount(%+q) = %+q, want %+q", c.Name, c.In, got, c.Key)
		}
	}
	for _, p := range append(doc.Chars, doc.Marks...) {
		if got := client.FoldAccount(p[0]); got != p[1] {
			t.Errorf("foldAccount(%+q) = %+q, want %+q", p[0], got, p[1])
		}
	}
	if len(doc.Cases) < 50 || len(doc.Chars) < 1000 || len(doc.Marks) < 500 {
		t.Fatalf("%d cases, %d chars, %d marks: the vectors did not load", len(doc.Cases), len(doc.Chars), len(doc.Marks))
	}
}

// FuzzFoldAccount checks the Go client's fold against tollgate's own
// NormalizeAccount on every account tollgate accepts.
func FuzzFoldAccount(f *testing.F) {
	for _, c := range accountFoldCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := client.FoldAccount(s)
		if key, err := authguard.NormalizeAccount(s); err == nil && got != key {
			t.Errorf("foldAccount(%+q) = %+q, NormalizeAccount %+q", s, got, key)
		}
	})
}
