package authguard

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

// DefaultTenant is the tenant of requests that name none.
const DefaultTenant = "default"

// MinSecretBytes is the shortest secret New accepts.
const MinSecretBytes = 32

// Config configures an Engine.
type Config struct {
	// Policy is the set of flows. The default is DefaultPolicy().
	Policy *Policy
	// Store keeps the state. It is required.
	Store Store
	// Fallback answers for fail-open flows while Store fails: a local memory
	// store on each instance. When it is nil, fail-open flows answer as
	// fail-closed ones do. The default is nil.
	Fallback Store
	// Secret keys the subject hashes and signs attempt and device tokens. It
	// must be at least 32 bytes, and the same on every instance that shares a
	// store. It is required.
	Secret []byte
	// Now is the engine's clock; it only dates tokens, since stores keep
	// their own time. The default is time.Now.
	Now func() time.Time
	// KeyPrefix starts every store key, so that several deployments can
	// share one Redis. The default is "tg".
	KeyPrefix string
	// Observe, when set, is called once per Check and Report with what was
	// decided, for metrics and logs. It must not block. The default is nil.
	Observe func(Event)
}

// Source says where the state behind a verdict came from.
type Source uint8

const (
	// SourceStore: the configured store answered.
	SourceStore Source = iota
	// SourceFallback: the store failed and a fail-open flow answered from the
	// local fallback store.
	SourceFallback
	// SourceNone: no store answered (the verdict is the fail-closed one), or
	// none was asked (a report of an attempt shadow mode refused).
	SourceNone
)

func (s Source) String() string { return [...]string{"store", "fallback", "none"}[s] }

// Event describes one decided call. It holds no identifier.
type Event struct {
	// Call is "check" or "report".
	Call string
	// Flow is the flow's name.
	Flow string
	// Answer is the verdict returned to the caller.
	Answer Verdict
	// Computed is the verdict the policy computed; it differs from Answer
	// only in shadow mode.
	Computed Verdict
	// Source says which store answered.
	Source Source
	// StoreErr is the configured store's error, if it failed.
	StoreErr error
	// StoreDuration is how long the configured store took to answer or
	// fail; zero when it was not asked.
	StoreDuration time.Duration
}

// Engine decides verdicts. It is safe for concurrent use.
type Engine struct {
	policy   *Policy
	store    Store
	fallback Store
	now      func() time.Time
	prefix   string
	hash     *hasher
	attempts *attemptSigner
	tokens   *signer
	observe  func(Event)
}

// New returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("authguard: a store is required")
	}
	if len(cfg.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("authguard: the secret must be at least %d bytes", MinSecretBytes)
	}
	if cfg.Policy == nil {
		cfg.Policy = DefaultPolicy()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Observe == nil {
		cfg.Observe = func(Event) {}
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "tg"
	}
	return &Engine{
		policy:   cfg.Policy,
		store:    cfg.Store,
		fallback: cfg.Fallback,
		prefix:   cfg.KeyPrefix,
		now:      cfg.Now,
		hash:     newHasher(deriveKey(cfg.Secret, "subject")),
		attempts: newAttemptSigner(deriveKey(cfg.Secret, "attempt")),
		tokens:   newSigner(deriveKey(cfg.Secret, "device"), cfg.Now),
		observe:  cfg.Observe,
	}, nil
}

// Policy returns the engine's policy.
func (e *Engine) Policy() *Policy { return e.policy }

// subjects is a validated request: its flow and the hashes of its subjects.
type subjects struct {
	prefix  string
	tenant  string
	flow    *Flow
	account string   // hash
	ip      string   // hash of the IP prefix; empty when allow-listed
	wide    []string // hashes of the wider IPv6 prefixes, one per flow.Aggregates; nil when they do not apply
	fp      string   // hash of the password fingerprint, or empty
}

var tenantRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// subjects validates and hashes the parts every call has. It changes no state.
func (e *Engine) subjects(tenant, flow, account, ip, fingerprint string) (subjects, error) {
	var s subjects
	if tenant == "" {
		tenant = DefaultTenant
	}
	if !tenantRE.MatchString(tenant) {
		return s, &InputError{Field: "tenant", Detail: "must be 1 to 64 lower-case letters, digits, '-' and '_'"}
	}
	s.prefix, s.tenant = e.prefix, tenant
	if s.flow = e.policy.Flow(flow); s.flow == nil {
		return s, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	acct, err := NormalizeAccount(account)
	if err != nil {
		return s, err
	}
	addr, err := spraydetect.ParseIP(ip)
	if err != nil {
		return s, &InputError{Field: "ip", Detail: "must be an IPv4 or IPv6 address, without zone, port or prefix length"}
	}
	if len(fingerprint) > MaxFingerprintBytes || !utf8.ValidString(fingerprint) {
		return s, &InputError{Field: "password_fingerprint", Detail: "must be valid UTF-8 of at most 256 bytes"}
	}
	s.account = e.hash.subject(tenant, "account", acct)
	if !s.flow.AllowList.Contains(addr) {
		s.ip = e.hash.subject(tenant, "ip", s.flow.Grouping.Prefix(addr).String())
		for _, a := range s.flow.Aggregates {
			p, ok := spraydetect.WidePrefix(addr, a.Bits)
			if !ok {
				s.wide = nil
				break
			}
			s.wide = append(s.wide, e.hash.subject(tenant, "ip", p.String()))
		}
	}
	if fingerprint != "" {
		s.fp = e.hash.subject(tenant, "fp", fingerprint)
	}
	return s, nil
}

func (s *subjects) key(signal, hash string) string {
	return storeKey(s.prefix, s.tenant, s.flow.Name, signal, hash)
}

// role says how combine reads an operation's result.
type role uint8

const (
	// roleLimit: a Wait delays, an Over asks for a CAPTCHA.
	roleLimit role = iota
	// roleShared: the devices' shared counter; its Wait delays only a device
	// that is not exempt.
	roleShared
	// roleAllowance: the device's own allowance or its slot; an Over makes
	// the device not exempt, never a verdict on its own.
	roleAllowance
)

// plan is a batch of operations with what each one stands for.
type plan struct {
	ops  []Op
	meta []meta // one per op
}

// meta is the reason an op stands for and how combine reads its result.
type meta struct {
	reason Reason
	role   role
}

func newPlan() plan {
	return plan{ops: make([]Op, 0, 8), meta: make([]meta, 0, 8)}
}

func (p *plan) add(op Op, r Reason, ro role) {
	p.ops = append(p.ops, op)
	p.meta = append(p.meta, meta{r, ro})
}

// account returns an op on the account's counter, for clients without a
// valid device token.
func (e *Engine) account(s *subjects, action BackoffAction, attempt string) *BackoffOp {
	return &BackoffOp{
		Key: s.key(signalAccount, s.account), Action: action, Policy: s.flow.AccountBackoff,
		Fingerprint: s.fp, SeenWindow: s.flow.SamePasswordWindow, Attempt: attempt,
	}
}

// devices adds the ops of a known device: its own allowance (a log of its
// failed attempts within DeviceWindow), its slot among the account's
// devices, and the counter all devices of the account share.
func (e *Engine) devices(p *plan, s *subjects, device string, allowance, slot LogAction, member string, shared BackoffAction, attempt string) {
	f := s.flow
	if allowance != 0 {
		p.add(&LogOp{
			Key:    s.key(signalDevice, e.hash.subject(s.tenant, "device", s.account+"."+device)),
			Action: allowance, Member: member,
			Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: f.DeviceFree}},
		}, ReasonDeviceBackoff, roleAllowance)
	}
	if slot != 0 {
		p.add(&LogOp{
			Key:    s.key(signalDeviceSlots, s.account),
			Action: slot, Member: device,
			Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: f.DeviceSlots}},
		}, ReasonDeviceBackoff, roleAllowance)
	}
	p.add(&BackoffOp{
		Key: s.key(signalDevices, s.account), Action: shared, Policy: f.DeviceBackoff,
		Fingerprint: s.fp, SeenWindow: f.SamePasswordWindow, Attempt: attempt,
	}, ReasonDeviceBackoff, roleShared)
}

// logs adds the IP and password log operations of a call: spraying from the
// client's prefix and its wider IPv6 prefixes and spraying of the password
// (members: the account; action spray), and failures from the prefix
// (members: the attempt; action fail).
func (p *plan) logs(s *subjects, spray, fail LogAction, attemptID string, bypass bool) {
	f := s.flow
	if s.ip != "" {
		if f.IPSpray != nil {
			p.add(&LogOp{Key: s.key(signalIPSpray, s.ip), Action: spray, Member: s.account, Windows: f.IPSpray, Bypass: bypass}, ReasonIPSpray, roleLimit)
		}
		for i, w := range s.wide {
			p.add(&LogOp{Key: s.key(signalIPSpray, w), Action: spray, Member: s.account, Windows: f.Aggregates[i].IPSpray, Bypass: bypass}, ReasonIPSpray, roleLimit)
		}
		if f.IPFailures != nil {
			p.add(&LogOp{Key: s.key(signalIPFailures, s.ip), Action: fail, Member: attemptID, Windows: f.IPFailures, Bypass: bypass}, ReasonIPFailures, roleLimit)
		}
	}
	if s.fp != "" && f.PasswordSpray != nil {
		p.add(&LogOp{Key: s.key(signalPasswordSpray, s.fp), Action: spray, Member: s.account, Windows: f.PasswordSpray, Bypass: bypass}, ReasonPasswordSpray, roleLimit)
	}
}

// Check decides whether an attempt may go ahead. A Proceed charges the
// attempt as a failure before the caller looks at the credential and carries
// an attempt token for the report; any other verdict leaves the counters as
// they were. Only invalid input is an error (an *InputError); a store failure
// is answered by the flow's fail mode.
//
// A client with a valid device token for the account, trusted by this flow,
// is counted on the device's allowance and the account's shared device
// counter, and skips every IP and password-spray rule: what others do from
// its address never slows it. Any other client is counted on the account's
// counter and by the IP rules.
func (e *Engine) Check(ctx context.Context, req CheckRequest) (Verdict, error) {
	s, err := e.subjects(req.Tenant, req.Flow, req.Account, req.IP, req.PasswordFingerprint)
	if err != nil {
		return Verdict{}, err
	}
	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}
	device := e.deviceID(&s, req.DeviceToken)
	id := randomID()

	p := newPlan()
	if device != "" {
		e.devices(&p, &s, device, LogAdmit, LogAdmit, id, BackoffCharge, id)
	} else {
		p.add(e.account(&s, BackoffCharge, id), ReasonAccountBackoff, roleLimit)
		if s.ip != "" && s.flow.IPRate != nil {
			p.add(&BucketOp{Key: s.key(signalIPRate, s.ip), Bucket: *s.flow.IPRate}, ReasonIPRate, roleLimit)
		}
		p.logs(&s, LogAdmit, LogAdmit, id, req.CaptchaSolved)
	}

	b := e.do(ctx, s.flow, p.ops)
	computed := e.combine(s.flow, &p, b, req.CaptchaSolved)
	if computed.Action != Proceed && b.res != nil {
		e.refund(ctx, &p, b)
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	if answer.Action == Proceed {
		answer.Attempt = e.attempts.sign(s.tenant, s.flow.Name, s.account, attempt{
			device: device, id: id,
			exempt: device != "" && b.res != nil && b.res[0].Charged,
			shadow: computed.Action != Proceed,
		}, e.now().Add(s.flow.AttemptTTL))
	}
	e.observe(Event{Call: "check", Flow: s.flow.Name, Answer: answer, Computed: computed, Source: b.src, StoreErr: b.err, StoreDuration: b.took})
	return answer, nil
}

// Report settles an attempt and returns the verdict for the next attempt of
// the same account from the same client. Each attempt settles once: a
// report sent again finds nothing left to settle and changes nothing.
//
// A success refunds the attempt's own charge (never failures that other
// attempts made, so an attacker cannot tell whether the owner logged in),
// takes the account off the IP and password logs, and returns a device
// token. A failure confirms the charge, or is counted on its own when the
// report carries no valid attempt token.
func (e *Engine) Report(ctx context.Context, req ReportRequest) (Verdict, error) {
	s, err := e.subjects(req.Tenant, req.Flow, req.Account, req.IP, req.PasswordFingerprint)
	if err != nil {
		return Verdict{}, err
	}
	if req.Outcome != Failure && req.Outcome != Success {
		return Verdict{}, &InputError{Field: "outcome", Detail: `must be "failure" or "success"`}
	}
	if len(req.Attempt) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "attempt", Detail: "must be at most 1024 bytes"}
	}
	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}

	a, tokened := e.attempts.parse(req.Attempt, s.tenant, s.flow.Name, s.account, e.now())
	device := e.deviceID(&s, req.DeviceToken)
	if tokened {
		device = a.device
	}

	var computed Verdict
	var b batch
	b.src = SourceNone
	if !(tokened && a.shadow) { // shadow mode refused that attempt: nothing to settle
		p := newPlan()
		switch {
		case req.Outcome == Success:
			// Refund this attempt's own charges; read the rest.
			if device != "" {
				allowance := LogPeek
				if tokened && a.exempt {
					allowance = LogRemove
				}
				e.devices(&p, &s, device, allowance, LogPeek, a.id, BackoffSucceed, a.id)
			} else {
				p.add(e.account(&s, BackoffSucceed, a.id), ReasonAccountBackoff, roleLimit)
			}
			p.logs(&s, LogRemove, LogRemove, a.id, false)
		case tokened:
			// The check already counted it: settle the charge once. The
			// attempt is already in the IP failure log; the account's time
			// in the spray logs moves to now (it failed now), the one thing
			// a report sent twice can touch, and only ever stricter.
			if device != "" {
				e.devices(&p, &s, device, LogPeek, LogPeek, randomID(), BackoffConfirm, a.id)
			} else {
				p.add(e.account(&s, BackoffConfirm, a.id), ReasonAccountBackoff, roleLimit)
				p.logs(&s, LogAdd, LogAdmit, a.id, true)
			}
		default:
			// No valid attempt token: count the failure on its own.
			id := randomID()
			if device != "" {
				e.devices(&p, &s, device, LogAdd, LogAdmit, id, BackoffFail, "")
			} else {
				p.add(e.account(&s, BackoffFail, ""), ReasonAccountBackoff, roleLimit)
				p.logs(&s, LogAdd, LogAdd, id, false)
			}
		}
		b = e.do(ctx, s.flow, p.ops)
		computed = e.combine(s.flow, &p, b, false)
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	if req.Outcome == Success {
		if device == "" {
			device = randomID()
		}
		answer.DeviceToken = e.tokens.sign(&deviceClaims{
			Tenant: s.tenant, Trust: s.flow.DeviceTrust, Account: s.account, Device: device,
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(e.now(), s.flow.DeviceTokenTTL)},
		})
	}
	e.observe(Event{Call: "report", Flow: s.flow.Name, Answer: answer, Computed: computed, Source: b.src, StoreErr: b.err, StoreDuration: b.took})
	return answer, nil
}

// deviceID returns the device id of a valid device token issued for this
// account of this tenant by a flow of this flow's trust group, or "" for
// anything else: a token for another account or trust group, a forged or
// expired one is simply untrusted, not an error.
func (e *Engine) deviceID(s *subjects, token string) string {
	if token == "" {
		return ""
	}
	var c deviceClaims
	if !e.tokens.parse(token, &c) || c.Tenant != s.tenant || c.Trust != s.flow.DeviceTrust ||
		c.Account != s.account || len(c.Device) != hashLen {
		return ""
	}
	return c.Device
}

// batch is what running a plan gave.
type batch struct {
	// res are the results, one per op; nil when nothing answered.
	res []Result
	// held are the store's own results of a read-only copy of the plan
	// (peeks), when the store is full and refused to write; else nil. A
	// counter already holding its subject back is read from them.
	held []Result
	src  Source
	err  error
	took time.Duration
}

// do runs a batch on the store, or on the fallback for a fail-open flow when
// the store fails. When the store is full (it answers but refuses writes),
// it also reads the state the plan touches, so that nobody the store holds
// back goes free because it cannot record more.
func (e *Engine) do(ctx context.Context, f *Flow, ops []Op) batch {
	start := e.now()
	res, err := e.store.Do(ctx, ops)
	b := batch{took: e.now().Sub(start), err: err, src: SourceNone}
	if err == nil && len(res) != len(ops) {
		b.err = fmt.Errorf("authguard: store returned %d results for %d operations", len(res), len(ops))
	}
	if b.err == nil {
		b.res, b.src = res, SourceStore
		return b
	}
	if errors.Is(b.err, ErrStoreFull) {
		b.held = e.peek(ctx, ops)
	}
	if f.FailMode == FailOpen && e.fallback != nil {
		if res, ferr := e.fallback.Do(ctx, ops); ferr == nil && len(res) == len(ops) {
			b.res, b.src = res, SourceFallback
		}
	}
	return b
}

// peek reads, without changing anything, the counters and logs that ops
// touch; nil when the store does not answer. A bucket cannot be read
// without taking a token and reads as full.
func (e *Engine) peek(ctx context.Context, ops []Op) []Result {
	reads := make([]Op, 0, len(ops))
	at := make([]int, 0, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case *BackoffOp:
			r := *op
			r.Action, r.Attempt = BackoffPeek, ""
			reads, at = append(reads, &r), append(at, i)
		case *LogOp:
			r := *op
			r.Action = LogPeek
			reads, at = append(reads, &r), append(at, i)
		}
	}
	got, err := e.store.Do(ctx, reads)
	if err != nil || len(got) != len(reads) {
		return nil
	}
	held := make([]Result, len(ops))
	for j, i := range at {
		held[i] = got[j]
	}
	return held
}

// combine turns results into a verdict: the longest wait wins; else any log
// over its limit demands a CAPTCHA unless one was solved; else Proceed.
//
// A known device is exempt from the wait of the account's shared device
// counter while its own allowance and its slot admit it. When the store was
// full, what it still holds (b.held) counts as well. With no results at all
// (the store failed and the flow fails closed) it is the flow's fail-closed
// delay, unless the store, full, still showed a longer wait.
func (e *Engine) combine(f *Flow, p *plan, b batch, captchaSolved bool) Verdict {
	exempt := true
	for _, res := range [][]Result{b.res, b.held} {
		for i, r := range res {
			if p.meta[i].role == roleAllowance && r.Over {
				exempt = false
			}
		}
	}
	var wait time.Duration
	var delayed, captcha reasonSet
	read := func(res []Result) {
		for i, r := range res {
			switch p.meta[i].role {
			case roleAllowance:
				continue
			case roleShared:
				if exempt {
					continue
				}
			}
			if r.Wait > 0 {
				wait = max(wait, r.Wait)
				delayed.add(p.meta[i].reason)
			}
			if r.Over && !captchaSolved {
				captcha.add(p.meta[i].reason)
			}
		}
	}
	read(b.res)
	read(b.held)
	if b.res == nil && wait <= f.FailClosedRetry {
		return Verdict{Action: Delay, Delay: f.FailClosedRetry, Reasons: []Reason{ReasonUnavailable}}
	}
	switch {
	case wait > 0:
		return Verdict{Action: Delay, Delay: wait, Reasons: delayed.list()}
	case captcha != 0:
		return Verdict{Action: Captcha, Reasons: captcha.list()}
	}
	return Verdict{}
}

// refund undoes what a check charged when its verdict was not Proceed, so
// that only a Proceed ever counts. Tokens taken from the IP's request bucket
// stay taken: the flood guard counts checks, not attempts. It runs on the
// store that answered the check; a failure here is left to expiry.
func (e *Engine) refund(ctx context.Context, p *plan, b batch) {
	undo := make([]Op, 0, len(p.ops))
	for i, op := range p.ops {
		if !b.res[i].Charged {
			continue
		}
		switch op := op.(type) {
		case *BackoffOp:
			r := *op
			r.Action = BackoffRefund
			undo = append(undo, &r)
		case *LogOp:
			r := *op
			r.Action = LogRemove
			undo = append(undo, &r)
		}
	}
	if len(undo) == 0 {
		return
	}
	st := e.store
	if b.src == SourceFallback {
		st = e.fallback
	}
	_, _ = st.Do(ctx, undo)
}
