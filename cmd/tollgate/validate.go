package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// NISTMaxFailures is NIST SP 800-63B's limit (§3.2.2 of revision 4, §5.2.2
// of revision 3): at most 100 failed attempts on one account.
// validate-config -strict fails a flow whose daily bound is above it.
const NISTMaxFailures = authguard.NISTMaxFailures

const validateUsage = `usage: tollgate validate-config [-strict] [-json | -print] [FILE]

Checks a config file as serve reads it (without the environment) and prints
"ok" and each flow's worst case: the failed checks one account can have in
any 24 hours. Without FILE it checks the built-in policy.

  -print   also print every flow's effective policy as a table
  -json    print the effective policy and each flow's bound as JSON instead
           (docs/policy.md, "Tuning the policy")
  -strict  exit 1 on any warning: a flow whose bound is above NIST SP
           800-63B's 100 or only a lower bound, or a secret in the file

Exit status: 0 valid, 1 invalid (or a warning with -strict), 2 usage.
`

// validateCmd checks a config file as serve would read it, without the
// environment, and prints "ok" and each flow's worst case, or the error.
// Warnings go to stderr, one "warning: " line each; with -strict any
// warning makes the exit status 1.
func validateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate validate-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, validateUsage) }
	print := fs.Bool("print", false, "print every flow's effective policy")
	asJSON := fs.Bool("json", false, "print the effective policy and bounds as JSON")
	strict := fs.Bool("strict", false, "exit 1 on any warning")
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files, args = append(files, fs.Arg(0)), fs.Args()[1:] // flags may follow FILE too
	}
	if len(files) > 1 || len(files) == 1 && files[0] == "" || *print && *asJSON {
		fmt.Fprint(stderr, validateUsage)
		return 2
	}
	path := ""
	if len(files) == 1 {
		path = files[0]
	}
	cfg, err := config.Load(path, func(string) string { return "" })
	if err == nil {
		if err = cfg.CheckListen(); err != nil {
			err = fmt.Errorf("%s: listen: %w", path, err)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		if *asJSON {
			writeJSON(stdout, validationJSON{OK: false, Error: errorJSONOf(err)})
		}
		return 1
	}
	policies := namedPolicies(cfg)
	warnings := validationWarnings(cfg, policies)
	switch {
	case *asJSON:
		out := validationJSON{OK: true, Warnings: warnings}
		for _, np := range policies {
			flows := flowsJSON(np.policy)
			if np.tenant == "" {
				out.Flows = flows
			} else {
				out.Tenants = append(out.Tenants, tenantJSON{Name: np.tenant, Flows: flows})
			}
		}
		writeJSON(stdout, out)
	default:
		fmt.Fprintln(stdout, "ok")
		for _, np := range policies {
			for _, name := range np.policy.FlowNames() {
				f := np.policy.Flow(name)
				switch {
				case *print:
					fmt.Fprintln(stdout)
					if np.tenant != "" {
						fmt.Fprintf(stdout, "tenant %s: ", np.tenant)
					}
					printFlow(stdout, np.policy, f)
				case np.tenant != "":
					fmt.Fprintf(stdout, "tenant %s: %s\n", np.tenant, budgetLine(f))
				default:
					fmt.Fprintln(stdout, budgetLine(f))
				}
			}
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if *strict && len(warnings) > 0 {
		fmt.Fprintf(stderr, "tollgate validate-config: failed by -strict (%d warnings)\n", len(warnings))
		return 1
	}
	return 0
}

// namedPolicy is the file's policy (tenant "") or a tenant's own.
type namedPolicy struct {
	tenant string
	policy *authguard.Policy
}

// namedPolicies are the file's policy, then the tenants' in name order.
func namedPolicies(cfg *config.Config) []namedPolicy {
	out := []namedPolicy{{"", cfg.Policy}}
	var names []string
	for name := range cfg.TenantPolicies {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, namedPolicy{name, cfg.TenantPolicies[name]})
	}
	return out
}

// validationWarnings are what -strict fails on: a flow whose daily bound is
// above NIST's 100 or only a lower bound, and a secret in the file (serve
// warns of it at start).
func validationWarnings(cfg *config.Config, policies []namedPolicy) []string {
	var out []string
	for _, np := range policies {
		prefix := ""
		if np.tenant != "" {
			prefix = "tenant " + np.tenant + ": "
		}
		for _, name := range np.policy.FlowNames() {
			b := boundOf(np.policy.Flow(name))
			switch {
			case b == nil:
			case b.Max > NISTMaxFailures:
				out = append(out, fmt.Sprintf("%sflow %s: %s %d failed checks per account in any 24h, above NIST SP 800-63B's %d",
					prefix, name, budgetPhrase(b.Exact), b.Max, NISTMaxFailures))
			case !b.Exact:
				out = append(out, fmt.Sprintf("%sflow %s: the bound %d is a lower bound only (beyond %d the figures are not exact)", prefix, name, b.Max, backoff.MaxExact))
			}
		}
	}
	if cfg.SecretInFile {
		out = append(out, "the secret is set in the config file; prefer the TOLLGATE_SECRET environment variable (or TOLLGATE_SECRET_FILE)")
	}
	out = append(out, cfg.Proxy.Warnings()...) // config/proxy.go: routes that can never classify
	return out
}

// validationJSON is validate-config -json's output, documented in docs/policy.md.
type validationJSON struct {
	OK       bool         `json:"ok"`
	Error    *errorJSON   `json:"error,omitempty"`
	Flows    []flowJSON   `json:"flows,omitempty"`
	Tenants  []tenantJSON `json:"tenants,omitempty"`
	Warnings []string     `json:"warnings,omitempty"`
}

type errorJSON struct {
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
}

func errorJSONOf(err error) *errorJSON {
	e := &errorJSON{Message: err.Error()}
	var ce *config.Error
	if errors.As(err, &ce) {
		e.Line, e.Path = ce.Line, ce.Path
	}
	return e
}

type tenantJSON struct {
	Name  string     `json:"name"`
	Flows []flowJSON `json:"flows"`
}

type flowJSON struct {
	Name            string   `json:"name"`
	Kind            string   `json:"kind"`
	Mode            string   `json:"mode"`
	FailMode        string   `json:"fail_mode"`
	FailClosedRetry string   `json:"fail_closed_retry,omitempty"`
	IPv6Prefix      int      `json:"ipv6_prefix"`
	AllowListRanges int      `json:"allow_list_ranges"`
	DeviceTrust     string   `json:"device_trust,omitempty"`
	Verifies        string   `json:"verifies,omitempty"`
	Requires        []string `json:"requires"`
	// Bound is nil for a send flow and for a flow no backoff rule on the
	// account bounds.
	Bound *boundJSON `json:"max_failures_per_day"`
	Send  *sendJSON  `json:"send,omitempty"`
	// StepUp is a flow's step-up policy, nil when off; SecondFactor says
	// the flow is a step-up flow.
	StepUp       *stepUpJSON `json:"step_up,omitempty"`
	SecondFactor bool        `json:"second_factor,omitempty"`
	// SuccessClears names the flows whose counters of the account a settled
	// success of this flow clears.
	SuccessClears []string `json:"success_clears,omitempty"`
	// RevokeDevicesOnPasswordChange says a password_changed report revokes
	// the device tokens the flow trusts: for a send flow, as the flow
	// RevokeDevicesFollows names says (a send flow may not state it).
	RevokeDevicesOnPasswordChange bool `json:"revoke_devices_on_password_change,omitempty"`
	// RevokeDevicesFollows names, for a send flow, the flow of its trust
	// group whose revoke_devices_on_password_change it follows; empty for
	// any other flow, and for a send flow whose group issues no tokens.
	RevokeDevicesFollows string     `json:"revoke_devices_follows,omitempty"`
	Rules                []ruleJSON `json:"rules"`
}

// stepUpJSON is a flow's step-up policy by its config keys.
type stepUpJSON struct {
	Flow                string `json:"flow"`
	Breached            bool   `json:"breached"`
	UnderAttackFailures int    `json:"under_attack_failures"`
	NewDeviceFailures   int    `json:"new_device_failures"`
	Escalated           bool   `json:"escalated"`
	TTL                 string `json:"ttl"`
}

// boundJSON is a flow's daily bound (authguard.Flow.MaxFailuresPerDay).
type boundJSON struct {
	Max       int  `json:"max"`
	Exact     bool `json:"exact"`
	AboveNIST bool `json:"above_nist"`
}

type sendJSON struct {
	AllowCountries          []string `json:"allow_countries"`
	DenyCountries           []string `json:"deny_countries"`
	DenyNumberTypes         []string `json:"deny_number_types"`
	DestinationPrefixDigits int      `json:"destination_prefix_digits"`
	OwnerCodes              int      `json:"owner_codes"`
}

type ruleJSON struct {
	Name      string `json:"name"`
	Key       string `json:"key"`
	Subject   string `json:"subject"`
	Algorithm string `json:"algorithm"`
	Counts    string `json:"counts"`
	Past      string `json:"past"`
	Clients   string `json:"clients"`
	Reason    string `json:"reason"`
	Cost      int    `json:"cost"`
	PriceCost bool   `json:"price_cost,omitempty"`
	// Limit is the sentence -print's LIMIT column says.
	Limit   string       `json:"limit"`
	Backoff *backoffJSON `json:"backoff,omitempty"`
	Of      string       `json:"of,omitempty"`
	// Breached says a distinct rule counts failures reported breached only.
	Breached bool         `json:"breached,omitempty"`
	Windows  []windowJSON `json:"windows,omitempty"`
	Rate     *rateJSON    `json:"rate,omitempty"`
	// MaxFailuresPerDay is a backoff rule's own bound on its subject.
	MaxFailuresPerDay *int `json:"max_failures_per_day,omitempty"`
}

type backoffJSON struct {
	Free        int     `json:"free"`
	Base        string  `json:"base"`
	Factor      float64 `json:"factor"`
	Max         string  `json:"max"`
	ForgetAfter string  `json:"forget_after"`
	DeviceFree  int     `json:"device_free,omitempty"`
	DeviceSlots int     `json:"device_slots,omitempty"`
}

type windowJSON struct {
	Window string `json:"window"`
	Limit  int    `json:"limit"`
}

// rateJSON is a rate rule's parameters, by their config keys: window and
// limit, or interval (one unit per interval; the file's rate) and limit, or
// conversion's window, min_volume and min_conversion.
type rateJSON struct {
	Window        string `json:"window,omitempty"`
	Interval      string `json:"interval,omitempty"`
	Limit         int    `json:"limit,omitempty"`
	MinVolume     int    `json:"min_volume,omitempty"`
	MinConversion int    `json:"min_conversion,omitempty"`
}

// boundOf is a check-and-report flow's daily bound, nil for a send flow or
// an unbounded one (authguard.Flow.FailureBound).
func boundOf(f *authguard.Flow) *boundJSON {
	b, ok := f.FailureBound()
	if !ok {
		return nil
	}
	return &boundJSON{Max: b.Max, Exact: b.Exact, AboveNIST: b.Max > NISTMaxFailures}
}

// tokensPhrase says what device tokens -print's flow line says a flow
// issues: a send flow issues none (its kind is said instead), nor does a
// step-up flow, whose pass answers the stepped-up flow's token.
func tokensPhrase(f *authguard.Flow) string {
	switch {
	case f.Kind == authguard.Sends:
		return "kind send"
	case f.SecondFactor:
		return "no device tokens of its own"
	}
	return fmt.Sprintf("device tokens of %q", f.DeviceTrust)
}

// successClearsLine says which flows' counters of the account a settled
// success of f clears (success_clears); "" when none.
func successClearsLine(f *authguard.Flow) string {
	if len(f.SuccessClears) == 0 {
		return ""
	}
	return "success_clears: a settled success clears the account's counters in " + strings.Join(f.SuccessClears, ", ") + " (its rules on the account alone and its devices' shared counter, never an address's)"
}

// budgetLine says how many failed checks one account can have in a flow in
// any 24 hours (authguard.Flow.BudgetLine).
func budgetLine(f *authguard.Flow) string { return f.BudgetLine() }

func flowsJSON(p *authguard.Policy) []flowJSON {
	var out []flowJSON
	for _, name := range p.FlowNames() {
		f := p.Flow(name)
		fj := flowJSON{
			Name: f.Name, Kind: f.Kind.String(), Mode: f.Mode.String(), FailMode: f.FailMode.String(),
			IPv6Prefix: f.Grouping.IPv6Bits, AllowListRanges: f.AllowList.Len(), Verifies: f.Verifies,
			Requires: append([]string{}, f.Requires()...), Bound: boundOf(f), Rules: []ruleJSON{},
		}
		if fj.IPv6Prefix == 0 {
			fj.IPv6Prefix = 64
		}
		if su := f.StepUp; su.Flow != "" {
			fj.StepUp = &stepUpJSON{Flow: su.Flow, Breached: !su.BreachedOff, UnderAttackFailures: su.UnderAttackFailures,
				NewDeviceFailures: su.NewDeviceFailures, Escalated: !su.EscalatedOff, TTL: dur(su.TTL)}
		}
		fj.SecondFactor = f.SecondFactor
		fj.SuccessClears = append([]string(nil), f.SuccessClears...)
		on, from := p.DeviceRevocation(f)
		fj.RevokeDevicesOnPasswordChange = on
		if f.Kind == authguard.Sends {
			fj.RevokeDevicesFollows = from
		}
		if f.FailMode == authguard.FailClosed {
			fj.FailClosedRetry = dur(f.FailClosedRetry)
		}
		if f.Kind == authguard.Sends {
			sp := f.Send
			sj := &sendJSON{AllowCountries: append([]string{}, sp.AllowCountries...), DenyCountries: append([]string{}, sp.DenyCountries...),
				DenyNumberTypes: []string{}, DestinationPrefixDigits: sp.PrefixDigits, OwnerCodes: sp.OwnerCodes}
			for _, t := range sp.DenyTypes {
				sj.DenyNumberTypes = append(sj.DenyNumberTypes, t.String())
			}
			fj.Send = sj
		} else if !f.SecondFactor { // a step-up flow issues no device tokens of its own
			fj.DeviceTrust = f.DeviceTrust
		}
		for _, r := range f.Rules {
			fj.Rules = append(fj.Rules, ruleJSONOf(r))
		}
		out = append(out, fj)
	}
	return out
}

func ruleJSONOf(r authguard.Rule) ruleJSON {
	rj := ruleJSON{
		Name: r.Name, Key: r.Key, Subject: r.Subject.String(), Algorithm: r.Algorithm.String(), Counts: r.Counts.String(),
		Past: r.Past.String(), Clients: r.Clients.String(), Reason: string(r.Reason), Cost: r.Cost, PriceCost: r.PriceCost,
		Limit: r.Describe(dur),
	}
	switch r.Algorithm.Param() {
	case authguard.ParamBackoff:
		b := r.Backoff
		rj.Backoff = &backoffJSON{Free: b.Free, Base: dur(b.Base), Factor: b.Factor, Max: dur(b.Max), ForgetAfter: dur(b.ForgetAfter),
			DeviceFree: r.DeviceFree, DeviceSlots: r.DeviceSlots}
		if r.Subject.Parts == authguard.PartAccount || r.Subject.Parts == authguard.PartDevice {
			n := b.MaxFailuresIn(24 * time.Hour)
			rj.MaxFailuresPerDay = &n
		}
	case authguard.ParamWindows:
		rj.Of = authguard.Subject{Parts: r.Of}.String()
		rj.Breached = r.Breached
		for _, w := range r.Windows {
			rj.Windows = append(rj.Windows, windowJSON{Window: dur(w.Length), Limit: w.Limit})
		}
	case authguard.ParamConversion:
		rj.Rate = &rateJSON{Window: dur(r.Rate.Window), MinVolume: r.Rate.Limit, MinConversion: r.Rate.MinPercent}
	default:
		if len(r.Windows) > 0 { // sliding_log counting failures
			for _, w := range r.Windows {
				rj.Windows = append(rj.Windows, windowJSON{Window: dur(w.Length), Limit: w.Limit})
			}
			break
		}
		rj.Rate = &rateJSON{Limit: r.Rate.Limit}
		if r.Rate.Window > 0 {
			rj.Rate.Window = dur(r.Rate.Window)
		}
		if r.Rate.Interval > 0 {
			rj.Rate.Interval = dur(r.Rate.Interval)
		}
	}
	return rj
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// budgetPhrase is how a bound is said: "at most" when exact, "at least"
// beyond backoff.MaxExact.
func budgetPhrase(exact bool) string {
	if exact {
		return "at most"
	}
	return "at least"
}
