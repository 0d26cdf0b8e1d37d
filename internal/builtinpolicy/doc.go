// Package builtinpolicy is tollgate's built-in policy as Go: the flows of
// internal/policyfile's default_policy.yaml, written out by a generator, so
// that a test that wants the built-in policy and nothing else links
// authguard alone, not even the YAML library. The YAML stays the one source
// of truth: gen writes flows.go from policyfile.DefaultPolicy (go
// generate), and internal/config's TestBuiltinPolicy_IsTheEmbeddedYAML
// fails when the policy it builds is not DefaultPolicy.
package builtinpolicy

//go:generate go run ./gen

import "github.com/tollgate-auth/tollgate/authguard"

// Policy returns the built-in policy, equal to config.DefaultPolicy(): a new
// one on each call, which the caller may hand to one engine.
func Policy() *authguard.Policy {
	p, err := authguard.NewPolicy(flows()...)
	if err != nil {
		panic("builtinpolicy: the generated flows are invalid: " + err.Error())
	}
	return p
}
