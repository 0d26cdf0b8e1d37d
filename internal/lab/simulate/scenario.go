package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// Limits that keep one scenario's cost bounded.
const (
	// MaxDuration caps a scenario's simulated time.
	MaxDuration = 31 * 24 * time.Hour
	// MaxGenerated caps {generate: N}, {random_ipv4: N} and count.
	MaxGenerated = 100_000
	// MaxBurst caps an actor's burst.
	MaxBurst = 1000
	// MaxTypos caps an actor's typos.
	MaxTypos = 20
	// MaxLogins caps the logins one actor may start in a scenario.
	MaxLogins = 5_000_000
	// MaxStoreEntries caps store.max_entries.
	MaxStoreEntries = 10_000_000
	// MaxReplays caps an actor's report_replays.
	MaxReplays = 10
	// MaxPhaseLogins caps second_phase.logins.
	MaxPhaseLogins = 10_000
	// MaxInstances caps a scenario's instances.
	MaxInstances = 8
)

// Scenario is a parsed scenario file. ParseScenario describes the format.
type Scenario struct {
	// Name is the scenario's title.
	Name string
	// Duration is the simulated time the scenario covers.
	Duration time.Duration
	// Seed seeds every random choice: the same seed gives the same run. The
	// default is 1.
	Seed uint64
	// Store configures the memory store the engines run on.
	Store StoreOptions
	// Instances is the number of engines, each with its own memory of
	// what it computed but all on the one store, as tollgate instances
	// behind a load balancer share one Redis; each actor's calls go to
	// its Instance. The default is 1.
	Instances int
	// Actors are the attackers and users, in file order.
	Actors []*Actor
	// Expect are the expectations, in file order.
	Expect []Expectation

	file  string     // as given to ParseScenario, for errors
	flows *yaml.Node // the flows mapping, added to the run's policy; nil for none
}

// StoreOptions configure the memory store of a run.
type StoreOptions struct {
	// MaxEntries caps the keys the store keeps; the least recently used are
	// evicted beyond it. Zero means the memory store's default (1,000,000).
	MaxEntries int
}

// Actor is one attacker script or one group of users.
type Actor struct {
	// Name names the actor in expectations and output.
	Name string
	// Flow is the policy flow the actor's checks, or sends, name. The
	// default is "login", or "otp_send" for a send actor.
	Flow string
	// Accounts are the accounts the actor logs in to. A send actor needs
	// none; when it has some, they are the accounts its codes are for
	// (authguard.SendRequest.Account).
	Accounts Accounts
	// Destinations, set for a send actor only, are the phone numbers or
	// e-mail addresses it asks codes to be sent to. An actor with
	// destinations is a send actor: its flow must be a send flow (kind:
	// send), and each of its logins is one send.
	Destinations Destinations
	// Channel is how a send actor's codes go: sms, voice, whatsapp or
	// email. The default is sms.
	Channel authguard.Channel
	// IPs are the addresses the actor logs in from.
	IPs IPs
	// Rate, for a rate actor, is how often it starts a login, across the
	// whole actor. It is zero for an every actor.
	Rate config.Rate
	// Every, for an every actor, is how often each account logs in. It is
	// zero for a rate actor.
	Every time.Duration
	// Burst is how many logins start at the same instant, run concurrently.
	// The default is 1.
	Burst int
	// Start and Stop bound the actor's activity, as offsets from the
	// scenario's start. The defaults are 0 and the scenario's Duration.
	Start, Stop time.Duration
	// Outcome is how the last attempt of a login ends. The default is
	// Failure, or Success when Typos or TypoRate is set; zero for a send
	// actor.
	Outcome authguard.Outcome
	// Typos is the number of failed attempts before each login's success.
	Typos int
	// TypoRate is the probability that a login starts with one more typo.
	TypoRate float64
	// Password, when set, is the password of every last attempt, so that
	// they share one fingerprint; empty means a different random password
	// each attempt.
	Password string
	// ObeysDelay makes the actor wait out a delay and retry; otherwise it
	// gives up on that login. It also makes the actor hold a proceed that
	// comes with a delay (a leaky_bucket rule's place in its queue) that
	// long and then go ahead without checking again; otherwise it goes
	// ahead at once. The default is true.
	ObeysDelay bool
	// SolvesCaptcha is the share of the CAPTCHAs the actor is asked that it
	// solves, from 0 to 1, at a price to it (ActorResult.CaptchaSolved
	// counts them): it solves one and checks again at once, otherwise it
	// gives up on that login. The k-th CAPTCHA (from 1) is solved when
	// ⌊k×SolvesCaptcha⌋ > ⌊(k-1)×SolvesCaptcha⌋, so that a share of 0.25
	// solves the 4th, 8th, 12th…: spread evenly, and the same in every run.
	// The default is 1 (true); false is 0.
	SolvesCaptcha float64
	// DeviceToken makes the actor keep, per account, the device token its
	// successes return, and send it with later checks and reports. The
	// default is false.
	DeviceToken bool
	// Breached makes every report of the actor say the password is in a
	// breached-password corpus (ReportRequest.Breached): a stuffer's leaked
	// pairs, or an owner who reused hers. The default is false.
	Breached bool
	// PassesStepUp makes the actor pass the second factor a step_up
	// verdict asks for (a step_up_passed report with its ticket, on the
	// flow's step-up flow): an owner with her phone. The default is false:
	// a stuffer holds the password only.
	PassesStepUp bool
	// DeviceTokenFrom names another actor, one with DeviceToken, whose
	// device token for the account attacked the actor sends with each
	// attempt: a thief with a stolen cookie. Empty means none.
	DeviceTokenFrom string
	// MintsDeviceTokenIn names a flow in which, before each attempt, the
	// actor logs in successfully to the same account from the same address,
	// to send the fresh device token that returns with the attempt. Empty
	// means none.
	MintsDeviceTokenIn string
	// VerifiesIn, for a send actor, names a flow that verifies its send
	// flow's codes (such as otp_verify): after each code sent, the actor
	// checks it there and reports a success that names the destination, as
	// a real user who types the code does. Empty means codes are never
	// verified, as a pumper's are not.
	VerifiesIn string
	// StopsAtCaptcha makes the actor stop for good at its first CAPTCHA:
	// it neither solves it nor attempts anything after it. The default is
	// false. An attack search that scores what comes before the first
	// CAPTCHA sets it, so that the rest of the day costs no time.
	StopsAtCaptcha bool
	// GuessesAt, set for a check actor only, are destinations whose
	// one-time codes its checks guess at: each check and report of a login
	// names one of them (in turn, as a send actor takes its destinations)
	// and Channel, as a caller of a flow that verifies a send flow's codes
	// does (authguard.CheckRequest.Destination). Empty means its checks
	// name none.
	GuessesAt Destinations
	// ReportToken is which attempt token the reports of a check actor
	// carry: the one their check returned (ReportOwn, the default), none
	// (ReportNone), the one the actor's previous check that proceeded
	// returned (ReportForeign: another attempt's, of the same account or
	// another one), or no report at all (ReportSkip).
	ReportToken ReportToken
	// ReportReplays is how many more times a check actor sends each of its
	// reports, at once and unchanged: a replay. The default is 0.
	ReportReplays int
	// OwnSuccess, when OwnSuccess.Every is set, makes a check actor log in
	// to an account it owns between its attempts (ParseScenario describes
	// it).
	OwnSuccess OwnSuccess
	// SecondPhase, when SecondPhase.Logins is set, makes a rate actor start
	// that many logins at one instant, SecondPhase.At, one after another in
	// order: a burst timed to a window's edge (ParseScenario describes it).
	SecondPhase SecondPhase
	// Instance is the engine (from 1 to the scenario's Instances) the
	// actor's calls go to. The default is 1.
	Instance int
	// Tenant is the tenant every call of the actor names
	// (authguard.CheckRequest.Tenant): empty means the default tenant.
	Tenant string

	flowLine, deviceFromLine, mintLine, destLine, verifyLine, guessLine, instanceLine int
}

// ReportToken is the attempt token an actor's reports carry.
type ReportToken uint8

// The report behaviours of Actor.ReportToken.
const (
	ReportOwn ReportToken = iota
	ReportNone
	ReportForeign
	ReportSkip
)

var reportTokenNames = [...]string{"own", "none", "foreign", "skip"}

func (r ReportToken) String() string { return reportTokenNames[r] }

// OwnSuccess is an actor's own_success: every Every attempts, before the
// check, a login to Account (one the actor owns) in the actor's flow from
// the attempt's address, with the account's own password, reported a
// success with its token; with DeviceToken, the device token it returns
// goes with the actor's later attempts.
type OwnSuccess struct {
	Account     string
	Every       int
	DeviceToken bool
}

// SecondPhase is a rate actor's second_phase: Logins logins at offset At.
type SecondPhase struct {
	At     time.Duration
	Logins int
}

// Sends reports whether the actor is a send actor: one with destinations.
func (a *Actor) Sends() bool { return a.Destinations.Len() > 0 }

// users is what an every actor's users are told apart by, and what the
// cost of an actor counts: its destinations for a send actor, else its
// accounts.
func (a *Actor) users() int {
	if a.Sends() {
		return a.Destinations.Len()
	}
	return a.Accounts.Len()
}

// Accounts is an actor's accounts: a list of identifiers, Generate
// distinct identifiers named after the actor, or, when Fresh is set, a new
// identifier for every login.
type Accounts struct {
	List     []string
	Generate int
	Fresh    bool
}

// Destinations is a send actor's destinations: a list of phone numbers (in
// international format) and e-mail addresses, or Count consecutive phone
// numbers from From, which is "+" and digits, such as "+447400123000": the
// i-th (from 0) is From + i, with as many digits.
type Destinations struct {
	List  []string
	From  string
	Count int
}

// Len is the number of destinations.
func (d Destinations) Len() int {
	if d.Count > 0 {
		return d.Count
	}
	return len(d.List)
}

// IPs is an actor's address pool: a list of addresses, RandomIPv4 distinct
// random IPv4 addresses, Count distinct random addresses in RandomIPv6In,
// or, when FreshIPv6In is valid, a new address in it for every login.
type IPs struct {
	List         []string
	RandomIPv4   int
	RandomIPv6In netip.Prefix
	Count        int
	FreshIPv6In  netip.Prefix
}

// nodeError is a scenario error at a line of the file.
type nodeError struct {
	Line int
	Path string
	Msg  string
}

func (e *nodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Path, e.Msg)
}

func errAt(n *yaml.Node, path, format string, args ...any) error {
	return &nodeError{Line: max(n.Line, 1), Path: path, Msg: fmt.Sprintf(format, args...)}
}

// ParseScenario parses a scenario file; file names it in errors, which all
// name a line: "scenario.yaml: line 7: actors[0].rate: invalid rate ...".
// Unknown and duplicate keys are errors.
//
//	name: brute force on one account from a botnet   # required
//	duration: 24h                                     # required, up to 31d
//	seed: 1                                           # optional, default 1
//	store: {max_entries: 10000}                       # optional, default 1000000
//	instances: 1                                      # optional, 1 to 8 engines on the store
//	flows:                                            # optional: flows to add
//	  api:
//	    rules:
//	      - {name: ip_requests, subject: ip, algorithm: sliding_log, window: 1m, limit: 100}
//	actors:
//	  - name: attacker                 # letters, digits, '_' and '-'
//	    flow: login                    # default login
//	    accounts: [victim@example.com] # or {generate: N}, or {fresh: true}
//	    ips: {random_ipv4: 1000}       # or a list, {random_ipv6_in: PREFIX, count: N}
//	                                   # or {fresh_ipv6_in: PREFIX}
//	    rate: 1/s                      # N/s, N/m or N/h; or every: 8h
//	    burst: 1                       # default 1
//	    start: 0s                      # default 0
//	    stop: 24h                      # default duration
//	    outcome: failure               # failure | success
//	    typos: 0                       # failures before the success
//	    typo_rate: 0                   # probability of one more typo
//	    password: "hunter2"            # default: random per attempt
//	    obeys_delay: true              # default true
//	    solves_captcha: true           # default true; or the share solved, 0 to 1
//	    device_token: false            # default false
//	    device_token_from: owner       # default none; another actor's device token
//	    mints_device_token_in: login   # default none; a flow to mint device tokens in
//	    stops_at_captcha: false        # default false; stop for good at the first CAPTCHA
//	    guesses_at: ["+44 7400 123456"] # default none; the codes its checks guess at
//	                                   # (a flow with verifies:), by channel as below
//	    report_token: own              # own (default), none, foreign or skip
//	    report_replays: 0              # default 0; each report sent again N times
//	    own_success: {account: me@example.net, every: 10, device_token: false}
//	                                   # default none; logins to an account it owns
//	    second_phase: {at: 1h0m1s, logins: 100} # default none (rate actors only)
//	    instance: 1                    # default 1; the engine its calls go to
//	    tenant: default                # default: the default tenant
//	  - name: pumper                   # a send actor: one with destinations
//	    flow: otp_send                 # default otp_send; a send flow
//	    destinations: ["+44 7400 123456", a@example.com]
//	                                   # or {sequential: {from: "+44 7400 123000", count: N}}
//	    channel: sms                   # sms (default), voice, whatsapp or email
//	    verifies_in: otp_verify        # default none; verify each code sent there
//	    ips: {random_ipv4: 1000}
//	    rate: 1/s                      # accounts: optional; obeys_delay, solves_captcha,
//	                                   # burst, start, stop as above
//	expect:
//	  attacker.proceeded: "<= 100"
//
// flows adds flows to the policy the run uses (the built-in policy, or the
// one Run is given), in exactly the format of a config file's flows
// (internal/policyfile/default_policy.yaml documents it): each a new flow,
// empty or from a template. A flow the policy already has is an error,
// here for the built-in flows and in Run for the others: changing a flow
// is the config file's job. Actors name the flows with flow. A flow whose
// rules count no account does not need one; the actors send theirs all the
// same.
//
// store.max_entries (1 to 10,000,000) caps the keys of the engine's memory
// store, which evicts the least recently used beyond it, so that a flood
// against a small store shows eviction in seconds.
//
// ips takes any IP address text spraydetect.ParseIP accepts, IPv6 forms
// that embed an IPv4 address (6to4, Teredo, IPv4-mapped) included.
//
// accounts: {fresh: true} (rate actors only) logs every login in to a new
// account, named from a counter after the actor (fresh1@NAME.sim.example,
// fresh2@…, where NAME is the actor's name in lower case); ips:
// {fresh_ipv6_in: PREFIX} takes every login's address from PREFIX, at
// random but never in a /64 the actor has used while the prefix has unused
// ones (for a prefix longer than /64: never an address it has used while
// the prefix has unused ones). A /32 gives 2^32 fresh /64s. Both are
// generated as they are needed: a flood of millions of fresh subjects costs
// the simulator no memory per subject (only the chart's series grows, by
// one 16-byte point per instant at which a check proceeds; a burst shares
// one).
//
// device_token_from: NAME makes the actor a thief with stolen device
// tokens: each attempt (check and report) carries the device token actor
// NAME holds at that moment for the account attacked (the same account,
// however spelled), or none while it holds none. NAME must be another actor
// with device_token: true; the flows may differ.
//
// mints_device_token_in: FLOW makes the actor log in before each attempt,
// that is before every check, retries and CAPTCHA checks included: one
// check in FLOW for the same account from the same address, with no device
// token and the fingerprint of the account's own password, and, if it
// proceeds, a report of a success. The device token that success returns
// goes with the attempt; when the minting check does not proceed, the
// attempt goes without one. FLOW must be a flow of the policy (Run checks).
// It models an attacker who knows the password and logs in again and again
// for fresh device tokens to guess one-time codes with.
//
// destinations makes the actor a send actor: each of its logins is one
// send, a request for a one-time code to one of the destinations by
// channel (Run describes it). Its flow (otp_send unless flow says
// otherwise) must be a send flow (kind: send), and an actor of a send flow
// must have destinations; Run checks both against the policy it is given.
// Each destination must be valid for the channel, as authguard's
// ParseDestination decides: a phone number in international format ("+44
// 7400 123456") for sms, voice and whatsapp, an e-mail address for email.
// {sequential: {from: NUMBER, count: N}} (phone channels only) is the N
// consecutive numbers from NUMBER, each as many digits long:
// "+447400123000", "+447400123001", and so on; the first and the last are
// checked, and a send to an invalid one in between stops the run with an
// error. accounts is optional for a send actor; outcome, typos, typo_rate,
// password, device_token and mints_device_token_in mean nothing for a send
// and are errors, as channel is for an actor without destinations.
// device_token_from (with accounts) makes each send carry the device token
// the named actor holds for the send's account: the owner's login device
// asking for her code (the send flow must trust that actor's flow,
// device_trust).
//
// guesses_at (a check actor only) is a list of destinations, or
// {sequential: ...}, as destinations is, for channel (sms unless channel
// says otherwise): the destinations whose one-time codes the actor's
// checks guess at. Each login names one of them, taken in turn (an every
// actor's account i names destination i mod n), in every check and report
// (authguard.CheckRequest.Destination and Channel), so that the flow's
// rules on the destination count them. Its flow must verify a send flow's
// codes (verifies: in the policy; Run checks).
//
// An actor sets at most one of device_token: true, device_token_from,
// mints_device_token_in and own_success's device_token: true. Fresh accounts exclude device_token and
// device_token_from: no fresh account logs in twice, so there would never
// be a token to send.
//
// solves_captcha is true (every CAPTCHA solved), false (none) or the
// share solved, from 0 to 1: the k-th CAPTCHA the actor is asked is solved
// when ⌊k×share⌋ > ⌊(k−1)×share⌋, so that 0.25 solves every fourth, the
// same in every run. captcha_solved counts those solved: what a CAPTCHA
// farm bills.
//
// report_token (check actors only) is which attempt token the actor's
// reports carry: own, the one their check returned (as a correct caller
// does); none, no token; foreign, the token the actor's previous check
// that proceeded returned, for the same account or another (the first
// report carries none); skip, no report at all. The engine refuses a token
// issued for another account, and reports_refused counts those refusals.
// report_replays: N (0 to 10) sends each report N more times at once,
// unchanged. Whatever is reported, failures_max_24h counts each wrong
// password a check let through once: the guesses made.
//
// own_success: {account: ACCOUNT, every: N, device_token: BOOL} (check
// actors only) logs the actor in to ACCOUNT, an account it owns, before
// its 1st, (N+1)-th, (2N+1)-th… attempt (counting every check): one check
// in its flow from the attempt's address with that account's own password
// and, if it proceeds, a report of a success with its token, to earn what
// a success earns (a refund of that attempt, a device token).
// device_token: true sends the device token the last such success
// returned with the actor's attempts. own_logins counts those checks and
// own_refused those that did not proceed.
//
// second_phase: {at: OFFSET, logins: N} (rate actors only; N up to
// 10,000) starts N logins at the one instant OFFSET (from start to before
// stop), one after another in order, each taking the script's next
// account, address and destination: a burst timed to a window's edge or
// to a counter's forget_after, which the search sets from the policy. A
// login of the phase answered a delay, or held by one, is dropped there;
// the script goes on as before.
//
// instances: N (1 to 8) runs N engines, each with its own memory, on the
// one store, as N tollgate instances share one Redis; an actor's calls go
// to its instance (1 to N, default 1).
//
// tenant names the tenant of every call the actor makes (1 to 64
// lower-case letters, digits, '-' and '_', starting with a letter or
// digit, as the API takes it): tenants are separate key spaces, each
// with its own counters.
//
// An expectation names an actor, or several joined by "+" whose counters
// it adds up ("thief+attacker.failures_max_24h": the account's failures
// from both; for the *_max_24h counters that is the sum of each one's
// most, which in a run longer than 24 hours can exceed the most of the
// sum), and one of Fields: attempts, proceeded,
// delayed, captcha, denied, accounts_checked and
// accounts_checked_before_captcha (see ActorResult); proceeded_max_24h, the most proceeded checks in any 24
// hours [t, t+24h) of the run, and failures_max_24h, the most reports of a
// failure in any 24 hours (each follows a proceeded check); mint_logins,
// the minting checks of mints_device_token_in, and mint_refused, those of
// them that did not proceed; delay_seconds, the seconds of delay the actor
// was answered (see ActorResult); spent, the price units of the codes a
// send actor's sends that proceeded cost (the send flow's prices);
// captcha_solved, reports_refused, own_logins and own_refused, as above.
func ParseScenario(file string, data []byte) (*Scenario, error) {
	sc, err := parseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sc.file = file
	return sc, nil
}

func parseScenario(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &nodeError{Line: 1, Msg: "the scenario is empty"}
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, &nodeError{Line: max(line, 1), Msg: "a scenario file holds one YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, &nodeError{Line: 1, Msg: "the scenario is empty"}
	}
	sc := new(Scenario)
	if err := sc.UnmarshalYAML(doc.Content[0]); err != nil {
		return nil, err
	}
	return sc, nil
}

// yamlError turns "yaml: line 3: ..." into a nodeError-like message without
// the package prefix.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if !strings.HasPrefix(msg, "line ") {
		msg = "line 1: " + msg
	}
	return errors.New(msg)
}

// UnmarshalYAML implements yaml.Unmarshaler: it decodes and validates a
// whole scenario from its top-level mapping.
func (sc *Scenario) UnmarshalYAML(n *yaml.Node) error {
	if err := rejectAliases(n); err != nil {
		return err
	}
	f := scenarioFields{Seed: 1, Instances: 1}
	seen, err := decodeMapping(n, "", "a mapping with name, duration, actors and expect", &f)
	if err != nil {
		return err
	}
	for _, k := range []string{"name", "duration", "actors"} {
		if seen[k] == nil {
			return errAt(n, "", "%s is required", k)
		}
	}
	*sc = Scenario{
		Name:      string(f.Name),
		Duration:  time.Duration(f.Duration),
		Seed:      uint64(f.Seed),
		Store:     StoreOptions{MaxEntries: int(f.Store.MaxEntries)},
		Instances: int(f.Instances),
		flows:     f.Flows.Node,
	}
	names := map[string]bool{}
	for i, an := range f.Actors {
		p := fmt.Sprintf("actors[%d]", i)
		a, err := decodeActor(an, p, sc.Duration)
		if err != nil {
			return err
		}
		if names[a.Name] {
			return errAt(an, p+".name", "another actor is named %q", a.Name)
		}
		if a.Instance > sc.Instances {
			return &nodeError{Line: a.instanceLine, Path: p + ".instance", Msg: fmt.Sprintf("%d is more than the scenario's instances (%d)", a.Instance, sc.Instances)}
		}
		names[a.Name] = true
		sc.Actors = append(sc.Actors, a)
	}
	for i, a := range sc.Actors {
		if a.DeviceTokenFrom == "" {
			continue
		}
		at := func(format string, args ...any) error {
			return &nodeError{Line: a.deviceFromLine, Path: fmt.Sprintf("actors[%d].device_token_from", i), Msg: fmt.Sprintf(format, args...)}
		}
		switch from := sc.actor(a.DeviceTokenFrom); {
		case from == a:
			return at("an actor cannot take device tokens from itself")
		case from == nil:
			return at("unknown actor %q", a.DeviceTokenFrom)
		case !from.DeviceToken:
			return at("actor %q holds no device tokens (it needs device_token: true)", a.DeviceTokenFrom)
		}
	}
	if f.Expect.Node != nil {
		if sc.Expect, err = parseExpectations(f.Expect.Node, "expect", names); err != nil {
			return err
		}
	}
	return nil
}

// scenarioFields is a scenario's top-level mapping.
type scenarioFields struct {
	Name      text        `yaml:"name"`
	Duration  span        `yaml:"duration"`
	Seed      seed        `yaml:"seed"`
	Store     storeFields `yaml:"store"`
	Instances instances   `yaml:"instances"`
	Flows     flowsNode   `yaml:"flows"`
	Actors    actorNodes  `yaml:"actors"`
	Expect    expectNode  `yaml:"expect"`
}

// storeFields is store.
type storeFields struct {
	MaxEntries maxEntries `yaml:"max_entries"`
}

func (st *storeFields) decode(n *yaml.Node, path string) error {
	seen, err := decodeMapping(n, path, "{max_entries: N}", st)
	if err == nil && seen["max_entries"] == nil {
		err = errAt(n, path, "max_entries is required")
	}
	return err
}

// flowsNode is flows, checked against the built-in policy now, for the
// line; Run adds them to the policy it is given.
type flowsNode struct{ *yaml.Node }

func (f *flowsNode) decode(n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return errAt(n, path, "want a mapping of flow names to flows, as in a config file")
	}
	if _, err := addFlows(config.DefaultPolicy(), n); err != nil {
		return err
	}
	f.Node = n
	return nil
}

// actorNodes is actors, each decoded by decodeActor once the scenario's
// duration is known.
type actorNodes []*yaml.Node

func (a *actorNodes) decode(n *yaml.Node, path string) error {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return errAt(n, path, "want a list of at least one actor")
	}
	*a = n.Content
	return nil
}

// expectNode is expect, decoded by parseExpectations once the actors are
// known.
type expectNode struct{ *yaml.Node }

func (e *expectNode) decode(n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return errAt(n, path, `want a mapping of "actor.field": "<op> number"`)
	}
	e.Node = n
	return nil
}

// addFlows returns base with the flows of n, a scenario's flows mapping,
// added; its errors name a line of the scenario, as the others do:
// "line 12: flows.api.rules[ip_rate]: ..." (a *config.Error).
func addFlows(base *authguard.Policy, n *yaml.Node) (*authguard.Policy, error) {
	return config.AddFlows(base, n)
}

// actor returns the actor named name, or nil.
func (sc *Scenario) actor(name string) *Actor {
	for _, a := range sc.Actors {
		if a.Name == name {
			return a
		}
	}
	return nil
}

var actorNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// actorFields is one actor's mapping.
type actorFields struct {
	Name               actorName   `yaml:"name"`
	Flow               text        `yaml:"flow"`
	Accounts           Accounts    `yaml:"accounts"`
	Destinations       *yaml.Node  `yaml:"destinations"` // decoded once the channel is known
	Channel            channel     `yaml:"channel"`
	IPs                IPs         `yaml:"ips"`
	Rate               rate        `yaml:"rate"`
	Every              interval    `yaml:"every"`
	Burst              burst       `yaml:"burst"`
	Start              offset      `yaml:"start"`
	Stop               offset      `yaml:"stop"`
	Outcome            outcome     `yaml:"outcome"`
	Typos              typos       `yaml:"typos"`
	TypoRate           probability `yaml:"typo_rate"`
	Password           text        `yaml:"password"`
	ObeysDelay         toggle      `yaml:"obeys_delay"`
	SolvesCaptcha      share       `yaml:"solves_captcha"`
	DeviceToken        toggle      `yaml:"device_token"`
	Breached           toggle      `yaml:"breached"`
	PassesStepUp       toggle      `yaml:"passes_step_up"`
	DeviceTokenFrom    actorRef    `yaml:"device_token_from"`
	VerifiesIn         text        `yaml:"verifies_in"`
	MintsDeviceTokenIn text        `yaml:"mints_device_token_in"`
	StopsAtCaptcha     toggle      `yaml:"stops_at_captcha"`
	GuessesAt          *yaml.Node  `yaml:"guesses_at"` // decoded once the channel is known
	ReportToken        reportToken `yaml:"report_token"`
	ReportReplays      replays     `yaml:"report_replays"`
	OwnSuccess         ownSuccess  `yaml:"own_success"`
	SecondPhase        secondPhase `yaml:"second_phase"`
	Instance           instance    `yaml:"instance"`
	Tenant             tenant      `yaml:"tenant"`
}

// decodeActor decodes actor n, at path, of a scenario total long, and
// checks what spans its keys.
func decodeActor(n *yaml.Node, path string, total time.Duration) (*Actor, error) {
	f := actorFields{Burst: 1, ObeysDelay: true, SolvesCaptcha: 1, Instance: 1}
	seen, err := decodeMapping(n, path, "an actor: a mapping with name, accounts, ips and rate or every", &f)
	if err != nil {
		return nil, err
	}
	a := &Actor{
		Name:               string(f.Name),
		Flow:               string(f.Flow),
		Accounts:           f.Accounts,
		Channel:            authguard.Channel(f.Channel),
		IPs:                f.IPs,
		Rate:               config.Rate(f.Rate),
		Every:              time.Duration(f.Every),
		Burst:              int(f.Burst),
		Start:              time.Duration(f.Start),
		Stop:               time.Duration(f.Stop),
		Typos:              int(f.Typos),
		TypoRate:           float64(f.TypoRate),
		Password:           string(f.Password),
		ObeysDelay:         bool(f.ObeysDelay),
		SolvesCaptcha:      float64(f.SolvesCaptcha),
		DeviceToken:        bool(f.DeviceToken),
		Breached:           bool(f.Breached),
		PassesStepUp:       bool(f.PassesStepUp),
		DeviceTokenFrom:    string(f.DeviceTokenFrom),
		MintsDeviceTokenIn: string(f.MintsDeviceTokenIn),
		VerifiesIn:         string(f.VerifiesIn),
		StopsAtCaptcha:     bool(f.StopsAtCaptcha),
		ReportToken:        ReportToken(f.ReportToken),
		ReportReplays:      int(f.ReportReplays),
		OwnSuccess:         OwnSuccess(f.OwnSuccess),
		SecondPhase:        SecondPhase(f.SecondPhase),
		Instance:           int(f.Instance),
		Tenant:             string(f.Tenant),

		instanceLine:   lineOf(seen["instance"]),
		flowLine:       lineOf(seen["flow"]),
		deviceFromLine: lineOf(seen["device_token_from"]),
		mintLine:       lineOf(seen["mints_device_token_in"]),
		destLine:       lineOf(seen["destinations"]),
		verifyLine:     lineOf(seen["verifies_in"]),
		guessLine:      lineOf(seen["guesses_at"]),
	}
	destNode, outcome := f.Destinations, authguard.Outcome(f.Outcome)
	for _, k := range []string{"name", "accounts", "ips"} {
		if seen[k] == nil && (k != "accounts" || destNode == nil) {
			return nil, errAt(n, path, "%s is required", k)
		}
	}
	switch {
	case seen["rate"] != nil && seen["every"] != nil:
		return nil, errAt(seen["every"], path+".every", "set rate or every, not both")
	case seen["rate"] == nil && seen["every"] == nil:
		return nil, errAt(n, path, "rate or every is required")
	}
	if seen["flow"] == nil {
		a.Flow, a.flowLine = "login", n.Line
		if destNode != nil {
			a.Flow = authguard.DefaultSendFlow
		}
	}

	// Sends.
	if destNode != nil {
		var moot []string
		for _, k := range []string{"outcome", "typos", "typo_rate", "password", "device_token", "breached", "passes_step_up", "mints_device_token_in",
			"report_token", "report_replays", "own_success"} {
			if seen[k] != nil {
				moot = append(moot, k)
			}
		}
		if len(moot) > 0 {
			slices.SortStableFunc(moot, func(x, y string) int { return seen[x].Line - seen[y].Line })
			return nil, errAt(seen[moot[0]], path+"."+moot[0], "means nothing for a send actor (one with destinations)")
		}
		if a.Channel == 0 {
			a.Channel = authguard.ChannelSMS
		}
		if a.Destinations, err = decodeDestinations(destNode, path+".destinations", a.Channel); err != nil {
			return nil, err
		}
		if seen["device_token_from"] != nil && seen["accounts"] == nil {
			return nil, errAt(seen["device_token_from"], path+".device_token_from", "a send carries a device token with its account: set accounts")
		}
		if seen["guesses_at"] != nil {
			return nil, errAt(seen["guesses_at"], path+".guesses_at", "goes with a check actor, not a send actor (one with destinations)")
		}
	} else {
		for _, k := range []string{"channel", "verifies_in"} {
			if seen[k] != nil && (k != "channel" || seen["guesses_at"] == nil) {
				return nil, errAt(seen[k], path+"."+k, "goes with destinations (a send actor) or guesses_at")
			}
		}
		if f.GuessesAt != nil {
			if a.Channel == 0 {
				a.Channel = authguard.ChannelSMS
			}
			if a.GuessesAt, err = decodeDestinations(f.GuessesAt, path+".guesses_at", a.Channel); err != nil {
				return nil, err
			}
		}
	}

	// Device tokens.
	var sources []string
	for _, k := range []string{"device_token", "device_token_from", "mints_device_token_in", "own_success"} {
		if seen[k] != nil && (k != "device_token" || a.DeviceToken) && (k != "own_success" || a.OwnSuccess.DeviceToken) {
			sources = append(sources, k)
		}
	}
	if len(sources) > 1 {
		slices.SortStableFunc(sources, func(x, y string) int { return seen[x].Line - seen[y].Line })
		return nil, errAt(seen[sources[1]], path+"."+sources[1],
			"set only one of device_token: true, device_token_from, mints_device_token_in and own_success.device_token: true (%s is set)", sources[0])
	}
	if a.Accounts.Fresh {
		switch {
		case a.Every > 0:
			return nil, errAt(seen["accounts"], path+".accounts", "{fresh: true} needs rate: an every actor logs each account in again and again")
		case a.DeviceToken:
			return nil, errAt(seen["device_token"], path+".device_token", "no fresh account logs in twice, so a device token is never sent")
		case a.DeviceTokenFrom != "":
			return nil, errAt(seen["device_token_from"], path+".device_token_from", "no other actor holds a device token for a fresh account")
		}
	}

	// Times.
	if seen["stop"] == nil {
		a.Stop = total
	}
	if a.Start >= total {
		return nil, errAt(seen["start"], path+".start", "%v is not before the scenario's end (%v)", a.Start, total)
	}
	if a.Stop > total {
		return nil, errAt(seen["stop"], path+".stop", "%v is after the scenario's end (%v)", a.Stop, total)
	}
	if a.Stop <= a.Start {
		return nil, errAt(seen["stop"], path+".stop", "%v is not after start (%v)", a.Stop, a.Start)
	}
	if ph := seen["second_phase"]; ph != nil {
		switch {
		case a.Every > 0:
			return nil, errAt(ph, path+".second_phase", "goes with rate: an every actor's users keep their own times")
		case a.SecondPhase.At < a.Start || a.SecondPhase.At >= a.Stop:
			return nil, errAt(ph, path+".second_phase.at", "%v is not from start (%v) to before stop (%v)", a.SecondPhase.At, a.Start, a.Stop)
		}
	}

	// Outcome, of logins only.
	if !a.Sends() {
		a.Outcome = authguard.Failure
	}
	if a.Typos > 0 || a.TypoRate > 0 {
		a.Outcome = authguard.Success
	}
	if seen["outcome"] != nil {
		if outcome == authguard.Failure && a.Outcome == authguard.Success {
			return nil, errAt(seen["outcome"], path+".outcome", "failure contradicts typos and typo_rate, which end every login in a success")
		}
		a.Outcome = outcome
	}

	// Cost.
	var logins float64
	costNode, costPath := seen["rate"], path+".rate"
	if a.Every > 0 {
		costNode, costPath = seen["every"], path+".every"
		logins = float64(a.users()) * math.Ceil(float64(a.Stop-a.Start)/float64(a.Every)) * float64(a.Burst)
	} else {
		logins = float64(a.Stop-a.Start)/float64(a.Rate.Interval()) + float64(a.SecondPhase.Logins)
	}
	if logins > MaxLogins {
		return nil, errAt(costNode, costPath, "starts about %.0f logins; the simulator runs at most %d per actor", logins, MaxLogins)
	}
	return a, nil
}

// Len is the number of accounts; zero for Fresh, which has no end.
func (ac Accounts) Len() int {
	if ac.Generate > 0 {
		return ac.Generate
	}
	return len(ac.List)
}

// scalarList decodes a non-empty list of at most MaxGenerated strings
// (plural names them in errors, one is what each must be), each checked by
// check.
func scalarList(n *yaml.Node, path, plural, one string, check func(item *yaml.Node, p, s string) error) ([]string, error) {
	if len(n.Content) == 0 {
		return nil, errAt(n, path, "want at least one %s", strings.TrimSuffix(plural, "s"))
	}
	if len(n.Content) > MaxGenerated {
		return nil, errAt(n, path, "at most %d %s", MaxGenerated, plural)
	}
	list := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, err := scalar(item, p, one)
		if err != nil {
			return nil, err
		}
		if err := check(item, p, s); err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, nil
}

func (ac *Accounts) decode(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var err error
		ac.List, err = scalarList(n, path, "accounts", "an account identifier", func(item *yaml.Node, p, s string) error {
			if _, err := authguard.NormalizeAccount(s); err != nil {
				var ie *authguard.InputError
				if errors.As(err, &ie) {
					return errAt(item, p, "invalid account %q: %s", s, ie.Detail)
				}
				return errAt(item, p, "invalid account %q", s)
			}
			return nil
		})
		return err
	case yaml.MappingNode:
		var f struct {
			Generate count `yaml:"generate"`
			Fresh    fresh `yaml:"fresh"`
		}
		seen, err := decodeMapping(n, path, "{generate: N} or {fresh: true}", &f)
		switch {
		case err != nil:
		case seen["generate"] != nil && seen["fresh"] != nil:
			err = errAt(seen["fresh"], path+".fresh", "set generate or fresh, not both")
		case seen["generate"] == nil && seen["fresh"] == nil:
			err = errAt(n, path, "generate or fresh is required")
		}
		ac.Generate, ac.Fresh = int(f.Generate), bool(f.Fresh)
		return err
	}
	return errAt(n, path, "want a list of accounts, {generate: N} or {fresh: true}")
}

// decodeDestinations decodes a send actor's destinations for channel ch.
func decodeDestinations(n *yaml.Node, path string, ch authguard.Channel) (Destinations, error) {
	var d Destinations
	const want = `want a list of phone numbers or e-mail addresses, or {sequential: {from: "+44 7400 123000", count: N}}`
	switch n.Kind {
	case yaml.SequenceNode:
		var err error
		d.List, err = scalarList(n, path, "destinations", "a phone number or an e-mail address", func(item *yaml.Node, p, s string) error {
			_, err := destination(item, p, ch, s)
			return err
		})
		return d, err
	case yaml.MappingNode:
		f := struct {
			Sequential sequentialField `yaml:"sequential"`
		}{sequentialField{ch: ch}}
		seen, err := decodeMapping(n, path, want, &f)
		if err == nil && seen["sequential"] == nil {
			err = errAt(n, path, want)
		}
		return f.Sequential.d, err
	}
	return d, errAt(n, path, want)
}

// sequentialField is destinations' sequential, for channel ch.
type sequentialField struct {
	ch authguard.Channel
	d  Destinations
}

// decode decodes {from: NUMBER, count: N}, checking the first and the last
// number.
func (sf *sequentialField) decode(n *yaml.Node, path string) error {
	ch := sf.ch
	var f struct {
		From  phone `yaml:"from"`
		Count count `yaml:"count"`
	}
	seen, err := decodeMapping(n, path, `{from: "+44 7400 123000", count: N}`, &f)
	if err != nil {
		return err
	}
	for _, k := range []string{"from", "count"} {
		if seen[k] == nil {
			return errAt(n, path, "%s is required", k)
		}
	}
	if !ch.Phone() {
		return errAt(n, path, "sequential numbers need a phone channel (sms, voice or whatsapp), not %s", ch)
	}
	from := string(f.From)
	first, err := destination(seen["from"], path+".from", ch, from)
	if err != nil {
		return err
	}
	d := Destinations{From: first.Normalized, Count: int(f.Count)} // From: E.164, "+" and at most 15 digits
	start, err := strconv.ParseUint(d.From[1:], 10, 64)
	if err != nil {
		return errAt(seen["from"], path+".from", "invalid phone number %q", from)
	}
	last := sequential(start, len(d.From)-1, d.Count-1)
	if len(last) != len(d.From) {
		return errAt(seen["count"], path+".count", "%s plus %d has more digits than %s", d.From, d.Count-1, d.From)
	}
	if _, err := authguard.ParseDestination(ch, last, 3); err != nil {
		return errAt(seen["count"], path+".count", "the last number, %s, is not a valid phone number", last)
	}
	sf.d = d
	return nil
}

// sequential returns the number start+i as "+" and at least width digits.
func sequential(start uint64, width, i int) string {
	return fmt.Sprintf("+%0*d", width, start+uint64(i))
}

// destination parses s, at node n, as a destination for channel ch.
func destination(n *yaml.Node, path string, ch authguard.Channel, s string) (authguard.Destination, error) {
	// The prefix length (3) matters to no check made here.
	d, err := authguard.ParseDestination(ch, s, 3)
	if err != nil {
		var ie *authguard.InputError
		if errors.As(err, &ie) {
			return d, errAt(n, path, "invalid destination %q for channel %s: %s", s, ch, ie.Detail)
		}
		return d, errAt(n, path, "invalid destination %q for channel %s", s, ch)
	}
	return d, nil
}

// Len is the number of addresses in the pool; zero for FreshIPv6In, which
// has no end.
func (ips IPs) Len() int {
	switch {
	case ips.RandomIPv4 > 0:
		return ips.RandomIPv4
	case ips.Count > 0:
		return ips.Count
	}
	return len(ips.List)
}

func (ips *IPs) decode(n *yaml.Node, path string) error {
	const want = "want a list of addresses, {random_ipv4: N}, {random_ipv6_in: PREFIX, count: N} or {fresh_ipv6_in: PREFIX}"
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return errAt(n, path, "want at least one address")
		}
		if len(n.Content) > MaxGenerated {
			return errAt(n, path, "at most %d addresses", MaxGenerated)
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			s, err := scalar(item, p, "an IP address")
			if err != nil {
				return err
			}
			if _, err := spraydetect.ParseIP(s); err != nil {
				return errAt(item, p, "invalid IP address %q", s)
			}
			ips.List = append(ips.List, s)
		}
		return nil
	case yaml.MappingNode:
		var f struct {
			RandomIPv4   count       `yaml:"random_ipv4"`
			RandomIPv6In ipv6Prefix  `yaml:"random_ipv6_in"`
			FreshIPv6In  freshPrefix `yaml:"fresh_ipv6_in"`
			Count        count       `yaml:"count"`
		}
		seen, err := decodeMapping(n, path, want, &f)
		if err != nil {
			return err
		}
		ips.RandomIPv4, ips.RandomIPv6In, ips.FreshIPv6In, ips.Count = int(f.RandomIPv4), netip.Prefix(f.RandomIPv6In), netip.Prefix(f.FreshIPv6In), int(f.Count)
		v4, v6, fresh, count := seen["random_ipv4"], seen["random_ipv6_in"], seen["fresh_ipv6_in"], seen["count"]
		switch {
		case v4 != nil && v6 != nil:
			return errAt(v6, path+".random_ipv6_in", "set random_ipv4 or random_ipv6_in, not both")
		case fresh != nil && (v4 != nil || v6 != nil):
			return errAt(fresh, path+".fresh_ipv6_in", "set one of random_ipv4, random_ipv6_in and fresh_ipv6_in")
		case v4 != nil && count != nil:
			return errAt(count, path+".count", "count goes with random_ipv6_in; random_ipv4 is the count itself")
		case fresh != nil && count != nil:
			return errAt(count, path+".count", "count goes with random_ipv6_in; fresh_ipv6_in has no end")
		case v6 != nil && count == nil:
			return errAt(n, path, "random_ipv6_in needs a count")
		case v4 == nil && v6 == nil && fresh == nil:
			return errAt(n, path, want)
		}
		if v6 != nil {
			if host := 128 - ips.RandomIPv6In.Bits(); host < 62 && ips.Count > 1<<host {
				return errAt(count, path+".count", "%s holds only %d addresses", ips.RandomIPv6In, 1<<host)
			}
		}
		return nil
	}
	return errAt(n, path, want)
}

// rejectAliases refuses anchors and aliases anywhere in the tree: they are
// never needed in a scenario and would let a small file expand to a huge one.
func rejectAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return errAt(n, "", "anchors and aliases are not supported")
	}
	for _, c := range n.Content {
		if err := rejectAliases(c); err != nil {
			return err
		}
	}
	return nil
}
