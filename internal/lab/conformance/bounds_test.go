package conformance_test

import (
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// sendFlowCappedBy is otp_send with its destination rules replaced by rule.
func sendFlowCappedBy(rule string) string {
	return `flows:
  otp_send:
    rules:
      - {name: destination_backoff, off: true}
      - {name: destination_hourly, off: true}
      - {name: destination_daily, off: true}
      - ` + rule + "\n"
}

// TestDestinationCodes_EachAlgorithmsFigureIsAnUpperBound: the figure the
// report holds a send flow to must be one no attacker beats, whatever the
// algorithm: the bombing scenario run on the policy stays within it (the
// report fails 6.6.3 otherwise), and the figure is the one computed here.
func TestDestinationCodes_EachAlgorithmsFigureIsAnUpperBound(t *testing.T) {
	tests := []struct {
		name string
		rule string
		want int
	}{
		{"sliding log: 24h of 1h windows", "{name: cap, subject: destination, clients: all, algorithm: sliding_log, counts: proceed, window: 1h, limit: 2}", 48},
		{"fixed window: a day touches two", "{name: cap, subject: destination, clients: all, algorithm: fixed_window, counts: proceed, window: 24h, limit: 10}", 20},
		{"sliding counter: as a fixed window", "{name: cap, subject: destination, clients: all, algorithm: sliding_counter, counts: proceed, window: 6h, limit: 3}", 15},
		{"token bucket: burst and refill", "{name: cap, subject: destination, clients: all, algorithm: token_bucket, counts: proceed, limit: 3, rate: 1/h}", 27},
		{"leaky bucket: queue and drain", "{name: cap, subject: destination, clients: all, algorithm: leaky_bucket, counts: proceed, limit: 5, rate: 2/h}", 53},
		{"backoff: its MaxFailuresIn", "{name: cap, subject: destination, clients: all, algorithm: backoff, counts: proceed, free: 2, base: 1m, factor: 2, max: 1h, forget_after: 24h}", 0},
		{"a cost of 2 halves it", "{name: cap, subject: destination, clients: all, algorithm: sliding_log, counts: proceed, window: 24h, limit: 10, cost: 2}", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(sendFlowCappedBy(tt.rule)))
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.Policy.Flow("otp_send")
			c, ok := conformance.DestinationCodes(f)
			if !ok || c.Rule != "cap" {
				t.Fatalf("DestinationCodes = %+v, %v; want the rule cap", c, ok)
			}
			if want := tt.want; want == 0 {
				want = f.Rule("cap").Backoff.MaxFailuresIn(24 * time.Hour)
				tt.want = want
			}
			if c.Max != tt.want {
				t.Errorf("DestinationCodes = %d, want %d", c.Max, tt.want)
			}
			rep := report(t, conformance.ProfileASVS, cfg, nil)
			r := result(t, rep, "6.6.3")
			if r.Status != conformance.Pass {
				t.Errorf("6.6.3: %s %q", r.Status, r.Failures)
			}
			ev := evidenceOf(t, r, conformance.EvidenceScenario, "destination-bombing")
			if !ev.Ran || *ev.Value > float64(c.Max) || *ev.Value == 0 {
				t.Errorf("bombing on the policy: %+v (value %v), want a run within %d", ev, ev.Value, c.Max)
			}
		})
	}
}

// TestDestinationCaps_OfTheBuiltInPolicy: the figures the report holds the
// built-in flows to (the bound on failed checks per account is
// authguard's, TestBudgetLine_IsValidateConfigsLine).
func TestDestinationCaps_OfTheBuiltInPolicy(t *testing.T) {
	p := config.DefaultPolicy()
	if g, ok := conformance.DestinationGuesses(p.Flow("otp_verify")); !ok || g.Max != 59 || g.Rule != "destination_backoff" {
		t.Errorf("DestinationGuesses(otp_verify) = %+v, %v; want 59 by destination_backoff", g, ok)
	}
	if _, ok := conformance.DestinationGuesses(p.Flow("login")); ok {
		t.Errorf("login bounds guesses per destination")
	}
	if c, ok := conformance.DestinationCodes(p.Flow("otp_send")); !ok || c.Max != 10 || c.Rule != "destination_daily" {
		t.Errorf("DestinationCodes(otp_send) = %+v, %v; want 10 by destination_daily", c, ok)
	}
}
