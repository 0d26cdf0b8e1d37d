package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzValueEnd: on any valid JSON text, the value starting after the
// leading white space ends where the text's trailing white space starts;
// on any input at all, no index is out of range and nothing panics.
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` [1, "x\"]", {"b": [true]}] `, `"s\\"`, `-1.5e3`, `null`, `{"a":"}"}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := SkipSpace(b, 0)
		end := ValueEnd(b, i)
		if end < i || end > len(b) {
			t.Fatalf("ValueEnd(%q, %d) = %d", b, i, end)
		}
		if !json.Valid(b) {
			return
		}
		if want := len(bytes.TrimRight(b, " \t\n\r")); end != want {
			t.Fatalf("ValueEnd(%q) = %d, want %d", b, end, want)
		}
	})
}
