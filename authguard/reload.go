package authguard

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// policies are an engine's policies: Config.Policy and
// Config.TenantPolicies, swapped together by SetPolicies.
type policies struct {
	policy  *Policy
	tenants map[string]*Policy
}

// of is the policy of tenant ("" is DefaultTenant).
func (ps *policies) of(tenant string) *Policy {
	if tenant == "" {
		tenant = DefaultTenant
	}
	if p, ok := ps.tenants[tenant]; ok {
		return p
	}
	return ps.policy
}

func checkTenantPolicies(tenants map[string]*Policy) error {
	for name, p := range tenants {
		if !wire.ValidTenant(name) || p == nil {
			return fmt.Errorf("authguard: tenant %q: a tenant's policy needs a tenant name and flows", name)
		}
	}
	return nil
}

// SetPolicies replaces the engine's policy and its tenants' policies
// (Config.Policy and Config.TenantPolicies) while it runs: a policy reload.
// The swap is atomic: a call decides under the policies it started with,
// whole, and the next call under the new ones. State is kept by store key,
// so a rule that keeps its store key (its Key, by default its Name) keeps
// its counters, whatever else about it changes; a rule with a new key
// starts empty and the old key's state expires.
//
// SetPolicies refuses, and changes nothing, when a rule would keep its key
// under another algorithm (the state the old one wrote is not the new
// one's: give the rule a new Key), and when tenantPolicies names a tenant
// the engine does not keep entries for (Config.Tenants: tenants do not
// change while the engine runs).
func (e *Engine) SetPolicies(policy *Policy, tenantPolicies map[string]*Policy) error {
	if policy == nil {
		return errors.New("authguard: a policy is required")
	}
	if err := checkTenantPolicies(tenantPolicies); err != nil {
		return err
	}
	for name := range tenantPolicies {
		if _, ok := slices.BinarySearch(e.tenantList, name); !ok {
			return fmt.Errorf("authguard: tenant %q is new: tenants change only with a restart", name)
		}
	}
	old := e.policies.Load()
	next := &policies{policy: policy, tenants: tenantPolicies}
	for _, tenant := range e.tenantList {
		if err := sameAlgorithms(old.of(tenant), next.of(tenant)); err != nil {
			if tenant != DefaultTenant {
				return fmt.Errorf("tenant %q: %w", tenant, err)
			}
			return err
		}
	}
	e.policies.Store(next)
	return nil
}

// sameAlgorithms returns a *RuleError for the first rule of next that keeps
// a store key of old's under another algorithm.
func sameAlgorithms(old, next *Policy) error {
	for _, name := range next.FlowNames() {
		was := old.Flow(name)
		if was == nil {
			continue
		}
		byKey := make(map[string]*Rule, len(was.Rules))
		for i := range was.Rules {
			byKey[was.Rules[i].Key] = &was.Rules[i]
		}
		f := next.Flow(name)
		for i := range f.Rules {
			r := &f.Rules[i]
			if o, ok := byKey[r.Key]; ok && o.Algorithm != r.Algorithm {
				return &RuleError{Flow: name, Rule: r.Name, Err: fmt.Errorf(
					"its algorithm changes from %v to %v under the same store key %q: the state the old one kept is not the new one's; give the rule a new key (key: %s_v2) so that it starts empty",
					o.Algorithm, r.Algorithm, r.Key, r.Key)}
			}
		}
	}
	return nil
}
