package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// Status is a requirement's outcome; on the wire a lower-case word.
type Status string

const (
	// Pass: the policy meets the requirement and no evidence contradicts it.
	Pass Status = "pass"
	// Fail: the policy does not meet it (Result.Failures says why), or a
	// worst case went past its bound.
	Fail Status = "fail"
	// Caller: the requirement is met, or not, by the caller's code rather
	// than by the policy (Result.Caller says what the caller does).
	Caller Status = "caller"
	// NotApplicable: the policy has no flow the requirement is about.
	NotApplicable Status = "n/a"
)

// WorstCase returns the worst score an adversarial search found for an
// objective (one of the Objective constants) and the scenario, as
// simulator YAML, that reaches it. The report compares the score with the
// requirement's bound, and a score past it fails the requirement. A nil
// WorstCase means "not searched", and the report says so; so does an error
// that wraps ErrNotSearched (a search that does not know the objective).
// Any other error makes no report.
type WorstCase func(ctx context.Context, objective string) (score float64, scenario string, err error)

// ErrNotSearched, wrapped in a WorstCase's error, says that the search did
// not look at the objective: the report says "not searched" and why,
// instead of failing.
var ErrNotSearched = errors.New("not searched")

// The objectives the report asks a WorstCase for. Each is over the whole
// policy, so the bound a score is held to is the largest figure among the
// flows the requirement covers.
const (
	// ObjectiveAccountFailures: failed checks on one account in any 24 hours.
	ObjectiveAccountFailures = "account_failures_24h"
	// ObjectiveDestinationGuesses: failed guesses at one destination's codes
	// in any 24 hours, under any accounts and device tokens.
	ObjectiveDestinationGuesses = "destination_guesses_24h"
	// ObjectiveDestinationCodes: codes sent to one destination (phone or
	// mailbox) in any 24 hours.
	ObjectiveDestinationCodes = "destination_codes_24h"
)

// Options say what to report on.
type Options struct {
	// Profile is a profile's name (Profiles).
	Profile string
	// Config is the configuration checked: its policy, its tenants' and
	// its decision log. The default, nil, is the built-in configuration.
	Config *config.Config
	// Source names the configuration in the report. The default is
	// "built-in".
	Source string
	// WorstCase, when not nil, is asked for the worst case of each
	// objective a requirement has. The default is nil: not searched.
	WorstCase WorstCase
	// NoScenarios leaves out the scenarios run on the policy, for a caller
	// that needs the figures only (a fuzz target). The default, false,
	// runs them.
	NoScenarios bool
}

// Report is a profile's conformance report. Its JSON form is the output of
// `tollgate-lab conformance -json` (one per profile).
type Report struct {
	// Profile is the profile's name; Title the standard it maps.
	Profile string `json:"profile"`
	Title   string `json:"title"`
	// Policy is Options.Source.
	Policy string `json:"policy"`
	// Pass is true when no requirement failed.
	Pass bool `json:"pass"`
	// Reading says that the mapping is tollgate's reading of the standard.
	Reading string `json:"reading"`
	// Requirements are the results, in the profile's order.
	Requirements []Result `json:"requirements"`
}

// Result is one requirement's outcome.
type Result struct {
	// ID is the requirement's section in the standard, with a suffix when
	// tollgate splits one section into several checks ("3.2.2-new-code").
	ID string `json:"id"`
	// Summary is the requirement in one line, in tollgate's words.
	Summary string `json:"summary"`
	Status  Status `json:"status"`
	// How says how the policy meets it, computed from its rules and
	// numbers: one line per flow or fact.
	How []string `json:"how"`
	// Failures say why it fails; empty unless Status is Fail.
	Failures []string `json:"failures"`
	// Caller is what the caller's code must do for the requirement to hold;
	// empty when nothing.
	Caller string `json:"caller,omitempty"`
	// Evidence is what shows it holds.
	Evidence []Evidence `json:"evidence"`
}

// The kinds of Evidence.
const (
	// EvidenceSearch: the worst case of an adversarial search (WorstCase).
	EvidenceSearch = "search"
	// EvidenceScenario: a scenario run through the simulator on the policy
	// checked, or a scenario file of the repository.
	EvidenceScenario = "scenario"
	// EvidenceTest: a test of the repository that fails if the promise breaks.
	EvidenceTest = "test"
	// EvidenceDoc: a section of the documentation.
	EvidenceDoc = "doc"
)

// Evidence is one piece of evidence for a requirement.
type Evidence struct {
	// Kind is one of the Evidence constants.
	Kind string `json:"kind"`
	// Name is the objective, scenario, test or document section.
	Name string `json:"name"`
	// Flow is the flow a scenario ran on ("tenant bank: login" for a
	// tenant's).
	Flow string `json:"flow,omitempty"`
	// Ran is true for a search or scenario that was run; a search without
	// a WorstCase is not.
	Ran bool `json:"ran"`
	// Value is what a run found, Bound what it is held to; Held is true
	// when Value is within Bound. All three are absent when not run.
	Value *float64 `json:"value,omitempty"`
	Bound *float64 `json:"bound,omitempty"`
	Held  *bool    `json:"held,omitempty"`
	// Scenario is the simulator YAML a search's worst case was reached by.
	Scenario string `json:"scenario,omitempty"`
	// Note says what else there is to say: "not searched", an error.
	Note string `json:"note,omitempty"`
}

// Reading is what every report says of its mapping.
const Reading = "This mapping is tollgate's reading of each requirement, summarised in its own words, not the standard's text; " +
	"it covers what tollgate decides, and says what is left to the caller."

// ErrUnknownProfile is Run's error for a profile it does not have.
var ErrUnknownProfile = errors.New("conformance: unknown profile")

// profile is one standard's requirements.
type profile struct {
	name, title  string
	requirements []requirement
}

// requirement is one check of a profile: what it says and how to tell.
type requirement struct {
	id, summary string
	check       func(c *checker, r *Result)
}

var profiles = []profile{nistProfile, asvsProfile}

// Profiles lists the profiles' names, in the order reports list them.
func Profiles() []string {
	var out []string
	for _, p := range profiles {
		out = append(out, p.name)
	}
	return out
}

// Title is a profile's title ("NIST SP 800-63B-4"), "" for none.
func Title(name string) string {
	for _, p := range profiles {
		if p.name == name {
			return p.title
		}
	}
	return ""
}

// Run checks the configuration against a profile. Its error is
// ErrUnknownProfile, or the WorstCase's or ctx's: a report is made whole or
// not at all.
func Run(ctx context.Context, o Options) (*Report, error) {
	var prof *profile
	for i := range profiles {
		if profiles[i].name == o.Profile {
			prof = &profiles[i]
		}
	}
	if prof == nil {
		return nil, fmt.Errorf("%w %q (the profiles are %s)", ErrUnknownProfile, o.Profile, strings.Join(Profiles(), ", "))
	}
	cfg := o.Config
	if cfg == nil {
		cfg = config.Default()
		cfg.Policy = config.DefaultPolicy()
	}
	if o.Source == "" {
		o.Source = "built-in"
	}
	c := &checker{ctx: ctx, cfg: cfg, worst: o.WorstCase, flows: flowsOf(cfg), noScenarios: o.NoScenarios}
	rep := &Report{Profile: prof.name, Title: prof.title, Policy: o.Source, Pass: true, Reading: Reading}
	for _, req := range prof.requirements {
		r := Result{ID: req.id, Summary: req.summary, Status: Pass, How: []string{}, Failures: []string{}, Evidence: []Evidence{}}
		req.check(c, &r)
		if c.err != nil {
			return nil, c.err
		}
		if len(r.Failures) > 0 {
			r.Status = Fail
		}
		if r.Status == Fail {
			rep.Pass = false
		}
		rep.Requirements = append(rep.Requirements, r)
	}
	return rep, nil
}

// namedFlow is one flow of the file's policy or of a tenant's.
type namedFlow struct {
	label  string // "login", or "tenant bank: login"
	policy *authguard.Policy
	*authguard.Flow
}

// flowsOf lists the file's flows, then each tenant's, in name order.
func flowsOf(cfg *config.Config) []namedFlow {
	var out []namedFlow
	add := func(prefix string, p *authguard.Policy) {
		for _, name := range p.FlowNames() {
			out = append(out, namedFlow{label: prefix + name, policy: p, Flow: p.Flow(name)})
		}
	}
	add("", cfg.Policy)
	var tenants []string
	for t := range cfg.TenantPolicies {
		tenants = append(tenants, t)
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		add("tenant "+t+": ", cfg.TenantPolicies[t])
	}
	return out
}

// checker holds what the requirements' checks share: the configuration,
// its flows, and the searches asked so far.
type checker struct {
	ctx         context.Context
	cfg         *config.Config
	flows       []namedFlow
	worst       WorstCase
	noScenarios bool
	searched    map[string]searched
	err         error // the first error of a search; Run returns it
}

type searched struct {
	score    float64
	scenario string
}

// attempts are the flows of checks and reports; verifiers those of them
// that verify a send flow's codes; sends the send flows.
func (c *checker) attempts() []namedFlow {
	// A step-up flow bounds a second factor, not a password: the
	// password requirements are its login's.
	// The flows of other factors are 6.3.4's (asvs.go, factorFlows).
	return c.filter(func(f namedFlow) bool {
		return f.Kind == authguard.Attempts && !f.SecondFactor && factorFlows[f.Name] == ""
	})
}

func (c *checker) verifiers() []namedFlow {
	return c.filter(func(f namedFlow) bool { return f.Kind == authguard.Attempts && f.Verifies != "" })
}

func (c *checker) sends() []namedFlow {
	return c.filter(func(f namedFlow) bool { return f.Kind == authguard.Sends })
}

func (c *checker) filter(keep func(namedFlow) bool) []namedFlow {
	var out []namedFlow
	for _, f := range c.flows {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// search adds the worst case of an objective to r, held to bound: a score
// past it fails r. Without a WorstCase it says "not searched".
func (c *checker) search(r *Result, objective string, bound int) {
	ev := Evidence{Kind: EvidenceSearch, Name: objective}
	if c.worst == nil {
		ev.Note = "not searched: no adversarial search was given to this report"
		r.Evidence = append(r.Evidence, ev)
		return
	}
	s, ok := c.searched[objective]
	if !ok {
		score, scenario, err := c.worst(c.ctx, objective)
		if errors.Is(err, ErrNotSearched) {
			ev.Note = err.Error()
			r.Evidence = append(r.Evidence, ev)
			return
		}
		if err != nil {
			if c.err == nil {
				c.err = fmt.Errorf("conformance: search %s: %w", objective, err)
			}
			return
		}
		s = searched{score, scenario}
		if c.searched == nil {
			c.searched = map[string]searched{}
		}
		c.searched[objective] = s
	}
	ev.Ran, ev.Scenario = true, s.scenario
	held := setFigures(&ev, s.score, bound)
	r.Evidence = append(r.Evidence, ev)
	if !held {
		r.Failures = append(r.Failures, fmt.Sprintf("an adversarial search reached %s %s, past the bound %d", fmtScore(s.score), objective, bound))
	}
}

// setFigures sets an evidence's value, bound and whether it held.
func setFigures(ev *Evidence, value float64, bound int) bool {
	b := float64(bound)
	held := value <= b
	ev.Value, ev.Bound, ev.Held = &value, &b, &held
	return held
}

func fmtScore(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

// tests adds the named tests to r's evidence.
func tests(r *Result, names ...string) {
	for _, n := range names {
		r.Evidence = append(r.Evidence, Evidence{Kind: EvidenceTest, Name: n})
	}
}

// scenarioFiles adds scenario files of the repository to r's evidence.
func scenarioFiles(r *Result, names ...string) {
	for _, n := range names {
		r.Evidence = append(r.Evidence, Evidence{Kind: EvidenceScenario, Name: "scenarios/" + n + ".yaml"})
	}
}

// docs adds documentation sections to r's evidence.
func docs(r *Result, names ...string) {
	for _, n := range names {
		r.Evidence = append(r.Evidence, Evidence{Kind: EvidenceDoc, Name: n})
	}
}

// failf adds a failure to r.
func failf(r *Result, format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// howf adds a line to r's How.
func howf(r *Result, format string, args ...any) {
	r.How = append(r.How, fmt.Sprintf(format, args...))
}

// budget is the flow's BudgetLine under its label ("tenant bank: login:
// at most ...").
func (f namedFlow) budget() string {
	return strings.TrimSuffix(f.label, f.Name) + f.Flow.BudgetLine()
}

// enforced fails r for a flow in shadow mode, which enforces nothing, and
// reports whether f enforces.
func enforced(r *Result, f namedFlow) bool {
	if f.Mode == authguard.Shadow {
		failf(r, "%s is in shadow mode: it answers proceed to every call and enforces none of its rules", f.label)
		return false
	}
	return true
}
