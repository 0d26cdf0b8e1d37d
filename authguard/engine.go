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
	devices  *signer
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
		devices:  newSigner(deriveKey(cfg.Secret, "device"), cfg.Now),
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
	account string // hash
	ip      string // hash of the IP prefix; empty when allow-listed
	fp      string // hash of the password fingerprint, or empty
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
	}
	if fingerprint != "" {
		s.fp = e.hash.subject(tenant, "fp", fingerprint)
	}
	return s, nil
}

func (s *subjects) key(signal, hash string) string {
	return storeKey(s.prefix, s.tenant, s.flow.Name, signal, hash)
}

// counter returns the backoff op for the counter an attempt is charged to:
// the device's own when device is set, else the account's.
func (e *Engine) counter(s *subjects, device string, action BackoffAction) (*BackoffOp, Reason) {
	op := &BackoffOp{
		Action:      action,
		Policy:      s.flow.AccountBackoff,
		Fingerprint: s.fp,
		SeenWindow:  s.flow.SamePasswordWindow,
	}
	if device == "" {
		op.Key = s.key(signalAccount, s.account)
		return op, ReasonAccountBackoff
	}
	op.Key = s.key(signalDevice, e.hash.subject(s.tenant, "device", s.account+"."+device))
	op.Policy = s.flow.DeviceBackoff
	return op, ReasonDeviceBackoff
}

// plan is a batch of operations with the reason each one stands for.
type plan struct {
	ops     []Op
	reasons []Reason
}

func (p *plan) add(op Op, r Reason) {
	p.ops = append(p.ops, op)
	p.reasons = append(p.reasons, r)
}

// logs adds the IP and password log operations of a call.
func (p *plan) logs(s *subjects, action LogAction, attemptID string, bypass bool) {
	f := s.flow
	if s.ip != "" {
		if f.IPSpray != nil {
			p.add(&LogOp{Key: s.key(signalIPSpray, s.ip), Action: action, Member: s.account, Windows: f.IPSpray, Bypass: bypass}, ReasonIPSpray)
		}
		if f.IPFailures != nil {
			p.add(&LogOp{Key: s.key(signalIPFailures, s.ip), Action: action, Member: attemptID, Windows: f.IPFailures, Bypass: bypass}, ReasonIPFailures)
		}
	}
	if s.fp != "" && f.PasswordSpray != nil {
		p.add(&LogOp{Key: s.key(signalPasswordSpray, s.fp), Action: action, Member: s.account, Windows: f.PasswordSpray, Bypass: bypass}, ReasonPasswordSpray)
	}
}

// Check decides whether an attempt may go ahead. A Proceed charges the
// attempt as a failure before the caller looks at the credential and carries
// an attempt token for the report; any other verdict leaves the counters as
// they were. Only invalid input is an error (an *InputError); a store failure
// is answered by the flow's fail mode.
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

	var p plan
	p.ops, p.reasons = make([]Op, 0, 5), make([]Reason, 0, 5)
	counter, reason := e.counter(&s, device, BackoffCharge)
	p.add(counter, reason)
	if s.ip != "" && s.flow.IPRate != nil {
		p.add(&BucketOp{Key: s.key(signalIPRate, s.ip), Bucket: *s.flow.IPRate}, ReasonIPRate)
	}
	p.logs(&s, LogAdmit, id, req.CaptchaSolved)

	res, src, storeErr, took := e.do(ctx, s.flow, p.ops)
	computed := e.combine(s.flow, &p, res, req.CaptchaSolved)
	if computed.Action != Proceed && res != nil {
		e.refund(ctx, &p, res, src)
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	if answer.Action == Proceed {
		answer.Attempt = e.attempts.sign(s.tenant, s.flow.Name, s.account, attempt{
			device: device, id: id,
			charged: res != nil && res[0].Charged,
			shadow:  computed.Action != Proceed,
		}, e.now().Add(s.flow.AttemptTTL))
	}
	e.observe(Event{Call: "check", Flow: s.flow.Name, Answer: answer, Computed: computed, Source: src, StoreErr: storeErr, StoreDuration: took})
	return answer, nil
}

// Report settles an attempt and returns the verdict for the next attempt of
// the same account from the same address. A success clears the counter the
// attempt was charged to (or, when that counter is already in backoff, refunds
// only its own charge, so the owner's success never resets an attacker's
// progress), takes the account off the IP and password logs and returns a
// fresh device token; a failure confirms the charge, or is counted
// on its own when the report carries no valid attempt token.
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
	src := SourceNone
	var storeErr error
	var took time.Duration
	if !(tokened && a.shadow) { // shadow mode refused that attempt: nothing to settle
		var p plan
		p.ops, p.reasons = make([]Op, 0, 4), make([]Reason, 0, 4)
		id := a.id
		switch {
		case req.Outcome == Success:
			counter, reason := e.counter(&s, device, BackoffSucceed)
			counter.Charged = tokened && a.charged
			p.add(counter, reason)
			p.logs(&s, LogRemove, id, false)
		case tokened:
			counter, reason := e.counter(&s, device, BackoffConfirm)
			p.add(counter, reason)
			p.logs(&s, LogAdd, id, false)
		default:
			counter, reason := e.counter(&s, device, BackoffFail)
			p.add(counter, reason)
			p.logs(&s, LogAdd, randomID(), false)
		}
		var res []Result
		res, src, storeErr, took = e.do(ctx, s.flow, p.ops)
		computed = e.combine(s.flow, &p, res, false)
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	if req.Outcome == Success {
		if device == "" {
			device = randomID()
		}
		answer.DeviceToken = e.devices.sign(&deviceClaims{
			Tenant: s.tenant, Account: s.account, Device: device,
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(e.now(), s.flow.DeviceTokenTTL)},
		})
	}
	e.observe(Event{Call: "report", Flow: s.flow.Name, Answer: answer, Computed: computed, Source: src, StoreErr: storeErr, StoreDuration: took})
	return answer, nil
}

// deviceID returns the device id of a valid device token issued for this
// account of this tenant, or "" for anything else: a token for another
// account, a forged or expired one is simply untrusted, not an error.
func (e *Engine) deviceID(s *subjects, token string) string {
	if token == "" {
		return ""
	}
	var c deviceClaims
	if !e.devices.parse(token, &c) || c.Tenant != s.tenant || c.Account != s.account || len(c.Device) != hashLen {
		return ""
	}
	return c.Device
}

// do runs a batch on the store, or on the fallback for a fail-open flow when
// the store fails. Results are nil when nothing answered. It also returns
// how long the store took.
func (e *Engine) do(ctx context.Context, f *Flow, ops []Op) ([]Result, Source, error, time.Duration) {
	start := e.now()
	res, err := e.store.Do(ctx, ops)
	took := e.now().Sub(start)
	if err == nil && len(res) != len(ops) {
		err = fmt.Errorf("authguard: store returned %d results for %d operations", len(res), len(ops))
	}
	if err == nil {
		return res, SourceStore, nil, took
	}
	if f.FailMode == FailOpen && e.fallback != nil {
		if res, ferr := e.fallback.Do(ctx, ops); ferr == nil && len(res) == len(ops) {
			return res, SourceFallback, err, took
		}
	}
	return nil, SourceNone, err, took
}

// combine turns results into a verdict: the longest wait wins; else any log
// over its limit demands a CAPTCHA unless one was solved; else Proceed. With
// no results (the store failed closed) it is the flow's fail-closed delay.
func (e *Engine) combine(f *Flow, p *plan, res []Result, captchaSolved bool) Verdict {
	if res == nil {
		return Verdict{Action: Delay, Delay: f.FailClosedRetry, Reasons: []Reason{ReasonUnavailable}}
	}
	var wait time.Duration
	var delayed, captcha reasonSet
	for i, r := range res {
		if r.Wait > 0 {
			wait = max(wait, r.Wait)
			delayed.add(p.reasons[i])
		}
		if r.Over && !captchaSolved {
			captcha.add(p.reasons[i])
		}
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
func (e *Engine) refund(ctx context.Context, p *plan, res []Result, src Source) {
	undo := make([]Op, 0, len(p.ops))
	for i, op := range p.ops {
		if !res[i].Charged {
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
	if src == SourceFallback {
		st = e.fallback
	}
	_, _ = st.Do(ctx, undo)
}
