package policyfile

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// DefaultPolicyYAML is the built-in policy, with a comment on every number
// saying why it is what it is.
//
//go:embed default_policy.yaml
var DefaultPolicyYAML []byte

// DefaultPolicy returns the built-in policy.
func DefaultPolicy() *authguard.Policy {
	p, err := LoadPolicy(nil)
	if err != nil {
		panic("policyfile: built-in policy is invalid: " + err.Error())
	}
	return p
}

// LoadPolicy reads a policy file ({flows: ...}) laid over the built-in
// policy; nil or empty data gives the built-in policy itself. A mistake in
// the file is an *Error, naming its line.
func LoadPolicy(data []byte) (*authguard.Policy, error) {
	var top struct {
		Flows yaml.Node `yaml:"flows"`
	}
	if len(bytes.TrimSpace(data)) > 0 {
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return nil, fmt.Errorf("policy: %w", syntaxError(err))
		}
		if len(root.Content) == 1 {
			n := root.Content[0]
			if n.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("policy: %w", errorAt(n.Line, "", "a policy file is a mapping with one key, flows"))
			}
			if err := checkKeys(n, []string{"flows"}, ""); err != nil {
				return nil, fmt.Errorf("policy: %w", err)
			}
			if err := n.Decode(&top); err != nil {
				return nil, fmt.Errorf("policy: %w", decodeError("", err))
			}
		}
	}
	return policyFromNode(&top.Flows)
}

// AddFlows returns base with the flows of a YAML flows mapping added: new
// flows only, each empty or from a template (a built-in flow's name), in the
// format of a config file's flows. A name base already has is an error:
// changing a flow is the config file's job. The simulator reads scenarios'
// own flows with it. Its errors are an *Error at a line of n (at least 1).
func AddFlows(base *authguard.Policy, n *yaml.Node) (*authguard.Policy, error) {
	for i := 0; n.Kind == yaml.MappingNode && i < len(n.Content); i += 2 {
		if name := n.Content[i]; base.Flow(name.Value) != nil {
			return nil, errorAt(name.Line, "flows."+name.Value, "the policy already has this flow; a scenario adds flows, the -config file changes them")
		}
	}
	added, err := compileFlows(nil, n)
	if err == nil {
		var flows []*authguard.Flow
		for _, p := range []*authguard.Policy{base, added} {
			for _, name := range p.FlowNames() {
				flows = append(flows, p.Flow(name))
			}
		}
		if added, err = authguard.NewPolicy(flows...); err != nil {
			err = policyError(err)
		}
	}
	var e *Error
	if errors.As(err, &e) && e.Line == 0 {
		// A mistake of the whole policy: at the flow it names, else at n.
		c := *e
		c.Line = max(indexLines(n)[e.Path], n.Line, 1)
		return nil, &c
	}
	return added, err
}

// policyError is the *Error of authguard's error about a whole policy: at
// no line, since no one flow is to blame.
func policyError(err error) error {
	var fe *authguard.FieldError
	if errors.As(err, &fe) {
		return (&flowFile{}).fieldError(fe.Flow, err)
	}
	return err
}

// tenantPolicy is a tenant's policy: its flows node laid over the file's
// (which is laid over the built-in flows), in the same format.
func tenantPolicy(fileFlows, tenantFlows *yaml.Node) (*authguard.Policy, error) {
	base, err := overlay(builtins, builtins, fileFlows)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return policyFromFlows(base, tenantFlows)
}

// builtins are the built-in flows in their file form, decoded once.
var builtins = func() map[string]*flowFile {
	var top struct {
		Flows yaml.Node `yaml:"flows"`
	}
	if err := yaml.Unmarshal(DefaultPolicyYAML, &top); err != nil {
		panic("policyfile: built-in policy: " + err.Error())
	}
	flows, err := overlay(nil, nil, &top.Flows)
	if err != nil {
		panic("policyfile: built-in policy: " + err.Error())
	}
	return flows
}()

// policyFromNode lays the flows node of a file over the built-in flows and
// compiles the result.
func policyFromNode(n *yaml.Node) (*authguard.Policy, error) {
	return policyFromFlows(builtins, n)
}

// policyFromFlows lays the flows node of a file over base and compiles the
// result; templates are the built-in flows.
func policyFromFlows(base map[string]*flowFile, n *yaml.Node) (*authguard.Policy, error) {
	p, err := compileFlows(base, n)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

// compileFlows is policyFromFlows without the "policy: " of its errors.
func compileFlows(base map[string]*flowFile, n *yaml.Node) (*authguard.Policy, error) {
	flows, err := overlay(base, builtins, n)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(flows))
	for name := range flows {
		names = append(names, name)
	}
	sort.Strings(names)
	compiled := make([]*authguard.Flow, 0, len(flows))
	for _, name := range names {
		ff := flows[name]
		f, err := ff.compile(name)
		if err != nil {
			return nil, err
		}
		if _, err := authguard.NewPolicy(f); err != nil { // validates the flow on its own, for the line
			return nil, ff.fieldError(name, err)
		}
		compiled = append(compiled, f)
	}
	p, err := authguard.NewPolicy(compiled...)
	if err != nil {
		return nil, policyError(err)
	}
	return p, nil
}

// flowFile is the YAML form of a flow.
type flowFile struct {
	Template           string   `yaml:"template"`
	Kind               string   `yaml:"kind"`
	Mode               string   `yaml:"mode"`
	FailMode           string   `yaml:"fail_mode"`
	FailClosedRetry    Duration `yaml:"fail_closed_retry"`
	IPv6Prefix         int      `yaml:"ipv6_prefix"`
	AllowList          []string `yaml:"allow_list"`
	DeviceTrust        string   `yaml:"device_trust"`
	Verifies           string   `yaml:"verifies"`
	SamePasswordWindow Duration `yaml:"same_password_window"`
	AttemptTTL         Duration `yaml:"attempt_ttl"`
	DeviceTokenTTL     Duration `yaml:"device_token_ttl"`
	// KnownNetworks is authguard.Flow.KnownNetworksOff's opposite, on by
	// default (emptyFlow). A value, not a pointer: a file laid over a
	// built-in flow copies it, and a pointer would be shared with the
	// built-in flow and change it for every later load.
	KnownNetworks bool `yaml:"known_networks"`
	// RevokeDevicesOnPasswordChange is
	// authguard.Flow.RevokeDevicesOnPasswordChange, off by default.
	RevokeDevicesOnPasswordChange bool `yaml:"revoke_devices_on_password_change"`
	// send flows
	DenyNumberTypes         []string `yaml:"deny_number_types"`
	AllowCountries          []string `yaml:"allow_countries"`
	DenyCountries           []string `yaml:"deny_countries"`
	DestinationPrefixDigits int      `yaml:"destination_prefix_digits"`
	OwnerCodes              int      `yaml:"owner_codes"`
	// Prices are by channel, then "default" or a region or calling code.
	Prices map[string]map[string]int `yaml:"prices"`
	Rules  []yaml.Node               `yaml:"rules"`
	// Events are the notices the flow emits (authguard.NoticePolicy).
	Events eventsFile `yaml:"events"`
	// StepUp is when a success is answered step_up
	// (authguard.StepUpPolicy); SecondFactor makes the flow a step-up flow.
	StepUp       stepUpFile `yaml:"step_up"`
	SecondFactor bool       `yaml:"second_factor"`
	// SuccessClears names the flows whose account counters a success
	// clears (authguard.Flow.SuccessClears).
	SuccessClears []string `yaml:"success_clears"`

	rules []ruleFile // the effective rules
	line  int        // where the flow was last written, 0 for built-in
	lines lineIndex  // the lines of the file that last wrote it
}

// emptyFlow is a new flow without a template: settings only, no rules,
// each authguard's default.
func emptyFlow() *flowFile {
	return &flowFile{
		Mode: "enforce", FailMode: "open", FailClosedRetry: Duration(authguard.DefaultFailClosedRetry), IPv6Prefix: 64,
		AttemptTTL: Duration(authguard.DefaultAttemptTTL), DeviceTokenTTL: Duration(authguard.DefaultDeviceTokenTTL),
		KnownNetworks: true,
		Events:        eventsFile{Window: Duration(authguard.DefaultNoticeWindow)},
		StepUp:        stepUpFile{Breached: true, Escalated: true, TTL: Duration(authguard.DefaultStepUpTTL)},
	}
}

// ruleFile is the YAML form of a rule. Which fields apply depends on the
// algorithm; authguard.Rule says which.
type ruleFile struct {
	Name      string    `yaml:"name"`
	Key       string    `yaml:"key"`
	Off       bool      `yaml:"off"`
	Reason    string    `yaml:"reason"`
	Subject   string    `yaml:"subject"`
	Algorithm string    `yaml:"algorithm"`
	Counts    string    `yaml:"counts"`
	Cost      costField `yaml:"cost"`
	Past      string    `yaml:"past"`
	Clients   string    `yaml:"clients"`
	// backoff
	Free        int      `yaml:"free"`
	Base        Duration `yaml:"base"`
	Factor      float64  `yaml:"factor"`
	Max         Duration `yaml:"max"`
	ForgetAfter Duration `yaml:"forget_after"`
	DeviceFree  int      `yaml:"device_free"`
	DeviceSlots int      `yaml:"device_slots"`
	// distinct, and sliding_log counting failures
	Of      string       `yaml:"of"`
	Windows []windowFile `yaml:"windows"`
	// rate algorithms
	Window Duration `yaml:"window"`
	Limit  int      `yaml:"limit"`
	Rate   Rate     `yaml:"rate"`
	// conversion
	MinVolume     int `yaml:"min_volume"`
	MinConversion int `yaml:"min_conversion"`
	// distinct of accounts: count only failures reported breached
	Breached bool `yaml:"breached"`

	line int
}

// costField is a rule's cost: a number of units, or "price" (each send's
// price, for a spend budget).
type costField struct {
	n     int
	price bool
}

func (c *costField) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "price" {
		*c = costField{price: true}
		return nil
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return errorAt(n.Line, "", `cost is a whole number of units or "price"`)
	}
	*c = costField{n: v}
	return nil
}

// eventsFile is the YAML form of a flow's notices (authguard.NoticePolicy):
// the types it emits (a list that replaces the flow's whole), the failures
// that make an account under attack, the coalescing window.
type eventsFile struct {
	Emit                []string `yaml:"emit"`
	UnderAttackFailures int      `yaml:"under_attack_failures"`
	Window              Duration `yaml:"window"`
}

// stepUpFile is the YAML form of a flow's step-up policy
// (authguard.StepUpPolicy): the step-up flow ("" for off), the switches of
// its reasons, and the ticket's lifetime.
type stepUpFile struct {
	Flow                string   `yaml:"flow"`
	Breached            bool     `yaml:"breached"`
	UnderAttackFailures int      `yaml:"under_attack_failures"`
	NewDeviceFailures   int      `yaml:"new_device_failures"`
	Escalated           bool     `yaml:"escalated"`
	TTL                 Duration `yaml:"ttl"`
}

// windowFile is one window of a log: at most Limit members within Window.
type windowFile struct {
	Window Duration `yaml:"window"`
	Limit  int      `yaml:"limit"`
}

var (
	flowKeys   = yamlKeys(flowFile{})
	ruleKeys   = yamlKeys(ruleFile{})
	windowKeys = yamlKeys(windowFile{})
	eventsKeys = yamlKeys(eventsFile{})
	stepUpKeys = yamlKeys(stepUpFile{})
)

// overlay lays the flows of n over base (which it does not change) and
// returns the result; templates are the flows a template may name. Every
// mapping is checked for unknown keys.
func overlay(base, templates map[string]*flowFile, n *yaml.Node) (map[string]*flowFile, error) {
	out := map[string]*flowFile{}
	for name, f := range base {
		c := *f
		c.rules = slices.Clone(f.rules)
		out[name] = &c
	}
	if n.Kind == 0 || n.Tag == "!!null" {
		return out, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errorAt(n.Line, "flows", "is a mapping of flow names to flows")
	}
	lines := indexLines(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, body := n.Content[i].Value, n.Content[i+1]
		if err := checkKeys(body, flowKeys, "flows."+name); err != nil {
			return nil, err
		}
		if out[name] == nil {
			if err := declaresNewFlow(n.Content[i], body, out, templates); err != nil {
				return nil, err
			}
		}
		f, err := startFlow(name, body, out[name], templates)
		if err != nil {
			return nil, err
		}
		f.Rules = nil
		for j := 0; j+1 < len(body.Content); j += 2 {
			if body.Content[j].Value == "prices" {
				f.Prices = nil // a file's prices replace the flow's whole table
			}
		}
		if err := body.Decode(f); err != nil {
			return nil, decodeError("flows."+name, err)
		}
		f.line, f.lines = lines["flows."+name], lines
		if err := f.mergeRules(name); err != nil {
			return nil, err
		}
		out[name] = f
	}
	return out, nil
}

// newFlowKeys are the keys that declare a new flow: what it starts from
// (template), what kind of calls it takes (kind) or its rules. A flow of a
// new name with none of them is a mistake, most likely a misspelt name:
// `logn: {mode: shadow}` would otherwise be a new empty flow, and login
// would go on enforcing.
var newFlowKeys = []string{"template", "kind", "rules"}

// flowNameRE is authguard's rule for flow names; a name it refuses is left
// for authguard to explain.
var flowNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// declaresNewFlow refuses a flow of a name neither flows nor templates
// have, at key, unless its body says what makes it a new flow
// (newFlowKeys), suggesting the known name closest to it.
func declaresNewFlow(key, body *yaml.Node, flows, templates map[string]*flowFile) error {
	name := key.Value
	if !flowNameRE.MatchString(name) || templates[name] != nil {
		return nil
	}
	for j := 0; body.Kind == yaml.MappingNode && j+1 < len(body.Content); j += 2 {
		if slices.Contains(newFlowKeys, body.Content[j].Value) {
			return nil
		}
	}
	known := flowNames(flows)
	for _, t := range flowNames(templates) {
		if flows[t] == nil {
			known = append(known, t)
		}
	}
	return errorAt(key.Line, "flows."+name, "the policy has no flow of this name to change (it has %s; a new flow says what it is with kind, template or rules)%s",
		strings.Join(known, ", "), didYouMean(name, known))
}

// startFlow is what a flow in a file is laid over: the template it names,
// else the flow of the same name, else an empty flow.
func startFlow(name string, body *yaml.Node, existing *flowFile, templates map[string]*flowFile) (*flowFile, error) {
	var t struct {
		Template *string `yaml:"template"`
	}
	if err := body.Decode(&t); err != nil {
		return nil, decodeError("flows."+name, err)
	}
	switch {
	case t.Template == nil && existing != nil:
		c := *existing
		c.rules = slices.Clone(existing.rules)
		return &c, nil
	case t.Template == nil || *t.Template == "none":
		return emptyFlow(), nil
	}
	b := templates[*t.Template]
	if b == nil {
		return nil, errorAt(body.Line, "flows."+name, "template must be one of %s or none, not %q",
			strings.Join(flowNames(templates), ", "), *t.Template)
	}
	c := *b
	c.rules = slices.Clone(b.rules)
	return &c, nil
}

func flowNames(flows map[string]*flowFile) []string {
	names := make([]string, 0, len(flows))
	for n := range flows {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// mergeRules lays the rules just decoded (f.Rules) over f.rules: by name, a
// rule changes the fields it gives, off switches it off, a new name is added
// at the end.
func (f *flowFile) mergeRules(flow string) error {
	seen := map[string]bool{}
	for _, n := range f.Rules {
		where := fmt.Sprintf("flows.%s.rules", flow)
		if err := checkKeys(&n, ruleKeys, where+"[]"); err != nil {
			return err
		}
		var id struct {
			Name string `yaml:"name"`
		}
		if err := n.Decode(&id); err != nil {
			return decodeError(where, err)
		}
		if id.Name == "" {
			return errorAt(n.Line, where, "every rule needs a name")
		}
		where += "[" + id.Name + "]"
		if seen[id.Name] {
			return errorAt(n.Line, where, "this list already has a rule of that name")
		}
		seen[id.Name] = true
		at := slices.IndexFunc(f.rules, func(r ruleFile) bool { return r.Name == id.Name })
		var r ruleFile
		if at >= 0 {
			r = f.rules[at]
		}
		if err := n.Decode(&r); err != nil {
			return decodeError(where, err)
		}
		r.line = n.Line
		switch {
		case r.Off && at >= 0:
			f.rules = slices.Delete(f.rules, at, at+1)
		case r.Off:
			return errorAt(n.Line, where, "there is no rule of that name to switch off (the flow has %s)%s", f.ruleNames(), didYouMean(id.Name, f.names()))
		case at >= 0:
			f.rules[at] = r
		case len(f.rules) > 0 && (r.Subject == "" || r.Algorithm == ""):
			// Changing a rule never needs its subject or algorithm, and a new
			// rule always does: this is a change of a rule the flow lacks.
			return errorAt(n.Line, where, "the flow has no rule of this name to change (it has %s; a new rule gives subject and algorithm)%s",
				f.ruleNames(), didYouMean(id.Name, f.names()))
		default:
			f.rules = append(f.rules, r)
		}
	}
	f.Rules = nil
	return nil
}

// names are the names of the flow's rules.
func (f *flowFile) names() []string {
	names := make([]string, len(f.rules))
	for i, r := range f.rules {
		names[i] = r.Name
	}
	return names
}

func (f *flowFile) ruleNames() string {
	if len(f.rules) == 0 {
		return "none"
	}
	names := make([]string, len(f.rules))
	for i, r := range f.rules {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

// lineOf is the line of a key of the flow (a path below it, such as
// "prices.sms"), or the flow's line when the file did not write it.
func (f *flowFile) lineOf(flow, key string) int {
	if l := f.lines["flows."+flow+"."+key]; l > 0 {
		return l
	}
	return f.line
}

// ruleLine is the line of the flow's rule of that name, or the flow's line.
func (f *flowFile) ruleLine(name string) int {
	for _, r := range f.rules {
		if r.Name == name && r.line > 0 {
			return r.line
		}
	}
	return f.line
}

// compile turns the file form into an authguard.Flow; authguard.NewPolicy
// validates the rest.
func (f *flowFile) compile(name string) (*authguard.Flow, error) {
	out := &authguard.Flow{
		Name:               name,
		FailClosedRetry:    time.Duration(f.FailClosedRetry),
		Grouping:           spraydetect.Grouping{IPv6Bits: f.IPv6Prefix},
		DeviceTrust:        f.DeviceTrust,
		Verifies:           f.Verifies,
		SamePasswordWindow: time.Duration(f.SamePasswordWindow),
		AttemptTTL:         time.Duration(f.AttemptTTL),
		DeviceTokenTTL:     time.Duration(f.DeviceTokenTTL),
		KnownNetworksOff:   !f.KnownNetworks,

		RevokeDevicesOnPasswordChange: f.RevokeDevicesOnPasswordChange,
	}
	where := "flows." + name
	at := func(key string, err error) error { return &Error{Line: f.lineOf(name, key), Path: where, Err: err} }
	if err := f.zeroDurations(name); err != nil {
		return nil, err
	}
	var err error
	if out.Mode, err = authguard.ParseMode(f.Mode); err != nil {
		return nil, at("mode", err)
	}
	if out.FailMode, err = authguard.ParseFailMode(f.FailMode); err != nil {
		return nil, at("fail_mode", err)
	}
	if out.AllowList, err = spraydetect.ParseAllowList(f.AllowList); err != nil {
		return nil, at("allow_list", fmt.Errorf("allow_list: %w", err))
	}
	if f.Kind != "" {
		if out.Kind, err = authguard.ParseKind(f.Kind); err != nil {
			return nil, at("kind", err)
		}
	}
	out.Send = authguard.SendPolicy{
		AllowCountries: f.AllowCountries, DenyCountries: f.DenyCountries, PrefixDigits: f.DestinationPrefixDigits,
		OwnerCodes: f.OwnerCodes,
	}
	for name, table := range f.Prices {
		ch, err := authguard.ParseChannel(name)
		if err != nil {
			return nil, at("prices", fmt.Errorf("prices: %q is not a channel: sms, voice, whatsapp or email", name))
		}
		p := authguard.Prices{Countries: map[string]int{}}
		for k, n := range table {
			if k == "default" {
				p.Default = n
			} else {
				p.Countries[k] = n
			}
		}
		if out.Send.Prices == nil {
			out.Send.Prices = map[authguard.Channel]authguard.Prices{}
		}
		out.Send.Prices[ch] = p
	}
	for _, typ := range f.Events.Emit {
		if !slices.Contains(authguard.NoticeTypes, typ) {
			return nil, &Error{Line: f.lineOf(name, "events.emit"), Path: where + ".events.emit",
				Err: fmt.Errorf("%q is not an event (events are %s)%s", typ, strings.Join(authguard.NoticeTypes, ", "), didYouMean(typ, authguard.NoticeTypes))}
		}
	}
	out.Notices = authguard.NoticePolicy{
		Emit: f.Events.Emit, UnderAttackFailures: f.Events.UnderAttackFailures, Window: time.Duration(f.Events.Window),
	}
	out.StepUp = authguard.StepUpPolicy{
		Flow: f.StepUp.Flow, BreachedOff: !f.StepUp.Breached, EscalatedOff: !f.StepUp.Escalated,
		UnderAttackFailures: f.StepUp.UnderAttackFailures, NewDeviceFailures: f.StepUp.NewDeviceFailures,
		TTL: time.Duration(f.StepUp.TTL),
	}
	out.SecondFactor = f.SecondFactor
	out.SuccessClears = slices.Clone(f.SuccessClears)
	for _, t := range f.DenyNumberTypes {
		nt, err := authguard.ParseNumberType(t)
		if err != nil {
			return nil, at("deny_number_types", fmt.Errorf("deny_number_types: %w", err))
		}
		out.Send.DenyTypes = append(out.Send.DenyTypes, nt)
	}
	for _, rf := range f.rules {
		r, err := rf.compile()
		if err != nil {
			return nil, &Error{Line: f.ruleLine(rf.Name), Path: where + ".rules[" + rf.Name + "]", Err: err}
		}
		out.Rules = append(out.Rules, r)
	}
	return out, nil
}

// zeroDurations refuses a zero the file wrote for a duration whose zero an
// authguard.Flow takes for the default.
func (f *flowFile) zeroDurations(name string) error {
	for _, d := range []struct {
		field, key string
		v          Duration
		lo, hi     time.Duration
	}{
		{"FailClosedRetry", "fail_closed_retry", f.FailClosedRetry, authguard.MinFailClosedRetry, authguard.MaxFailClosedRetry},
		{"AttemptTTL", "attempt_ttl", f.AttemptTTL, authguard.MinAttemptTTL, authguard.MaxAttemptTTL},
		{"DeviceTokenTTL", "device_token_ttl", f.DeviceTokenTTL, authguard.MinDeviceTokenTTL, authguard.MaxDeviceTokenTTL},
		{"Notices.Window", "events.window", f.Events.Window, authguard.MinNoticeWindow, authguard.MaxNoticeWindow},
		{"StepUp.TTL", "step_up.ttl", f.StepUp.TTL, authguard.MinAttemptTTL, authguard.MaxAttemptTTL},
	} {
		if d.v == 0 {
			return f.fieldError(name, &authguard.FieldError{Flow: name, Field: d.field,
				Err: fmt.Errorf("must be between %v and %v, not %v", d.lo, d.hi, time.Duration(0)), Predicate: true})
		}
	}
	return nil
}

// compile parses the rule's words; authguard validates its numbers.
func (rf ruleFile) compile() (authguard.Rule, error) {
	r := authguard.Rule{
		Name: rf.Name, Key: rf.Key, Reason: authguard.Reason(rf.Reason), Cost: rf.Cost.n, PriceCost: rf.Cost.price,
		Backoff: backoff.Policy{
			Free: rf.Free, Base: time.Duration(rf.Base), Factor: rf.Factor,
			Max: time.Duration(rf.Max), ForgetAfter: time.Duration(rf.ForgetAfter),
		},
		DeviceFree: rf.DeviceFree, DeviceSlots: rf.DeviceSlots, Breached: rf.Breached,
	}
	var err error
	if r.Subject, err = authguard.ParseSubject(rf.Subject); err != nil {
		return r, err
	}
	if r.Algorithm, err = authguard.ParseAlgorithm(rf.Algorithm); err != nil {
		return r, err
	}
	if rf.Counts != "" {
		if r.Counts, err = authguard.ParseTrigger(rf.Counts); err != nil {
			return r, err
		}
	}
	if rf.Past != "" {
		if r.Past, err = authguard.ParsePast(rf.Past); err != nil {
			return r, err
		}
	}
	if rf.Clients != "" {
		if r.Clients, err = authguard.ParseClients(rf.Clients); err != nil {
			return r, err
		}
	}
	switch rf.Of {
	case "":
	case "account":
		r.Of = authguard.PartAccount
	case "ip":
		r.Of = authguard.PartIP
	case "destination":
		r.Of = authguard.PartDestination
	default:
		return r, fmt.Errorf("of must be account, ip or destination, not %q", rf.Of)
	}
	for _, w := range rf.Windows {
		r.Windows = append(r.Windows, spraydetect.Window{Length: time.Duration(w.Window), Limit: w.Limit})
	}
	if r.Algorithm.Param() == authguard.ParamConversion {
		if rf.Limit != 0 || rf.Rate.Per != 0 {
			return r, fmt.Errorf("%s takes window, min_volume and min_conversion, not limit or rate", r.Algorithm)
		}
		r.Rate = authguard.RateLimit{Window: time.Duration(rf.Window), Limit: rf.MinVolume, MinPercent: rf.MinConversion}
		return r, nil
	}
	if rf.MinVolume != 0 || rf.MinConversion != 0 {
		return r, fmt.Errorf("min_volume and min_conversion are for algorithm %s", authguard.AlgorithmsTaking(authguard.ParamConversion))
	}
	if rf.Window != 0 || rf.Limit != 0 || rf.Rate.Per != 0 {
		r.Rate = authguard.RateLimit{Window: time.Duration(rf.Window), Limit: rf.Limit}
		if rf.Rate.Per != 0 {
			r.Rate.Interval = rf.Rate.Interval()
		}
		if rf.Window != 0 && rf.Rate.Per != 0 {
			return r, fmt.Errorf("give window (%s) or rate (%s), not both",
				authguard.AlgorithmsTaking(authguard.ParamWindow), authguard.AlgorithmsTaking(authguard.ParamRate))
		}
		if rf.Rate.Per != 0 && (rf.Rate.Per%time.Duration(rf.Rate.N) != 0 || rf.Rate.Interval()%time.Millisecond != 0) {
			return r, fmt.Errorf("rate %v is not one unit every whole number of milliseconds; use one that is (such as 20/s, 8/s, 3/m)", rf.Rate)
		}
	}
	return r, nil
}

// checkKeys reports a key of a mapping node that is not one of valid, with
// its line and the valid keys. Nested rule windows are checked too.
func checkKeys(n *yaml.Node, valid []string, where string) error {
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return nil
		}
		return errorAt(n.Line, where, "must be a mapping (key: value)")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(valid, k.Value) {
			return unknownKey(k, valid, where)
		}
		if k.Value == "events" && slices.Equal(valid, flowKeys) {
			if err := checkKeys(n.Content[i+1], eventsKeys, where+".events"); err != nil {
				return err
			}
		}
		if k.Value == "step_up" && slices.Equal(valid, flowKeys) {
			if err := checkKeys(n.Content[i+1], stepUpKeys, where+".step_up"); err != nil {
				return err
			}
		}
		if k.Value == "windows" && n.Content[i+1].Kind == yaml.SequenceNode {
			for _, w := range n.Content[i+1].Content {
				if err := checkKeys(w, windowKeys, where+".windows[]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// unknownKey is the error of a key k that is not one of valid, in the
// mapping at where ("" for the top level): its line, what is valid and the
// valid key it is closest to.
func unknownKey(k *yaml.Node, valid []string, where string) error {
	if where == "" {
		return errorAt(k.Line, k.Value, "is not a top-level key (valid: %s)%s", strings.Join(valid, ", "), didYouMean(k.Value, valid))
	}
	return errorAt(k.Line, where, "unknown field %q (valid: %s)%s", k.Value, strings.Join(valid, ", "), didYouMean(k.Value, valid))
}

// yamlKeys lists the yaml tags of a struct's fields.
func yamlKeys(v any) []string { return yamlKeysOf(reflect.TypeOf(v)) }

// yamlKeysOf lists the yaml tags of the fields of struct type t.
func yamlKeysOf(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("yaml"); tag != "" && tag != "-" {
			keys = append(keys, strings.Split(tag, ",")[0])
		}
	}
	return keys
}

// Duration is a time.Duration in YAML: Go's syntax ("90s", "1h30m") plus a
// "d" suffix for days ("90d").
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Err: err}
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
		return Rate{}, fmt.Errorf(`invalid rate %q (use N/s, N/m or N/h)`, s)
	}
	return Rate{N: n, Per: per}, nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Err: err}
	}
	*r = v
	return nil
}

// FormatDuration writes d as a config file would: "90s", "1h30m", "24h",
// whole days past one as "7d"; ParseDuration reads it back.
func FormatDuration(d time.Duration) string {
	if d > 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Interval is the time between two events at this rate.
func (r Rate) Interval() time.Duration { return r.Per / time.Duration(r.N) }

func (r Rate) String() string {
	if r.Per == 0 {
		return "off"
	}
	return fmt.Sprintf("%d/%s", r.N, map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per])
}
