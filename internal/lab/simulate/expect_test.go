package simulate

import (
	"strings"
	"testing"
)

func TestParseExpectation(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // String() of the result, or "" for an error
		wantErr    string
	}{
		{"attacker.proceeded", "<= 100", "attacker.proceeded <= 100", ""},
		{"attacker.proceeded", "<=100", "attacker.proceeded <= 100", ""},
		{"owner.delayed", " == 0 ", "owner.delayed == 0", ""},
		{"a.attempts", "< 5", "a.attempts < 5", ""},
		{"a.captcha", ">= 1", "a.captcha >= 1", ""},
		{"a.accounts_checked", "> 10", "a.accounts_checked > 10", ""},
		{"a.accounts_checked_before_captcha", "<= 20", "a.accounts_checked_before_captcha <= 20", ""},
		{"a.proceeded_max_24h", "<= 100", "a.proceeded_max_24h <= 100", ""},
		{"a.failures_max_24h", "<= 100", "a.failures_max_24h <= 100", ""},
		{"a.mint_logins", "== 10", "a.mint_logins == 10", ""},
		{"a.mint_refused", "> 0", "a.mint_refused > 0", ""},
		{"a.failures", "<= 1", "", `unknown field "failures"`},
		{"a.proceeded", "100", "", "invalid expectation"},
		{"a.proceeded", "~ 100", "", "invalid expectation"},
		{"a.proceeded", "=< 100", "", "invalid expectation"},
		{"a.proceeded", "<= lots", "", "invalid number"},
		{"a.proceeded", "<= 1.5", "", "invalid number"},
		{"a.proceeded", "", "", "invalid expectation"},
		{"a.first_delay_at", "<= 1", "", `unknown field "first_delay_at"`},
		{"a.bogus", "<= 1", "", `unknown field "bogus"`},
		{"proceeded", "<= 1", "", "invalid key"},
		{".proceeded", "<= 1", "", "invalid key"},
	}
	for _, tt := range tests {
		e, err := ParseExpectation(tt.key, tt.value)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseExpectation(%q, %q) error = %v, want one containing %q", tt.key, tt.value, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("ParseExpectation(%q, %q) error = %v", tt.key, tt.value, err)
		case e.String() != tt.want:
			t.Errorf("ParseExpectation(%q, %q) = %q, want %q", tt.key, tt.value, e.String(), tt.want)
		}
	}
}

func TestExpectation_Holds(t *testing.T) {
	tests := []struct {
		op       string
		value    int64
		got      int64
		wantHold bool
	}{
		{"<=", 100, 99, true}, {"<=", 100, 100, true}, {"<=", 100, 101, false},
		{"<", 100, 99, true}, {"<", 100, 100, false},
		{"==", 0, 0, true}, {"==", 0, 1, false},
		{">=", 10, 10, true}, {">=", 10, 9, false},
		{">", 10, 11, true}, {">", 10, 10, false},
	}
	for _, tt := range tests {
		e := Expectation{Actor: "a", Field: "proceeded", Op: tt.op, Value: tt.value}
		if got := e.Holds(tt.got); got != tt.wantHold {
			t.Errorf("(%s).Holds(%d) = %v, want %v", e, tt.got, got, tt.wantHold)
		}
	}
}
