package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"go.yaml.in/yaml/v3"
)

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	l := p.Flow("login")
	if l == nil || l.Mode != authguard.Enforce || l.FailMode != authguard.FailOpen {
		t.Fatalf("login = %+v", l)
	}
	if b := l.Rule("account_backoff"); b == nil || b.Backoff.Free != 5 || b.Backoff.Max != 30*time.Minute {
		t.Errorf("login account_backoff = %+v", b)
	}
	if o := p.Flow("otp_verify"); o.FailMode != authguard.FailClosed || o.Rule("password_spray") != nil {
		t.Errorf("otp_verify: fail mode %v, password_spray %+v", o.FailMode, o.Rule("password_spray"))
	}
	if got := strings.Join(l.Requires(), ","); got != "account,ip" {
		t.Errorf("login requires %s", got)
	}
}

func TestLoadPolicy_RulesOverlayByName(t *testing.T) {
	p, err := LoadPolicy([]byte(`
flows:
  login:
    rules:
      - {name: account_backoff, max: 1h, forget_after: 48h}
      - {name: ip_spray, off: true}
      - name: ip_fixed
        subject: ip
        algorithm: fixed_window
        window: 1m
        limit: 30
  signup:
    template: login
    mode: shadow
  api:
    rules:
      - {name: per_ip, subject: ip, algorithm: sliding_log, window: 1m, limit: 100, past: delay}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := p.Flow("login")
	if b := l.Rule("account_backoff").Backoff; b.Max != time.Hour || b.Free != 5 || b.ForgetAfter != 48*time.Hour {
		t.Errorf("login backoff %+v: want max 1h, forget 48h, free 5 kept", b)
	}
	if l.Rule("ip_spray") != nil || l.Rule("ip_failures") == nil {
		t.Errorf("ip_spray %+v (want off), ip_failures %+v (want kept)", l.Rule("ip_spray"), l.Rule("ip_failures"))
	}
	if last := l.Rules[len(l.Rules)-1]; last.Name != "ip_fixed" || last.Counts != authguard.OnCheck || last.Past != authguard.PastDelay || last.Reason != "ip_fixed" {
		t.Errorf("the new rule is not last with its defaults: %+v", last)
	}
	if s := p.Flow("signup"); s == nil || s.Mode != authguard.Shadow || len(s.Rules) != len(DefaultPolicy().Flow("login").Rules) {
		t.Errorf("signup from the login template: %+v", s)
	}
	a := p.Flow("api")
	if a == nil || len(a.Rules) != 1 || strings.Join(a.Requires(), ",") != "ip" {
		t.Fatalf("api flow = %+v, requires %v; want one rule, requiring only ip", a, a.Requires())
	}
	if m, ok := a.MaxFailuresPerDay(); ok {
		t.Errorf("api flow: no backoff on the account, yet a bound of %d", m)
	}
}

// A new flow never silently starts from login: without a template it has
// no rules at all.
func TestLoadPolicy_NewFlowStartsEmpty(t *testing.T) {
	p, err := LoadPolicy([]byte("flows:\n  signup:\n    kind: attempts\n    mode: shadow\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f := p.Flow("signup"); len(f.Rules) != 0 || f.FailMode != authguard.FailOpen || f.AttemptTTL != 10*time.Minute {
		t.Errorf("signup = %+v, want no rules and the flow defaults", f)
	}
}

// Every mistake names its line and, where there is a choice, what is valid.
func TestLoadPolicy_ErrorsExplainTheRule(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown flow key", "flows:\n  login:\n    acount_backoff: {}\n", []string{"line 3", "valid: template, kind, mode"}},
		{"unknown rule key", "flows:\n  login:\n    rules:\n      - {name: ip_rate, burst: 5}\n", []string{"line 4", `unknown field "burst"`, "limit"}},
		{"unknown window key", "flows:\n  login:\n    rules:\n      - {name: ip_spray, windows: [{window: 1h, max: 3}]}\n", []string{"line 4", `"max"`, "valid: window, limit"}},
		{"bad duration", "flows:\n  login:\n    rules:\n      - name: account_backoff\n        max: 30 minutes\n", []string{"line 5"}},
		{"bad rate", "flows:\n  login:\n    rules:\n      - {name: ip_rate, rate: 10/x}\n", []string{"line 4", "N/s"}},
		{"rate not whole ms", "flows:\n  login:\n    rules:\n      - {name: ip_rate, rate: 3/s}\n", []string{"line 4", "whole number of milliseconds"}},
		{"bad mode", "flows:\n  login:\n    mode: loud\n", []string{"line 3", "mode must be one of enforce, shadow"}},
		{"forget shorter than max", "flows:\n  login:\n    rules:\n      - {name: account_backoff, forget_after: 1m}\n", []string{"line 4", "forget_after"}},
		{"bad flow name", "flows:\n  Log-In:\n    mode: enforce\n", []string{"flow name"}},
		{"limit zero", "flows:\n  login:\n    rules:\n      - {name: ip_spray, windows: [{window: 1h, limit: 0}]}\n", []string{"line 4", "ip_spray"}},
		{"bad allow list", "flows:\n  login:\n    allow_list: [not-an-ip]\n", []string{"line 3", "allow_list"}},
		{"wrong type", "flows:\n  login:\n    ipv6_prefix: sixty\n", []string{"line 3"}},
		{"unknown algorithm", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: gcra, limit: 5, rate: 1/s}\n", []string{"line 4", "token_bucket, leaky_bucket"}},
		{"unknown subject", "flows:\n  api:\n    rules:\n      - {name: r, subject: email, algorithm: fixed_window, window: 1m, limit: 5}\n", []string{"line 4", "account, device, ip"}},
		{"rate counting failures", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, counts: failure, window: 1m, limit: 5}\n", []string{"line 4", "use sliding_log"}},
		{"window for a bucket", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: token_bucket, window: 1m, limit: 5}\n", []string{"line 4", "takes limit and rate"}},
		{"windows for a fixed window", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, windows: [{window: 1m, limit: 5}]}\n", []string{"line 4", "not windows"}},
		{"cost above limit", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, limit: 5, cost: 6}\n", []string{"line 4", "cost must be between 1 and limit"}},
		{"deny outside send flows", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, limit: 5, past: deny}\n", []string{"line 4", "send flows"}},
		{"distinct without of", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, windows: [{window: 1h, limit: 5}]}\n", []string{"line 4", "of: account, ip or destination"}},
		{"distinct delaying", "flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account, past: delay, windows: [{window: 1h, limit: 5}]}\n", []string{"line 4", "past must be captcha"}},
		{"backoff on checks", "flows:\n  api:\n    rules:\n      - {name: r, subject: account, algorithm: backoff, counts: check, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n", []string{"line 4", "counts must be failure"}},
		{"reason taken", "flows:\n  api:\n    rules:\n      - {name: r, reason: unavailable, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n", []string{"line 4", "reason"}},
		{"bad reason", "flows:\n  api:\n    rules:\n      - {name: r, reason: Too-Many, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n", []string{"line 4", "lower-case"}},
		{"two device rules", "flows:\n  login:\n    rules:\n      - {name: d2, subject: device, algorithm: backoff, device_free: 1, device_slots: 1, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n", []string{"line 4", "at most one rule on the device subject"}},
		{"rule without a name", "flows:\n  login:\n    rules:\n      - {subject: ip}\n", []string{"line 4", "needs a name"}},
		{"switching off nothing", "flows:\n  api:\n    rules:\n      - {name: ip_rate, off: true}\n", []string{"line 4", "no rule of that name"}},
		{"unknown template", "flows:\n  api:\n    template: signup\n", []string{"line 3", "login, magic_link, otp_send, otp_verify, passkey, recovery_code, step_up, totp or none"}},
		{"wider prefix not wider", "flows:\n  api:\n    ipv6_prefix: 48\n    rules:\n      - {name: r, subject: ip/56, algorithm: fixed_window, window: 1m, limit: 5}\n", []string{"line 5", "shorter than the flow's ipv6_prefix"}},
		{"two rules share a key", "flows:\n  api:\n    rules:\n      - {name: a, key: k, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n      - {name: b, key: k, subject: account, algorithm: fixed_window, window: 1m, limit: 5}\n", []string{"line 5", `already stores under key "k"`}},
		{"two rules of one name", "flows:\n  api:\n    rules:\n" + strings.Repeat("      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n", 2), []string{"line 5", "already has a rule of that name"}},
		{"a flow with too many rules", "flows:\n  api:\n    rules:\n" + manyRules(33), []string{"at most 32 rules"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadPolicy([]byte(tt.yaml))
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("LoadPolicy: %v, want an error mentioning %q", err, w)
				}
			}
		})
	}
}

func manyRules(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "      - {name: r%d, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n", i)
	}
	return b.String()
}

func TestAddFlows(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("api:\n  rules:\n    - {name: r, subject: ip, algorithm: token_bucket, limit: 5, rate: 1/s}\n"), &n); err != nil {
		t.Fatal(err)
	}
	p, err := AddFlows(DefaultPolicy(), n.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.FlowNames(), ","); got != "api,login,magic_link,otp_send,otp_verify,passkey,recovery_code,step_up,totp" {
		t.Errorf("flows %s", got)
	}
	if err := yaml.Unmarshal([]byte("login:\n  mode: shadow\n"), &n); err != nil {
		t.Fatal(err)
	}
	if _, err := AddFlows(DefaultPolicy(), n.Content[0]); err == nil || !strings.Contains(err.Error(), "already has this flow") {
		t.Errorf("AddFlows changing login: %v", err)
	}
}

// FuzzLoadPolicy: any file either is refused with an error or gives a policy
// whose every flow is usable; nothing panics.
func FuzzLoadPolicy(f *testing.F) {
	f.Add([]byte("flows:\n  login:\n    mode: shadow\n"))
	f.Add([]byte("flows:\n  otp_verify:\n    device_trust: login\n    rules:\n      - {name: device_backoff, device_free: 1, device_slots: 20}\n"))
	f.Add([]byte("flows:\n  signup:\n    template: login\n    ipv6_prefix: 56\n    rules:\n      - {name: ip_spray_48, windows: [{window: 1h, limit: 3}]}\n"))
	f.Add([]byte("flows:\n  login:\n    rules:\n      - {name: account_backoff, free: 1, base: 1ms, factor: 1, max: 1ms, forget_after: 2ms}\n"))
	f.Add([]byte("flows: {api: {rules: [{name: r, subject: account+ip, algorithm: leaky_bucket, limit: 3, rate: 2/s, cost: 2, counts: proceed}]}}"))
	f.Add([]byte("flows: {api: {rules: [{name: r, subject: tenant, algorithm: sliding_counter, window: 1h, limit: 1000000, past: captcha}]}}"))
	f.Add([]byte("flows: {api: {rules: [{name: r, subject: account, algorithm: distinct, of: ip, windows: [{window: 1h, limit: 3}]}]}}"))
	f.Add([]byte("flows:\n  otp_send:\n    deny_number_types: [voip]\n    allow_countries: [GB, \"+33\"]\n    prices: {sms: {default: 2, GB: 5}}\n    rules:\n      - {name: spend_budget, limit: 7}\n"))
	f.Add([]byte("flows: {sms: {kind: send, destination_prefix_digits: 4, rules: [{name: r, subject: destination_prefix+ip, algorithm: distinct, of: destination, windows: [{window: 1h, limit: 2}], past: deny}]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadPolicy(data)
		if err != nil {
			return
		}
		for _, name := range p.FlowNames() {
			fl := p.Flow(name)
			if fl.DeviceTrust == "" || len(fl.Reasons()) == 0 {
				t.Fatalf("flow %s: trust %q, reasons %v", name, fl.DeviceTrust, fl.Reasons())
			}
			for _, r := range fl.Rules {
				if r.Reason == "" || r.Counts == 0 || r.Past == 0 || r.Clients == 0 || r.Cost < 1 {
					t.Fatalf("flow %s rule %s without its defaults: %+v", name, r.Name, r)
				}
			}
			if n, ok := fl.MaxFailuresPerDay(); ok && n < 1 {
				t.Fatalf("flow %s: worst case %d", name, n)
			}
		}
		// Every flow of a valid policy answers calls: no panic, and a
		// proceed carries an attempt token that its report accepts.
		clock := testclock.New(time.Time{})
		e, err := authguard.New(authguard.Config{Policy: p, Store: memstore.New(memstore.Config{Now: clock.Now}), Secret: []byte("fuzz-secret-fuzz-secret-fuzz-secret!"), Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, name := range p.FlowNames() {
			if p.Flow(name).Kind == authguard.Sends {
				for i, dest := range []string{"+44 7400 123456", "ann@example.com"} {
					ch := []string{"sms", "email"}[i]
					if _, err := e.Send(ctx, authguard.SendRequest{Flow: name, Destination: dest, Channel: ch, Account: "ann", IP: "2001:db8::1"}); err != nil {
						t.Fatalf("flow %s: send: %v", name, err)
					}
				}
				continue
			}
			if p.Flow(name).SecondFactor {
				// A step-up flow's check counts nothing and carries no
				// token; its report takes a ticket only.
				if _, err := e.Check(ctx, authguard.CheckRequest{Flow: name, Account: "ann", IP: "2001:db8::1"}); err != nil {
					t.Fatalf("flow %s: check: %v", name, err)
				}
				if _, err := e.Report(ctx, authguard.ReportRequest{Flow: name, Account: "ann", IP: "2001:db8::1", Outcome: authguard.StepUpFailed}); !errors.Is(err, authguard.ErrInvalidInput) {
					t.Fatalf("flow %s: a step_up_failed without a ticket: %v, want an *InputError", name, err)
				}
				continue
			}
			for i := range 4 {
				req := authguard.CheckRequest{Flow: name, Account: "ann", IP: "2001:db8::1", PasswordFingerprint: "pw", CaptchaSolved: i == 3}
				v, err := e.Check(ctx, req)
				if err != nil {
					t.Fatalf("flow %s: check: %v", name, err)
				}
				if v.Action == authguard.Proceed && v.Attempt == "" {
					t.Fatalf("flow %s: a proceed without an attempt token", name)
				}
				if _, err := e.Report(ctx, authguard.ReportRequest{Flow: name, Account: "ann", IP: "2001:db8::1", Outcome: authguard.Outcome(1 + i%2), Attempt: v.Attempt}); err != nil {
					t.Fatalf("flow %s: report: %v", name, err)
				}
				clock.Advance(time.Second)
			}
		}
	})
}

// The built-in policy's settings are authguard's defaults, the values a
// zero authguard.Flow gets, except where it says otherwise on purpose; and
// a new flow of a file (no template) is a zero Flow.
func TestDefaultPolicy_SettingsAreAuthguardDefaults(t *testing.T) {
	onPurpose := map[string]bool{
		"login.SamePasswordWindow": true, // 24h: a repeated wrong password counts once
		"otp_verify.FailMode":      true, // closed: a code is 6 digits, never guessed unthrottled
		"step_up.FailMode":         true, // closed: as otp_verify's, a second factor's code
		"otp_send.DeviceTrust":     true, // login's tokens
		"totp.FailMode":            true, // closed: a 6-digit code, as otp_verify's
		"recovery_code.FailMode":   true, // closed: a recovery code passes the second factor
	}
	settings := func(f *authguard.Flow) map[string]any {
		return map[string]any{
			"Mode": f.Mode, "FailMode": f.FailMode, "FailClosedRetry": f.FailClosedRetry, "Grouping": f.Grouping.IPv6Bits,
			"AllowList": fmt.Sprint(f.AllowList), "DeviceTrust": f.DeviceTrust, "SamePasswordWindow": f.SamePasswordWindow,
			"AttemptTTL": f.AttemptTTL, "DeviceTokenTTL": f.DeviceTokenTTL, "Send.PrefixDigits": f.Send.PrefixDigits,
		}
	}
	zeroOf := func(name string, kind authguard.Kind) map[string]any {
		z := &authguard.Flow{Name: name, Kind: kind}
		if _, err := authguard.NewPolicy(z); err != nil {
			t.Fatal(err)
		}
		s := settings(z)
		s["Grouping"] = 64 // spraydetect's zero is the /64
		return s
	}
	p := DefaultPolicy()
	for _, name := range p.FlowNames() {
		f := p.Flow(name)
		want := zeroOf(name, f.Kind)
		for k, v := range settings(f) {
			if v != want[k] && !onPurpose[name+"."+k] {
				t.Errorf("built-in %s: %s is %v, authguard's default %v", name, k, v, want[k])
			}
			if v == want[k] && onPurpose[name+"."+k] {
				t.Errorf("built-in %s: %s is the default %v, listed as on purpose", name, k, v)
			}
		}
	}
	np, err := LoadPolicy([]byte("flows:\n  api:\n    kind: attempts\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := np.Flow("api")
	got, want := settings(f), zeroOf("api", authguard.Attempts)
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("a new flow of a file: %s is %v, a zero Flow's %v", k, got[k], want[k])
		}
	}
}

// Errors are *Error with the line, and unwrap to authguard's error naming
// the Go field.
func TestLoadPolicy_ErrorsAreTyped(t *testing.T) {
	_, err := LoadPolicy([]byte("flows:\n  login:\n    mode: shadow\n    attempt_ttl: 48h\n"))
	var e *Error
	var fe *authguard.FieldError
	if !errors.As(err, &e) || e.Line != 4 || e.Path != "flows.login" || !errors.As(err, &fe) || fe.Field != "AttemptTTL" {
		t.Fatalf("%v: want an *Error at line 4 of flows.login, of authguard's field AttemptTTL", err)
	}
	_, err = LoadPolicy([]byte("flows:\n  login:\n    rules:\n      - {name: ip_rate, limit: 0}\n"))
	if !errors.As(err, &e) || e.Line != 4 || e.Path != "flows.login.rules[ip_rate]" || !errors.As(err, &fe) || fe.Rule != "ip_rate" || fe.Field != "Rate" {
		t.Fatalf("%v: want an *Error at line 4 of the rule, of its field Rate", err)
	}
	// A price's mistake is at its own line, not its flow's.
	_, err = LoadPolicy([]byte("flows:\n  otp_send:\n    prices:\n      sms:\n        default: 1\n        GB: -1\n"))
	if !errors.As(err, &e) || e.Line != 6 {
		t.Errorf("%v: want line 6", err)
	}
	// A decode error says its line first, as every other does.
	_, err = LoadPolicy([]byte("flows:\n  login:\n    ipv6_prefix: sixty\n"))
	if want := "policy: line 3: flows.login: cannot unmarshal !!str `sixty` into int"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// A file laid over a built-in flow changes that load only: with
// known_networks as a pointer, a file that turned them off turned them off
// in every policy loaded after it (the built-in flow shared the pointer).
func TestLoadPolicy_AFileLeavesTheBuiltInPolicyAsItWas(t *testing.T) {
	off, err := LoadPolicy([]byte("flows:\n  login:\n    known_networks: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !off.Flow("login").KnownNetworksOff {
		t.Fatal("known_networks: false left them on")
	}
	for _, name := range DefaultPolicy().FlowNames() {
		if DefaultPolicy().Flow(name).KnownNetworksOff {
			t.Errorf("the built-in %s has known networks off after a file turned them off on login", name)
		}
	}
}
