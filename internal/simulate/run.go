package simulate

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/testclock"
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
	series   [][]point // per actor: cumulative proceeded checks over time
}

// ActorResult holds one actor's counters.
type ActorResult struct {
	Name string `json:"name"`
	// Attempts counts checks made, including a check repeated after a delay
	// or with a solved CAPTCHA.
	Attempts int `json:"attempts"`
	// Proceeded, Delayed and Captcha count checks by the action answered.
	Proceeded int `json:"proceeded"`
	Delayed   int `json:"delayed"`
	Captcha   int `json:"captcha"`
	// FirstDelayAt and FirstCaptchaAt are the offsets from the scenario's
	// start of the first check answered delay or captcha, as Go durations
	// ("1m5s"); empty if none was.
	FirstDelayAt   string `json:"first_delay_at"`
	FirstCaptchaAt string `json:"first_captcha_at"`
	// AccountsChecked counts distinct accounts that got at least one
	// proceed.
	AccountsChecked int `json:"accounts_checked"`
	// AccountsCheckedBeforeCaptcha counts distinct accounts that got a
	// proceed before the actor's first captcha; it equals AccountsChecked
	// when the actor never got one.
	AccountsCheckedBeforeCaptcha int `json:"accounts_checked_before_captcha"`
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
	case "accounts_checked":
		return int64(a.AccountsChecked), true
	case "accounts_checked_before_captcha":
		return int64(a.AccountsCheckedBeforeCaptcha), true
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

// point is the cumulative number of proceeded checks at an offset.
type point struct {
	at time.Duration
	n  int
}

// Run replays sc on a fresh engine with policy (nil: the built-in policy)
// and a memory store, both on a virtual clock, and evaluates the
// expectations. The same scenario and policy always give the same counters,
// except where a burst runs checks concurrently and their order decides.
//
// Every actor performs logins. A login is Typos failed attempts (plus one
// more with probability TypoRate) followed by one attempt ending in Outcome,
// run back to back at one instant. An attempt is a check; on proceed, a report
// of its outcome with the check's attempt token. On captcha an actor that
// solves CAPTCHAs checks again at once with CaptchaSolved; on delay an actor
// that obeys waits Retry-After seconds and repeats the attempt; otherwise it
// gives up on the login.
//
// A rate actor is one attacker script: it starts Burst logins every
// Burst/Rate, taking accounts in order and addresses round-robin, cycling
// through both. When it obeys a delay the whole script pauses until the
// delay is over, repeats the delayed attempts, and goes on Burst/Rate later.
//
// An every actor is a group of independent users: account i (of n) logs in
// from address i mod len(IPs), Burst times at once, at Start + i×Every/n and
// then every Every; each login waits out its own delays.
//
// Nothing an actor does happens at or after its Stop.
func Run(sc *Scenario, policy *authguard.Policy) (*Result, error) {
	if policy == nil {
		policy = authguard.DefaultPolicy()
	}
	for i, a := range sc.Actors {
		if policy.Flow(a.Flow) == nil {
			err := &nodeError{Line: max(a.flowLine, 1), Path: fmt.Sprintf("actors[%d].flow", i),
				Msg: fmt.Sprintf("the policy has no flow %q (it has %s)", a.Flow, strings.Join(policy.FlowNames(), ", "))}
			return nil, sc.wrap(err)
		}
	}
	clock := testclock.New(time.Time{})
	engine, err := authguard.New(authguard.Config{
		Policy: policy,
		Store:  memstore.New(memstore.Config{Now: clock.Now}),
		Secret: secret,
		Now:    clock.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s := &sim{clock: clock, start: clock.Now(), engine: engine}
	runs := make([]*actorRun, len(sc.Actors))
	for i, a := range sc.Actors {
		runs[i] = newActorRun(s, a, sc.Seed, uint64(i))
		runs[i].schedule()
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
		return nil, fmt.Errorf("simulate: %s: %w", sc.Name, s.err)
	}

	r := &Result{Scenario: sc.Name, Duration: sc.Duration.String(), duration: sc.Duration,
		Actors: make([]ActorResult, len(runs)), series: make([][]point, len(runs)), Expectations: []ExpectationResult{}}
	byName := map[string]ActorResult{}
	for i, ar := range runs {
		r.Actors[i] = ar.result()
		r.series[i] = ar.series
		byName[ar.Name] = r.Actors[i]
	}
	for _, e := range sc.Expect {
		got, _ := byName[e.Actor].Get(e.Field)
		r.Expectations = append(r.Expectations, ExpectationResult{Expr: e.String(), OK: e.Holds(got), got: got})
	}
	return r, nil
}

// sim is the event loop.
type sim struct {
	clock  *testclock.Clock
	start  time.Time
	engine *authguard.Engine
	queue  eventQueue
	seq    uint64
	err    error
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
	accounts    []string
	ips         []string
	rng         *rand.Rand // used by the event loop only
	fingerprint string     // of Password, or ""

	// Rate actors: the script's position and the logins waiting out a delay.
	nextAccount, nextIP int
	pending             []*login

	mu                       sync.Mutex // guards what follows
	devices                  map[string]string
	attempts, proceeded      int
	delayed, captcha         int
	firstDelay, firstCaptcha time.Duration // -1: never
	checked                  map[string]bool
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
	switch {
	case a.IPs.RandomIPv4 > 0:
		ar.ips = randomIPv4(ar.rng, a.IPs.RandomIPv4)
	case a.IPs.Count > 0:
		ar.ips = randomInPrefix(ar.rng, a.IPs.RandomIPv6In, a.IPs.Count)
	default:
		ar.ips = a.IPs.List
	}
	return ar
}

// schedule puts the actor's first events on the queue.
func (ar *actorRun) schedule() {
	if ar.Every == 0 {
		ar.s.at(ar.Start, ar.fireRate)
		return
	}
	n := int64(len(ar.accounts))
	for i := range ar.accounts {
		// i×Every/n in whole milliseconds, which cannot overflow.
		first := ar.Start + time.Duration(int64(i)*ar.Every.Milliseconds()/n)*time.Millisecond
		if first < ar.Stop {
			ar.s.at(first, ar.fireEvery(i))
		}
	}
}

// fireRate is one step of a rate actor's script.
func (ar *actorRun) fireRate(at time.Duration) {
	batch := ar.pending
	ar.pending = nil
	if len(batch) == 0 {
		for range ar.Burst {
			batch = append(batch, ar.newLogin(ar.accounts[ar.nextAccount], ar.ips[ar.nextIP]))
			ar.nextAccount = (ar.nextAccount + 1) % len(ar.accounts)
			ar.nextIP = (ar.nextIP + 1) % len(ar.ips)
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

// fireEvery returns the schedule of account i of an every actor.
func (ar *actorRun) fireEvery(i int) func(time.Duration) {
	var fire func(time.Duration)
	fire = func(at time.Duration) {
		batch := make([]*login, ar.Burst)
		for b := range batch {
			batch[b] = ar.newLogin(ar.accounts[i], ar.ips[i%len(ar.ips)])
		}
		ar.settle(batch, ar.runBatch(batch, at), at)
		if next := at + ar.Every; next < ar.Stop {
			ar.s.at(next, fire)
		}
	}
	return fire
}

// settle schedules, for each login of an every actor that obeys a delay,
// its retry.
func (ar *actorRun) settle(batch []*login, waits []time.Duration, at time.Duration) {
	for i, w := range waits {
		if w > 0 && at+w < ar.Stop {
			l := batch[i]
			ar.s.at(at+w, func(at time.Duration) {
				ar.settle([]*login{l}, ar.runBatch([]*login{l}, at), at)
			})
		}
	}
}

// login is one login in progress.
type login struct {
	account, ip string
	steps       []step
	pos         int // the step to do next
}

// step is one attempt of a login.
type step struct {
	outcome     authguard.Outcome
	fingerprint string
}

func (ar *actorRun) newLogin(account, ip string) *login {
	typos := ar.Typos
	if ar.TypoRate > 0 && ar.rng.Float64() < ar.TypoRate {
		typos++
	}
	l := &login{account: account, ip: ip, steps: make([]step, 0, typos+1)}
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
// actor obeys, whose length it returns.
func (ar *actorRun) advance(l *login, at time.Duration) (time.Duration, error) {
	ctx := context.Background()
	for l.pos < len(l.steps) {
		st := l.steps[l.pos]
		solved := false
		for {
			device := ar.device(l.account)
			v, err := ar.s.engine.Check(ctx, authguard.CheckRequest{
				Flow: ar.Flow, Account: l.account, IP: l.ip, DeviceToken: device,
				CaptchaSolved: solved, PasswordFingerprint: st.fingerprint,
			})
			if err != nil {
				return 0, fmt.Errorf("actor %s: check: %w", ar.Name, err)
			}
			ar.record(l.account, v.Action, at)
			if v.Action == authguard.Proceed {
				r, err := ar.s.engine.Report(ctx, authguard.ReportRequest{
					Flow: ar.Flow, Account: l.account, IP: l.ip, Outcome: st.outcome,
					Attempt: v.Attempt, DeviceToken: device, PasswordFingerprint: st.fingerprint,
				})
				if err != nil {
					return 0, fmt.Errorf("actor %s: report: %w", ar.Name, err)
				}
				if st.outcome == authguard.Success && ar.DeviceToken && r.DeviceToken != "" {
					ar.setDevice(l.account, r.DeviceToken)
				}
				break
			}
			if v.Action == authguard.Captcha && ar.SolvesCaptcha && !solved {
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

func (ar *actorRun) device(account string) string {
	if !ar.DeviceToken {
		return ""
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.devices[account]
}

func (ar *actorRun) setDevice(account, token string) {
	ar.mu.Lock()
	ar.devices[account] = token
	ar.mu.Unlock()
}

// record counts one check.
func (ar *actorRun) record(account string, action authguard.Action, at time.Duration) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.attempts++
	switch action {
	case authguard.Proceed:
		ar.proceeded++
		if !ar.checked[account] {
			ar.checked[account] = true
			if ar.firstCaptcha < 0 {
				ar.checkedBefore++
			}
		}
		ar.series = append(ar.series, point{at: at, n: ar.proceeded})
	case authguard.Delay:
		ar.delayed++
		if ar.firstDelay < 0 {
			ar.firstDelay = at
		}
	case authguard.Captcha:
		ar.captcha++
		if ar.firstCaptcha < 0 {
			ar.firstCaptcha = at
		}
	}
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
		FirstDelayAt:                 offset(ar.firstDelay),
		FirstCaptchaAt:               offset(ar.firstCaptcha),
		AccountsChecked:              len(ar.checked),
		AccountsCheckedBeforeCaptcha: ar.checkedBefore,
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
