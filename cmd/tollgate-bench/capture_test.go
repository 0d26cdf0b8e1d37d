package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestMonitorArgs(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`1796305446.822485 [0 lua] "TIME"`, []string{"TIME"}},
		{`1796305446.820171 [0 127.0.0.1:57876] "evalsha" "3f1a" "2" "tg:default:login:acct:53ns" "k" "" "1"`,
			[]string{"evalsha", "3f1a", "2", "tg:default:login:acct:53ns", "k", "", "1"}},
		{`1.5 [0 unix:/tmp/r.sock] "eval" "local a = \"x\"\nreturn a\\n" "0"`, []string{"eval", "local a = \"x\"\nreturn a\\n", "0"}},
		{`1.5 [1 127.0.0.1:1] "set" "k" "\x00\xff\r\t\a\b"`, []string{"set", "k", "\x00\xff\r\t\a\b"}},
	}
	for _, tt := range tests {
		got, ok := monitorArgs(tt.line)
		if !ok || !slices.Equal(got, tt.want) {
			t.Errorf("monitorArgs(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
		}
	}
	for _, line := range []string{
		"", "OK", `1.5 [0 lua]`, `1.5 [0 lua] TIME`, `1.5 [0 lua] "TIME`, `1.5 [0 lua] "a""b"`,
		`1.5 [0 lua] "a\"`, `1.5 [0 lua] "\x4"`, `1.5 [0 lua] "\xzz"`, `1.5 [0 lua] "\q"`, `1.5 [0 lua] "a" `,
	} {
		if got, ok := monitorArgs(line); ok {
			t.Errorf("monitorArgs(%q) = %q, true; want not a command", line, got)
		}
	}
}

// repr quotes s as Redis's sdscatrepr does.
func repr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\x%02x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzMonitorArgs: no line makes monitorArgs panic, and any arguments
// written as MONITOR writes them are read back as they were.
func FuzzMonitorArgs(f *testing.F) {
	f.Add(`1.5 [0 lua] "TIME"`, "evalsha", "tg:x:\"y\\\n\x00")
	f.Fuzz(func(t *testing.T, line, a, b string) {
		monitorArgs(line)
		written := `1796305446.820171 [0 127.0.0.1:1] ` + repr(a) + " " + repr(b)
		got, ok := monitorArgs(written)
		if !ok || !slices.Equal(got, []string{a, b}) {
			t.Errorf("monitorArgs(%q) = %q, %v; want %q", written, got, ok, []string{a, b})
		}
	})
}

func TestFreshKeys(t *testing.T) {
	got, err := freshKeys([]string{"abc", "2", "tg:default:login:acct:53ns", "nocolon", "1", "tg:a:b"})
	want := []string{"abc", "2", "tg:default:login:acct:__rand_int__53ns", "__rand_int__nocolon", "1", "tg:a:b"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("freshKeys = %q, %v; want %q", got, err, want)
	}
	for _, args := range [][]string{{"abc", "x"}, {"abc", "0"}, {"abc", "3", "k1", "k2"}} {
		if got, err := freshKeys(args); err == nil {
			t.Errorf("freshKeys(%q) = %q; want an error", args, got)
		}
	}
}
