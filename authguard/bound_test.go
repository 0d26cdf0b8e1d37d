package authguard_test

import (
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// TestBudgetLine_IsValidateConfigsLine: validate-config prints this line
// and the conformance report shows it; its words are the docs' and their
// tests'.
func TestBudgetLine_IsValidateConfigsLine(t *testing.T) {
	p := builtinpolicy.Policy()
	for flow, want := range map[string]string{
		"login":      "login: at most 90 failed checks per account in any 24h (account_backoff 62; device_backoff 13 shared + 3 devices x 5 of their own)",
		"otp_verify": "otp_verify: at most 81 failed checks per account in any 24h (account_backoff 59; device_backoff 13 shared + 3 devices x 3 of their own)",
		"otp_send":   "otp_send: sends one-time codes to every country; denies premium_rate, shared_cost, unknown numbers; destination prefixes leave out 3 digits; 3 owner codes a day to a verified destination",
	} {
		if got := p.Flow(flow).BudgetLine(); got != want {
			t.Errorf("BudgetLine(%s) =\n  %s\nwant\n  %s", flow, got, want)
		}
	}
	if b, ok := p.Flow("login").FailureBound(); !ok || b.Max != 90 || !b.Exact {
		t.Errorf("login's FailureBound = %+v, %v; want exactly 90", b, ok)
	}
	if b, ok := p.Flow("otp_send").FailureBound(); ok {
		t.Errorf("a send flow has a bound on failed checks: %+v", b)
	}
}

// TestFailureBound_BeyondTheExactFiguresIsALowerBound: a backoff rule whose
// figure is past backoff.MaxExact makes the bound "at least", never a
// figure that claims more than is known; above NIST's 100 the line says so.
func TestFailureBound_BeyondTheExactFiguresIsALowerBound(t *testing.T) {
	lax, err := policyfile.LoadPolicy([]byte("flows:\n  login:\n    rules:\n      - {name: account_backoff, free: 1000000, base: 1s, max: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	line := lax.Flow("login").BudgetLine()
	if b, _ := lax.Flow("login").FailureBound(); b.Exact || !strings.HasPrefix(line, "login: at least") || !strings.HasSuffix(line, "; above NIST SP 800-63B's 100") {
		t.Errorf("a bound beyond the exact figures: %+v, %q", b, line)
	}
	none, err := policyfile.LoadPolicy([]byte("flows:\n  login:\n    rules:\n      - {name: account_backoff, off: true}\n      - {name: device_backoff, off: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := none.Flow("login").FailureBound(); ok || !strings.Contains(none.Flow("login").BudgetLine(), "no bound on failed checks per account") {
		t.Errorf("a login no backoff rule bounds: %+v, %v, %q", b, ok, none.Flow("login").BudgetLine())
	}
}
