package breached

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hexOf returns the SHA-1 of s in upper-case hex.
func hexOf(s string) string { return fmt.Sprintf("%X", sha1.Sum([]byte(s))) }

func sum(s string) [20]byte { return sha1.Sum([]byte(s)) }

// writeDir writes lines (full 40-digit hashes and counts) as the
// downloader's directory of range files.
func writeDir(t *testing.T, lines map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]*strings.Builder{}
	for h, n := range lines {
		b := files[h[:5]]
		if b == nil {
			b = &strings.Builder{}
			files[h[:5]] = b
		}
		fmt.Fprintf(b, "%s:%d\r\n", h[5:], n)
	}
	for p, b := range files {
		if err := os.WriteFile(filepath.Join(dir, p+".txt"), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad_DirectoryAndFileHoldTheSameHashes(t *testing.T) {
	lines := map[string]int{
		hexOf("password"): 9659365,
		hexOf("123456"):   179863340,
		hexOf("hunter2"):  1,
	}
	dir := writeDir(t, lines)
	// A file that is not a range is ignored.
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not a range"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for h, n := range lines {
		fmt.Fprintf(&b, "%s:%d\n", strings.ToLower(h), n)
	}
	file := filepath.Join(t.TempDir(), "pwned.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, file} {
		c, err := Load(path, 0)
		if err != nil {
			t.Fatalf("Load(%s): %v", path, err)
		}
		if got, want := c.Hashes(), int64(3); got != want {
			t.Errorf("Hashes() = %d, want %d", got, want)
		}
		if got, want := c.Bytes(), int64(3*22+(1<<20+1)*4); got != want {
			t.Errorf("Bytes() = %d, want %d", got, want)
		}
		for _, pw := range []string{"password", "123456", "hunter2"} {
			if got, want := c.Count(sum(pw)), uint32(lines[hexOf(pw)]); got != want {
				t.Errorf("Count(%s) = %d, want %d", pw, got, want)
			}
		}
		if got := c.Count(sum("never breached")); got != 0 {
			t.Errorf("Count(never breached) = %d, want 0", got)
		}
	}
}

func TestParse_Rules(t *testing.T) {
	pw := hexOf("password")
	body := strings.Join([]string{
		hexOf("b") + ":3",
		"",
		pw + ":0002",                // leading zeros
		hexOf("a") + ":0",           // padding: not held
		strings.ToLower(pw) + ":5",  // the same hash again: counts added
		hexOf("c") + ":99999999999", // past uint32: held as the largest
		"  " + hexOf("d") + ":1  \r",
	}, "\n")
	c, err := Parse([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pw   string
		want uint32
	}{{"password", 7}, {"a", 0}, {"b", 3}, {"c", 1<<32 - 1}, {"d", 1}}
	for _, tt := range tests {
		if got := c.Count(sum(tt.pw)); got != tt.want {
			t.Errorf("Count(%s) = %d, want %d", tt.pw, got, tt.want)
		}
	}
	if got, want := c.Hashes(), int64(4); got != want {
		t.Errorf("Hashes() = %d, want %d", got, want)
	}
}

func TestParse_MalformedLinesAreErrorsNamingTheLine(t *testing.T) {
	good := hexOf("x") + ":1\n"
	for _, bad := range []string{
		"nonsense",
		hexOf("x"),              // no count
		hexOf("x")[:39] + ":1",  // 39 digits
		hexOf("x")[:39] + "G:1", // not hex
		hexOf("x") + ":-1",      // not a count
		hexOf("x") + ":",        // empty count
		hexOf("x")[5:] + ":1",   // a range line in a full-hash file
	} {
		_, err := Parse([]byte(good+bad+"\n"), 0)
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("Parse(%q) = %v, want an error on line 2", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), bad) && bad != "" {
			t.Errorf("the error %q repeats the line", err)
		}
	}
}

func TestLoad_ACorpusPastMaxBytesIsRefusedBeforeItIsHeld(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "%s:1\n", hexOf(fmt.Sprint(i)))
	}
	need := int64(100*22 + (1<<20+1)*4)
	if _, err := Parse([]byte(b.String()), need); err != nil {
		t.Fatalf("Parse at exactly max_bytes: %v", err)
	}
	_, err := Parse([]byte(b.String()), need-1)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Parse past max_bytes = %v, want ErrTooLarge", err)
	}
}

func TestLoad_DirectoryRangeFilesReadWithTheirPrefix(t *testing.T) {
	// The same suffix under two prefixes is two hashes.
	dir := t.TempDir()
	sfx := hexOf("password")[5:]
	for _, p := range []string{"5BAA6", "00000"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(sfx+":4\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Count(sum("password")); got != 4 {
		t.Errorf("Count(password) = %d, want 4", got)
	}
	if got := c.Hashes(); got != 2 {
		t.Errorf("Hashes() = %d, want 2", got)
	}
	if _, err := Load(t.TempDir(), 0); err == nil {
		t.Error("Load of a directory without range files succeeded")
	}
	if _, err := Load(filepath.Join(dir, "missing"), 0); err == nil {
		t.Error("Load of a missing path succeeded")
	}
}

// checkIndex asserts c's invariants: offsets ascend to the record count,
// records sorted and distinct within a range, and every hash findable.
func checkIndex(t *testing.T, c *Corpus) {
	t.Helper()
	if int(c.offsets[ranges])*recSize != len(c.recs) {
		t.Fatalf("the offset table ends at %d, %d records", c.offsets[ranges], len(c.recs)/recSize)
	}
	most := 0
	for p := range uint32(ranges) {
		if c.offsets[p] > c.offsets[p+1] {
			t.Fatalf("offsets descend at %05X", p)
		}
		rs := c.rangeOf(p)
		most = max(most, len(rs)/recSize)
		for i := 0; i < len(rs); i += recSize {
			if i > 0 && string(rs[i-recSize:i-recSize+suffixLen]) >= string(rs[i:i+suffixLen]) {
				t.Fatalf("range %05X is not sorted and distinct", p)
			}
			var h [20]byte
			h[0], h[1], h[2] = byte(p>>12), byte(p>>4), byte(p<<4)|rs[i]&0x0f
			copy(h[3:], rs[i+1:i+suffixLen])
			if c.Count(h) == 0 {
				t.Fatalf("a hash of range %05X is not found", p)
			}
		}
	}
	if most != c.MaxRange() {
		t.Fatalf("MaxRange() = %d, the fullest range holds %d", c.MaxRange(), most)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(hexOf("a") + ":1\r\n" + hexOf("a") + ":2\n" + hexOf("b") + ":0\n"))
	f.Add([]byte("5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:00\n\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, 1<<30)
		if err != nil {
			return
		}
		checkIndex(t, c)
	})
}

func FuzzParseRange(f *testing.F) {
	f.Add(uint32(0x5BAA6), []byte("1E4C9B93F3F0682250B6CF8331B7EE68FD8:9659365\r\n09936F675CC81E74EF5E8E25D940ED90475:0\r\n"))
	f.Add(uint32(0), []byte("1e4c9b93f3f0682250b6cf8331b7ee68fd8:1\n1E4C9B93F3F0682250B6CF8331B7EE68FD8:1\n"))
	f.Fuzz(func(t *testing.T, p uint32, data []byte) {
		p &= ranges - 1
		c, err := parseRange(p, data, 1<<30)
		if err != nil {
			return
		}
		checkIndex(t, c)
		for q := range uint32(ranges) {
			if q != p && c.offsets[q] != c.offsets[q+1] {
				t.Fatalf("range %05X holds hashes of a file of range %05X", q, p)
			}
		}
	})
}

func TestDecodeHex_EveryByte(t *testing.T) {
	for c := range 256 {
		var dst [1]byte
		ok := decodeHex(dst[:], []byte{byte(c), '0'})
		want := strings.ContainsRune("0123456789abcdefABCDEF", rune(c))
		if ok != want {
			t.Errorf("decodeHex(%q) ok = %v, want %v", byte(c), ok, want)
		}
		if ok2 := decodeHex(dst[:], []byte{'0', byte(c)}); ok2 != want {
			t.Errorf("decodeHex(0%q) ok = %v, want %v", byte(c), ok2, want)
		}
	}
	var dst [2]byte
	if !decodeHex(dst[:], []byte("aF09")) || dst != [2]byte{0xaf, 0x09} {
		t.Errorf("decodeHex(aF09) = %x", dst)
	}
}
