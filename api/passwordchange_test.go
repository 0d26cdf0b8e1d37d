package api_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// The owner, held back by someone's guesses, resets her password and the
// caller reports password_changed: the spec takes the report, the answer
// is proceed without a device token, and her next check goes ahead.
func TestReport_PasswordChangedClearsTheAccount(t *testing.T) {
	h := newHarness(t)
	const victim = "victim@example.com"
	for range 12 {
		h.report(t, testkit.With(login(victim, "198.51.100.7"), "outcome", "failure"))
	}
	owner := login(victim, "203.0.113.9")
	if v := h.check(t, owner); v.Action != "delay" {
		t.Fatalf("before the change: %s, want delay", v.Action)
	}
	v := h.report(t, testkit.With(owner, "outcome", "password_changed"))
	if v.Action != "proceed" || v.DeviceToken != "" {
		t.Errorf("password_changed answered %s with a token %t, want proceed and none", v.Action, v.DeviceToken != "")
	}
	if v := h.check(t, owner); v.Action != "proceed" {
		t.Errorf("after the change: %s %v, want proceed", v.Action, v.Reasons)
	}
}

// A password_changed report that carries an attempt token, or names the
// step-up flow, is the caller's bug: a 400 problem that repeats neither
// the account nor the token, and no counter changes.
func TestReport_PasswordChangedMisusedIsAProblemAndChangesNothing(t *testing.T) {
	h := newHarness(t)
	const victim, ip = "victim@example.com", "203.0.113.9"
	for range 8 {
		h.report(t, testkit.With(login(victim, ip), "outcome", "failure"))
	}
	token := h.check(t, login("other@example.com", ip)).Attempt
	before := h.explainBody(t, victim, ip)
	for _, tt := range []struct {
		name, field string
		body        map[string]any
	}{
		{"with an attempt token", "attempt", testkit.With(login(victim, ip), "outcome", "password_changed", "attempt", token)},
		{"on the step-up flow", "outcome", map[string]any{"flow": "step_up", "account": victim, "ip": ip, "outcome": "password_changed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := h.post(t, "/v1/report", tt.body)
			if res.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if p := res.json(t); p["field"] != tt.field {
				t.Errorf("problem %v, want one on %s", p, tt.field)
			}
			if bytes.Contains(res.body, []byte(victim)) || (token != "" && bytes.Contains(res.body, []byte(token))) {
				t.Errorf("the problem repeats the account or the token: %s", res.body)
			}
		})
	}
	if after := h.explainBody(t, victim, ip); after != before {
		t.Errorf("a refused password_changed changed the state:\n%s\n%s", before, after)
	}
}
