package config

import (
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// The policy format is internal/policyfile's, which imports authguard and
// YAML only, so that a test that reads a policy file does not link what the
// rest of a config file configures (Redis, the proxy, HTTP, metrics). These
// are its names here, for config's callers and config's own reading of a
// file in the same words.

// DefaultPolicyYAML is the built-in policy, with a comment on every number
// saying why it is what it is.
var DefaultPolicyYAML = policyfile.DefaultPolicyYAML

// Error is a mistake in a config or policy file, at a line of it (see
// policyfile.Error).
type Error = policyfile.Error

// Duration is a time.Duration in YAML: Go's syntax ("90s", "1h30m") plus a
// "d" suffix for days ("90d").
type Duration = policyfile.Duration

// Rate is "N/s", "N/m", "N/h" or "off" in YAML. Per is zero for "off".
type Rate = policyfile.Rate

// DefaultPolicy returns the built-in policy.
func DefaultPolicy() *authguard.Policy { return policyfile.DefaultPolicy() }

// LoadPolicy reads a policy file ({flows: ...}) laid over the built-in
// policy; nil or empty data gives the built-in policy itself. A mistake in
// the file is an *Error, naming its line.
func LoadPolicy(data []byte) (*authguard.Policy, error) { return policyfile.LoadPolicy(data) }

// AddFlows returns base with the flows of a YAML flows mapping added (see
// policyfile.AddFlows): new flows only, each empty or from a template, in
// the format of a config file's flows. Its errors are an *Error at a line
// of n (at least 1).
func AddFlows(base *authguard.Policy, n *yaml.Node) (*authguard.Policy, error) {
	return policyfile.AddFlows(base, n)
}

// ParseDuration parses Go's duration syntax plus whole days ("7d").
func ParseDuration(s string) (time.Duration, error) { return policyfile.ParseDuration(s) }

// ParseRate parses "N/s", "N/m", "N/h" (N a positive whole number) or "off".
func ParseRate(s string) (Rate, error) { return policyfile.ParseRate(s) }

// FormatDuration writes d as a config file would: "90s", "1h30m", "24h",
// whole days past one as "7d"; ParseDuration reads it back.
func FormatDuration(d time.Duration) string { return policyfile.FormatDuration(d) }

// config's own reading of a file, in the policy format's words.
var (
	errorAt        = policyfile.ErrorAt
	said           = policyfile.Said
	saysOf         = policyfile.SaysOf
	decodeError    = policyfile.DecodeError
	syntaxError    = policyfile.SyntaxError
	unknownKey     = policyfile.UnknownKey
	yamlKeysOf     = policyfile.YAMLKeysOf
	closest        = policyfile.Closest
	didYouMean     = policyfile.DidYouMean
	policyFromNode = policyfile.PolicyFromNode
	tenantPolicy   = policyfile.TenantPolicy
)

type lineIndex = policyfile.LineIndex

// yamlKeys lists the yaml tags of a struct's fields.
func yamlKeys(v any) []string { return yamlKeysOf(reflect.TypeOf(v)) }
