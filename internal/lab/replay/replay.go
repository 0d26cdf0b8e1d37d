package replay

import (
	"container/heap"
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// secret keys the replayed engines. It is fixed so that runs are
// repeatable; it protects nothing (the identifiers it hashes are already
// synthetic).
var secret = []byte("tollgate replay: a fixed secret that protects nothing")

// Candidate is a policy to replay the traffic through.
type Candidate struct {
	// Name names it in the report (a config file's base name).
	Name string
	// Policy is its flows.
	Policy *authguard.Policy
}

// Input is one recorded file.
type Input struct {
	// Name names it in messages.
	Name string
	// Open opens it from the start. Run calls it twice, once per pass; a
	// Source that is an io.Closer is closed after each pass.
	Open func() (Source, error)
}

// Config configures Run.
type Config struct {
	// Candidates are the policies to compare. At least one is required.
	Candidates []Candidate
	// Inputs are the recorded files, each in time order; Run merges them
	// by time. At least one is required.
	Inputs []Input
	// SkipBad, when true, skips lines that cannot be read (or are out of
	// order) and counts them; else the first one stops the run with its
	// *LineError. The default is false.
	SkipBad bool
	// Progress, when set, gets a line about once a second saying how far
	// each pass is. The default is nil: silence.
	Progress io.Writer
	// RealUserWindow is how soon after an attempt a success of its account
	// from the same device or IP prefix makes it a real user's. The
	// default is 7 days.
	RealUserWindow time.Duration
	// MaxPending caps, per candidate, the checks of a decision log
	// remembered until their report (an entry is dropped anyway 10 minutes
	// of recorded time after its check). The default is 1,000,000.
	MaxPending int
	// MaxDevices caps, per candidate, the device tokens kept for the
	// device ids of the input, least recently used first out (a token is
	// about 0.4 KB). The default is 1,048,576.
	MaxDevices int
	// StoreEntries is each candidate's memory store's MaxEntries. The
	// default is 2,000,000.
	StoreEntries int
	// PrefixCounters is how many IP prefixes each candidate counts refused
	// attempts of exactly; beyond them the counts of the top prefixes are
	// upper bounds (the Space-Saving algorithm). The default is 100,000.
	PrefixCounters int
}

// Tunables that are not worth a Config field.
const (
	// pendingTTL is how long after its check an attempt's report is
	// awaited: tollgate's attempt_ttl.
	pendingTTL = 10 * time.Minute
	// orderSlack is how far back in time an input may step: the decision
	// log's lines are written by several goroutines.
	orderSlack = time.Minute
	// batchSize is how many events the candidates take at a time.
	batchSize = 512
	// topPrefixes is how many prefixes the report lists.
	topPrefixes = 10
	// maxExamples is how many messages of skipped lines and refused events
	// the report keeps.
	maxExamples = 5
)

// Run replays the inputs through every candidate and reports what each
// would have done, in two passes over the inputs.
//
// Pass 1 finds the real users: for each account, the times of its
// successes, with their device and IP prefix. An attempt is a real user's
// when its account succeeds at the attempt's time or within RealUserWindow
// after it, from the same device or the same IP prefix; any other attempt
// is counted as an attacker's (it failed, or its outcome is unknown).
//
// Pass 2 gives every candidate an engine of its own on a memory store,
// with a fixed secret and a virtual clock set to each event's time, and
// replays each event as it would have happened under that candidate: an
// attempt with a known outcome (CallAttempt) is checked and, when it
// proceeds, reported; a decision log's check is checked, and its report
// (matched by attempt id) reported only if the candidate let the check
// proceed; a check the original refused but the candidate lets through has
// no outcome and stays unreported (tollgate counts it as a failure). A
// device token a replayed success returns is sent with the later events of
// the same device. Sends are counted and skipped.
//
// A server with step-up on logs more: a login success the candidate
// answers step_up keeps the candidate's ticket for the account, and the
// log's step_up_passed and step_up_failed reports are reported on the
// step-up flow with it (a candidate that did not step that login up has
// no ticket, and the second factor is skipped, as it would not have been
// asked), and a try's step-up check that the log names with an attempt
// is settled by the report that names it, the candidate's attempt token
// after the candidate's ticket (a log from before step-up checks reserved
// names none, and its step-up checks leave nothing unreported). A password_changed report is reported as it was,
// so that the candidate's engine clears what it clears.
//
// Memory is flat in the number of events: it grows with distinct
// accounts that succeed, distinct address prefixes, and the candidates'
// stores and tables, all of which but the first two are bounded.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if len(cfg.Candidates) == 0 {
		return Report{}, errors.New("replay: no candidate policy")
	}
	if len(cfg.Inputs) == 0 {
		return Report{}, errors.New("replay: no input")
	}
	if cfg.RealUserWindow <= 0 {
		cfg.RealUserWindow = 7 * 24 * time.Hour
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1_000_000
	}
	if cfg.MaxDevices <= 0 {
		cfg.MaxDevices = 1 << 20
	}
	if cfg.StoreEntries <= 0 {
		cfg.StoreEntries = 2_000_000
	}
	if cfg.PrefixCounters <= 0 {
		cfg.PrefixCounters = 100_000
	}
	for _, c := range cfg.Candidates {
		if c.Policy == nil {
			return Report{}, fmt.Errorf("replay: candidate %q has no policy", c.Name)
		}
	}

	users := newUsers(cfg.RealUserWindow)
	prog := newProgress(cfg.Progress, "pass 1")
	err := each(ctx, cfg, nil, func(ev *Event) {
		prog.tick(ev.Time)
		if ev.Outcome == OutcomeSuccess && ev.Account != "" && (ev.Call == CallAttempt || ev.Call == CallReport) {
			dev := ev.Device
			if dev == "" {
				dev = ev.Issued
			}
			users.add(users.account(ev), ev.Time.UnixNano(), users.hash(dev), users.hash(ev.IP.P))
		}
	})
	prog.done()
	if err != nil {
		return Report{}, err
	}

	runners := make([]*runner, len(cfg.Candidates))
	for i, c := range cfg.Candidates {
		if runners[i], err = newRunner(c, &cfg); err != nil {
			return Report{}, err
		}
	}
	rep := &Report{}
	for _, in := range cfg.Inputs {
		rep.Inputs = append(rep.Inputs, in.Name)
	}
	base := newTally("original", cfg.PrefixCounters)
	hasBase, baseDelayUnknown := false, false
	syn := newSynth()
	prog = newProgress(cfg.Progress, "pass 2")

	var wg sync.WaitGroup
	chans := make([]chan []item, len(runners))
	for i, r := range runners {
		chans[i] = make(chan []item)
		go func() {
			for b := range chans[i] {
				for j := range b {
					r.step(&b[j])
				}
				wg.Done()
			}
		}()
	}
	defer func() {
		for _, c := range chans {
			close(c)
		}
	}()
	bufs := [2][]item{make([]item, 0, batchSize), make([]item, 0, batchSize)}
	cur, busy := 0, false
	flush := func() {
		if busy {
			wg.Wait()
		}
		wg.Add(len(chans))
		for _, c := range chans {
			c <- bufs[cur]
		}
		busy, cur = true, cur^1
		bufs[cur] = bufs[cur][:0]
	}
	err = each(ctx, cfg, rep, func(ev *Event) {
		prog.tick(ev.Time)
		if rep.Events == 0 {
			rep.From = ev.Time.UTC()
		}
		rep.Events++
		rep.To = ev.Time.UTC()
		it := item{ev: *ev}
		switch ev.Call {
		case CallSend:
			rep.Sends++
			return
		case CallAttempt, CallCheck:
			rep.Attempts++
			it.real = users.real(users.account(ev), ev.Time.UnixNano(), users.hash(ev.Device), users.hash(ev.IP.P))
			if it.real {
				rep.RealAttempts++
			}
			if ev.Action != "" {
				hasBase = true
				v := authguard.Verdict{Action: parseAction(ev.Action), Delay: time.Duration(ev.DelayMS) * time.Millisecond}
				if v.Action == authguard.Delay && ev.DelayMS <= 0 {
					baseDelayUnknown = true
				}
				for _, r := range ev.Reasons {
					v.Reasons = append(v.Reasons, authguard.Reason(r))
				}
				base.count(&it, v)
			}
		}
		it.account, it.ip = syn.account(ev.Account), syn.ip(ev.IP)
		bufs[cur] = append(bufs[cur], it)
		if len(bufs[cur]) == batchSize {
			flush()
		}
	})
	if err == nil && len(bufs[cur]) > 0 {
		flush()
	}
	if busy {
		wg.Wait()
	}
	prog.done()
	if err != nil {
		return Report{}, err
	}
	if hasBase {
		res := base.result()
		res.DelayUnknown = baseDelayUnknown
		rep.Baseline = &res
	}
	for _, r := range runners {
		rep.Candidates = append(rep.Candidates, r.tally.result())
	}
	return *rep, nil
}

// item is an event as the candidates take it: with whether it is a real
// user's attempt, and its synthetic account and address.
type item struct {
	ev          Event
	real        bool
	account, ip string
}

// each opens every input, merges them by time and calls fn with each
// event. Unreadable lines stop it with their *LineError, or with SkipBad
// are counted in rep (when not nil) and skipped.
func each(ctx context.Context, cfg Config, rep *Report, fn func(*Event)) error {
	m := &merger{skipBad: cfg.SkipBad, rep: rep}
	defer m.close()
	for i, in := range cfg.Inputs {
		src, err := in.Open()
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		m.inputs = append(m.inputs, &input{name: in.Name, src: src, idx: i})
	}
	for _, in := range m.inputs {
		if err := m.advance(in); err != nil {
			return err
		}
		if in.ok {
			m.heap = append(m.heap, in)
		}
	}
	heap.Init(&m.heap)
	for n := 0; len(m.heap) > 0; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		in := m.heap[0]
		fn(&in.head)
		if err := m.advance(in); err != nil {
			return err
		}
		if in.ok {
			heap.Fix(&m.heap, 0)
		} else {
			heap.Pop(&m.heap)
		}
	}
	return nil
}

// input is one open input of a merge, with its next event.
type input struct {
	name   string
	src    Source
	idx    int
	head   Event
	ok     bool      // head is an event; false at the end
	latest time.Time // the latest time read so far
}

// merger is a k-way merge of inputs by time (ties in input order).
type merger struct {
	inputs  []*input
	heap    inputHeap
	skipBad bool
	rep     *Report
}

// advance reads in's next event, checking that it is not more than
// orderSlack older than the latest before it.
func (m *merger) advance(in *input) error {
	for {
		ev, err := in.src.Next()
		if errors.Is(err, io.EOF) {
			in.ok = false
			return nil
		}
		if err == nil && ev.Time.Before(in.latest.Add(-orderSlack)) {
			file := ev.File
			if file == "" {
				file = in.name
			}
			err = &LineError{File: file, Line: ev.Line, Err: fmt.Errorf("out of order: %s is more than %s before %s, an earlier line's time",
				ev.Time.UTC().Format(time.RFC3339), orderSlack, in.latest.UTC().Format(time.RFC3339))}
		}
		var le *LineError
		if errors.As(err, &le) && m.skipBad {
			if m.rep != nil {
				m.rep.Skipped++
				if len(m.rep.SkippedExamples) < maxExamples {
					m.rep.SkippedExamples = append(m.rep.SkippedExamples, le.Error())
				}
			}
			continue
		}
		if le != nil {
			return le
		}
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		if ev.Time.After(in.latest) {
			in.latest = ev.Time
		}
		in.head, in.ok = ev, true
		return nil
	}
}

// close closes the inputs, counting first in rep (when not nil) the events
// each read past as not logins.
func (m *merger) close() {
	for _, in := range m.inputs {
		if s, ok := in.src.(interface{ Skipped() int }); ok && m.rep != nil {
			m.rep.NotLogins += int64(s.Skipped())
		}
		if c, ok := in.src.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

type inputHeap []*input

func (h inputHeap) Len() int { return len(h) }
func (h inputHeap) Less(i, j int) bool {
	if !h[i].head.Time.Equal(h[j].head.Time) {
		return h[i].head.Time.Before(h[j].head.Time)
	}
	return h[i].idx < h[j].idx
}
func (h inputHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *inputHeap) Push(x any)   { *h = append(*h, x.(*input)) }
func (h *inputHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// runner replays the events through one candidate.
type runner struct {
	engine  *authguard.Engine
	policy  *authguard.Policy
	clock   *testclock.Clock
	now     time.Time
	pending *pendingSet
	devices *lru
	// tickets maps tenant and account to the step-up ticket the
	// candidate's last step_up answer carried.
	tickets *lru
	tally   *tally
}

func newRunner(c Candidate, cfg *Config) (*runner, error) {
	clock := testclock.New(time.Unix(0, 0))
	engine, err := authguard.New(authguard.Config{
		Policy: c.Policy,
		Store:  memstore.New(memstore.Config{MaxEntries: cfg.StoreEntries, Now: clock.Now}),
		Secret: secret,
		Now:    clock.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("replay: candidate %q: %w", c.Name, err)
	}
	return &runner{
		engine: engine, policy: c.Policy, clock: clock,
		pending: newPendingSet(cfg.MaxPending, pendingTTL),
		devices: newLRU(cfg.MaxDevices),
		tickets: newLRU(cfg.MaxDevices),
		tally:   newTally(c.Name, cfg.PrefixCounters),
	}, nil
}

// pending is what a candidate did with a decision log's check.
type pending struct {
	at        int64 // the check's time, Unix ns
	proceeded bool
	token     string // the attempt token, when it proceeded
	real      bool
}

// step replays one event.
func (r *runner) step(it *item) {
	ev := &it.ev
	if ev.Time.After(r.now) { // never backwards: inputs may step back a little
		r.now = ev.Time
		r.clock.Set(r.now)
	}
	r.pending.expire(r.now.UnixNano())
	ctx := context.Background()
	switch ev.Call {
	case CallAttempt, CallCheck:
		v, err := r.engine.Check(ctx, authguard.CheckRequest{
			Tenant: ev.Tenant, Flow: ev.Flow, Account: it.account, IP: it.ip,
			DeviceToken: r.devices.get(ev.Device), PasswordFingerprint: ev.Fingerprint,
		})
		if err != nil {
			r.tally.refuse(err)
			return
		}
		r.tally.count(it, v)
		proceeded := v.Action == authguard.Proceed
		if ev.Call == CallCheck {
			if ev.Attempt != "" {
				r.pending.put(ev.Attempt, pending{at: ev.Time.UnixNano(), proceeded: proceeded, token: v.Attempt, real: it.real})
			} else if proceeded && !r.secondFactor(ev.Flow) { // a log of a step-up check before it reserved names no attempt
				r.tally.unreported++
			}
			return
		}
		if proceeded {
			r.report(it, v.Attempt)
		}
	case CallReport:
		token := ""
		if ev.Attempt != "" {
			if p, ok := r.pending.take(ev.Attempt); ok {
				if !p.proceeded { // the original let it through; this candidate did not
					if ev.Outcome == OutcomeSuccess {
						r.tally.successRefused(it)
					}
					return
				}
				token = p.token
			}
		}
		r.report(it, token)
	}
}

// report reports the event's outcome with an attempt token (or none) and
// keeps the device token a success returns.
func (r *runner) report(it *item, token string) {
	ev := &it.ev
	req := authguard.ReportRequest{
		Tenant: ev.Tenant, Flow: ev.Flow, Account: it.account, IP: it.ip,
		Attempt: token, DeviceToken: r.devices.get(ev.Device), PasswordFingerprint: ev.Fingerprint,
	}
	ticket := ev.Tenant + "\x00" + it.account
	switch ev.Outcome {
	case OutcomeFailure:
		req.Outcome = authguard.Failure
	case OutcomeSuccess:
		req.Outcome = authguard.Success
	case OutcomeStepUpPassed, OutcomeStepUpFailed:
		req.Outcome = authguard.StepUpFailed
		if ev.Outcome == OutcomeStepUpPassed {
			req.Outcome = authguard.StepUpPassed
		}
		// The ticket is the candidate's: the one the log's step_up answer
		// carried was the original's.
		req.Attempt, req.PasswordFingerprint = r.tickets.get(ticket), ""
		if req.Attempt == "" {
			return // the candidate did not step this login up: no second factor was asked
		}
		if token != "" { // the candidate's check of this try, settled after the ticket
			req.Attempt += authguard.StepUpAttemptSeparator + token
		}
	case OutcomePasswordChanged:
		req.DeviceToken, req.PasswordFingerprint = "", ""
		req.Outcome = authguard.PasswordChanged
	default:
		return
	}
	v, err := r.engine.Report(context.Background(), req)
	if err != nil {
		r.tally.refuse(err)
		return
	}
	switch {
	case v.Action == authguard.StepUp && v.Attempt != "":
		r.tickets.put(ticket, v.Attempt)
	case req.Outcome == authguard.StepUpPassed:
		r.tickets.put(ticket, "") // spent: the second factor passed
	}
	if v.DeviceToken == "" {
		return
	}
	id := ev.Issued
	if id == "" {
		id = ev.Device
	}
	if id != "" {
		r.devices.put(id, v.DeviceToken)
	}
}

// secondFactor reports whether the candidate's flow is a step-up flow.
func (r *runner) secondFactor(flow string) bool {
	f := r.policy.Flow(flow)
	return f != nil && f.SecondFactor
}

// parseAction reads a recorded action ("proceed", "delay", ...); an
// unknown word reads as captcha: a refusal of some kind.
func parseAction(s string) authguard.Action {
	switch s {
	case "proceed":
		return authguard.Proceed
	case "delay":
		return authguard.Delay
	case "deny":
		return authguard.Deny
	}
	return authguard.Captcha
}

// progress writes a progress line about once a second.
type progress struct {
	w    io.Writer
	pass string
	n    int64
	last time.Time
	at   time.Time
}

func newProgress(w io.Writer, pass string) *progress {
	return &progress{w: w, pass: pass, last: time.Now()}
}

func (p *progress) tick(at time.Time) {
	p.n++
	if p.w == nil || p.n%65536 != 0 {
		return
	}
	p.at = at
	if now := time.Now(); now.Sub(p.last) >= time.Second {
		p.last = now
		p.line()
	}
}

func (p *progress) line() {
	fmt.Fprintf(p.w, "replay: %s: %s events, %s reached\n", p.pass, millions(p.n), p.at.UTC().Format("2006-01-02 15:04"))
}

func (p *progress) done() {
	if p.w != nil && p.n > 0 {
		fmt.Fprintf(p.w, "replay: %s: %s events, done\n", p.pass, millions(p.n))
	}
}

// millions writes n as "950", "12.3k" or "3.2M".
func millions(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// users are the accounts' successes (pass 1), for telling a real user's
// attempt from an attacker's (pass 2). Accounts, devices and prefixes are
// kept as 64-bit hashes: 24 bytes a success.
type users struct {
	seed   maphash.Seed
	window int64
	m      map[uint64]*history
}

// history is one account's successes in time order, and how far pass 2
// has come through them.
type history struct {
	recs []success
	next int
}

type success struct {
	at       int64 // Unix ns
	dev, pfx uint64
}

func newUsers(window time.Duration) *users {
	return &users{seed: maphash.MakeSeed(), window: int64(window), m: map[uint64]*history{}}
}

// hash is a key's hash, 0 for "" (no key).
func (u *users) hash(s string) uint64 {
	if s == "" {
		return 0
	}
	return maphash.String(u.seed, s) | 1
}

// account is the hash of the event's account within its tenant, 0 when it
// has none.
func (u *users) account(ev *Event) uint64 {
	if ev.Account == "" {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(u.seed)
	h.WriteString(ev.Tenant)
	h.WriteByte(0)
	h.WriteString(ev.Account)
	return h.Sum64() | 1
}

// add records a success. Of three successes in a row from the same device
// and prefix within the window, the middle one answers no question the
// other two do not: it is dropped, so an account that logs in every day
// from one device keeps a success or two a week.
func (u *users) add(acct uint64, at int64, dev, pfx uint64) {
	h := u.m[acct]
	if h == nil {
		h = &history{}
		u.m[acct] = h
	}
	s := success{at, dev, pfx}
	n := len(h.recs)
	same := func(r success) bool { return r.dev == dev && r.pfx == pfx }
	switch {
	case n > 0 && h.recs[n-1].at > at: // an input stepped back: keep the order
		i := n - 1
		for i > 0 && h.recs[i-1].at > at {
			i--
		}
		h.recs = append(h.recs, success{})
		copy(h.recs[i+1:], h.recs[i:])
		h.recs[i] = s
	case n >= 2 && same(h.recs[n-1]) && same(h.recs[n-2]) && at-h.recs[n-2].at <= u.window:
		h.recs[n-1].at = at
	default:
		h.recs = append(h.recs, s)
	}
}

// real reports whether an attempt at at is a real user's: its account
// succeeds at at or within the window after it, from the same device or
// the same prefix. Calls come in time order (give or take orderSlack).
func (u *users) real(acct uint64, at int64, dev, pfx uint64) bool {
	if acct == 0 {
		return false
	}
	h := u.m[acct]
	if h == nil {
		return false
	}
	for h.next < len(h.recs) && h.recs[h.next].at < at-int64(orderSlack) {
		h.next++
	}
	if h.next == len(h.recs) {
		delete(u.m, acct) // nothing left to find
		return false
	}
	for _, r := range h.recs[h.next:] {
		if r.at > at+u.window {
			break
		}
		if r.at >= at && ((dev != 0 && r.dev == dev) || (pfx != 0 && r.pfx == pfx)) {
			return true
		}
	}
	return false
}

// pendingSet holds the checks awaiting their report, by attempt id, for
// at most ttl of recorded time and at most max of them (oldest out).
type pendingSet struct {
	m    map[string]pending
	q    []queued
	head int
	max  int
	ttl  int64
}

type queued struct {
	id string
	at int64
}

func newPendingSet(max int, ttl time.Duration) *pendingSet {
	return &pendingSet{m: map[string]pending{}, max: max, ttl: int64(ttl)}
}

func (s *pendingSet) put(id string, p pending) {
	s.m[id] = p
	s.q = append(s.q, queued{id, p.at})
	for len(s.m) > s.max {
		s.pop()
	}
}

func (s *pendingSet) take(id string) (pending, bool) {
	p, ok := s.m[id]
	if ok {
		delete(s.m, id)
	}
	return p, ok
}

// expire drops the checks older than ttl before now.
func (s *pendingSet) expire(now int64) {
	for s.head < len(s.q) && s.q[s.head].at < now-s.ttl {
		s.pop()
	}
}

func (s *pendingSet) pop() {
	q := s.q[s.head]
	s.q[s.head] = queued{}
	s.head++
	if p, ok := s.m[q.id]; ok && p.at == q.at {
		delete(s.m, q.id)
	}
	if s.head >= 1024 && s.head*2 >= len(s.q) {
		s.q = append(s.q[:0], s.q[s.head:]...)
		s.head = 0
	}
}

// lru maps device ids to the device tokens a candidate issued for them,
// keeping the max most recently used.
type lru struct {
	max int
	m   map[string]*list.Element
	l   list.List
}

type lruEntry struct{ id, token string }

func newLRU(max int) *lru { return &lru{max: max, m: map[string]*list.Element{}} }

// get returns id's token, "" when there is none (or id is "").
func (c *lru) get(id string) string {
	if id == "" {
		return ""
	}
	e, ok := c.m[id]
	if !ok {
		return ""
	}
	c.l.MoveToFront(e)
	return e.Value.(*lruEntry).token
}

func (c *lru) put(id, token string) {
	if e, ok := c.m[id]; ok {
		e.Value.(*lruEntry).token = token
		c.l.MoveToFront(e)
		return
	}
	c.m[id] = c.l.PushFront(&lruEntry{id, token})
	if c.l.Len() > c.max {
		last := c.l.Back()
		c.l.Remove(last)
		delete(c.m, last.Value.(*lruEntry).id)
	}
}
