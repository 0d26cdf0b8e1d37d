package authguard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"sync/atomic"
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
	// Policy is the set of flows. It is required.
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
	// MaxInFlight, when above zero, is how many Check and Report calls may
	// run at once; more wait for one to finish, at most QueueWait, and are
	// then shed with ErrOverloaded before doing any work. Set it to what the
	// store's connections carry (the Redis pool size): a process flooded
	// beyond that then sheds the excess instead of starving its own store
	// calls of CPU until they miss their deadline, which would look like a
	// store outage and answer from the fail mode. The default is 0: no bound.
	MaxInFlight int
	// QueueWait is how long a call waits to be admitted. The default is
	// 50ms.
	QueueWait time.Duration
	// TenantSecrets, when set, key the subject hashes of the tenants they
	// name instead of Secret (each at least 32 bytes), so that one tenant's
	// secret reveals nothing about another's subjects. Tokens stay signed
	// with Secret. The default is nil: Secret keys every tenant's hashes.
	TenantSecrets map[string][]byte
	// TenantPolicies, when set, are the policies of the tenants they name
	// instead of Policy: a tenant may change any flow, or have flows of its
	// own. The default is nil: Policy for every tenant.
	TenantPolicies map[string]*Policy
	// RecordSubjects, when true, makes every Event carry the call's
	// subjects as the keyed hashes the store keys them by (Event.Subjects),
	// for a decision log. It costs up to three more hashes per call. The
	// default is false.
	RecordSubjects bool
	// Tenants are the tenants whose administrators' entries (AddEntry) the
	// engine keeps and refreshes; entry calls for other tenants are
	// refused. The default is DefaultTenant and the tenants named in
	// TenantSecrets and TenantPolicies.
	Tenants []string
	// RecallBytes bounds what the engine remembers of the store's answers
	// for keys that hold their subject back (a counter in backoff, a log
	// at its limit, a rate that refused; see recall.go): while the store
	// fails they are the batch's held state, so the fallback and the
	// fail-closed answer start from them, and while the process is
	// flooded a call they already refuse is answered without the store.
	// Negative turns it off. The default is 32 MiB (about 150,000 keys).
	RecallBytes int64
}

// DefaultRecallBytes is Config.RecallBytes's default.
const DefaultRecallBytes = 32 << 20

// ErrOverloaded is returned by Report (and the administrators' calls) when
// the engine sheds it because MaxInFlight calls are already running and
// none finished within QueueWait (nothing was counted), or when an
// admitted call's store deadline passed while other calls were queueing:
// the process, not the store, was too slow, so no fail mode answers (the
// store may have counted the call). The caller should answer 503 and retry.
// Check and Send never return it: they answer a shed call with a delay
// verdict of reason ReasonOverloaded, which no caller can mistake for
// tollgate being down and fail open on.
var ErrOverloaded = errors.New("authguard: overloaded: too many calls in flight")

// Source says where the state behind a verdict came from.
type Source uint8

const (
	// SourceStore: the configured store answered.
	SourceStore Source = iota
	// SourceFallback: the store failed and a fail-open flow answered from the
	// local fallback store.
	SourceFallback
	// SourceNone: no store answered (the verdict is the fail-closed one, or
	// a shed call's), or none was asked (a report of an attempt shadow mode
	// refused).
	SourceNone
	// SourceRecall: the process was flooded, and what the store last
	// answered for the call's keys (the recall) refuses it: answered
	// without the store.
	SourceRecall
)

func (s Source) String() string { return [...]string{"store", "fallback", "none", "recall"}[s] }

// Event describes one decided call. It holds no identifier.
type Event struct {
	// Call is "check", "report" or "send".
	Call string
	// Channel is a send's channel; zero for a check or report.
	Channel Channel
	// Region is a send's phone destination's region ("GB"), the only part
	// of a destination an Event carries; empty otherwise.
	Region string
	// Price is what a send's code costs (SendPolicy.Prices), spent when
	// the answer is Proceed; zero otherwise.
	Price int
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
	// Tenant is the call's tenant.
	Tenant string
	// Outcome is a report's outcome; zero for a check or send.
	Outcome Outcome
	// Subjects are the call's subjects as keyed hashes; nil unless
	// Config.RecordSubjects.
	Subjects *EventSubjects
}

// EventSubjects are a call's subjects as the keyed hashes the store keys
// them by (under the tenant's secret), for a decision log that a team can
// replay against another policy: they tell the same subject apart from
// another and nothing more. Empty strings are parts the call did not have.
type EventSubjects struct {
	// Account is the account's hash.
	Account string
	// IP is the address's hash as an IPv4 /32 or an IPv6 /64 (a 6to4 or
	// Teredo address as the IPv4 it embeds); IP56 and IP48 are its wider
	// IPv6 prefixes' ("" for IPv4). IPv6 says which family.
	IP, IP56, IP48 string
	IPv6           bool
	// Fingerprint is the password fingerprint's hash.
	Fingerprint string
	// Device is the id of the call's valid device token (a random id
	// tollgate made, no identifier); Issued the id of the device token a
	// success report returned.
	Device, Issued string
	// Attempt is the id of the attempt a check's proceed reserved, or of
	// the attempt a report settled (empty for a report without a valid
	// attempt token).
	Attempt string
	// Destination and DestinationPrefix are a send's or verification's
	// destination and its block, hashed.
	Destination, DestinationPrefix string
}

// Engine decides verdicts. It is safe for concurrent use.
type Engine struct {
	policy   *Policy
	store    Store
	fallback Store
	now      func() time.Time
	prefix   string
	hash     *hasher            // subject hashes, for tenants without a secret of their own
	tenants  map[string]*hasher // subject hashes of the tenants with one
	policies map[string]*Policy // the tenants with a policy of their own
	attempts *attemptSigner
	tokens   *signer
	observe  func(Event)
	slots    chan struct{} // one token per call running; nil for no bound
	// priority are slots only calls from known devices and reports may
	// take when slots are all taken; nil for none.
	priority chan struct{}
	recall   *recall
	// writeBack queues what the fallback counted for the store.
	writeBack writeBack
	wait      time.Duration
	waiting   atomic.Int64 // calls waiting to be admitted
	shedAt    atomic.Int64 // when a call was last shed, in Unix ns
	// tenantList are the tenants whose entries are kept; entries their
	// entries.
	tenantList []string
	entries    entries
	// recordSubjects is Config.RecordSubjects.
	recordSubjects bool
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
		return nil, errors.New("authguard: a policy is required")
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
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 50 * time.Millisecond
	}
	for name, p := range cfg.TenantPolicies {
		if !tenantRE.MatchString(name) || p == nil {
			return nil, fmt.Errorf("authguard: tenant %q: a tenant's policy needs a tenant name and flows", name)
		}
	}
	tenants := map[string]*hasher{}
	for name, secret := range cfg.TenantSecrets {
		if !tenantRE.MatchString(name) || len(secret) < MinSecretBytes {
			return nil, fmt.Errorf("authguard: tenant %q: a tenant's secret must be at least %d bytes, under a tenant name", name, MinSecretBytes)
		}
		tenants[name] = newHasher(deriveKey(secret, "subject"))
	}
	tenantList := []string{DefaultTenant}
	for _, names := range [][]string{cfg.Tenants, slices.Collect(maps.Keys(cfg.TenantSecrets)), slices.Collect(maps.Keys(cfg.TenantPolicies))} {
		for _, name := range names {
			if !tenantRE.MatchString(name) {
				return nil, fmt.Errorf("authguard: tenant %q: a tenant name is 1 to 64 lower-case letters, digits, '-' and '_'", name)
			}
			tenantList = append(tenantList, name)
		}
	}
	slices.Sort(tenantList)
	tenantList = slices.Compact(tenantList)
	var slots, priority chan struct{}
	if n := cfg.MaxInFlight; n > 0 {
		kept := n / 4 // for known devices and reports, from 4 slots on
		slots = make(chan struct{}, n-kept)
		if kept > 0 {
			priority = make(chan struct{}, kept)
		}
	}
	if cfg.RecallBytes == 0 {
		cfg.RecallBytes = DefaultRecallBytes
	}
	return &Engine{
		slots:    slots,
		priority: priority,
		recall:   newRecall(cfg.RecallBytes),
		wait:     cfg.QueueWait,
		policy:   cfg.Policy,
		store:    cfg.Store,
		fallback: cfg.Fallback,
		prefix:   cfg.KeyPrefix,
		now:      cfg.Now,
		hash:     newHasher(deriveKey(cfg.Secret, "subject")),
		tenants:  tenants,
		policies: cfg.TenantPolicies,
		attempts: newAttemptSigner(deriveKey(cfg.Secret, "attempt")),
		tokens:   newSigner(deriveKey(cfg.Secret, "device"), cfg.Now),
		observe:  cfg.Observe,

		tenantList:     tenantList,
		recordSubjects: cfg.RecordSubjects,
	}, nil
}

// acquire takes a call slot, returned to release: at once when one is free,
// or (wait true) waiting at most the queue wait. A priority call (a known
// device's, a report) may also take a slot kept for such calls, so that a
// flood of unknown clients cannot keep the owner's known device or the
// settlement of attempts out. Waiting goroutines are parked, so a flood
// does not compete for the CPU that admitted calls need. It returns
// ErrOverloaded when no slot was had.
func (e *Engine) acquire(priority, wait bool) (chan struct{}, error) {
	if e.slots == nil {
		return nil, nil
	}
	select {
	case e.slots <- struct{}{}:
		return e.slots, nil
	default:
	}
	var kept chan struct{} // nil, never ready, unless priority
	if priority {
		kept = e.priority
	}
	select {
	case kept <- struct{}{}:
		return kept, nil
	default:
	}
	if !wait {
		return nil, ErrOverloaded
	}
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	t := time.NewTimer(e.wait)
	defer t.Stop()
	select {
	case e.slots <- struct{}{}:
		return e.slots, nil
	case kept <- struct{}{}:
		return kept, nil
	case <-t.C:
	}
	e.shedAt.Store(time.Now().UnixNano())
	return nil, ErrOverloaded
}

// admit waits for an ordinary call slot; release gives it back.
func (e *Engine) admit() (chan struct{}, error) { return e.acquire(false, true) }

// overloaded reports whether this process is shedding or queueing calls:
// some call waits to be admitted now, or one was shed within the last
// second. A store deadline missed then is the process's own doing (its
// calls wait for the CPU), not the store's.
func (e *Engine) overloaded() bool {
	return e.slots != nil && (e.waiting.Load() > 0 || time.Now().UnixNano()-e.shedAt.Load() < int64(time.Second))
}

func release(slot chan struct{}) {
	if slot != nil {
		<-slot
	}
}

// hasher keys the subject hashes of tenant.
func (e *Engine) hasher(tenant string) *hasher {
	if h, ok := e.tenants[tenant]; ok {
		return h
	}
	return e.hash
}

// Policy returns the engine's policy.
func (e *Engine) Policy() *Policy { return e.policy }

// policyFor is the policy of tenant ("" is DefaultTenant).
func (e *Engine) policyFor(tenant string) *Policy {
	if tenant == "" {
		tenant = DefaultTenant
	}
	if p, ok := e.policies[tenant]; ok {
		return p
	}
	return e.policy
}

// subjects is a validated request: its flow and the hashes of the parts its
// rules count.
type subjects struct {
	prefix  string
	tenant  string
	flow    *Flow
	account string     // hash, or empty when the flow counts no account and none was sent
	ip      string     // hash of the IP prefix; empty when allow-listed or not sent
	addr    netip.Addr // the address, when ip is set
	fp      string     // hash of the password fingerprint, or empty
	// A send's destination, its prefix and its country (empty for e-mail),
	// hashed; empty for a check or report.
	dest, destPrefix, country string
	// price is what the send costs (SendPolicy.Prices).
	price int
	// entries are the tenant's entries, nil when it has none; match is what
	// they say of this call.
	entries *entrySet
	match   entryMatch
}

var tenantRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// subjects validates and hashes the parts every call has. Account and IP
// are required when the flow's rules count them, and validated whenever
// they are sent. It changes no state.
func (e *Engine) subjects(kind Kind, tenant, flow, account, ip, fingerprint string) (subjects, error) {
	return e.subjectsOf(kind, tenant, flow, account, ip, fingerprint, true)
}

// subjectsOf is subjects; without required, the parts the flow's rules
// count may be missing (an explanation of one IP, or one account).
func (e *Engine) subjectsOf(kind Kind, tenant, flow, account, ip, fingerprint string, required bool) (subjects, error) {
	var s subjects
	if tenant == "" {
		tenant = DefaultTenant
	}
	if !tenantRE.MatchString(tenant) {
		return s, &InputError{Field: "tenant", Detail: "must be 1 to 64 lower-case letters, digits, '-' and '_'"}
	}
	s.prefix, s.tenant = e.prefix, tenant
	if s.flow = e.policyFor(tenant).Flow(flow); s.flow == nil {
		return s, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	if s.flow.Kind != kind {
		if kind == Sends {
			return s, &InputError{Field: "flow", Detail: "is not a send flow (kind: send): it answers /v1/check and /v1/report"}
		}
		return s, &InputError{Field: "flow", Detail: "is a send flow (kind: send): it answers /v1/otp/send only"}
	}
	needs := s.flow.needs
	if !required {
		needs = 0
	}
	if account == "" && needs&(PartAccount|PartDevice) != 0 && s.flow.Kind != Sends { // a send's account is optional
		return s, &InputError{Field: "account", Detail: "is required by this flow's rules", Missing: true}
	}
	if ip == "" && needs&PartIP != 0 {
		return s, &InputError{Field: "ip", Detail: "is required by this flow's rules", Missing: true}
	}
	if account != "" {
		acct, err := NormalizeAccount(account)
		if err != nil {
			return s, err
		}
		s.account = e.hasher(tenant).subject(tenant, "account", acct)
	}
	if set := e.entrySet(tenant); set != nil && len(set.all) > 0 {
		s.entries = set
	}
	if ip != "" {
		addr, err := spraydetect.ParseIP(ip)
		if err != nil {
			return s, &InputError{Field: "ip", Detail: "must be an IPv4 or IPv6 address, without zone, port or prefix length"}
		}
		if s.entries != nil {
			e.matchIP(&s.match, s.entries, tenant, s.flow.Name, addr, e.now())
		}
		s.addr = addr
		if !s.flow.AllowList.Contains(addr) && !s.match.allowed[ScopeIPRange] {
			s.ip = e.hasher(tenant).subject(tenant, "ip", s.flow.Grouping.Prefix(addr).String())
		}
	}
	if len(fingerprint) > MaxFingerprintBytes || !utf8.ValidString(fingerprint) {
		return s, &InputError{Field: "password_fingerprint", Detail: "must be valid UTF-8 of at most 256 bytes"}
	}
	if fingerprint != "" {
		s.fp = e.hasher(tenant).subject(tenant, "fp", fingerprint)
	}
	return s, nil
}

// hashOf returns the hash of one part of the request, "" when the request
// does not have it (no fingerprint, an allow-listed address, an IPv4
// client for a wider IPv6 prefix).
func (e *Engine) hashOf(s *subjects, part SubjectPart, ipBits int) string {
	switch part {
	case PartAccount:
		return s.account
	case PartIP:
		if ipBits == 0 || s.ip == "" {
			return s.ip
		}
		p, ok := spraydetect.WidePrefix(s.addr, ipBits)
		if !ok {
			return ""
		}
		return e.hasher(s.tenant).subject(s.tenant, "ip", p.String())
	case PartFingerprint:
		return s.fp
	case PartTenant:
		return e.hasher(s.tenant).subject(s.tenant, "tenant", "")
	case PartDestination:
		return s.dest
	case PartDestPrefix:
		return s.destPrefix
	case PartCountry:
		return s.country
	}
	return ""
}

// key returns the store key of a rule for this request, or "" when the
// request lacks a part of the rule's subject and the rule does not apply.
// A compound subject joins its parts' hashes with dots, the account's first,
// so that every key of an account starts with the account's hash.
func (e *Engine) key(s *subjects, r *Rule) string {
	hash := ""
	for _, n := range partNames {
		if !r.Subject.Has(n.part) {
			continue
		}
		h := e.hashOf(s, n.part, r.Subject.IPBits)
		if h == "" {
			return ""
		}
		if hash != "" {
			hash += "."
		}
		hash += h
	}
	return storeKey(s.prefix, s.tenant, s.flow.Name, r.Key, hash)
}

// AccountKeys returns a glob pattern (as Redis's SCAN MATCH and KEYS take
// it) that matches every store key of one account of a tenant, in every
// flow: the counters of rules on the account, on a compound subject with
// the account, and on its devices. An administrator's reset deletes what it
// matches. The account is normalised as Check normalises it.
func (e *Engine) AccountKeys(tenant, account string) (string, error) {
	if tenant == "" {
		tenant = DefaultTenant
	}
	if !tenantRE.MatchString(tenant) {
		return "", &InputError{Field: "tenant", Detail: "must be 1 to 64 lower-case letters, digits, '-' and '_'"}
	}
	acct, err := NormalizeAccount(account)
	if err != nil {
		return "", err
	}
	return storeKey(e.prefix, tenant, "*", "*", e.hasher(tenant).subject(tenant, "account", acct)+"*"), nil
}

// member returns what a log rule records for this request: the account or
// IP a Distinct rule counts, or the attempt for a failure log; "" when the
// request has none.
func (e *Engine) member(s *subjects, r *Rule, attempt string) string {
	if r.Algorithm == Distinct {
		return e.hashOf(s, r.Of, 0)
	}
	return attempt
}

// role says how combine reads an operation's result.
type role uint8

const (
	// roleLimit: the rule's own result, read by its Past.
	roleLimit role = iota
	// roleShared: the devices' shared counter; its Wait delays only a device
	// that is not exempt.
	roleShared
	// roleAllowance: the device's own allowance or its slot; an Over makes
	// the device not exempt, never a verdict on its own.
	roleAllowance
	// roleCredit: a verification credited to a send flow's conversion rule,
	// or the record that an account verified a destination; never part of
	// the verdict.
	roleCredit
	// roleVerified: whether the account verified the send's destination
	// before (a peek of its record: Over when it did); not Over makes the
	// device not exempt, never a verdict on its own.
	roleVerified
	// roleOwner: a send's owner allowance (SendPolicy.OwnerCodes), read as
	// roleAllowance and spent only on sends it exempted (Spares).
	roleOwner
	// roleAllowanceSolved: roleOwner for a send without a known device:
	// exempt only with a solved CAPTCHA, so that the shared rules' wait
	// becomes a CAPTCHA to solve.
	roleAllowanceSolved
)

// The keys of SendPolicy.OwnerCodes, per account and destination of a send
// flow: the record that the account verified the destination, and the
// owner's allowance of codes to it.
const (
	verifiedKey = "vdst"
	ownerKey    = "vdst.own"
	captchaKey  = "vdst.cap"
)

// owner adds to a send's plan, for an account with a destination, the ops
// of the owner's allowance (SendPolicy.OwnerCodes): the record that the
// account verified the destination (a peek), and the allowance itself (a
// log of the sends it let through). The delay rules on the destination
// become shared: their waits hold the send back only when the account has
// not verified the destination or its allowance is spent. A known device
// has OwnerCodes of its own; a send without one as many more, each behind
// a solved CAPTCHA (the shared wait is then answered with a CAPTCHA), so
// that an owner without her device is never left waiting out the
// destination's quota for a day.
func (e *Engine) owner(p *plan, s *subjects, id string, known bool) {
	f := s.flow
	if f.Kind != Sends || f.Send.OwnerCodes <= 0 || s.account == "" || s.dest == "" {
		return
	}
	for i := range p.ops {
		r := &f.Rules[p.meta[i].rule]
		if p.meta[i].role == roleLimit && r.Subject.Parts == PartDestination && r.Subject.IPBits == 0 && r.Past == PastDelay {
			p.meta[i].role = roleShared
		}
	}
	p.owned = true
	pair := s.account + "." + s.dest
	// The record holds one member, "v"; a peek of another is Over exactly
	// when the record is there.
	p.add(&LogOp{
		Key: storeKey(s.prefix, s.tenant, f.Name, verifiedKey, pair), Action: LogPeek, Member: "?",
		Windows: spraydetect.Windows{{Length: VerifiedDestinationTTL, Limit: 1}},
	}, 0, roleVerified)
	key, ro := ownerKey, roleOwner
	if !known {
		key, ro = captchaKey, roleAllowanceSolved
	}
	// The allowance is spare: spent only on a send it exempted (Spares).
	p.allowance = len(p.ops)
	p.add(&LogOp{
		Key: storeKey(s.prefix, s.tenant, f.Name, key, pair), Action: LogAdmit, Member: id,
		Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: f.Send.OwnerCodes}},
	}, 0, ro)
	// And one of her codes, exempted or not, per OwnerResend at most: they
	// skip what others made the destination wait, not her own resend
	// interval.
	p.add(&LogOp{
		Key: storeKey(s.prefix, s.tenant, f.Name, key+".last", pair), Action: LogAdmit, Member: id,
		Windows: spraydetect.Windows{{Length: OwnerResend, Limit: 1}},
	}, 0, roleAllowance)
}

// verifiedOp records, on a success report that names a destination of a
// send flow with OwnerCodes, that the account verified that destination.
func (e *Engine) verifiedOp(p *plan, v *subjects) {
	if v.flow.Send.OwnerCodes <= 0 || v.account == "" || v.dest == "" {
		return
	}
	p.add(&LogOp{
		Key: storeKey(v.prefix, v.tenant, v.flow.Name, verifiedKey, v.account+"."+v.dest), Action: LogAdd, Member: "v",
		Windows: spraydetect.Windows{{Length: VerifiedDestinationTTL, Limit: 1}},
	}, 0, roleCredit)
}

// plan is a batch of operations with what each one stands for.
type plan struct {
	ops  []Op
	meta []meta // one per op
	// allowance is the index of the known device's allowance op, or -1.
	allowance int
	// owned says the plan holds a send's owner allowance (Engine.owner).
	owned bool
}

// meta is the rule an op stands for and how combine reads its result.
type meta struct {
	rule uint8 // index in Flow.Rules
	role role
}

func newPlan() plan {
	return plan{ops: make([]Op, 0, 8), meta: make([]meta, 0, 8), allowance: -1}
}

func (p *plan) add(op Op, rule int, ro role) {
	p.ops = append(p.ops, op)
	p.meta = append(p.meta, meta{uint8(rule), ro})
}

// devices adds the ops of the device rule (the rule at index i) for a known
// device: its own allowance (a log of its failed attempts within
// DeviceWindow), its slot among the account's devices, and the counter all
// devices of the account share. The allowance's key carries the account's
// hash and the device's id (a random id tollgate made, not an identifier),
// so that every device key of an account can be found from the account.
func (e *Engine) devices(p *plan, s *subjects, i int, device string, allowance, slot LogAction, member string, shared BackoffAction, attempt string) {
	f := s.flow
	r := &f.Rules[i]
	if allowance != 0 {
		p.allowance = len(p.ops)
		p.add(&LogOp{
			Key:    storeKey(s.prefix, s.tenant, f.Name, r.Key+".dev", s.account+"."+device),
			Action: allowance, Member: member,
			Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: r.DeviceFree}},
		}, i, roleAllowance)
	}
	if slot != 0 {
		p.add(&LogOp{
			Key:    storeKey(s.prefix, s.tenant, f.Name, r.Key+".slots", s.account),
			Action: slot, Member: device,
			Windows: spraydetect.Windows{{Length: DeviceWindow, Limit: r.DeviceSlots}},
		}, i, roleAllowance)
	}
	p.add(&BackoffOp{
		Key: storeKey(s.prefix, s.tenant, f.Name, r.Key, s.account), Action: shared, Policy: r.Backoff,
		Fingerprint: s.fp, SeenWindow: f.SamePasswordWindow, Attempt: attempt,
	}, i, roleShared)
}

// backoff adds a step of a Backoff rule on any subject but the device.
func (e *Engine) backoff(p *plan, s *subjects, i int, action BackoffAction, attempt string) {
	r := &s.flow.Rules[i]
	if key := e.key(s, r); key != "" {
		p.add(&BackoffOp{
			Key: key, Action: action, Policy: r.Backoff,
			Fingerprint: s.fp, SeenWindow: s.flow.SamePasswordWindow, Attempt: attempt,
		}, i, roleLimit)
	}
}

// log adds a step of a log rule (Distinct, or a failure log whose members
// are attempts).
func (e *Engine) log(p *plan, s *subjects, i int, action LogAction, attempt string, bypass bool) {
	r := &s.flow.Rules[i]
	key, member := e.key(s, r), e.member(s, r, attempt)
	if key != "" && member != "" {
		p.add(&LogOp{Key: key, Action: action, Member: member, Windows: r.Windows, Bypass: bypass}, i, roleLimit)
	}
}

// checkPlan is the batch of a check: every rule that counts the client
// reserves the attempt (a charge, a log admission) or takes its units.
func (e *Engine) checkPlan(s *subjects, device, id string, captchaSolved bool) plan {
	p := newPlan()
	known := device != ""
	for i := range s.flow.Rules {
		r := &s.flow.Rules[i]
		switch {
		case !r.Clients.counts(known):
		case i == s.flow.device:
			e.devices(&p, s, i, device, LogAdmit, LogAdmit, id, BackoffCharge, id)
		case r.Algorithm == Backoff:
			e.backoff(&p, s, i, BackoffCharge, id)
		case r.logRule():
			e.log(&p, s, i, LogAdmit, id, captchaSolved)
		default:
			cost := r.Cost
			if r.PriceCost {
				cost = s.price
			}
			if key := e.key(s, r); key != "" && cost > 0 {
				p.add(&RateOp{Key: key, Action: RateTake, Rate: r.Rate, Cost: cost}, i, roleLimit)
			}
		}
	}
	if s.flow.Kind == Sends {
		if id == "" {
			id = randomID()
		}
		e.owner(&p, s, id, known)
	}
	return p
}

// reportPlan is the batch of a report; a is the attempt its token names
// (zero when tokened is false).
//
// A success refunds the attempt's own charges and takes the account off
// every log rule, whoever the client. A tokened failure confirms the
// charges; its attempt is already in the failure logs, and its account's
// time in the Distinct logs moves to now (it failed now), the one thing a
// report sent twice can touch, and only ever stricter. A failure without a
// valid attempt token is counted on its own. Rate rules counted the check
// and are not touched.
func (e *Engine) reportPlan(s *subjects, device string, outcome Outcome, a attempt, tokened bool) plan {
	p := newPlan()
	known := device != ""
	id := randomID()
	for i := range s.flow.Rules {
		r := &s.flow.Rules[i]
		counts := r.Clients.counts(known)
		switch {
		case r.rateRule(), !counts && !(outcome == Success && r.logRule()):
		case i == s.flow.device:
			switch {
			case outcome == Success:
				allowance := LogPeek
				if tokened && a.exempt {
					allowance = LogRemove
				}
				e.devices(&p, s, i, device, allowance, LogPeek, a.id, BackoffSucceed, a.id)
			case tokened:
				// A failure the device's own allowance paid for renews the
				// device's slot at now, so that a slot lasts a day from the
				// device's last such failure, not its first: no more than
				// DeviceSlots devices spend allowances within any day. A
				// slot that ran out meanwhile is taken again only if one is
				// free, in the same step, so no other device can take it in
				// between.
				slot := LogPeek
				if a.exempt {
					slot = LogRenew
				}
				e.devices(&p, s, i, device, LogPeek, slot, id, BackoffConfirm, a.id)
			default:
				e.devices(&p, s, i, device, LogAdd, LogAdmit, id, BackoffFail, "")
			}
		case r.Algorithm == Backoff:
			switch {
			case outcome == Success:
				e.backoff(&p, s, i, BackoffSucceed, a.id)
			case tokened:
				e.backoff(&p, s, i, BackoffConfirm, a.id)
			default:
				e.backoff(&p, s, i, BackoffFail, "")
			}
		case outcome == Success:
			e.log(&p, s, i, LogRemove, a.id, false)
		case r.failureLog() && tokened:
			e.log(&p, s, i, LogAdmit, a.id, true)
		case r.failureLog():
			e.log(&p, s, i, LogAdd, id, false)
		default: // Distinct
			e.log(&p, s, i, LogAdd, "", false)
		}
	}
	return p
}

// Check decides whether an attempt may go ahead. A Proceed charges the
// attempt as a failure before the caller looks at the credential and carries
// an attempt token for the report; any other verdict leaves the counters as
// they were (rules that count checks keep what they took). Invalid input is
// an error (an *InputError), and so is a call shed because MaxInFlight calls
// are running (ErrOverloaded: nothing was counted); a store failure is
// answered by the flow's fail mode.
//
// A client with a valid device token for the account, trusted by a flow
// with a device rule, is counted by the device rule and by rules for all
// clients only: what others do from its address never slows it. Any other
// client is counted by the rules for unknown clients.
func (e *Engine) Check(ctx context.Context, req CheckRequest) (Verdict, error) {
	slot, busy := e.acquire(false, false)
	defer func() { release(slot) }()
	s, err := e.subjects(Attempts, req.Tenant, req.Flow, req.Account, req.IP, req.PasswordFingerprint)
	if err != nil {
		return Verdict{}, err
	}
	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}
	if req.Destination != "" || req.Channel != "" {
		if _, err := e.verifiedSubjects(&s, req.Channel, req.Destination); err != nil {
			return Verdict{}, err
		}
	}
	device := e.deviceID(&s, req.DeviceToken)
	id := randomID()

	p, b := plan{allowance: -1}, batch{src: SourceNone}
	computed, refused := s.match.verdict(Attempts, e.now, req.CaptchaSolved)
	if !refused && busy != nil {
		computed, refused, slot = e.flooded(&s, device, id, req.CaptchaSolved, &b)
	}
	if !refused {
		p, b, computed = e.reserve(ctx, &s, device, id, req.CaptchaSolved)
		if errors.Is(b.err, ErrOverloaded) {
			computed = s.flow.shed()
		}
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	if answer.Action == Proceed {
		answer.Attempt = e.attempts.sign(s.tenant, s.flow.Name, s.account, attempt{
			device: device, id: id,
			exempt: p.allowance >= 0 && b.res != nil && b.res[p.allowance].Charged,
			shadow: computed.Action != Proceed,
		}, e.now().Add(s.flow.AttemptTTL))
	}
	var rec *EventSubjects
	if e.recordSubjects {
		attempt := ""
		if answer.Action == Proceed {
			attempt = id
		}
		rec = e.record(&s, device, attempt)
	}
	e.observe(Event{Call: "check", Tenant: s.tenant, Flow: s.flow.Name, Answer: answer, Computed: computed, Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	return answer, nil
}

// Send decides whether a one-time code may be sent now, to a destination
// by a channel. A Proceed counts the send against every rule of the flow;
// any other verdict leaves the counters as they were (rules that count
// requests keep what they took). A phone number of a type or country the
// flow refuses is answered Deny before any rule counts it. Invalid input is
// an error (an *InputError: a number that does not parse, a destination of
// the wrong kind for the channel); a store failure is answered by the
// flow's fail mode. The verdict never depends on whether the destination
// belongs to an account.
func (e *Engine) Send(ctx context.Context, req SendRequest) (Verdict, error) {
	slot, busy := e.acquire(false, false)
	defer func() { release(slot) }()
	flow := req.Flow
	if flow == "" {
		flow = DefaultSendFlow
	}
	s, err := e.subjects(Sends, req.Tenant, flow, req.Account, req.IP, "")
	if err != nil {
		return Verdict{}, err
	}
	d, err := e.sendSubjects(&s, req.Channel, req.Destination)
	if err != nil {
		return Verdict{}, err
	}
	ch := d.Channel

	if len(req.DeviceToken) > MaxTokenBytes {
		return Verdict{}, &InputError{Field: "device_token", Detail: "must be at most 1024 bytes"}
	}
	device := e.deviceID(&s, req.DeviceToken)

	computed, b := Verdict{}, batch{src: SourceNone}
	refused := false
	if reason := s.flow.Send.refuses(&d); reason != "" {
		computed, refused = Verdict{Action: Deny, Reasons: []Reason{reason}}, true
	} else if computed, refused = s.match.verdict(Sends, e.now, req.CaptchaSolved); !refused && busy != nil {
		computed, refused, slot = e.flooded(&s, device, "", req.CaptchaSolved, &b)
	}
	if !refused {
		_, b, computed = e.reserve(ctx, &s, device, "", req.CaptchaSolved)
		if errors.Is(b.err, ErrOverloaded) {
			computed = s.flow.shed()
		}
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	var rec *EventSubjects
	if e.recordSubjects {
		rec = e.record(&s, device, "")
	}
	e.observe(Event{Call: "send", Tenant: s.tenant, Flow: s.flow.Name, Channel: ch, Region: d.Region, Price: s.price, Answer: answer, Computed: computed,
		Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	return answer, nil
}

// flooded decides a check or send that found no call slot free: answered
// from the recall when what the store last said of its keys refuses it
// (b's source then says so), else admitted once a slot frees up (a known
// device first) and left to the store, or shed with the flow's shed
// verdict. It returns the verdict, whether it is final, and the slot
// taken (nil for none).
func (e *Engine) flooded(s *subjects, device, id string, solved bool, b *batch) (Verdict, bool, chan struct{}) {
	p := e.checkPlan(s, device, id, solved)
	if held := e.recall.held(p.ops, e.now(), false); held != nil {
		if v := e.combine(s.flow, &p, batch{res: held}, solved); v.Action != Proceed {
			b.src = SourceRecall
			return v, true, nil
		}
	}
	slot, err := e.acquire(device != "", true)
	if err != nil {
		return s.flow.shed(), true, nil
	}
	return Verdict{}, false, slot
}

// reserve runs a check's (or send's) plan through Reserve and combines the
// verdict; a refused call's reservations are undone (in the store's script,
// or here when a full store's held state refused what it let through). The
// caller returns b.err when it is ErrOverloaded.
func (e *Engine) reserve(ctx context.Context, s *subjects, device, id string, solved bool) (plan, batch, Verdict) {
	p := e.checkPlan(s, device, id, solved)
	gates := p.gates(s.flow)
	b := e.do(ctx, s.flow, p.ops, &reservation{gates, solved})
	if errors.Is(b.err, ErrOverloaded) {
		return p, b, Verdict{}
	}
	v := e.combine(s.flow, &p, b, solved)
	switch {
	case b.undone || b.res == nil:
	case v.Action != Proceed:
		e.refund(ctx, &p, gates, b)
	case b.src == SourceFallback && !errors.Is(b.err, ErrStoreFull):
		// What a check the fallback let through counted, for the store; a
		// refused one is refunded and leaves nothing to write back. An
		// owner allowance exempts nothing on the fallback (it holds no
		// verified destination), so none is spent on the store either.
		ops, res := p.ops, b.res
		if p.owned {
			ops, res = nil, nil
			for i, op := range p.ops {
				if ro := p.meta[i].role; ro != roleOwner && ro != roleAllowanceSolved && ro != roleVerified && ro != roleAllowance {
					ops, res = append(ops, op), append(res, b.res[i])
				}
			}
		}
		e.writeBack.add(ops, res)
	}
	return p, b, v
}

// Report settles an attempt and returns the verdict for the next attempt of
// the same account from the same client. Each attempt settles once: a
// report sent again finds nothing left to settle and changes nothing.
//
// A success refunds the attempt's own charge (never failures that other
// attempts made, so an attacker cannot tell whether the owner logged in),
// takes the account off the log rules, and returns a device token. A
// failure confirms the charge, or is counted on its own when the report
// carries no valid attempt token.
func (e *Engine) Report(ctx context.Context, req ReportRequest) (Verdict, error) {
	slot, err := e.acquire(true, true) // settlements go first: each follows a proceed
	if err != nil {
		return Verdict{}, err
	}
	defer release(slot)
	s, err := e.subjects(Attempts, req.Tenant, req.Flow, req.Account, req.IP, req.PasswordFingerprint)
	if err != nil {
		return Verdict{}, err
	}
	if req.Outcome != Failure && req.Outcome != Success {
		return Verdict{}, &InputError{Field: "outcome", Detail: `must be "failure" or "success"`}
	}
	var verified *subjects // the send flow's subjects of a verified destination
	if req.Destination != "" || req.Channel != "" {
		if verified, err = e.verifiedSubjects(&s, req.Channel, req.Destination); err != nil {
			return Verdict{}, err
		}
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
	b := batch{src: SourceNone}
	if !(tokened && a.shadow) { // shadow mode refused that attempt: nothing to settle
		p := e.reportPlan(&s, device, req.Outcome, a, tokened)
		if verified != nil && tokened && req.Outcome == Success {
			e.credit(&p, verified)
			e.verifiedOp(&p, verified)
		}
		b = e.do(ctx, s.flow, p.ops, nil)
		if errors.Is(b.err, ErrOverloaded) {
			return Verdict{}, b.err
		}
		computed = e.combine(s.flow, &p, b, false)
	}
	if v, refused := s.match.verdict(Attempts, e.now, false); refused {
		computed = v // the next attempt's verdict
	}
	answer := computed
	if s.flow.Mode == Shadow {
		answer = Verdict{}
	}
	used, issued := device, ""
	if req.Outcome == Success && s.account != "" {
		if device == "" {
			device = randomID()
		}
		issued = device
		answer.DeviceToken = e.tokens.sign(&deviceClaims{
			Tenant: s.tenant, Trust: s.flow.DeviceTrust, Account: s.account, Device: device,
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: expiry(e.now(), s.flow.DeviceTokenTTL)},
		})
	}
	var rec *EventSubjects
	if e.recordSubjects {
		settled := ""
		if tokened {
			settled = a.id
		}
		rec = e.record(&s, used, settled)
		rec.Issued = issued
	}
	e.observe(Event{Call: "report", Tenant: s.tenant, Flow: s.flow.Name, Outcome: req.Outcome, Answer: answer, Computed: computed,
		Source: b.src, StoreErr: b.err, StoreDuration: b.took, Subjects: rec})
	return answer, nil
}

// sendSubjects parses a send's channel and destination and sets their
// hashes and price in s.
func (e *Engine) sendSubjects(s *subjects, channel, destination string) (Destination, error) {
	d, err := e.destinationOf(s, s.flow, channel, destination)
	if err != nil {
		return Destination{}, err
	}
	s.price = s.flow.Send.price(&d)
	if s.entries != nil && d.Channel.Phone() {
		e.matchDestination(&s.match, s.entries, s.tenant, s.flow.Name, d.Normalized, d.Region, e.now())
		if s.match.allowed[ScopeDestinationPrefix] {
			s.destPrefix = ""
		}
		if s.match.allowed[ScopeCountry] {
			s.country = ""
		}
	}
	return d, nil
}

// destinationOf parses a channel and destination as send flow sf does and
// sets the hashes of the destination's parts in s. A phone number has a
// destination_prefix (its block) and a country; an e-mail address has
// neither: a domain such as gmail.com is everybody's, not a block, so the
// rules on them skip e-mail.
func (e *Engine) destinationOf(s *subjects, sf *Flow, channel, destination string) (Destination, error) {
	if channel == "" {
		return Destination{}, &InputError{Field: "channel", Detail: "is required", Missing: true}
	}
	ch, err := ParseChannel(channel)
	if err != nil {
		return Destination{}, err
	}
	if destination == "" {
		return Destination{}, &InputError{Field: "destination", Detail: "is required", Missing: true}
	}
	d, err := ParseDestination(ch, destination, sf.Send.PrefixDigits)
	if err != nil {
		return Destination{}, err
	}
	h := e.hasher(s.tenant)
	s.dest = h.subject(s.tenant, "destination", d.Mailbox) // one inbox, one destination, whatever its spelling
	s.destPrefix, s.country = "", ""
	if ch.Phone() {
		s.destPrefix = h.subject(s.tenant, "destination_prefix", d.Prefix)
	}
	if d.Region != "" {
		s.country = h.subject(s.tenant, "country", d.Region)
	}
	return d, nil
}

// verifiedSubjects parses the destination a check or report on a flow that
// verifies a send flow's codes names, sets its hashes in s (for the flow's
// own rules on the destination), and returns the send flow's subjects for
// it (whose keys are the send flow's, for conversion credits). The
// destination is checked as a send checks it; a flow that verifies none
// takes no destination.
func (e *Engine) verifiedSubjects(s *subjects, channel, destination string) (*subjects, error) {
	sf := e.policyFor(s.tenant).Flow(s.flow.Verifies)
	if sf == nil {
		return nil, &InputError{Field: "destination", Detail: "is taken only by flows that verify a send flow's codes (verifies: otp_send)"}
	}
	if _, err := e.destinationOf(s, sf, channel, destination); err != nil {
		return nil, err
	}
	v := *s
	v.flow = sf
	return &v, nil
}

// credit adds to p, a success report's plan, one verification for each
// conversion rule of the send flow whose subjects v are.
func (e *Engine) credit(p *plan, v *subjects) {
	for i := range v.flow.Rules {
		r := &v.flow.Rules[i]
		if r.Algorithm != Conversion {
			continue
		}
		if key := e.key(v, r); key != "" {
			p.add(&RateOp{Key: key, Action: RateCredit, Rate: r.Rate, Cost: 1}, i, roleCredit)
		}
	}
}

// deviceID returns the device id of a valid device token issued for this
// account of this tenant by a flow of this flow's trust group, or "" for
// anything else: a token for another account or trust group, a forged or
// expired one is simply untrusted, not an error. A flow of checks without
// a device rule trusts no token; a send flow trusts its group's tokens, so
// that a known device skips the rules for unknown clients (the IP rules).
func (e *Engine) deviceID(s *subjects, token string) string {
	if token == "" || (s.flow.device < 0 && s.flow.Kind != Sends) || s.account == "" {
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
	// undone is true when the store that answered already undid the
	// batch's reservations because the check would not proceed.
	undone bool
}

// reservation is what a check's batch needs to undo itself in the store:
// each op's gate, and whether a CAPTCHA was solved.
type reservation struct {
	gates  []Gate
	solved bool
}

// run applies ops on st: through Reserve for a check (r not nil), else Do.
func (r *reservation) run(ctx context.Context, st Store, ops []Op) ([]Result, bool, error) {
	if r == nil {
		res, err := st.Do(ctx, ops)
		return res, false, err
	}
	return Reserve(ctx, st, ops, r.gates, r.solved)
}

// do runs a batch on the store, or on the fallback for a fail-open flow when
// the store fails. When the store is full (it answers but refuses writes),
// it also reads the state the plan touches, so that nobody the store holds
// back goes free because it cannot record more; when it does not answer at
// all, what it last answered for the plan's keys (the recall) stands in for
// that read. Either way the fallback counts on from that state and combine
// reads it, so a blip forgets no delay.
//
// The store call does not inherit ctx's cancellation: a caller that hangs
// up must neither leave a batch half applied nor count as a store failure
// (enough of those would open a circuit breaker and turn every instance to
// its fail mode). The store's own timeout bounds the call.
func (e *Engine) do(ctx context.Context, f *Flow, ops []Op, r *reservation) batch {
	ctx = context.WithoutCancel(ctx)
	start := e.now()
	// Ops the fallback counted while the store failed ride ahead of this
	// batch, in its round trip (writeback.go): no gate, nothing undone.
	all, rr := ops, r
	pre := e.writeBack.carry()
	if pre != nil {
		all = append(slices.Clip(pre), ops...)
		if r != nil {
			rr = &reservation{append(make([]Gate, len(pre)), r.gates...), r.solved}
		}
	}
	res, undone, err := rr.run(ctx, e.store, all)
	b := batch{took: e.now().Sub(start), err: err, src: SourceNone, undone: undone}
	if err == nil && len(res) != len(all) {
		b.err = fmt.Errorf("authguard: store returned %d results for %d operations", len(res), len(all))
	}
	if pre != nil {
		e.wroteBack(ctx, pre, res, b.err == nil, errors.Is(b.err, ErrStoreFull))
		if b.err == nil {
			res = res[len(pre):]
		}
	}
	if b.err == nil {
		b.res, b.src = res, SourceStore
		e.recall.learn(ops, res, undone, e.now())
		return b
	}
	if StoreErrorKind(b.err) == "timeout" && e.overloaded() {
		b.err = fmt.Errorf("%w: the store's deadline passed while calls were queueing: %w", ErrOverloaded, b.err)
		return b // no fail mode: the store is not at fault
	}
	if errors.Is(b.err, ErrStoreFull) {
		b.held = e.peek(ctx, ops)
	} else {
		b.held = e.recall.held(ops, e.now(), true)
	}
	local := continueHeld(ops, b.held)
	if f.FailMode == FailOpen && e.fallback != nil {
		if res, undone, ferr := r.run(ctx, e.fallback, local); ferr == nil && len(res) == len(ops) {
			b.res, b.src, b.undone = res, SourceFallback, undone
			if r == nil && !errors.Is(b.err, ErrStoreFull) { // a check's once its verdict is known (reserve)
				e.writeBack.add(ops, res)
			}
		}
	}
	return b
}

// wroteBack settles carried write-back ops: when written, the store's
// answers are learned and the ops' keys leave the fallback, which then
// holds nothing the store does not (the next blip would count it twice).
func (e *Engine) wroteBack(ctx context.Context, pre []Op, res []Result, written, full bool) {
	if written {
		e.recall.learn(pre, res[:len(pre)], false, e.now())
	}
	e.writeBack.settle(pre, written, full)
	if written && e.fallback != nil {
		dels := make([]Op, len(pre))
		for i, op := range pre {
			dels[i] = &DeleteOp{Key: op.StoreKey()}
		}
		_, _ = e.fallback.Do(ctx, dels)
	}
}

// continueHeld returns ops for the fallback while the store is full or
// down: each backoff op whose counter the store holds (held, from a peek of
// a full store or from the recall) counts on from there, so that the
// fallback's m-th failure waits what the store's (n+m)-th would
// (Policy.Delay) instead of starting again at Free free attempts: Free less
// the n failures held, or past Free none, with the delay of n as the base.
// combine reads the wait held, but the fallback must count past it: without
// this, once that wait ran out each instance's fallback handed out Free
// guesses again.
func continueHeld(ops []Op, held []Result) []Op {
	if held == nil {
		return ops
	}
	var out []Op
	for i, op := range ops {
		b, ok := op.(*BackoffOp)
		if !ok || held[i].Count == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(ops)
		}
		c := *b
		if n := held[i].Count; n < b.Policy.Free {
			c.Policy.Free -= n
		} else {
			c.Policy.Free, c.Policy.Base = 0, b.Policy.Delay(n)
		}
		out[i] = &c
	}
	if out == nil {
		return ops
	}
	return out
}

// peek reads, without changing anything, the counters, logs and rates that
// ops touch; nil when the store does not answer.
func (e *Engine) peek(ctx context.Context, ops []Op) []Result {
	reads := make([]Op, 0, len(ops))
	at := make([]int, 0, len(ops))
	for i, op := range ops {
		if r := PeekOf(op); r != nil {
			reads, at = append(reads, r), append(at, i)
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

// combine turns results into a verdict: any deny rule past its limit
// denies; else the longest wait of a delay rule wins; else any captcha rule
// past its limit demands a CAPTCHA unless one was solved; else Proceed, held
// for the longest place in a leaky_bucket rule's queue.
//
// A known device is exempt from the wait of the account's shared device
// counter while its own allowance and its slot admit it. When the store was
// full, what it still holds (b.held) counts as well. With no results at all
// (the store failed and the flow fails closed) it is the flow's fail-closed
// delay, unless the store, full, still showed a longer wait.
func (e *Engine) combine(f *Flow, p *plan, b batch, captchaSolved bool) Verdict {
	exempt, needsSolve := true, false
	for _, res := range [][]Result{b.res, b.held} {
		for i, r := range res {
			if ro := p.meta[i].role; (ro == roleAllowance || ro == roleOwner || ro == roleAllowanceSolved) && r.Over {
				exempt = false
			}
		}
	}
	// A send's owner allowance needs the destination verified: read where
	// the batch was answered (the held state only when nothing answered).
	verified := b.res
	if verified == nil {
		verified = b.held
	}
	for i := range p.meta {
		switch p.meta[i].role {
		case roleVerified:
			if verified == nil || !verified[i].Over {
				exempt = false
			}
		case roleAllowanceSolved:
			needsSolve = true
		}
	}
	// Without a device the allowance takes a solved CAPTCHA: a send it
	// would exempt is asked for one instead of waiting.
	solvable := exempt && needsSolve && !captchaSolved
	if solvable {
		exempt = false
	}
	var wait, queue, sharedWait time.Duration
	var delayed, captcha, queued, denied, shared reasonSet
	read := func(res []Result) {
		for i, r := range res {
			m := p.meta[i]
			switch m.role {
			case roleAllowance, roleOwner, roleAllowanceSolved, roleCredit, roleVerified:
				continue
			case roleShared:
				if exempt {
					continue
				}
				if solvable && r.Wait > 0 && f.Rules[m.rule].Past == PastDelay {
					// a CAPTCHA would exempt it
					sharedWait = max(sharedWait, r.Wait)
					shared.add(f.reasonOf[m.rule])
					continue
				}
			}
			rule := &f.Rules[m.rule]
			switch {
			case rule.Past == PastDeny:
				if r.Over {
					denied.add(f.reasonOf[m.rule])
				}
			case rule.Past == PastCaptcha:
				if r.Over && !captchaSolved {
					captcha.add(f.reasonOf[m.rule])
				}
			case r.Wait <= 0:
			case rule.Algorithm == LeakyBucket && !r.Over: // admitted: its place in the queue
				queue = max(queue, r.Wait)
				queued.add(f.reasonOf[m.rule])
			default:
				wait = max(wait, r.Wait)
				delayed.add(f.reasonOf[m.rule])
			}
		}
	}
	read(b.res)
	read(b.held)
	if b.res == nil && wait <= f.FailClosedRetry {
		return Verdict{Action: Delay, Delay: f.FailClosedRetry, Reasons: []Reason{ReasonUnavailable}}
	}
	switch {
	case denied != 0:
		return Verdict{Action: Deny, Reasons: denied.list(f)}
	case wait > 0:
		return Verdict{Action: Delay, Delay: wait, Reasons: delayed.list(f)}
	case captcha != 0 || sharedWait > 0:
		return Verdict{Action: Captcha, Reasons: (captcha | shared).list(f)}
	case queue > 0:
		return Verdict{Delay: queue, Reasons: queued.list(f)}
	}
	return Verdict{}
}

// refund undoes what a check reserved when its verdict was not Proceed
// though the store that answered let it through (only when a full store's
// held state refused it): the gates' undos of the charged ops. It runs on
// the store that answered the check; a failure here is left to expiry.
func (e *Engine) refund(ctx context.Context, p *plan, gates []Gate, b batch) {
	back := Undos(p.ops, gates, b.res)
	if len(back) == 0 {
		return
	}
	st := e.store
	if b.src == SourceFallback {
		st = e.fallback
	}
	_, _ = st.Do(context.WithoutCancel(ctx), back)
}

// record is what an Event says of the call's subjects: the hashes the store
// keys them by, whether or not the call's rules counted them (an
// allow-listed address's too), so that a replay can apply other rules.
func (e *Engine) record(s *subjects, device, attempt string) *EventSubjects {
	r := &EventSubjects{Account: s.account, Fingerprint: s.fp, Device: device, Attempt: attempt,
		Destination: s.dest, DestinationPrefix: s.destPrefix}
	if s.addr.IsValid() {
		h := e.hasher(s.tenant)
		p := spraydetect.Grouping{IPv6Bits: 64}.Prefix(s.addr)
		r.IP, r.IPv6 = h.subject(s.tenant, "ip", p.String()), p.Addr().Is6()
		if r.IPv6 {
			for _, w := range []struct {
				bits int
				out  *string
			}{{56, &r.IP56}, {48, &r.IP48}} {
				if wp, ok := spraydetect.WidePrefix(s.addr, w.bits); ok {
					*w.out = h.subject(s.tenant, "ip", wp.String())
				}
			}
		}
	}
	return r
}
