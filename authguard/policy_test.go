package authguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

func TestDefaultPolicy(t *testing.T) {
	p := authguard.DefaultPolicy()
	if got, want := strings.Join(p.FlowNames(), ","), "login,otp_verify"; got != want {
		t.Errorf("flows %q, want %q", got, want)
	}
	l := p.Flow("login")
	if l.Mode != authguard.Enforce || l.FailMode != authguard.FailOpen || l.AccountBackoff.Free != 5 || l.AccountBackoff.Max != 30*time.Minute {
		t.Errorf("login: %+v", l)
	}
	if o := p.Flow("otp_verify"); o.FailMode != authguard.FailClosed || o.PasswordSpray != nil {
		t.Errorf("otp_verify: fail mode %v, password spray %v", o.FailMode, o.PasswordSpray)
	}
}

func TestLoadPolicy_OverlaysDefaults(t *testing.T) {
	p, err := authguard.LoadPolicy([]byte(`
flows:
  login:
    account_backoff: {max: 1h, forget_after: 48h}
    ip_spray: []
  signup:
    mode: shadow
    ip_rate: {rate: "off"}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := p.Flow("login")
	if l.AccountBackoff.Max != time.Hour || l.AccountBackoff.Free != 5 || l.AccountBackoff.ForgetAfter != 48*time.Hour {
		t.Errorf("login backoff %+v: want max 1h, free 5 kept", l.AccountBackoff)
	}
	if l.IPSpray != nil || l.IPFailures == nil {
		t.Errorf("ip_spray %v (want off), ip_failures %v (want kept)", l.IPSpray, l.IPFailures)
	}
	s := p.Flow("signup")
	if s == nil || s.Mode != authguard.Shadow || s.IPRate != nil || s.AccountBackoff.Free != 5 {
		t.Errorf("signup (laid over login): %+v", s)
	}
	if p.Flow("otp_verify") == nil {
		t.Error("otp_verify dropped")
	}
}

func TestLoadPolicy_ErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "flows:\n  login:\n    acount_backoff: {}\n", "line 3"},
		{"bad duration", "flows:\n  login:\n    account_backoff:\n      max: 30 minutes\n", "line 4"},
		{"bad rate", "flows:\n  login:\n    ip_rate: {rate: 10/x}\n", "line 3"},
		{"bad mode", "flows:\n  login:\n    mode: loud\n", "line 3"},
		{"forget shorter than max", "flows:\n  login:\n    account_backoff: {forget_after: 1m}\n", "forget_after"},
		{"bad flow name", "flows:\n  Log-In:\n    mode: enforce\n", "flow name"},
		{"limit zero", "flows:\n  login:\n    ip_spray: [{window: 1h, limit: 0}]\n", "ip_spray"},
		{"bad allow list", "flows:\n  login:\n    allow_list: [not-an-ip]\n", "allow_list"},
		{"wrong type", "flows:\n  login:\n    ipv6_prefix: sixty\n", "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := authguard.LoadPolicy([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadPolicy: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90d", 90 * 24 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"500ms", 500 * time.Millisecond, true},
		{"-1s", 0, false},
		{"d", 0, false},
		{"1w", 0, false},
	}
	for _, tt := range tests {
		got, err := authguard.ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in       string
		interval time.Duration
		ok       bool
	}{
		{"10/s", 100 * time.Millisecond, true},
		{"1/m", time.Minute, true},
		{"60/h", time.Minute, true},
		{"0/s", 0, false},
		{"x/s", 0, false},
		{"10/d", 0, false},
		{"10", 0, false},
	}
	for _, tt := range tests {
		r, err := authguard.ParseRate(tt.in)
		if (err == nil) != tt.ok || (tt.ok && r.Interval() != tt.interval) {
			t.Errorf("ParseRate(%q) = %v, %v; want interval %v ok=%v", tt.in, r, err, tt.interval, tt.ok)
		}
	}
}

// FuzzLoadPolicy: any file either is refused with an error or gives a policy
// whose every flow is usable: its worst case is computed in bounded time,
// and its trust group and device limits are set.
func FuzzLoadPolicy(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("flows:\n  login:\n    mode: shadow\n"))
	f.Add([]byte("flows:\n  otp_verify:\n    device_trust: login\n    device_free: 1\n    device_slots: 20\n"))
	f.Add([]byte("flows:\n  signup:\n    ipv6_prefix: 56\n    ipv6_aggregates: [{prefix: 48, ip_spray: [{window: 1h, limit: 3}]}]\n"))
	f.Add([]byte("flows:\n  login:\n    account_backoff: {free: 1, base: 1ms, factor: 1, max: 1ms, forget_after: 2ms}\n"))
	f.Add([]byte("flows:\n  login:\n    device_backoff: {free: 1, base: 216s, factor: 1, max: 216s, forget_after: 217s}\n"))
	f.Add([]byte("flows: {login: {ipv6_aggregates: [{prefix: 64}]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := authguard.LoadPolicy(data)
		if err != nil {
			return
		}
		for _, name := range p.FlowNames() {
			fl := p.Flow(name)
			if fl.DeviceTrust == "" || fl.DeviceFree < 1 || fl.DeviceSlots < 1 {
				t.Fatalf("flow %s: trust %q, device_free %d, device_slots %d", name, fl.DeviceTrust, fl.DeviceFree, fl.DeviceSlots)
			}
			for _, a := range fl.Aggregates {
				if a.Bits < 16 || len(a.IPSpray) == 0 {
					t.Fatalf("flow %s: aggregate %+v", name, a)
				}
			}
			if n := fl.MaxFailuresPerDay(); n < fl.AccountBackoff.Free {
				t.Fatalf("flow %s: worst case %d is below the account's free %d", name, n, fl.AccountBackoff.Free)
			}
		}
	})
}
