package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// TestExamplePolicies_StayWithinNIST loads every policy of
// examples/policies, as serve would, so that none rots: each is valid and
// keeps every flow within NIST SP 800-63B's 100 failed attempts per account
// per day. docs/policy.md's worked example quotes short-delay-cap.yaml's figures.
func TestExamplePolicies_StayWithinNIST(t *testing.T) {
	files, err := filepath.Glob("../../examples/policies/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example policies: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cfg, err := Load(path, testkit.Env())
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range cfg.Policy.FlowNames() {
				if n, ok := cfg.Policy.Flow(name).MaxFailuresPerDay(); ok && n > 100 {
					t.Errorf("flow %s: %d failed checks per account a day, above 100", name, n)
				}
			}
		})
	}

	// docs/policy.md's figures for short-delay-cap.yaml.
	cfg, err := Load("../../examples/policies/short-delay-cap.yaml", testkit.Env())
	if err != nil {
		t.Fatal(err)
	}
	login := cfg.Policy.Flow("login")
	if n, _ := login.MaxFailuresPerDay(); n != 93 {
		t.Errorf("login's bound = %d, docs/policy.md says 93", n)
	}
	if m := login.Rule("account_backoff").Backoff.Max; m != 10*time.Minute {
		t.Errorf("account_backoff's cap = %v, want the 10m the example is about", m)
	}
	if n := login.Rule("account_daily").Backoff.MaxFailuresIn(24 * time.Hour); n != 65 {
		t.Errorf("account_daily allows %d a day, README says 65", n)
	}
}
