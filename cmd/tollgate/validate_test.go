package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// validate runs validate-config with args and returns its exit status,
// stdout and stderr.
func validate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"validate-config"}, args...), &out, &errOut, testkit.Env())
	return code, out.String(), errOut.String()
}

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// laxPolicy caps login's delay at 10 minutes: 185 failed checks a day.
const laxPolicy = "flows:\n  login:\n    rules:\n      - {name: account_backoff, max: 10m}\n"

// TestValidateConfig_StrictFailsAPolicyAboveNIST: validate-config printed
// "above NIST SP 800-63B's 100" and exited 0, so CI could not gate on it.
// With -strict it exits 1, wherever the flag is; without, it still exits 0.
func TestValidateConfig_StrictFailsAPolicyAboveNIST(t *testing.T) {
	lax := writeTemp(t, "lax.yaml", laxPolicy)
	for _, args := range [][]string{{"-strict", lax}, {lax, "-strict"}, {"-strict", "-json", lax}, {"-strict", "-print", lax}} {
		code, _, stderr := validate(t, args...)
		if code != 1 || !strings.Contains(stderr, "warning: flow login: at most 185 failed checks per account in any 24h, above NIST SP 800-63B's 100") {
			t.Errorf("validate-config %v: exit %d, stderr %q; want 1 and the warning", args, code, stderr)
		}
	}
	if code, stdout, stderr := validate(t, lax); code != 0 || !strings.Contains(stdout, "above NIST") || !strings.Contains(stderr, "warning: flow login") {
		t.Errorf("validate-config without -strict: exit %d, stdout %q, stderr %q; want 0 with the warning printed", code, stdout, stderr)
	}
}

// TestValidateConfig_StrictFailsATenantAboveNIST: a tenant's own flows are
// gated too, not only the file's.
func TestValidateConfig_StrictFailsATenantAboveNIST(t *testing.T) {
	key := writeTemp(t, "hs.key", secret32)
	path := writeTemp(t, "t.yaml", `auth:
  audience: tollgate
  keys: [{id: k, alg: HS256, secret_file: `+key+`, tenants: [bank]}]
  tenants:
    - name: bank
      issuer: b
      flows:
        login:
          rules: [{name: account_backoff, max: 10m}]
`)
	code, stdout, stderr := validate(t, "-strict", path)
	if code != 1 || !strings.Contains(stderr, "warning: tenant bank: flow login: at most 185") || !strings.Contains(stdout, "tenant bank: login: at most 185") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and tenant bank's login above NIST", code, stdout, stderr)
	}
}

// TestValidateConfig_StrictFailsOnAnyWarning: a secret in the file is what
// serve warns of at start; -strict fails on it, the built-in policy passes.
func TestValidateConfig_StrictFailsOnAnyWarning(t *testing.T) {
	if code, _, stderr := validate(t, "-strict", writeTemp(t, "s.yaml", "secret: "+secret32+"\n")); code != 1 || !strings.Contains(stderr, "warning: the secret is set in the config file") {
		t.Errorf("a secret in the file: exit %d, stderr %q; want 1 and the warning", code, stderr)
	}
	if code, _, stderr := validate(t, "-strict"); code != 0 || stderr != "" {
		t.Errorf("the built-in policy: exit %d, stderr %q; want 0 and no warning", code, stderr)
	}
}

// TestValidateConfig_JSONGivesTheEffectivePolicyAndEachBound: -json is for
// tools: the flows, their rules with their parameters, each flow's bound.
func TestValidateConfig_JSONGivesTheEffectivePolicyAndEachBound(t *testing.T) {
	var got validationJSON
	code, stdout, stderr := validate(t, "-json", writeTemp(t, "lax.yaml", laxPolicy))
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("exit %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	bounds := map[string]*boundJSON{}
	for _, f := range got.Flows {
		bounds[f.Name] = f.Bound
	}
	if b := bounds["login"]; !got.OK || b == nil || *b != (boundJSON{Max: 185, Exact: true, AboveNIST: true}) {
		t.Errorf("login's bound = %+v, want 185, exact, above NIST", b)
	}
	if b := bounds["otp_verify"]; b == nil || b.Max != 81 || b.AboveNIST {
		t.Errorf("otp_verify's bound = %+v, want 81", b)
	}
	if b, ok := bounds["otp_send"]; !ok || b != nil {
		t.Errorf("otp_send's bound = %+v, want null (a send flow)", b)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "flow login") {
		t.Errorf("warnings = %q, want login's", got.Warnings)
	}
	for _, want := range []string{
		`"name": "account_backoff"`, `"max": "10m"`, `"max_failures_per_day": 157`,
		`"of": "account"`, `"windows": [`, `"interval": "50ms"`, `"deny_number_types": [`, `"fail_closed_retry": "2s"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("-json lacks %s", want)
		}
	}

	// A mistake: exit 1, and the JSON says where.
	code, stdout, _ = validate(t, "-json", writeTemp(t, "bad.yaml", "flows:\n  logn:\n    mode: shadow\n"))
	var bad validationJSON
	if err := json.Unmarshal([]byte(stdout), &bad); err != nil || code != 1 || bad.OK || bad.Error == nil || bad.Error.Line != 2 || bad.Error.Path != "flows.logn" {
		t.Errorf("a mistake: exit %d, %v, %+v; want 1 and an error at line 2 of flows.logn", code, err, bad.Error)
	}
}

// TestValidateConfig_PrintWithoutAFilePrintsTheBuiltInPolicy: -print with
// no FILE was a usage error.
func TestValidateConfig_PrintWithoutAFilePrintsTheBuiltInPolicy(t *testing.T) {
	code, stdout, stderr := validate(t, "-print")
	if code != 0 || !strings.Contains(stdout, "flow login: enforce") || !strings.Contains(stdout, "flow otp_send:") || strings.Contains(stderr, "usage") {
		t.Errorf("exit %d, stderr %q:\n%s", code, stderr, stdout)
	}
}

// TestValidateConfig_ConformancePresetsPassStrict: the presets
// tollgate-lab conformance -preset prints (the files docs/policy.md points
// at) are configs an operator deploys: validate-config -strict takes them.
func TestValidateConfig_ConformancePresetsPassStrict(t *testing.T) {
	presets, err := filepath.Glob(filepath.Join("..", "..", "internal", "lab", "conformance", "presets", "*.yaml"))
	if err != nil || len(presets) < 2 {
		t.Fatalf("the presets: %q, %v; want one per profile", presets, err)
	}
	for _, path := range presets {
		if code, stdout, stderr := validate(t, "-strict", path); code != 0 {
			t.Errorf("validate-config -strict %s: exit %d\n%s%s", path, code, stdout, stderr)
		}
	}
}

// TestValidateConfig_PrintSaysWhatAStepUpFlowIssuesAndWhatASuccessClears:
// -print said the step_up flow issues device tokens "of \"step_up\"" (it
// issues none: its pass answers the login's), and said nothing of a
// flow's success_clears, which decides whether one factor's success
// unlocks another. -json likewise.
func TestValidateConfig_PrintSaysWhatAStepUpFlowIssuesAndWhatASuccessClears(t *testing.T) {
	path := writeTemp(t, "p.yaml", "flows:\n  passkey:\n    success_clears: [login]\n")
	code, stdout, stderr := validate(t, "-print", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{
		"flow step_up: enforce, fails closed (delay 2s), IPv6 per /64, 0 allow-listed ranges, no device tokens of its own, requires account, ip ",
		"flow login: enforce, fails open, IPv6 per /64, 0 allow-listed ranges, device tokens of \"login\",",
		"per account in any 24h (account_backoff 85) success_clears: a settled success clears the account's counters in login (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("-print lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(got, `device tokens of "step_up"`) {
		t.Errorf("-print says the step_up flow issues device tokens:\n%s", stdout)
	}
	if n := strings.Count(got, "success_clears:"); n != 1 {
		t.Errorf("-print says success_clears %d times, want once (passkey's):\n%s", n, stdout)
	}

	code, stdout, stderr = validate(t, "-json", path)
	if code != 0 {
		t.Fatalf("-json: exit %d: %s", code, stderr)
	}
	var doc struct {
		Flows []struct {
			Name          string   `json:"name"`
			DeviceTrust   string   `json:"device_trust"`
			SuccessClears []string `json:"success_clears"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.Flows {
		switch f.Name {
		case "step_up":
			if f.DeviceTrust != "" {
				t.Errorf("-json: step_up's device_trust = %q, want none", f.DeviceTrust)
			}
		case "passkey":
			if strings.Join(f.SuccessClears, ",") != "login" {
				t.Errorf("-json: passkey's success_clears = %q, want [login]", f.SuccessClears)
			}
		default:
			if len(f.SuccessClears) != 0 {
				t.Errorf("-json: %s's success_clears = %q, want none", f.Name, f.SuccessClears)
			}
		}
	}
}

// TestValidateConfig_PrintSaysASendFlowRevokesAsItsTrustGroup: with
// login's revoke_devices_on_password_change on, otp_send's sends revoke
// login's tokens too (a send flow may not state the setting and follows
// its trust group), yet -print's otp_send line said nothing of it and
// -json said false: an operator checking the sends read them as still
// trusting a stolen token after the owner's change. Both now say what
// holds for the send flow and which flow's setting it follows.
func TestValidateConfig_PrintSaysASendFlowRevokesAsItsTrustGroup(t *testing.T) {
	tests := []struct {
		name, policy, want string
		on                 bool
	}{
		{"login revokes", "flows:\n  login:\n    revoke_devices_on_password_change: true\n",
			`kind send, device tokens of "login": a password change revokes them (flow login's revoke_devices_on_password_change),`, true},
		{"the built-in policy", "flows: {}\n",
			`kind send, device tokens of "login": a password change leaves them valid (flow login's revoke_devices_on_password_change),`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "p.yaml", tt.policy)
			code, stdout, stderr := validate(t, "-print", path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var line string
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "flow otp_send:") {
					line = l
				}
			}
			if !strings.Contains(line, tt.want) {
				t.Errorf("-print's otp_send line = %q, want it to say %q", line, tt.want)
			}
			if n, want := strings.Count(stdout, "a password change revokes"), map[bool]int{true: 2, false: 0}[tt.on]; n != want {
				t.Errorf("-print says a password change revokes %d times, want %d (login's and otp_send's):\n%s", n, want, stdout)
			}

			code, stdout, stderr = validate(t, "-json", path)
			if code != 0 {
				t.Fatalf("-json: exit %d: %s", code, stderr)
			}
			var doc struct {
				Flows []struct {
					Name    string `json:"name"`
					Revokes bool   `json:"revoke_devices_on_password_change"`
					Follows string `json:"revoke_devices_follows"`
				} `json:"flows"`
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatal(err)
			}
			for _, f := range doc.Flows {
				wantOn, wantFollows := false, ""
				switch f.Name {
				case "login":
					wantOn = tt.on
				case "otp_send":
					wantOn, wantFollows = tt.on, "login"
				}
				if f.Revokes != wantOn || f.Follows != wantFollows {
					t.Errorf("-json: %s revokes %v following %q, want %v following %q", f.Name, f.Revokes, f.Follows, wantOn, wantFollows)
				}
			}
		})
	}
}
