package simulate

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// secret keys the simulated engine. It is fixed so that runs are repeatable;
// it protects nothing.
var secret = []byte("tollgate simulator: a fixed secret that protects nothing")

// Result is what a run produced. Its JSON form is the output of -json.
type Result struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Duration is the simulated time, as a Go duration ("24h0m0s").
	Duration string `json:"duration"`
	// Actors are the actors' counters, in file order.
	Actors []ActorResult `json:"actors"`
	// Expectations are the scenario's expectations, in file order.
	Expectations []ExpectationResult `json:"expectations"`

	duration time.Duration
	series   [][]point // per actor: cumulative proceeds and failures over time
}

// ActorResult holds one actor's counters.
type ActorResult struct {
	Name string `json:"name"`
	// Attempts counts checks made, including a check repeated after a delay
	// or with a solved CAPTCHA.
	Attempts int `json:"attempts"`
	// Proceeded, Delayed, Captcha and Denied count checks (for a send
	// actor: sends) by the action answered. Only sends are denied; denied
	// is left out of the JSON form while it is zero.
	Proceeded int `json:"proceeded"`
	Delayed   int `json:"delayed"`
	Captcha   int `json:"captcha"`
	Denied    int `json:"denied,omitempty"`
	// FirstDelayAt and FirstCaptchaAt are the offsets from the scenario's
	// start of the first check answered delay or captcha, as Go durations
	// ("1m5s"); empty if none was.
	FirstDelayAt   string `json:"first_delay_at"`
	FirstCaptchaAt string `json:"first_captcha_at"`
	// AccountsChecked counts distinct accounts that got at least one
	// proceed; for fresh accounts, each new, the logins that did; for a
	// send actor, distinct destinations (as spelled) sent at least one code.
	AccountsChecked int `json:"accounts_checked"`
	// AccountsCheckedBeforeCaptcha counts distinct accounts (destinations)
	// that got a proceed before the actor's first captcha; it equals AccountsChecked
	// when the actor never got one.
	AccountsCheckedBeforeCaptcha int `json:"accounts_checked_before_captcha"`
	// ProceededMax24h is the largest number of proceeded checks in any 24
	// hours [t, t+24h) of the run: Proceeded, for a run of up to 24 hours.
	ProceededMax24h int `json:"proceeded_max_24h"`
	// FailuresMax24h is the largest number of proceeded checks reported
	// as failures in any 24 hours [t, t+24h) of the run.
	FailuresMax24h int `json:"failures_max_24h"`
	// MintLogins counts the checks of the logins the actor made to mint
	// device tokens (mints_device_token_in), which no other counter
	// includes; MintRefused counts those that did not proceed.
	MintLogins  int `json:"mint_logins"`
	MintRefused int `json:"mint_refused"`
	// OwnLogins counts the checks of the logins the actor made to its own
	// account (own_success), which no other counter includes; OwnRefused
	// counts those that did not proceed. Both are left out of the JSON
	// form while zero.
	OwnLogins  int `json:"own_logins,omitempty"`
	OwnRefused int `json:"own_refused,omitempty"`
	// CaptchaSolved counts the CAPTCHAs the actor solved: what it paid
	// for, a check or send sent again with CaptchaSolved each; left out of
	// the JSON form while zero.
	CaptchaSolved int `json:"captcha_solved,omitempty"`
	// ReportsRefused counts the reports the engine refused for an attempt
	// token not issued for their call (report_token: foreign), which
	// changed nothing; left out of the JSON form while zero.
	ReportsRefused int `json:"reports_refused,omitempty"`
	// DelaySeconds sums the delays the actor was answered: the Retry-After
	// of each delay (at least 1 s, as an actor that obeys waits) and the
	// hold of each proceed that came with one, in whole seconds rounded up.
	// It is what the actor's users lost to waiting, had they all obeyed;
	// left out of the JSON form while it is zero.
	DelaySeconds int `json:"delay_seconds,omitempty"`
	// Spent, for a send actor, sums the prices (the send flow's prices)
	// of the codes its sends that proceeded cost: what the operator pays
	// for them. It is left out of the JSON form while it is zero.
	Spent int `json:"spent,omitempty"`
	// StepUps counts the success reports answered step_up (a second factor
	// asked for, no device token), and DeviceTokens the successes that
	// ended with a device token (a sign-in), at once or, for an actor that
	// passes_step_up, once its second factor passed.
	StepUps      int `json:"step_ups"`
	DeviceTokens int `json:"device_tokens"`
}

// Get returns the counter named by one of Fields.
func (a ActorResult) Get(field string) (int64, bool) {
	switch field {
	case "attempts":
		return int64(a.Attempts), true
	case "proceeded":
		return int64(a.Proceeded), true
	case "delayed":
		return int64(a.Delayed), true
	case "captcha":
		return int64(a.Captcha), true
	case "denied":
		return int64(a.Denied), true
	case "accounts_checked":
		return int64(a.AccountsChecked), true
	case "accounts_checked_before_captcha":
		return int64(a.AccountsCheckedBeforeCaptcha), true
	case "proceeded_max_24h":
		return int64(a.ProceededMax24h), true
	case "failures_max_24h":
		return int64(a.FailuresMax24h), true
	case "mint_logins":
		return int64(a.MintLogins), true
	case "mint_refused":
		return int64(a.MintRefused), true
	case "own_logins":
		return int64(a.OwnLogins), true
	case "own_refused":
		return int64(a.OwnRefused), true
	case "captcha_solved":
		return int64(a.CaptchaSolved), true
	case "reports_refused":
		return int64(a.ReportsRefused), true
	case "step_ups":
		return int64(a.StepUps), true
	case "device_tokens":
		return int64(a.DeviceTokens), true
	case "delay_seconds":
		return int64(a.DelaySeconds), true
	case "spent":
		return int64(a.Spent), true
	}
	return 0, false
}

// ExpectationResult says whether one expectation held.
type ExpectationResult struct {
	// Expr is the expectation: "attacker.proceeded <= 100".
	Expr string `json:"expr"`
	// OK is true when it held.
	OK bool `json:"ok"`

	got int64
}

// Passed reports whether every expectation held.
func (r *Result) Passed() bool {
	for _, e := range r.Expectations {
		if !e.OK {
			return false
		}
	}
	return true
}

// point is the cumulative number of proceeded checks, and of those reported
// as failures, at an offset. A series has one point per offset at which
// either changed, in time order.
type point struct {
	at time.Duration
	// int32 keeps a point at 16 bytes; an actor's proceeds stay far below
	// 2^31 (MaxLogins logins of at most MaxTypos+1 attempts).
	n, failures int32
}

// day is the window of the *_max_24h counters.
const day = 24 * time.Hour

// maxInWindow returns the largest increase of count over the points of a
// series that fall in any window [t, t+w).
func maxInWindow(pts []point, w time.Duration, count func(point) int) int {
	best, j := 0, 0
	for i, p := range pts {
		j = max(j, i)
		for j+1 < len(pts) && pts[j+1].at < p.at+w {
			j++
		}
		before := 0
		if i > 0 {
			before = count(pts[i-1])
		}
		best = max(best, count(pts[j])-before)
	}
	return best
}

// Run replays sc on fresh engines (sc.Instances of them, one by default)
// with policy (nil: the built-in policy), plus the scenario's own flows,
// sharing one memory store (of sc.Store.MaxEntries keys), all on a virtual
// clock, and evaluates the expectations; each actor calls the engine of
// its Instance. The same scenario and policy
// always give the same counters, except where a burst runs checks
// concurrently and their order decides.
//
// Every actor performs logins. A login is Typos failed attempts (plus one
// more with probability TypoRate) followed by one attempt ending in Outcome,
// run back to back at one instant. An attempt is a check; on proceed, a report
// of its outcome with the check's attempt token (or as ReportToken and
// ReportReplays say). On captcha an actor that solves it (SolvesCaptcha)
// checks again at once with CaptchaSolved; on delay an actor
// that obeys waits Retry-After seconds and repeats the attempt; otherwise it
// gives up on the login. A proceed that comes with a delay (a leaky_bucket
// rule's place in its queue) is held: an actor that obeys delays waits that
// long (to the millisecond) and then reports, without checking again; one
// that does not reports at once.
//
// The device token an attempt's check and report carry is: for an actor
// with DeviceToken, the one its last success on the account returned; for
// one with DeviceTokenFrom, the one that actor holds for the account at the
// time of the check; for one with MintsDeviceTokenIn, the one a successful
// login in that flow returns just before the check (ParseScenario describes
// it); else none.
//
// An actor with OwnSuccess logs in to its own account before every
// OwnSuccess.Every-th check (ParseScenario describes it).
//
// A rate actor is one attacker script: it starts Burst logins every
// Burst/Rate, taking accounts in order and addresses round-robin, cycling
// through both (or taking a fresh one of each, for fresh accounts and
// addresses). When it obeys a delay, or holds a proceed, the whole script
// pauses until the longest is over, repeats the delayed attempts and lets
// the held ones go ahead, and goes on Burst/Rate later.
//
// A rate actor with SecondPhase also starts SecondPhase.Logins logins at
// SecondPhase.At, one after another, taking the script's next accounts and
// addresses; a login of the phase that would wait is dropped.
//
// An every actor is a group of independent users: account i (of n) logs in
// from address i mod len(IPs) (or a fresh address each time), Burst times at
// once, at Start + i×Every/n and then every Every; each login waits out its
// own delays and holds.
//
// A send actor (one with Destinations) sends instead: each of its logins
// is one Engine.Send of a one-time code to one destination by Channel,
// from the login's address, for the login's account (none when the actor
// has no accounts). On captcha an actor that solves CAPTCHAs sends again
// at once with CaptchaSolved; on delay an actor that obeys waits
// Retry-After seconds and sends again; otherwise, and on deny, the send is
// over: a denied send is never retried. A send actor with DeviceTokenFrom
// sends the device token that actor holds for the send's account. A
// proceed is a code sent, counted at once (a delay that comes with it
// changes nothing), and no report follows. Destinations take the place of accounts above: a rate actor
// takes them in order, cycling, and its accounts, if any, in order as
// well, each list at its own pace; an every actor's users are its
// destinations: destination i (of n) is sent to from address i mod
// len(IPs), for account i mod len(Accounts), at Start + i×Every/n and then
// every Every.
//
// A check actor with GuessesAt names, in each check and report of a login,
// the destination the login guesses at and Channel.
//
// A send that proceeds adds the price of its code (the engine's
// Event.Price) to the actor's Spent.
//
// Nothing an actor does happens at or after its Stop.
func Run(sc *Scenario, policy *authguard.Policy) (*Result, error) {
	r, _, err := execute(sc, policy, nil)
	return r, err
}

// engineAPI is what actors call: the engine, or a test's wrapper around it.
type engineAPI interface {
	Check(context.Context, authguard.CheckRequest) (authguard.Verdict, error)
	Report(context.Context, authguard.ReportRequest) (authguard.Verdict, error)
	Send(context.Context, authguard.SendRequest) (authguard.Verdict, error)
}

// execute is Run, with the engine wrapped by wrap (unless nil), returning
// the actors' runs too.
func execute(sc *Scenario, policy *authguard.Policy, wrap func(engineAPI) engineAPI) (*Result, []*actorRun, error) {
	if policy == nil {
		policy = config.DefaultPolicy()
	}
	if sc.flows != nil {
		p, err := addFlows(policy, sc.flows)
		if err != nil {
			return nil, nil, sc.wrap(err)
		}
		policy = p
	}
	for i, a := range sc.Actors {
		for _, f := range []struct {
			name, key string
			line      int
		}{{a.Flow, "flow", a.flowLine}, {a.MintsDeviceTokenIn, "mints_device_token_in", a.mintLine}, {a.VerifiesIn, "verifies_in", a.verifyLine}} {
			if f.name == "" || policy.Flow(f.name) != nil {
				continue
			}
			err := &nodeError{Line: max(f.line, 1), Path: fmt.Sprintf("actors[%d].%s", i, f.key),
				Msg: fmt.Sprintf("the policy has no flow %q (it has %s)", f.name, strings.Join(policy.FlowNames(), ", "))}
			return nil, nil, sc.wrap(err)
		}
		if err := checkKinds(policy, a, i); err != nil {
			return nil, nil, sc.wrap(err)
		}
	}
	clock := testclock.New(time.Time{})
	store := memstore.New(memstore.Config{MaxEntries: sc.Store.MaxEntries, Now: clock.Now})
	engines := make([]engineAPI, max(sc.Instances, 1))
	for i := range engines {
		engine, err := authguard.New(authguard.Config{
			Policy: policy,
			Store:  store,
			Secret: secret,
			Now:    clock.Now,
			// Every scenario runs with notices worked out, so that the
			// scenarios hold that they change no verdict.
			Notifier: discardNotices{},
			Trace:    authguard.Trace{Decided: countSpend},
		})
		if err != nil {
			return nil, nil, fmt.Errorf("simulate: %w", err)
		}
		engines[i] = engine
		if wrap != nil {
			engines[i] = wrap(engine)
		}
	}
	s := &sim{clock: clock, start: clock.Now()}
	runs := make([]*actorRun, len(sc.Actors))
	byName := map[string]*actorRun{}
	for i, a := range sc.Actors {
		runs[i] = newActorRun(s, a, sc.Seed, uint64(i))
		runs[i].engine = engines[min(max(a.Instance, 1), len(engines))-1]
		if f := policy.Flow(a.Flow); f != nil {
			runs[i].stepUpFlow = f.StepUp.Flow
		}
		byName[a.Name] = runs[i]
	}
	for _, ar := range runs {
		if ar.DeviceTokenFrom != "" {
			ar.tokenFrom = byName[ar.DeviceTokenFrom]
		}
		ar.schedule()
	}
	for s.queue.Len() > 0 && s.err == nil {
		e := heap.Pop(&s.queue).(*event)
		if e.at >= sc.Duration {
			break
		}
		clock.Set(s.start.Add(e.at))
		e.fire(e.at)
	}
	if s.err != nil {
		return nil, nil, fmt.Errorf("simulate: %s: %w", sc.Name, s.err)
	}

	r := &Result{Scenario: sc.Name, Duration: sc.Duration.String(), duration: sc.Duration,
		Actors: make([]ActorResult, len(runs)), series: make([][]point, len(runs)), Expectations: []ExpectationResult{}}
	results := map[string]ActorResult{}
	for i, ar := range runs {
		r.Actors[i] = ar.result()
		r.series[i] = ar.series
		results[ar.Name] = r.Actors[i]
	}
	for _, e := range sc.Expect {
		var got int64
		for _, a := range e.Actors() {
			n, _ := results[a].Get(e.Field)
			got += n
		}
		r.Expectations = append(r.Expectations, ExpectationResult{Expr: e.String(), OK: e.Holds(got), got: got})
	}
	return r, runs, nil
}

// checkKinds checks that actor a, the i-th, has destinations exactly when
// its flow is a send flow, and mints device tokens in a flow that returns
// them.
func checkKinds(policy *authguard.Policy, a *Actor, i int) error {
	at := func(key string, line int, format string, args ...any) error {
		return &nodeError{Line: max(line, 1), Path: fmt.Sprintf("actors[%d].%s", i, key), Msg: fmt.Sprintf(format, args...)}
	}
	sends := policy.Flow(a.Flow).Kind == authguard.Sends
	switch {
	case sends && !a.Sends():
		return at("flow", a.flowLine, "%q is a send flow (kind: send): the actor needs destinations", a.Flow)
	case !sends && a.Sends():
		return at("destinations", a.destLine, "flow %q is not a send flow (kind: send), such as otp_send", a.Flow)
	case a.MintsDeviceTokenIn != "" && policy.Flow(a.MintsDeviceTokenIn).Kind == authguard.Sends:
		return at("mints_device_token_in", a.mintLine, "%q is a send flow (kind: send): it returns no device tokens", a.MintsDeviceTokenIn)
	case a.VerifiesIn != "" && policy.Flow(a.VerifiesIn).Verifies != a.Flow:
		return at("verifies_in", a.verifyLine, "%q does not verify %q's codes (it needs verifies: %s)", a.VerifiesIn, a.Flow, a.Flow)
	case a.GuessesAt.Len() > 0 && policy.Flow(a.Flow).Verifies == "":
		return at("guesses_at", a.guessLine, "%q verifies no send flow's codes (it needs verifies:), so its checks name no destination", a.Flow)
	}
	return nil
}

// spendKey keys, in a send's context, the *int that countSpend adds the
// price of the code to when the send proceeds.
type spendKey struct{}

// countSpend is the engine's Trace.Decided: it hands a send's price
// (authguard.Event.Price, what the engine's spend rules count) to the
// send that asked, when the answer is Proceed.
func countSpend(ctx context.Context, ev authguard.Event) {
	if p, ok := ctx.Value(spendKey{}).(*int); ok && ev.Call == "send" && ev.Answer.Action == authguard.Proceed {
		*p += ev.Price
	}
}

// discardNotices is a Notifier that drops what it is told.
type discardNotices struct{}

func (discardNotices) Notify(authguard.Notice) {}

// sim is the event loop.
type sim struct {
	clock *testclock.Clock
	start time.Time
	queue eventQueue
	seq   uint64
	err   error
}

// event is something an actor does at an offset from the start. Events at
// the same offset fire in the order they were scheduled.
type event struct {
	at   time.Duration
	seq  uint64
	fire func(at time.Duration)
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

func (s *sim) at(at time.Duration, fire func(time.Duration)) {
	s.seq++
	heap.Push(&s.queue, &event{at: at, seq: s.seq, fire: fire})
}

// actorRun is one actor during a run.
type actorRun struct {
	*Actor
	s           *sim
	engine      engineAPI  // the engine of the actor's instance
	accounts    []string   // empty for fresh accounts, and for a send actor without accounts
	dests       []string   // a send actor's destinations, or those a check actor guesses at (GuessesAt)
	ips         []string   // empty for fresh addresses
	rng         *rand.Rand // used by the event loop only
	fingerprint string     // of Password, or ""
	tokenFrom   *actorRun  // the actor DeviceTokenFrom names, or nil
	stepUpFlow  string     // the step-up flow of the actor's flow, or ""

	// Fresh accounts and addresses: how many were taken, the domain of the
	// accounts, and the key of the address permutation.
	freshAccounts, freshIPs uint64
	freshDomain             string
	freshKey                uint64

	// Rate actors: the script's position and the logins waiting out a delay.
	nextAccount, nextIP, nextDest int
	pending                       []*login

	mu                       sync.Mutex        // guards what follows
	devices                  map[string]string // by normalised account
	attempts, proceeded      int
	delayed, captcha, denied int
	failures                 int
	mintLogins, mintRefused  int
	ownLogins, ownRefused    int
	captchaAsked             int    // CAPTCHAs the actor was asked, solved or not
	captchaSolved            int    // of them, those it solved
	reportsRefused           int    // reports the engine refused (a foreign token)
	stepUps, deviceTokens    int    // success reports answered step_up, and with a device token
	lastAttempt              string // ReportForeign: the attempt token of the last check that proceeded
	ownDevice                string // OwnSuccess.DeviceToken: the token of the last own success
	delaySeconds             int
	spent                    int
	stopped                  bool            // StopsAtCaptcha: a captcha has stopped the actor
	firstDelay, firstCaptcha time.Duration   // -1: never
	checked                  map[string]bool // unused for fresh accounts
	checkedCount             int             // distinct accounts that got a proceed
	checkedBefore            int
	series                   []point
}

func newActorRun(s *sim, a *Actor, seed, index uint64) *actorRun {
	ar := &actorRun{
		Actor:        a,
		s:            s,
		rng:          rand.New(rand.NewPCG(seed, index)),
		devices:      map[string]string{},
		checked:      map[string]bool{},
		firstDelay:   -1,
		firstCaptcha: -1,
	}
	if a.Password != "" {
		sum := sha256.Sum256([]byte("sim:" + a.Password))
		ar.fingerprint = hex.EncodeToString(sum[:])
	}
	ar.accounts = a.Accounts.List
	if n := a.Accounts.Generate; n > 0 {
		width := max(4, len(fmt.Sprint(n)))
		ar.accounts = make([]string, n)
		for i := range ar.accounts {
			ar.accounts[i] = fmt.Sprintf("user%0*d@%s.sim.example", width, i+1, strings.ToLower(a.Name))
		}
	}
	ar.freshDomain = "@" + strings.ToLower(a.Name) + ".sim.example"
	ar.dests = a.Destinations.List
	if a.GuessesAt.Len() > 0 {
		ar.dests = a.GuessesAt.List
	}
	if d := a.Destinations; d.Count > 0 || a.GuessesAt.Count > 0 {
		if d.Count == 0 {
			d = a.GuessesAt
		}
		start, _ := strconv.ParseUint(d.From[1:], 10, 64) // ParseScenario checked it
		ar.dests = make([]string, d.Count)
		for i := range ar.dests {
			ar.dests[i] = sequential(start, len(d.From)-1, i)
		}
	}
	switch {
	case a.IPs.RandomIPv4 > 0:
		ar.ips = randomIPv4(ar.rng, a.IPs.RandomIPv4)
	case a.IPs.Count > 0:
		ar.ips = randomInPrefix(ar.rng, a.IPs.RandomIPv6In, a.IPs.Count)
	case a.IPs.FreshIPv6In.IsValid():
		ar.freshKey = ar.rng.Uint64()
	default:
		ar.ips = a.IPs.List
	}
	return ar
}

// schedule puts the actor's first events on the queue.
func (ar *actorRun) schedule() {
	if ar.Every == 0 {
		ar.s.at(ar.Start, ar.fireRate)
		if ar.SecondPhase.Logins > 0 {
			ar.s.at(ar.SecondPhase.At, ar.firePhase)
		}
		return
	}
	n := int64(ar.users())
	for i := range n {
		// i×Every/n in whole milliseconds, which cannot overflow.
		first := ar.Start + time.Duration(i*ar.Every.Milliseconds()/n)*time.Millisecond
		if first < ar.Stop {
			ar.s.at(first, ar.fireEvery(int(i)))
		}
	}
}

// fireRate is one step of a rate actor's script.
func (ar *actorRun) fireRate(at time.Duration) {
	if ar.isStopped() {
		return
	}
	batch := ar.pending
	ar.pending = nil
	if len(batch) == 0 {
		for range ar.Burst {
			batch = append(batch, ar.nextLogin())
		}
	}
	waits := ar.runBatch(batch, at)
	var pause time.Duration
	for i, w := range waits {
		if w > 0 {
			ar.pending = append(ar.pending, batch[i])
			pause = max(pause, w)
		}
	}
	next := at + time.Duration(ar.Burst)*ar.Rate.Interval()
	if pause > 0 {
		next = at + pause
	}
	if next < ar.Stop {
		ar.s.at(next, ar.fireRate)
	}
}

// nextLogin is a rate actor's next login: its next account, address and
// destination, each list at its own pace.
func (ar *actorRun) nextLogin() *login {
	var account, ip, dest string
	switch {
	case ar.Accounts.Fresh:
		account = ar.freshAccount()
	case len(ar.accounts) > 0:
		account = ar.accounts[ar.nextAccount]
		ar.nextAccount = (ar.nextAccount + 1) % len(ar.accounts)
	}
	if ar.IPs.FreshIPv6In.IsValid() {
		ip = ar.freshIP()
	} else {
		ip = ar.ips[ar.nextIP]
		ar.nextIP = (ar.nextIP + 1) % len(ar.ips)
	}
	if len(ar.dests) > 0 {
		dest = ar.dests[ar.nextDest]
		ar.nextDest = (ar.nextDest + 1) % len(ar.dests)
	}
	return ar.newLogin(account, ip, dest)
}

// firePhase is a rate actor's second phase: SecondPhase.Logins logins at
// one instant, one after another in order, each taking the script's next
// account, address and destination. A login answered a delay, or held by
// one, is dropped there: the phase is the instant, and the script goes on
// as it was.
func (ar *actorRun) firePhase(at time.Duration) {
	for range ar.SecondPhase.Logins {
		if ar.isStopped() || ar.s.err != nil {
			return
		}
		if _, err := ar.advance(ar.nextLogin(), at); err != nil {
			ar.s.err = err
			return
		}
	}
}

// fireEvery returns the schedule of account i of an every actor.
func (ar *actorRun) fireEvery(i int) func(time.Duration) {
	var fire func(time.Duration)
	fire = func(at time.Duration) {
		if ar.isStopped() {
			return
		}
		batch := make([]*login, ar.Burst)
		for b := range batch {
			ip := ""
			if ar.IPs.FreshIPv6In.IsValid() {
				ip = ar.freshIP()
			} else {
				ip = ar.ips[i%len(ar.ips)]
			}
			account, dest := "", ""
			if ar.Sends() {
				dest = ar.dests[i]
				if len(ar.accounts) > 0 {
					account = ar.accounts[i%len(ar.accounts)]
				}
			} else {
				account = ar.accounts[i]
				if len(ar.dests) > 0 {
					dest = ar.dests[i%len(ar.dests)]
				}
			}
			batch[b] = ar.newLogin(account, ip, dest)
		}
		ar.settle(batch, ar.runBatch(batch, at), at)
		if next := at + ar.Every; next < ar.Stop {
			ar.s.at(next, fire)
		}
	}
	return fire
}

// freshAccount returns an account no actor has used: fresh1@NAME.sim.example,
// fresh2@…
func (ar *actorRun) freshAccount() string {
	ar.freshAccounts++
	return "fresh" + strconv.FormatUint(ar.freshAccounts, 10) + ar.freshDomain
}

// freshIP returns a random address in FreshIPv6In whose /64 (for a prefix
// of /64 or longer: the address itself) no earlier call returned, until the
// prefix runs out of them. The bits after the prefix, up to /64 (or up to
// /128), are a permutation of a counter; the bits after /64 are random.
func (ar *actorRun) freshIP() string {
	p := ar.IPs.FreshIPv6In
	b := p.Addr().As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	n := ar.freshIPs
	ar.freshIPs++
	if bits := p.Bits(); bits < 64 {
		hi |= permute(n, uint(64-bits), ar.freshKey)
		lo = ar.rng.Uint64()
	} else {
		lo |= permute(n, uint(128-bits), ar.freshKey)
	}
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	return netip.AddrFrom16(b).String()
}

// permute maps x to a w-bit number (1 <= w <= 64), one to one over
// 0..2^w-1 for each key, scrambling the bits so that consecutive x look
// unrelated.
func permute(x uint64, w uint, key uint64) uint64 {
	mask := ^uint64(0) >> (64 - w)
	shift := max(w/2, 1)
	x = (x + key) & mask
	for range 3 {
		// Each step is one to one on w-bit numbers: multiplying by an odd
		// number, a right xorshift, adding a constant (all modulo 2^w).
		x = x * 0x9e3779b97f4a7c15 & mask
		x ^= x >> shift
		x = (x + key>>7) & mask
	}
	return x
}

// isStopped reports whether a captcha has stopped an actor with
// StopsAtCaptcha.
func (ar *actorRun) isStopped() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.stopped
}

// settle schedules, for each login of an every actor that obeys a delay or
// holds a proceed, its retry or its going ahead.
func (ar *actorRun) settle(batch []*login, waits []time.Duration, at time.Duration) {
	for i, w := range waits {
		if w > 0 && at+w < ar.Stop {
			l := batch[i]
			ar.s.at(at+w, func(at time.Duration) {
				if ar.isStopped() {
					return
				}
				ar.settle([]*login{l}, ar.runBatch([]*login{l}, at), at)
			})
		}
	}
}

// login is one login in progress, or one send.
type login struct {
	account, ip string
	dest        string // a send's destination, or the one a login guesses at; ""  for none
	steps       []step // none for a send
	pos         int    // the step to do next
	proceeded   bool   // whether a check of it proceeded; guarded by actorRun.mu
	held        *held
}

// held is a step whose check proceeded with a delay, held until it may go
// ahead: what its report needs.
type held struct {
	attempt, device string
}

// step is one attempt of a login.
type step struct {
	outcome     authguard.Outcome
	fingerprint string
}

// newLogin returns a login to account from ip, or, for a send actor, a
// send to dest.
func (ar *actorRun) newLogin(account, ip, dest string) *login {
	if ar.Sends() {
		return &login{account: account, ip: ip, dest: dest}
	}
	typos := ar.Typos
	if ar.TypoRate > 0 && ar.rng.Float64() < ar.TypoRate {
		typos++
	}
	l := &login{account: account, ip: ip, dest: dest, steps: make([]step, 0, typos+1)}
	for range typos {
		l.steps = append(l.steps, step{outcome: authguard.Failure, fingerprint: ar.randomFingerprint()})
	}
	fp := ar.fingerprint
	if fp == "" {
		fp = ar.randomFingerprint()
	}
	l.steps = append(l.steps, step{outcome: ar.Outcome, fingerprint: fp})
	return l
}

// randomFingerprint stands for the fingerprint of a password nobody else
// uses.
func (ar *actorRun) randomFingerprint() string {
	var b [32]byte
	for i := 0; i < len(b); i += 8 {
		binary.BigEndian.PutUint64(b[i:], ar.rng.Uint64())
	}
	return hex.EncodeToString(b[:])
}

// runBatch advances the logins of a batch at once, concurrently when there
// are several, and returns for each how long it must wait before its retry
// (zero: it is over). An engine error stops the run.
func (ar *actorRun) runBatch(batch []*login, at time.Duration) []time.Duration {
	waits := make([]time.Duration, len(batch))
	errs := make([]error, len(batch))
	if len(batch) == 1 {
		waits[0], errs[0] = ar.advance(batch[0], at)
	} else {
		var wg sync.WaitGroup
		for i, l := range batch {
			wg.Go(func() { waits[i], errs[i] = ar.advance(l, at) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil && ar.s.err == nil {
			ar.s.err = err
		}
	}
	return waits
}

// advance runs the login's attempts until it is over, or until a delay the
// actor obeys or a proceed it holds, whose length it returns. A held step
// goes ahead (reports) when advance is called again.
func (ar *actorRun) advance(l *login, at time.Duration) (time.Duration, error) {
	ctx := context.Background()
	if ar.Sends() {
		return ar.send(ctx, l, at)
	}
	for l.pos < len(l.steps) {
		st := l.steps[l.pos]
		if h := l.held; h != nil {
			l.held = nil
			if err := ar.report(ctx, l, st, h.attempt, h.device, at); err != nil {
				return 0, err
			}
			l.pos++
			continue
		}
		solved := false
		for {
			device, err := ar.deviceFor(ctx, l)
			if err != nil {
				return 0, err
			}
			dest, channel := ar.guessed(l)
			v, err := ar.engine.Check(ctx, authguard.CheckRequest{
				Tenant: ar.Tenant, Flow: ar.Flow, Account: l.account, IP: l.ip, DeviceToken: device,
				CaptchaSolved: solved, PasswordFingerprint: st.fingerprint, Destination: dest, Channel: channel,
			})
			if err != nil {
				return 0, fmt.Errorf("actor %s: check: %w", ar.Name, err)
			}
			ar.record(l, v, at)
			if v.Action == authguard.Captcha && ar.StopsAtCaptcha {
				l.pos = len(l.steps) // the actor stops: no more attempts
				return 0, nil
			}
			if v.Action == authguard.Proceed && ar.ReportToken == ReportForeign {
				// The report carries the previous check's token; this
				// one's goes with the next report.
				ar.mu.Lock()
				v.Attempt, ar.lastAttempt = ar.lastAttempt, v.Attempt
				ar.mu.Unlock()
			}
			if v.Action == authguard.Proceed {
				if v.Delay > 0 && ar.ObeysDelay {
					l.held = &held{attempt: v.Attempt, device: device}
					return v.Delay, nil
				}
				if err := ar.report(ctx, l, st, v.Attempt, device, at); err != nil {
					return 0, err
				}
				break
			}
			if v.Action == authguard.Captcha && !solved && ar.solves() {
				solved = true
				continue
			}
			if v.Action == authguard.Delay && ar.ObeysDelay {
				return max(time.Duration(v.RetryAfter())*time.Second, time.Second), nil
			}
			l.pos = len(l.steps) // gives up
			return 0, nil
		}
		l.pos++
	}
	return 0, nil
}

// send asks for the code of send l until it proceeds, is denied or the
// actor gives up, or until a delay the actor obeys, whose length it
// returns; l is over when that is zero.
func (ar *actorRun) send(ctx context.Context, l *login, at time.Duration) (time.Duration, error) {
	solved := false
	for {
		device := ""
		if ar.tokenFrom != nil {
			device = ar.tokenFrom.device(l.account)
		}
		price := 0
		v, err := ar.engine.Send(context.WithValue(ctx, spendKey{}, &price), authguard.SendRequest{
			Tenant: ar.Tenant, Flow: ar.Flow, Destination: l.dest, Channel: ar.Channel.String(), IP: l.ip,
			Account: l.account, DeviceToken: device, CaptchaSolved: solved,
		})
		if err != nil {
			return 0, fmt.Errorf("actor %s: send: %w", ar.Name, err)
		}
		ar.record(l, v, at)
		ar.addSpent(price)
		if v.Action == authguard.Captcha && ar.StopsAtCaptcha {
			return 0, nil
		}
		switch {
		case v.Action == authguard.Captcha && !solved && ar.solves():
			solved = true
			continue
		case v.Action == authguard.Delay && ar.ObeysDelay:
			return max(time.Duration(v.RetryAfter())*time.Second, time.Second), nil
		case v.Action == authguard.Proceed && ar.VerifiesIn != "":
			return 0, ar.verify(ctx, l)
		}
		return 0, nil // sent, denied or given up
	}
}

// verify checks the code of send l in the actor's VerifiesIn flow and, when
// the check proceeds, reports the right code, naming the destination. The
// account is l's, or the destination when the actor has none.
func (ar *actorRun) verify(ctx context.Context, l *login) error {
	account := l.account
	if account == "" {
		account = l.dest
	}
	v, err := ar.engine.Check(ctx, authguard.CheckRequest{Tenant: ar.Tenant, Flow: ar.VerifiesIn, Account: account, IP: l.ip})
	if err != nil {
		return fmt.Errorf("actor %s: verify: %w", ar.Name, err)
	}
	if v.Action != authguard.Proceed {
		return nil
	}
	_, err = ar.engine.Report(ctx, authguard.ReportRequest{Tenant: ar.Tenant, Flow: ar.VerifiesIn, Account: account, IP: l.ip,
		Outcome: authguard.Success, Attempt: v.Attempt, Destination: l.dest, Channel: ar.Channel.String()})
	if err != nil {
		return fmt.Errorf("actor %s: verify: %w", ar.Name, err)
	}
	return nil
}

// report reports the outcome of step st of l, whose check proceeded with
// attempt and device.
//
// The report carries the token ReportToken says (for ReportForeign, the
// caller has swapped it already), and goes ReportReplays more times; with
// ReportSkip none goes. A report the engine refuses as not this call's
// (an *authguard.InputError on its attempt token) is counted in
// reportsRefused; any other error stops the run. The failure counts once
// either way: it is a guess the check let through.
func (ar *actorRun) report(ctx context.Context, l *login, st step, attempt, device string, at time.Duration) error {
	if st.outcome == authguard.Failure {
		ar.recordFailure(at)
	}
	if ar.ReportToken == ReportSkip {
		return nil
	}
	if ar.ReportToken == ReportNone {
		attempt = ""
	}
	dest, channel := ar.guessed(l)
	for range 1 + ar.ReportReplays {
		r, err := ar.engine.Report(ctx, authguard.ReportRequest{
			Tenant: ar.Tenant, Flow: ar.Flow, Account: l.account, IP: l.ip, Outcome: st.outcome,
			Attempt: attempt, DeviceToken: device, PasswordFingerprint: st.fingerprint, Destination: dest, Channel: channel,
			Breached: ar.Breached,
		})
		var ie *authguard.InputError
		if errors.As(err, &ie) && ie.Field == "attempt" && ar.ReportToken == ReportForeign {
			ar.mu.Lock()
			ar.reportsRefused++
			ar.mu.Unlock()
			continue
		}
		if err != nil {
			return fmt.Errorf("actor %s: report: %w", ar.Name, err)
		}
		if st.outcome == authguard.Success && r.Action == authguard.StepUp {
			ar.mu.Lock()
			ar.stepUps++
			ar.mu.Unlock()
			if ar.PassesStepUp && ar.stepUpFlow != "" {
				if r, err = ar.engine.Report(ctx, authguard.ReportRequest{
					Tenant: ar.Tenant, Flow: ar.stepUpFlow, Account: l.account, IP: l.ip, Outcome: authguard.StepUpPassed,
					Attempt: r.Attempt, DeviceToken: device,
				}); err != nil {
					return fmt.Errorf("actor %s: step_up_passed report: %w", ar.Name, err)
				}
			}
		}
		if st.outcome == authguard.Success && r.DeviceToken != "" {
			ar.mu.Lock()
			ar.deviceTokens++
			ar.mu.Unlock()
		}
		if st.outcome == authguard.Success && ar.DeviceToken && r.DeviceToken != "" {
			ar.setDevice(l.account, r.DeviceToken)
		}
	}
	return nil
}

// solves reports whether the actor solves the CAPTCHA it is asked now
// (Actor.SolvesCaptcha), and counts it.
func (ar *actorRun) solves() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	k := float64(ar.captchaAsked)
	ar.captchaAsked++
	solved := ar.SolvesCaptcha >= 1 || math.Floor((k+1)*ar.SolvesCaptcha) > math.Floor(k*ar.SolvesCaptcha)
	if solved {
		ar.captchaSolved++
	}
	return solved
}

// guessed returns the destination and channel the checks and reports of
// login l name: those of the code it guesses at, or none.
func (ar *actorRun) guessed(l *login) (dest, channel string) {
	if l.dest == "" {
		return "", ""
	}
	return l.dest, ar.Channel.String()
}

// deviceFor returns the device token the next check of l carries.
func (ar *actorRun) deviceFor(ctx context.Context, l *login) (string, error) {
	if ar.OwnSuccess.Every > 0 {
		if err := ar.ownLogin(ctx, l); err != nil {
			return "", err
		}
	}
	switch {
	case ar.OwnSuccess.DeviceToken:
		ar.mu.Lock()
		defer ar.mu.Unlock()
		return ar.ownDevice, nil
	case ar.MintsDeviceTokenIn != "":
		return ar.mint(ctx, l)
	case ar.tokenFrom != nil:
		return ar.tokenFrom.device(l.account), nil
	}
	return ar.device(l.account), nil
}

// mint logs in to l's account in MintsDeviceTokenIn, from l's address,
// and returns the device token the success returns, or "" when the check
// does not proceed.
func (ar *actorRun) mint(ctx context.Context, l *login) (string, error) {
	sum := sha256.Sum256([]byte("sim:mint:" + l.account)) // the account's own password
	fp := hex.EncodeToString(sum[:])
	v, err := ar.engine.Check(ctx, authguard.CheckRequest{
		Tenant: ar.Tenant, Flow: ar.MintsDeviceTokenIn, Account: l.account, IP: l.ip, PasswordFingerprint: fp,
	})
	if err != nil {
		return "", fmt.Errorf("actor %s: minting check: %w", ar.Name, err)
	}
	ar.mu.Lock()
	ar.mintLogins++
	if v.Action != authguard.Proceed {
		ar.mintRefused++
	}
	ar.mu.Unlock()
	if v.Action != authguard.Proceed {
		return "", nil
	}
	r, err := ar.engine.Report(ctx, authguard.ReportRequest{
		Tenant: ar.Tenant, Flow: ar.MintsDeviceTokenIn, Account: l.account, IP: l.ip, Outcome: authguard.Success,
		Attempt: v.Attempt, PasswordFingerprint: fp,
	})
	if err != nil {
		return "", fmt.Errorf("actor %s: minting report: %w", ar.Name, err)
	}
	return r.DeviceToken, nil
}

// ownLogin, before every OwnSuccess.Every-th attempt of the actor, logs
// in to the account it owns in its flow from l's address with that
// account's own password, and reports the success with its token,
// keeping the device token it returns when OwnSuccess.DeviceToken is set.
func (ar *actorRun) ownLogin(ctx context.Context, l *login) error {
	ar.mu.Lock()
	due := ar.attempts%ar.OwnSuccess.Every == 0
	ar.mu.Unlock()
	if !due {
		return nil
	}
	own := ar.OwnSuccess.Account
	sum := sha256.Sum256([]byte("sim:own:" + own))
	fp := hex.EncodeToString(sum[:])
	v, err := ar.engine.Check(ctx, authguard.CheckRequest{Tenant: ar.Tenant, Flow: ar.Flow, Account: own, IP: l.ip, PasswordFingerprint: fp})
	if err != nil {
		return fmt.Errorf("actor %s: own login: %w", ar.Name, err)
	}
	ar.mu.Lock()
	ar.ownLogins++
	if v.Action != authguard.Proceed {
		ar.ownRefused++
	}
	ar.mu.Unlock()
	if v.Action != authguard.Proceed {
		return nil
	}
	r, err := ar.engine.Report(ctx, authguard.ReportRequest{Tenant: ar.Tenant, Flow: ar.Flow, Account: own, IP: l.ip, Outcome: authguard.Success,
		Attempt: v.Attempt, PasswordFingerprint: fp})
	if err != nil {
		return fmt.Errorf("actor %s: own login's report: %w", ar.Name, err)
	}
	if ar.OwnSuccess.DeviceToken && r.DeviceToken != "" {
		ar.mu.Lock()
		ar.ownDevice = r.DeviceToken
		ar.mu.Unlock()
	}
	return nil
}

// device returns the device token the actor holds for account, or "". It
// is safe to call from any goroutine.
func (ar *actorRun) device(account string) string {
	if !ar.DeviceToken {
		return ""
	}
	key := deviceKey(account)
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.devices[key]
}

func (ar *actorRun) setDevice(account, token string) {
	key := deviceKey(account)
	ar.mu.Lock()
	ar.devices[key] = token
	ar.mu.Unlock()
}

// deviceKey is account as the engine sees it, so that a token is found
// under any spelling of its account.
func deviceKey(account string) string {
	if k, err := authguard.NormalizeAccount(account); err == nil {
		return k
	}
	return account
}

// record counts one check of l, answered v.
func (ar *actorRun) record(l *login, v authguard.Verdict, at time.Duration) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.attempts++
	switch v.Action {
	case authguard.Proceed:
		if v.Delay > 0 {
			ar.delaySeconds += int((v.Delay + time.Second - 1) / time.Second)
		}
		ar.proceeded++
		// A fresh account is new with every login: count logins, not map
		// entries. A send counts its destination.
		first := !l.proceeded
		switch {
		case ar.Sends():
			first = !ar.checked[l.dest]
			ar.checked[l.dest] = true
		case !ar.Accounts.Fresh:
			first = !ar.checked[l.account]
			ar.checked[l.account] = true
		}
		l.proceeded = true
		if first {
			ar.checkedCount++
			if ar.firstCaptcha < 0 {
				ar.checkedBefore++
			}
		}
		ar.mark(at)
	case authguard.Delay:
		ar.delaySeconds += int(max(v.RetryAfter(), 1))
		ar.delayed++
		if ar.firstDelay < 0 {
			ar.firstDelay = at
		}
	case authguard.Captcha:
		if ar.StopsAtCaptcha {
			ar.stopped = true
		}
		ar.captcha++
		if ar.firstCaptcha < 0 {
			ar.firstCaptcha = at
		}
	case authguard.Deny:
		ar.denied++
	}
}

// addSpent counts the price of a code sent.
func (ar *actorRun) addSpent(price int) {
	ar.mu.Lock()
	ar.spent += price
	ar.mu.Unlock()
}

// recordFailure counts the report of a failure.
func (ar *actorRun) recordFailure(at time.Duration) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.failures++
	ar.mark(at)
}

// mark brings the series up to date at offset at, which is never before
// its last point; ar.mu must be held.
func (ar *actorRun) mark(at time.Duration) {
	p := point{at: at, n: int32(ar.proceeded), failures: int32(ar.failures)}
	if last := len(ar.series) - 1; last >= 0 && ar.series[last].at == at {
		ar.series[last] = p
		return
	}
	ar.series = append(ar.series, p)
}

func (ar *actorRun) result() ActorResult {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	offset := func(d time.Duration) string {
		if d < 0 {
			return ""
		}
		return d.String()
	}
	return ActorResult{
		Name:                         ar.Name,
		Attempts:                     ar.attempts,
		Proceeded:                    ar.proceeded,
		Delayed:                      ar.delayed,
		Captcha:                      ar.captcha,
		Denied:                       ar.denied,
		FirstDelayAt:                 offset(ar.firstDelay),
		FirstCaptchaAt:               offset(ar.firstCaptcha),
		AccountsChecked:              ar.checkedCount,
		AccountsCheckedBeforeCaptcha: ar.checkedBefore,
		ProceededMax24h:              maxInWindow(ar.series, day, func(p point) int { return int(p.n) }),
		FailuresMax24h:               maxInWindow(ar.series, day, func(p point) int { return int(p.failures) }),
		MintLogins:                   ar.mintLogins,
		MintRefused:                  ar.mintRefused,
		OwnLogins:                    ar.ownLogins,
		OwnRefused:                   ar.ownRefused,
		CaptchaSolved:                ar.captchaSolved,
		ReportsRefused:               ar.reportsRefused,
		StepUps:                      ar.stepUps,
		DeviceTokens:                 ar.deviceTokens,
		DelaySeconds:                 ar.delaySeconds,
		Spent:                        ar.spent,
	}
}

// randomIPv4 returns n distinct random unicast IPv4 addresses
// (1.0.0.0 to 223.255.255.255).
func randomIPv4(rng *rand.Rand, n int) []string {
	seen := make(map[uint32]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		v := 1<<24 + rng.Uint32N(223<<24)
		if seen[v] {
			continue
		}
		seen[v] = true
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		out = append(out, netip.AddrFrom4(b).String())
	}
	return out
}

// randomInPrefix returns n distinct random addresses in the IPv6 prefix p,
// which must hold at least n.
func randomInPrefix(rng *rand.Rand, p netip.Prefix, n int) []string {
	base := p.Addr().As16()
	seen := make(map[netip.Addr]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], rng.Uint64())
		binary.BigEndian.PutUint64(b[8:], rng.Uint64())
		for i := range b {
			keep := min(max(p.Bits()-8*i, 0), 8) // prefix bits in this byte
			mask := byte(0xff << (8 - keep))
			b[i] = base[i]&mask | b[i]&^mask
		}
		a := netip.AddrFrom16(b)
		if seen[a] {
			continue
		}
		seen[a] = true
		out = append(out, a.String())
	}
	return out
}

// wrap prefixes an error with the scenario's file name.
func (sc *Scenario) wrap(err error) error {
	if sc.file == "" {
		return err
	}
	return fmt.Errorf("%s: %w", sc.file, err)
}
