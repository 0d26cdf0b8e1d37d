package config

import (
	"errors"
	"strings"
	"testing"
)

// TestConfig_AMisspelledFlowOverrideIsRefused: `logn: {mode: shadow}` was a
// new empty flow, and login went on enforcing. A flow of a name the policy
// lacks must say what makes it new; the error names the flow, its line and
// the built-in name it is closest to.
func TestConfig_AMisspelledFlowOverrideIsRefused(t *testing.T) {
	tests := []struct {
		name, yaml     string
		line           int
		path, mean     string
		wantSuggestion bool
	}{
		{"a letter left out", "flows:\n  logn:\n    mode: shadow\n", 2, "flows.logn", `did you mean "login"?`, true},
		{"two letters swapped", "flows:\n  otp_verfiy: {fail_mode: open}\n", 2, "flows.otp_verfiy", `did you mean "otp_verify"?`, true},
		{"a setting under a new name", "flows:\n  login:\n    mode: shadow\n  signup:\n    mode: shadow\n", 4, "flows.signup", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadPolicy([]byte(tt.yaml))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("LoadPolicy = %v, want a *config.Error", err)
			}
			if e.Line != tt.line || e.Path != tt.path {
				t.Errorf("error at line %d, path %q; want line %d, %q (%v)", e.Line, e.Path, tt.line, tt.path, err)
			}
			if got := strings.Contains(err.Error(), "did you mean"); got != tt.wantSuggestion || !strings.Contains(err.Error(), tt.mean) {
				t.Errorf("error = %v, want one suggesting %q", err, tt.mean)
			}
			if !strings.Contains(err.Error(), "kind, template or rules") {
				t.Errorf("error = %v, want it to say how to declare a new flow", err)
			}
		})
	}
}

// TestConfig_ANewFlowThatSaysWhatItIsIsTaken: a new flow with its kind, a
// template or its rules is new on purpose, whatever its name is close to.
func TestConfig_ANewFlowThatSaysWhatItIsIsTaken(t *testing.T) {
	for _, y := range []string{
		"flows:\n  signup:\n    kind: attempts\n    mode: shadow\n",
		"flows:\n  logins:\n    template: login\n",
		"flows:\n  codes:\n    kind: send\n",
		"flows:\n  api:\n    rules:\n      - {name: per_ip, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n",
		"flows:\n  nothing:\n    rules: []\n",
	} {
		if _, err := LoadPolicy([]byte(y)); err != nil {
			t.Errorf("%q: %v", y, err)
		}
	}
}

// TestConfig_AMisspelledRuleOverrideIsRefused: a rule name close to one of
// the flow's was a new rule, refused for an unrelated reason ("subject must
// be ..."). A change of a rule the flow lacks (no subject or algorithm, which
// every new rule gives) now names the rule it is closest to.
func TestConfig_AMisspelledRuleOverrideIsRefused(t *testing.T) {
	tests := []struct {
		name, yaml, path, want string
	}{
		{"a change", "flows:\n  login:\n    rules:\n      - {name: acount_backoff, max: 10m}\n", "flows.login.rules[acount_backoff]", `did you mean "account_backoff"?`},
		{"a change in a template's copy", "flows:\n  reauth:\n    template: login\n    rules:\n      - {name: ip_rat, limit: 5}\n", "flows.reauth.rules[ip_rat]", `did you mean "ip_rate"?`},
		{"a switch-off", "flows:\n  otp_verify:\n    rules:\n      - {name: ip_sprya, off: true}\n", "flows.otp_verify.rules[ip_sprya]", `did you mean "ip_spray"?`},
		{"a change of no rule near", "flows:\n  login:\n    rules:\n      - {name: mystery, limit: 3}\n", "flows.login.rules[mystery]", "a new rule gives subject and algorithm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadPolicy([]byte(tt.yaml))
			var e *Error
			if !errors.As(err, &e) || e.Line == 0 || e.Path != tt.path || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadPolicy = %v, want an error at a line of %s saying %q", err, tt.path, tt.want)
			}
		})
	}
}

// TestConfig_ANewRuleNamedLikeAnotherStillWorks: a new rule that gives its
// subject and algorithm is taken, however close its name is to another's.
func TestConfig_ANewRuleNamedLikeAnotherStillWorks(t *testing.T) {
	p, err := LoadPolicy([]byte("flows:\n  login:\n    rules:\n" +
		"      - {name: ip_spray_40, subject: ip/40, algorithm: distinct, of: account, windows: [{window: 1h, limit: 200}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Flow("login").Rule("ip_spray_40") == nil || p.Flow("login").Rule("ip_spray_48") == nil {
		t.Errorf("login's rules: want ip_spray_40 added next to ip_spray_48")
	}
}

// TestConfig_ATopLevelTypoNamesItsKeyAndLine: `flow:` for `flows:` said
// "field flow not found in type struct { Flows yaml.Node ... }".
func TestConfig_ATopLevelTypoNamesItsKeyAndLine(t *testing.T) {
	_, err := LoadPolicy([]byte("# a policy\nflow:\n  login: {mode: shadow}\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Path != "flow" || !strings.Contains(err.Error(), `did you mean "flows"?`) || strings.Contains(err.Error(), "struct") {
		t.Errorf("LoadPolicy = %v, want an error at line 2 of flow suggesting flows", err)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"login", "otp_send", "otp_verify"}
	tests := []struct{ word, want string }{
		{"logn", "login"},
		{"Login", "login"},
		{"lgoin", "login"},
		{"otp_sned", "otp_send"},
		{"otp_verfy", "otp_verify"},
		{"log", ""},    // too short for two edits
		{"signup", ""}, // nothing near
		{"login", ""},  // itself is no suggestion
	}
	for _, tt := range tests {
		if got := closest(tt.word, names); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

// TestConfig_AConfigFileMistakeNamesItsPathAndLine: a config file's
// unknown key or wrong type said Go's words ("field flow not found in type
// config.fileConfig", "into int"); every mistake is now a *config.Error
// naming the key's path, its line, and the valid key it is closest to.
func TestConfig_AConfigFileMistakeNamesItsPathAndLine(t *testing.T) {
	tests := []struct {
		name, yaml string
		line       int
		path, want string
	}{
		{"a top-level typo", "listen: 127.0.0.1:1\nflow:\n  login: {mode: shadow}\n", 2, "flow", `is not a top-level key (valid: listen, secret, log_level, timeouts, store, key_prefix, entries_refresh, decision_log, auth, tls, webhooks, flows, challenge, proxy, breached); did you mean "flows"?`},
		{"a timeout typo", "timeouts:\n  raed: 1s\n", 2, "timeouts", `unknown field "raed" (valid: read_header, read, write, idle, shutdown); did you mean "read"?`},
		{"a Redis typo", "store:\n  redis:\n    ulr: redis://x:1\n", 3, "store.redis", `did you mean "url"?`},
		{"an auth key typo", "auth:\n  audience: a\n  keys:\n    - {id: k, alg: HS256, secret_fil: k.pem}\n", 4, "auth.keys[0]", `did you mean "secret_file"?`},
		{"a tenant typo", "auth:\n  tenants:\n    - name: shop\n      isuer: a\n", 4, "auth.tenants[0]", `did you mean "issuer"?`},
		{"a wrong type", "listen: 127.0.0.1:1\nstore:\n  redis:\n    pool_size: many\n", 4, "store.redis.pool_size", "cannot unmarshal !!str `many` into int"},
		{"a bad value", "key_prefix: \"a b\"\n", 1, "key_prefix", "key_prefix must be 1 to 32 letters"},
		{"a bad timeout", "timeouts:\n  idle: 2h\n", 2, "timeouts.idle", "timeouts.idle must be more than 0s"},
		{"not YAML", "listen: [\n", 1, "", "not YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, want a *config.Error", err)
			}
			if e.Line != tt.line || e.Path != tt.path || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v (line %d, path %q); want line %d, path %q, saying %q", err, e.Line, e.Path, tt.line, tt.path, tt.want)
			}
			if strings.Contains(err.Error(), "fileConfig") || strings.Contains(err.Error(), "not found in type") {
				t.Errorf("Parse = %v, in Go's words", err)
			}
		})
	}
}
