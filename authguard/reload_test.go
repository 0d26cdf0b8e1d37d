package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

func mustPolicy(t *testing.T, yaml string) *authguard.Policy {
	t.Helper()
	p, err := policyfile.LoadPolicy([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const freeThree = `
flows:
  login:
    rules:
      - name: account_backoff
        free: 3
`

// A reload that raises free applies at the next call and keeps the
// counters: the account's 3 failures stay counted under the new limit
// (a reload must not hand an attacker fresh counters), and it waits again
// after the 5th.
func TestReload_CountersSurviveAndTheNewLimitAppliesAtTheNextCall(t *testing.T) {
	h := newHarness(t, freeThree)
	for range 3 {
		h.attempt("victim", "192.0.2.1", authguard.Failure, "")
	}
	if v := h.check(authguard.CheckRequest{Account: "victim", IP: "192.0.2.1"}); v.Action != authguard.Delay {
		t.Fatalf("after 3 failures with free 3: %v, want delay", v.Action)
	}
	if err := h.e.SetPolicies(mustPolicy(t, strings.Replace(freeThree, "free: 3", "free: 5", 1)), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if v := h.attempt("victim", "192.0.2.1", authguard.Failure, ""); v.Action == authguard.Delay && i == 0 {
			t.Fatalf("failure 4 under free 5: the check was refused")
		}
	}
	if v := h.check(authguard.CheckRequest{Account: "victim", IP: "192.0.2.1"}); v.Action != authguard.Delay {
		t.Errorf("after 5 failures (3 before the reload) with free 5: %v, want delay: the reload forgot the counter", v.Action)
	}
}

// A rule that keeps its store key under another algorithm would read the
// old algorithm's state as its own: the reload is refused, names the rule,
// and the running policy stays.
func TestReload_ARuleThatChangesAlgorithmUnderItsKeyIsRefused(t *testing.T) {
	h := newHarness(t, "")
	changed := mustPolicy(t, `
flows:
  login:
    rules:
      - name: ip_rate
        algorithm: leaky_bucket
        limit: 200
        rate: 20/s
`)
	err := h.e.SetPolicies(changed, nil)
	var re *authguard.RuleError
	if !errors.As(err, &re) || re.Flow != "login" || re.Rule != "ip_rate" || !strings.Contains(err.Error(), "new key") {
		t.Fatalf("SetPolicies = %v, want a RuleError for login's ip_rate that says to give it a new key", err)
	}
	if got := h.e.Policy().Flow("login").Rule("ip_rate").Algorithm; got != authguard.TokenBucket {
		t.Errorf("after the refused reload ip_rate is %v, want the running token_bucket", got)
	}
	renamed := mustPolicy(t, `
flows:
  login:
    rules:
      - name: ip_rate
        key: iprate_v2
        algorithm: leaky_bucket
        limit: 200
        rate: 20/s
`)
	if err := h.e.SetPolicies(renamed, nil); err != nil {
		t.Errorf("the same change under a new key: %v", err)
	}
}

// Tenants are fixed while the engine runs (their entries are kept by
// tenant): a reload naming a new one is refused.
func TestReload_ANewTenantIsRefused(t *testing.T) {
	h := newHarness(t, "")
	err := h.e.SetPolicies(mustPolicy(t, ""), map[string]*authguard.Policy{"acme": mustPolicy(t, "")})
	if err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("SetPolicies with a new tenant = %v, want a refusal that says it takes a restart", err)
	}
}

// Calls racing a reload each decide under one whole policy (run with
// -race): no error, and every verdict is one of the two policies'.
func TestReload_CallsDuringASwapSeeOnePolicyEach(t *testing.T) {
	h := newHarness(t, freeThree)
	a, b := mustPolicy(t, freeThree), mustPolicy(t, strings.Replace(freeThree, "free: 3", "free: 100", 1))
	var wg, reloads sync.WaitGroup
	var errs atomic.Int64
	stop := make(chan struct{})
	reloads.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := a
			if i%2 == 1 {
				p = b
			}
			if err := h.e.SetPolicies(p, nil); err != nil {
				errs.Add(1)
			}
		}
	})
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				acct := fmt.Sprint("user", w, "-", i%7)
				v, err := h.e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: acct, IP: "192.0.2.9"})
				if err != nil {
					errs.Add(1)
					continue
				}
				if v.Action == authguard.Proceed {
					h.e.Report(context.Background(), authguard.ReportRequest{Flow: "login", Account: acct, IP: "192.0.2.9", Outcome: authguard.Failure, Attempt: v.Attempt})
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	reloads.Wait()
	if n := errs.Load(); n != 0 {
		t.Errorf("%d errors from calls and reloads racing", n)
	}
}
