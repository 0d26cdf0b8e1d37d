package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// FuzzRun: any config file that loads gets a report for every profile
// (the figures only: a scenario on a policy that barely slows anyone takes
// seconds),
// without a panic, whose statuses agree with its failures, whose JSON
// decodes, and whose 3.2.2 passes only when every enforced flow of checks
// is bounded at 100 or less.
func FuzzRun(f *testing.F) {
	for _, p := range conformance.Profiles() {
		preset, _ := conformance.Preset(p)
		f.Add(preset)
	}
	for _, seed := range []string{
		"",
		"flows:\n  login:\n    rules:\n      - {name: account_backoff, max: 9m}\n",
		"flows:\n  login:\n    mode: shadow\n  otp_verify:\n    fail_mode: open\n    same_password_window: 1h\n",
		"flows:\n  otp_send:\n    rules:\n      - {name: destination_daily, off: true}\n      - {name: destination_hourly, past: captcha}\n",
		"flows:\n  api:\n    rules:\n      - {name: per_ip, subject: ip, algorithm: sliding_log, window: 1m, limit: 10}\n",
		"flows:\n  sms:\n    kind: send\n    rules:\n      - {name: d, subject: destination, clients: all, algorithm: token_bucket, limit: 3, rate: 1/h}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data)
		if err != nil {
			return
		}
		var reports []*conformance.Report
		for _, p := range conformance.Profiles() {
			rep, err := conformance.Run(context.Background(), conformance.Options{Profile: p, Config: cfg, NoScenarios: true})
			if err != nil {
				t.Fatalf("Run(%s): %v", p, err)
			}
			reports = append(reports, rep)
			pass := true
			for _, r := range rep.Requirements {
				if (r.Status == conformance.Fail) != (len(r.Failures) > 0) {
					t.Errorf("%s %s: status %s with failures %q", p, r.ID, r.Status, r.Failures)
				}
				pass = pass && r.Status != conformance.Fail
			}
			if rep.Pass != pass {
				t.Errorf("%s: pass %v, requirements say %v", p, rep.Pass, pass)
			}
		}
		if reports[0].Requirements[0].Status == conformance.Pass {
			for _, name := range cfg.Policy.FlowNames() {
				fl := cfg.Policy.Flow(name)
				if fl.Kind != authguard.Attempts || fl.Mode != authguard.Enforce || !countsAccount(fl) {
					continue
				}
				if b, ok := fl.FailureBound(); !ok || b.Max > conformance.NISTMaxFailures {
					t.Errorf("3.2.2 passes with flow %s bounded at %+v (ok %v)", name, b, ok)
				}
			}
		}
		var buf bytes.Buffer
		if err := conformance.WriteJSON(&buf, reports); err != nil {
			t.Fatal(err)
		}
		var out conformance.Output
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil || len(out.Reports) != len(reports) {
			t.Errorf("JSON does not decode: %v", err)
		}
		if err := conformance.WriteMarkdown(&buf, reports); err != nil {
			t.Fatal(err)
		}
	})
}

// countsAccount reports whether a rule of f counts the account: a flow
// that names none (the built-in magic_link) has no failures per account
// to bound, only per address (6.3.4).
func countsAccount(f *authguard.Flow) bool {
	for _, r := range f.Rules {
		if r.Subject.Has(authguard.PartAccount) || r.Subject.Has(authguard.PartDevice) {
			return true
		}
	}
	return false
}
