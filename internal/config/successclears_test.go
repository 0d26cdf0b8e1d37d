package config

import (
	"strings"
	"testing"
)

// success_clears names attempts flows of the policy other than the flow
// itself, never a step-up flow (a second factor's counters); anything else
// is an error naming the flow (at its line when the flow alone shows it,
// as verifies').
func TestLoadPolicy_SuccessClearsNamesOtherAttemptsFlows(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"itself", "flows:\n  passkey:\n    success_clears: [passkey]\n", []string{"line 3", "success_clears", "itself"}},
		{"a step-up flow", "flows:\n  passkey:\n    success_clears: [step_up]\n", []string{"flows.passkey", "success_clears", `"step_up" is not an attempts flow`}},
		{"a send flow", "flows:\n  passkey:\n    success_clears: [otp_send]\n", []string{"flows.passkey", `"otp_send" is not an attempts flow`}},
		{"no such flow", "flows:\n  passkey:\n    success_clears: [logn]\n", []string{"flows.passkey", `"logn" is not an attempts flow`}},
		{"on a send flow", "flows:\n  otp_send:\n    success_clears: [login]\n", []string{"line 3", "is for an attempts flow"}},
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
	p, err := LoadPolicy([]byte("flows:\n  passkey:\n    success_clears: [login]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Flow("passkey").SuccessClears; len(got) != 1 || got[0] != "login" {
		t.Errorf("passkey's SuccessClears = %v, want [login]", got)
	}
	if got := DefaultPolicy().Flow("passkey").SuccessClears; len(got) != 0 {
		t.Errorf("the built-in passkey clears %v, want nothing (off by default)", got)
	}
}
