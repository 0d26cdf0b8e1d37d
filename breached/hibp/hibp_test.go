package hibp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/breached/hibp"
)

type vector struct {
	Password string `json:"password"`
	SHA1     string `json:"sha1"`
	Prefix   string `json:"prefix"`
	Suffix   string `json:"suffix"`
	Range    string `json:"range"`
	Count    int64  `json:"count"`
	Breached bool   `json:"breached"`
}

func vectors(t testing.TB) []vector {
	t.Helper()
	b, err := os.ReadFile("../../clients/testdata/breached.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Cases []vector }
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("breached.json has no cases")
	}
	return f.Cases
}

func TestHashAndCount_SharedVectors(t *testing.T) {
	for _, v := range vectors(t) {
		t.Run(v.Prefix, func(t *testing.T) {
			p, s := hibp.Hash(v.Password)
			if p+s != v.SHA1 || p != v.Prefix || s != v.Suffix {
				t.Errorf("Hash(%q) = %s, %s; want %s, %s", v.Password, p, s, v.Prefix, v.Suffix)
			}
			if got := hibp.Count([]byte(v.Range), s); got != v.Count {
				t.Errorf("Count = %d, want %d", got, v.Count)
			}
			if got := hibp.Count([]byte(v.Range), s) > 0; got != v.Breached {
				t.Errorf("breached = %v, want %v", got, v.Breached)
			}
			// The same body with LF only and lower-case suffixes reads the same.
			lf := strings.ToLower(strings.ReplaceAll(v.Range, "\r\n", "\n"))
			if got := hibp.Count([]byte(lf), s); got != v.Count {
				t.Errorf("Count(LF, lower case) = %d, want %d", got, v.Count)
			}
		})
	}
}

func TestCount_Rules(t *testing.T) {
	const s = "1E4C9B93F3F0682250B6CF8331B7EE68FD8"
	tests := []struct {
		name string
		body string
		want int64
	}{
		{"CRLF", "AAA:1\r\n" + s + ":42\r\n", 42},
		{"LF, no final newline", "AAA:1\n" + s + ":42", 42},
		{"lower-case suffix in body", strings.ToLower(s) + ":7", 7},
		{"leading zeros", s + ":0000042", 42},
		{"spaces around", "  " + s + " : 42 \r\n", 42},
		{"padding line is never a match", s + ":0\r\n", 0},
		{"padding then a real line", s + ":000\r\n" + s + ":5\r\n", 5},
		{"malformed lines skipped", "garbage\r\n:\r\n" + s + ":x\r\n" + s + ":-3\r\n" + s + ":9\r\n", 9},
		{"overflow skipped", s + ":99999999999999999999\r\n", 0},
		{"max int64", s + ":9223372036854775807", 9223372036854775807},
		{"other suffix", "0000000000000000000000000000000000A:5", 0},
		{"prefix of the suffix is not a match", s[:34] + ":5", 0},
		{"empty body", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hibp.Count([]byte(tt.body), s); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.body, got, tt.want)
			}
		})
	}
	if got := hibp.Count([]byte(":5\r\n"), ""); got != 0 {
		t.Errorf("Count with an empty suffix = %d, want 0", got)
	}
}

func TestValidPrefix(t *testing.T) {
	for _, p := range []string{"5BAA6", "5baa6", "00000", "fffff"} {
		if !hibp.ValidPrefix(p) {
			t.Errorf("ValidPrefix(%q) = false", p)
		}
	}
	for _, p := range []string{"", "5BAA", "5BAA61", "5BAG6", " 5BAA", "5BAA\n", "５BAA6"} {
		if hibp.ValidPrefix(p) {
			t.Errorf("ValidPrefix(%q) = true", p)
		}
	}
}

func FuzzCount(f *testing.F) {
	for _, v := range vectors(f) {
		f.Add([]byte(v.Range), v.Suffix)
	}
	f.Add([]byte("A:0001\r\n:\n\r\n"), "a")
	f.Fuzz(func(t *testing.T, body []byte, suffix string) {
		n := hibp.Count(body, suffix)
		if n < 0 {
			t.Fatalf("Count = %d", n)
		}
		if n > 0 && !strings.Contains(strings.ToLower(string(body)), strings.ToLower(strings.TrimSpace(suffix))) {
			t.Fatalf("Count = %d for a suffix the body does not hold", n)
		}
	})
}

func ExampleCount() {
	prefix, suffix := hibp.Hash("password")
	// body is what GET /v1/breached/5BAA6 answered.
	body := []byte("1E4C9B93F3F0682250B6CF8331B7EE68FD8:9659365\r\n2E4AE97BA94D0EDA82F8F6D05584EF8AA38:0\r\n")
	fmt.Println(prefix, hibp.Count(body, suffix) > 0)
	// Output: 5BAA6 true
}
