package authguard

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/limits"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// DefaultPolicyYAML is the built-in policy, with a comment on every number
// saying why it is what it is.
//
//go:embed default_policy.yaml
var DefaultPolicyYAML []byte

// Policy is a compiled, validated set of flows.
type Policy struct {
	flows map[string]*Flow
}

// Flow returns the named flow, or nil.
func (p *Policy) Flow(name string) *Flow { return p.flows[name] }

// FlowNames lists the flows, sorted.
func (p *Policy) FlowNames() []string {
	names := make([]string, 0, len(p.flows))
	for n := range p.flows {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Mode says whether a flow's verdicts are enforced.
type Mode uint8

const (
	// Enforce answers the verdicts the policy computes.
	Enforce Mode = iota
	// Shadow computes and records every verdict but answers Proceed, for
	// rolling a policy out and watching what it would do.
	Shadow
)

func (m Mode) String() string { return [...]string{"enforce", "shadow"}[m] }

// FailMode says what a flow answers when the store fails.
type FailMode uint8

const (
	// FailOpen answers from the engine's local fallback store.
	FailOpen FailMode = iota
	// FailClosed answers Delay with reason "unavailable".
	FailClosed
)

func (m FailMode) String() string { return [...]string{"open", "closed"}[m] }

// Flow is the compiled policy of one flow. A nil rule is switched off.
type Flow struct {
	Name            string
	Mode            Mode
	FailMode        FailMode
	FailClosedRetry time.Duration
	Grouping        spraydetect.Grouping
	AllowList       spraydetect.AllowList
	AccountBackoff  backoff.Policy
	// DeviceTrust names the device tokens this flow trusts: those issued by
	// a success in a flow with the same DeviceTrust. By default it is the
	// flow's own name, so a token from a login success is worthless to
	// otp_verify.
	DeviceTrust string
	// DeviceFree is how many failures in any DeviceWindow a known device
	// (a valid device token) makes without waiting, whatever else happens
	// to the account: its owner's allowance.
	DeviceFree int
	// DeviceSlots is how many distinct devices of one account get DeviceFree
	// within a DeviceWindow. It bounds what minting tokens can buy.
	DeviceSlots int
	// DeviceBackoff is the one counter that all known devices of an
	// account share once a device has used its DeviceFree (or no slot is
	// left): a stolen or minted token adds at most DeviceFree attempts.
	DeviceBackoff backoff.Policy
	// Aggregates are limits on distinct failing accounts per wider IPv6
	// prefix (one customer's /56 or /48) on top of the per-client IPSpray.
	Aggregates []Aggregate
	// SamePasswordWindow is how long a counted password fingerprint is
	// remembered per counter.
	SamePasswordWindow time.Duration
	IPRate             *limits.Bucket
	IPSpray            spraydetect.Windows
	IPFailures         spraydetect.Windows
	PasswordSpray      spraydetect.Windows
	AttemptTTL         time.Duration
	DeviceTokenTTL     time.Duration
}

// DeviceWindow is the span over which DeviceFree and DeviceSlots count.
const DeviceWindow = 24 * time.Hour

// Aggregate is a limit on the distinct accounts that failed from one wider
// IPv6 prefix.
type Aggregate struct {
	// Bits is the prefix length, shorter than the flow's IPv6 grouping.
	Bits int
	// IPSpray are the windows, as for Flow.IPSpray.
	IPSpray spraydetect.Windows
}

// MaxFailuresPerDay is the most failed credential checks one account can
// have in this flow in any 24 hours, whatever an attacker does: the account
// counter's worst case, plus the shared device counter's, plus DeviceFree
// for each of DeviceSlots devices (backoff.Policy.MaxFailuresIn).
func (f *Flow) MaxFailuresPerDay() int {
	return f.AccountBackoff.MaxFailuresIn(24*time.Hour) + f.DeviceBackoff.MaxFailuresIn(24*time.Hour) +
		f.DeviceSlots*f.DeviceFree
}

// PolicyFile is the YAML form of a policy. Flows named in a file are laid
// over the built-in flow of the same name (or, for a new flow, over the
// built-in "login"), so a file only needs to say what it changes; lists
// replace lists whole.
type PolicyFile struct {
	Flows map[string]FlowConfig `yaml:"flows"`
}

// FlowConfig is the YAML form of a Flow. default_policy.yaml documents every
// field.
type FlowConfig struct {
	Mode               string            `yaml:"mode"`
	FailMode           string            `yaml:"fail_mode"`
	FailClosedRetry    Duration          `yaml:"fail_closed_retry"`
	IPv6Prefix         int               `yaml:"ipv6_prefix"`
	AllowList          []string          `yaml:"allow_list"`
	AccountBackoff     BackoffConfig     `yaml:"account_backoff"`
	DeviceTrust        string            `yaml:"device_trust"`
	DeviceFree         int               `yaml:"device_free"`
	DeviceSlots        int               `yaml:"device_slots"`
	DeviceBackoff      BackoffConfig     `yaml:"device_backoff"`
	IPv6Aggregates     []AggregateConfig `yaml:"ipv6_aggregates"`
	SamePasswordWindow Duration          `yaml:"same_password_window"`
	IPRate             RateConfig        `yaml:"ip_rate"`
	IPSpray            []WindowConfig    `yaml:"ip_spray"`
	IPFailures         []WindowConfig    `yaml:"ip_failures"`
	PasswordSpray      []WindowConfig    `yaml:"password_spray"`
	AttemptTTL         Duration          `yaml:"attempt_ttl"`
	DeviceTokenTTL     Duration          `yaml:"device_token_ttl"`
}

// AggregateConfig is the YAML form of an Aggregate.
type AggregateConfig struct {
	Prefix  int            `yaml:"prefix"`
	IPSpray []WindowConfig `yaml:"ip_spray"`
}

// BackoffConfig is the YAML form of backoff.Policy.
type BackoffConfig struct {
	Free        int      `yaml:"free"`
	Base        Duration `yaml:"base"`
	Factor      float64  `yaml:"factor"`
	Max         Duration `yaml:"max"`
	ForgetAfter Duration `yaml:"forget_after"`
}

// RateConfig is the YAML form of a token bucket: rate "N/s", "N/m", "N/h" or
// "off", and burst.
type RateConfig struct {
	Rate  Rate `yaml:"rate"`
	Burst int  `yaml:"burst"`
}

// WindowConfig is one window of a log: at most Limit distinct members within
// Window.
type WindowConfig struct {
	Window Duration `yaml:"window"`
	Limit  int      `yaml:"limit"`
}

// Duration is a time.Duration in YAML: Go's syntax ("90s", "1h30m") plus a
// "d" suffix for days ("90d").
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses Go's duration syntax plus whole days ("7d").
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 3650 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q (use 500ms, 30s, 15m, 24h or 7d)", s)
	}
	return d, nil
}

// Rate is "N/s", "N/m", "N/h" or "off" in YAML. Per is zero for "off".
type Rate struct {
	N   int
	Per time.Duration
}

// ParseRate parses "N/s", "N/m", "N/h" (N a positive whole number) or "off".
func ParseRate(s string) (Rate, error) {
	if s == "off" {
		return Rate{}, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	per, known := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[strings.TrimSpace(unit)]
	if !ok || err != nil || n <= 0 || n > 1_000_000 || !known {
		return Rate{}, fmt.Errorf(`invalid rate %q (use N/s, N/m, N/h or "off")`, s)
	}
	return Rate{N: n, Per: per}, nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = v
	return nil
}

// Interval is the time between two events at this rate.
func (r Rate) Interval() time.Duration { return r.Per / time.Duration(r.N) }

func (r Rate) String() string {
	if r.Per == 0 {
		return "off"
	}
	return fmt.Sprintf("%d/%s", r.N, map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per])
}

// DefaultPolicy returns the built-in policy.
func DefaultPolicy() *Policy {
	p, err := LoadPolicy(nil)
	if err != nil {
		panic("authguard: built-in policy is invalid: " + err.Error())
	}
	return p
}

// LoadPolicy reads a policy file laid over the built-in policy; nil or empty
// data gives the built-in policy itself. Errors name the line.
func LoadPolicy(data []byte) (*Policy, error) {
	var defaults PolicyFile
	if err := decodeStrict(DefaultPolicyYAML, &defaults); err != nil {
		return nil, fmt.Errorf("built-in policy: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return compilePolicy(defaults.Flows, nil)
	}
	// Decode once strictly for unknown keys and wrong types, then lay each
	// flow over its default.
	if err := decodeStrict(data, &PolicyFile{}); err != nil {
		return nil, err
	}
	var nodes struct {
		Flows map[string]yaml.Node `yaml:"flows"`
	}
	if err := yaml.Unmarshal(data, &nodes); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	lines := map[string]int{}
	for name, node := range nodes.Flows {
		base, ok := defaults.Flows[name]
		if !ok {
			base = defaults.Flows["login"]
		}
		if err := node.Decode(&base); err != nil {
			return nil, fmt.Errorf("policy: flows.%s: %w", name, err)
		}
		defaults.Flows[name] = base
		lines[name] = node.Line
	}
	return compilePolicy(defaults.Flows, lines)
}

func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

func compilePolicy(flows map[string]FlowConfig, lines map[string]int) (*Policy, error) {
	p := &Policy{flows: map[string]*Flow{}}
	for name, fc := range flows {
		f, err := fc.compile(name)
		if err != nil {
			if line := lines[name]; line > 0 {
				return nil, fmt.Errorf("policy: line %d: flows.%s: %w", line, name, err)
			}
			return nil, fmt.Errorf("policy: flows.%s: %w", name, err)
		}
		p.flows[name] = f
	}
	if len(p.flows) == 0 {
		return nil, errors.New("policy: no flows")
	}
	return p, nil
}

func (fc FlowConfig) compile(name string) (*Flow, error) {
	if !nameRE.MatchString(name) {
		return nil, errors.New("a flow name is 1 to 32 lower-case letters, digits and underscores, starting with a letter")
	}
	f := &Flow{
		Name:               name,
		FailClosedRetry:    time.Duration(fc.FailClosedRetry),
		Grouping:           spraydetect.Grouping{IPv6Bits: fc.IPv6Prefix},
		AccountBackoff:     fc.AccountBackoff.policy(),
		DeviceBackoff:      fc.DeviceBackoff.policy(),
		DeviceTrust:        fc.DeviceTrust,
		DeviceFree:         fc.DeviceFree,
		DeviceSlots:        fc.DeviceSlots,
		SamePasswordWindow: time.Duration(fc.SamePasswordWindow),
		AttemptTTL:         time.Duration(fc.AttemptTTL),
		DeviceTokenTTL:     time.Duration(fc.DeviceTokenTTL),
	}
	switch fc.Mode {
	case "enforce":
		f.Mode = Enforce
	case "shadow":
		f.Mode = Shadow
	default:
		return nil, fmt.Errorf(`mode must be "enforce" or "shadow", not %q`, fc.Mode)
	}
	switch fc.FailMode {
	case "open":
		f.FailMode = FailOpen
	case "closed":
		f.FailMode = FailClosed
	default:
		return nil, fmt.Errorf(`fail_mode must be "open" or "closed", not %q`, fc.FailMode)
	}
	var err error
	if f.AllowList, err = spraydetect.ParseAllowList(fc.AllowList); err != nil {
		return nil, err
	}
	if err := f.Grouping.Validate(); err != nil {
		return nil, err
	}
	if err := f.AccountBackoff.Validate(); err != nil {
		return nil, fmt.Errorf("account_backoff: %w", err)
	}
	if err := f.DeviceBackoff.Validate(); err != nil {
		return nil, fmt.Errorf("device_backoff: %w", err)
	}
	if f.DeviceTrust == "" {
		f.DeviceTrust = name
	}
	if !nameRE.MatchString(f.DeviceTrust) {
		return nil, errors.New("device_trust is a flow-like name: 1 to 32 lower-case letters, digits and underscores, starting with a letter")
	}
	if f.DeviceFree < 1 || f.DeviceFree > 100 {
		return nil, fmt.Errorf("device_free must be between 1 and 100, not %d", f.DeviceFree)
	}
	if f.DeviceSlots < 1 || f.DeviceSlots > 20 {
		return nil, fmt.Errorf("device_slots must be between 1 and 20, not %d", f.DeviceSlots)
	}
	grouping := f.Grouping.IPv6Bits
	if grouping == 0 {
		grouping = 64
	}
	for i, a := range fc.IPv6Aggregates {
		if a.Prefix < 16 || a.Prefix >= grouping {
			return nil, fmt.Errorf("ipv6_aggregates[%d].prefix must be between 16 and %d (wider than ipv6_prefix), not %d", i, grouping-1, a.Prefix)
		}
		ws, err := windows(a.IPSpray)
		if err != nil {
			return nil, fmt.Errorf("ipv6_aggregates[%d].ip_spray: %w", i, err)
		}
		f.Aggregates = append(f.Aggregates, Aggregate{Bits: a.Prefix, IPSpray: ws})
	}
	if fc.IPRate.Rate.Per != 0 {
		b := limits.Bucket{Interval: fc.IPRate.Rate.Interval(), Burst: fc.IPRate.Burst}
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("ip_rate: %w", err)
		}
		f.IPRate = &b
	}
	for _, w := range []struct {
		name string
		in   []WindowConfig
		out  *spraydetect.Windows
	}{
		{"ip_spray", fc.IPSpray, &f.IPSpray},
		{"ip_failures", fc.IPFailures, &f.IPFailures},
		{"password_spray", fc.PasswordSpray, &f.PasswordSpray},
	} {
		if len(w.in) == 0 {
			continue // switched off
		}
		ws, err := windows(w.in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		*w.out = ws
	}
	for _, d := range []struct {
		name      string
		v, lo, hi time.Duration
	}{
		{"fail_closed_retry", f.FailClosedRetry, 100 * time.Millisecond, time.Minute},
		{"same_password_window", f.SamePasswordWindow, 0, 30 * 24 * time.Hour},
		{"attempt_ttl", f.AttemptTTL, time.Second, 24 * time.Hour},
		{"device_token_ttl", f.DeviceTokenTTL, time.Hour, 400 * 24 * time.Hour},
	} {
		if d.v < d.lo || d.v > d.hi {
			return nil, fmt.Errorf("%s must be between %v and %v, not %v", d.name, d.lo, d.hi, d.v)
		}
	}
	return f, nil
}

func windows(in []WindowConfig) (spraydetect.Windows, error) {
	ws := make(spraydetect.Windows, len(in))
	for i, c := range in {
		ws[i] = spraydetect.Window{Length: time.Duration(c.Window), Limit: c.Limit}
	}
	return ws, ws.Validate()
}

func (c BackoffConfig) policy() backoff.Policy {
	return backoff.Policy{
		Free:        c.Free,
		Base:        time.Duration(c.Base),
		Factor:      c.Factor,
		Max:         time.Duration(c.Max),
		ForgetAfter: time.Duration(c.ForgetAfter),
	}
}
