package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

const secret32 = "0123456789abcdef0123456789abcdef"

func TestValidateConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o600)
		return p
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"good file", []string{write("good.yaml", "flows:\n  login:\n    mode: shadow\n")}, 0, "ok\n" +
			"login: at most 90 failed checks per account in any 24h (account_backoff 62; device_backoff 13 shared + 3 devices x 5 of their own)\n" +
			"magic_link: no bound per account (no backoff rule counts the account); at most 162 failed checks per address in any 24h (ip_backoff 162)\n" +
			"otp_send: sends one-time codes to every country; denies premium_rate, shared_cost, unknown numbers; destination prefixes leave out 3 digits; 3 owner codes a day to a verified destination\n" +
			"otp_verify: at most 81 failed checks per account in any 24h (account_backoff 59; device_backoff 13 shared + 3 devices x 3 of their own)\n" +
			"passkey: at most 85 failed checks per account in any 24h (account_backoff 85)\n" +
			"recovery_code: at most 14 failed checks per account in any 24h (account_backoff 14)\n" +
			"step_up: at most 59 failed checks per account in any 24h (account_backoff 59)\n" +
			"totp: at most 59 failed checks per account in any 24h (account_backoff 59)\n", ""},
		{"a policy above NIST's 100", []string{write("lax.yaml", "flows:\n  login:\n    rules:\n      - {name: account_backoff, max: 10m}\n")}, 0, "ok\n" +
			"login: at most 185 failed checks per account in any 24h (account_backoff 157; device_backoff 13 shared + 3 devices x 5 of their own); above NIST SP 800-63B's 100\n" +
			"magic_link: no bound per account (no backoff rule counts the account); at most 162 failed checks per address in any 24h (ip_backoff 162)\n" +
			"otp_send: sends one-time codes to every country; denies premium_rate, shared_cost, unknown numbers; destination prefixes leave out 3 digits; 3 owner codes a day to a verified destination\n" +
			"otp_verify: at most 81 failed checks per account in any 24h (account_backoff 59; device_backoff 13 shared + 3 devices x 3 of their own)\n" +
			"passkey: at most 85 failed checks per account in any 24h (account_backoff 85)\n" +
			"recovery_code: at most 14 failed checks per account in any 24h (account_backoff 14)\n" +
			"step_up: at most 59 failed checks per account in any 24h (account_backoff 59)\n" +
			"totp: at most 59 failed checks per account in any 24h (account_backoff 59)\n", ""},
		{"bad file", []string{write("bad.yaml", "flows:\n  login:\n    mode: sometimes\n")}, 1, "", "bad.yaml: policy: line 3"},
		{"public listen address", []string{write("public.yaml", "listen: 0.0.0.0:8080\n")}, 1, "", "caller authentication"},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, 1, "", "no such file"},
		{"no file: the built-in policy", nil, 0, "ok\n" +
			"login: at most 90 failed checks per account in any 24h (account_backoff 62; device_backoff 13 shared + 3 devices x 5 of their own)\n" +
			"magic_link: no bound per account (no backoff rule counts the account); at most 162 failed checks per address in any 24h (ip_backoff 162)\n" +
			"otp_send: sends one-time codes to every country; denies premium_rate, shared_cost, unknown numbers; destination prefixes leave out 3 digits; 3 owner codes a day to a verified destination\n" +
			"otp_verify: at most 81 failed checks per account in any 24h (account_backoff 59; device_backoff 13 shared + 3 devices x 3 of their own)\n" +
			"passkey: at most 85 failed checks per account in any 24h (account_backoff 85)\n" +
			"recovery_code: at most 14 failed checks per account in any 24h (account_backoff 14)\n" +
			"step_up: at most 59 failed checks per account in any 24h (account_backoff 59)\n" +
			"totp: at most 59 failed checks per account in any 24h (account_backoff 59)\n", ""},
		{"two files", []string{write("a.yaml", ""), write("b.yaml", "")}, 2, "", "usage"},
		{"-print and -json", []string{"-print", "-json"}, 2, "", "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"validate-config"}, tt.args...), &out, &errOut, testkit.Env())
			if code != tt.wantCode || out.String() != tt.wantOut || !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("code %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errOut.String(), tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}

func TestServe_RefusesBadStart(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"public address", nil, []string{"TOLLGATE_LISTEN", "0.0.0.0:0"}, "caller authentication"},
		{"bad config file", []string{"-config", "/nonexistent/tollgate.yaml"}, nil, "bad configuration"},
		{"bad config from the environment", nil, []string{"TOLLGATE_CONFIG", "/nonexistent/tollgate.yaml"}, "bad configuration"},
		{"unknown command", []string{"frobnicate"}, nil, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errOut, testkit.Env(tt.env...))
			if code == 0 || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("code %d, stderr %q; want failure saying %q", code, errOut.String(), tt.want)
			}
		})
	}
}

// TestExampleConfig: the example file shipped next to the command is valid
// and says what the defaults are.
func TestExampleConfig(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"validate-config", "tollgate.example.yaml"}, &out, &errOut, testkit.Env()); code != 0 {
		t.Fatalf("validate-config: %d %s", code, errOut.String())
	}
	cfg, err := config.Load("tollgate.example.yaml", testkit.Env())
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	if cfg.Listen != def.Listen || cfg.LogLevel != def.LogLevel || cfg.Timeouts != def.Timeouts {
		t.Errorf("the example's values differ from the defaults: %+v", cfg)
	}
}

func TestServe_RedisNeedsASecret(t *testing.T) {
	cfg := config.Default()
	cfg.Policy = config.DefaultPolicy()
	cfg.Redis = &config.RedisConfig{URL: "redis://127.0.0.1:1"}
	err := serve(context.Background(), cfg, io.Discard, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "TOLLGATE_SECRET") {
		t.Errorf("serve on Redis without a secret: %v", err)
	}
}

// TestValidateConfig_Print: -print shows every flow's effective policy,
// the file's changes included, one line per rule in walking order.
func TestValidateConfig_Print(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(path, []byte(`flows:
  login:
    rules:
      - {name: ip_rate, off: true}
  api:
    rules:
      - {name: per_ip, subject: ip, algorithm: leaky_bucket, limit: 10, rate: 5/s, counts: proceed, cost: 2}
`), 0o600)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"validate-config", "-print", path}, &out, &errOut, testkit.Env()); code != 0 {
		t.Fatalf("validate-config -print: %d %s", code, errOut.String())
	}
	got := strings.Join(strings.Fields(out.String()), " ") // the columns' widths aside
	for _, want := range []string{
		"flow api: enforce, fails open, IPv6 per /64, 0 allow-listed ranges, device tokens of \"api\", requires ip ",
		"api: no bound on failed checks per account",
		" per_ip per_ip ip leaky_bucket proceed delay unknown per_ip queue of 10, 1 leaves per 200ms; a call costs 2 ",
		" account_backoff acct account backoff failure delay unknown account_backoff 5 free, then 1s x2 up to 30m; forgets after 24h ",
		"flow otp_verify: enforce, fails closed (delay 2s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, " ip_rate iprate ip token_bucket ") != 1 { // otp_verify keeps its own
		t.Errorf("login's ip_rate was switched off yet printed:\n%s", got)
	}
}
