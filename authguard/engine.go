package authguard

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// DefaultTenant is the tenant of requests that name none.
const DefaultTenant = "default"

// DefaultKeyPrefix starts every store key unless Config.KeyPrefix says
// otherwise.
const DefaultKeyPrefix = "tg"

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
	// A quarter as much again holds the records the store was last seen
	// to hold (a known network, a verified destination: records.go), so
	// that an owner exempt by one stays exempt while the store fails, and
	// an eighth those it last answered as missing, so that a flood from an
	// attacker's networks is answered without the store (admission.go).
	RecallBytes int64
	// Notifier, when set, is told of what the engine sees that an owner or
	// a security team should hear of (Notice): the notices each flow's
	// NoticePolicy emits, after the call's verdict is decided. Notify must
	// return at once. The default is nil: nothing is worked out or
	// emitted, at the cost of a nil check per call.
	Notifier Notifier
	// Trace tells a tracer where Check, Report and Send spend their time
	// (the store's round trip, the fallback's, a wait for a call slot) and
	// what they decided, with the call's context. The default is the zero
	// Trace: nothing is called, at the cost of a nil check.
	Trace Trace
	// HeldBytes, above zero, turns on the held-subjects index (held.go)
	// and bounds each tenant's in bytes: past it, the entries that expire
	// first are dropped (the counters, not the index, hold subjects back).
	// The default is 0: off.
	HeldBytes int64
}

// DefaultRecallBytes is Config.RecallBytes's default.
const DefaultRecallBytes = 32 << 20

// Engine decides verdicts. It is safe for concurrent use.
type Engine struct {
	// policies are the policies in force; SetPolicies swaps them whole.
	policies atomic.Pointer[policies]
	store    Store
	fallback Store
	now      func() time.Time
	keys     keyspace           // the prefix and layout of store keys (keys.go)
	hash     *hasher            // subject hashes, for tenants without a secret of their own
	tenants  map[string]*hasher // subject hashes of the tenants with one
	attempts *attemptSigner
	tokens   *signer
	observe  func(Event)
	trace    Trace
	slots    chan struct{} // one token per call running; nil for no bound
	// priority are slots only calls from known devices and reports may
	// take when slots are all taken; nil for none.
	priority chan struct{}
	recall   *recall
	records  *recall // the records the store holds, as last seen (records.go)
	lookups  lookups // the flood path's look-ups of records (admission.go)
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
	secretChecks   []SecretCheck // secretcheck.go
	notices        notices       // notice.go
	held           *heldIndex    // held.go; nil when off
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
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 50 * time.Millisecond
	}
	if subjectTags(cfg.Store) && strings.ContainsAny(cfg.KeyPrefix, "{}") {
		// Redis hashes a key by its first {…}: a brace in the prefix would
		// put every key in one slot.
		return nil, fmt.Errorf("authguard: the key prefix %q has a brace, which a store's subject hash tags cannot have", cfg.KeyPrefix)
	}
	if err := checkTenantPolicies(cfg.TenantPolicies); err != nil {
		return nil, err
	}
	tenants := map[string]*hasher{}
	for name, secret := range cfg.TenantSecrets {
		if !wire.ValidTenant(name) || len(secret) < MinSecretBytes {
			return nil, fmt.Errorf("authguard: tenant %q: a tenant's secret must be at least %d bytes, under a tenant name", name, MinSecretBytes)
		}
		tenants[name] = newHasher(deriveKey(secret, "subject"))
	}
	tenantList := []string{DefaultTenant}
	for _, names := range [][]string{cfg.Tenants, slices.Collect(maps.Keys(cfg.TenantSecrets)), slices.Collect(maps.Keys(cfg.TenantPolicies))} {
		for _, name := range names {
			if !wire.ValidTenant(name) {
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
	e := &Engine{
		slots:    slots,
		priority: priority,
		recall:   newRecall(cfg.RecallBytes),
		records:  newRecall(cfg.RecallBytes / 4),
		lookups:  lookups{absent: newRecall(cfg.RecallBytes / 8)},
		wait:     cfg.QueueWait,
		store:    cfg.Store,
		fallback: cfg.Fallback,
		keys:     keyspace{prefix: cfg.KeyPrefix, tagged: subjectTags(cfg.Store)},
		now:      cfg.Now,
		hash:     newHasher(deriveKey(cfg.Secret, "subject")),
		tenants:  tenants,
		attempts: newAttemptSigner(deriveKey(cfg.Secret, "attempt")),
		tokens:   newSigner(deriveKey(cfg.Secret, "device"), cfg.Now),
		observe:  cfg.Observe,
		trace:    cfg.Trace,

		tenantList:     tenantList,
		recordSubjects: cfg.RecordSubjects,
		secretChecks:   secretChecks(cfg),
	}
	e.notices.to = cfg.Notifier
	e.held = newHeldIndex(cfg.Secret, cfg.Store, cfg.HeldBytes)
	e.writeBack.recall = e.recall // a key it remembers holds its subject back
	e.policies.Store(&policies{policy: cfg.Policy, tenants: cfg.TenantPolicies})
	return e, nil
}

// subjectTags reports whether st asks for subject hash tags (SubjectTagger).
func subjectTags(st Store) bool {
	t, ok := st.(SubjectTagger)
	return ok && t.SubjectTags()
}

// hasher keys the subject hashes of tenant.
func (e *Engine) hasher(tenant string) *hasher {
	if h, ok := e.tenants[tenant]; ok {
		return h
	}
	return e.hash
}

// Policy returns the engine's policy.
func (e *Engine) Policy() *Policy { return e.policies.Load().policy }

// policyFor is the policy of tenant ("" is DefaultTenant).
func (e *Engine) policyFor(tenant string) *Policy {
	return e.policies.Load().of(tenant)
}
