package api_test

import (
	"slices"
	"testing"
)

// A flow of one rule on the address takes calls without an account, and its
// own reason code reaches the caller and the metrics; login still answers
// missing-field without one. Every answer is checked against openapi.yaml.
func TestCustomFlow_NeedsOnlyWhatItsRulesCount(t *testing.T) {
	h := newHarness(t, withPolicy(`
flows:
  api:
    rules:
      - {name: per_ip, reason: api_quota, subject: ip, algorithm: fixed_window, window: 1m, limit: 2}
`))
	for i := range 2 {
		if v := h.check(t, map[string]any{"flow": "api", "ip": "192.0.2.1"}); v.Action != "proceed" {
			t.Fatalf("call %d: %+v, want proceed", i, v)
		}
	}
	v := h.check(t, map[string]any{"flow": "api", "ip": "192.0.2.1"})
	if v.Action != "delay" || v.DelayMS != 60_000 || !slices.Equal(v.Reasons, []string{"api_quota"}) {
		t.Errorf("3rd call: %+v, want a 60s delay for api_quota", v)
	}
	res := h.post(t, "/v1/check", map[string]any{"flow": "login", "ip": "192.0.2.1"})
	if p := res.json(t); res.status != 400 || p["type"] != "https://tollgate.dev/problems/missing-field" || p["field"] != "account" {
		t.Errorf("login without an account: %d %v", res.status, p)
	}
}
