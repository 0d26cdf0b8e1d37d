package authguard

import (
	"cmp"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The held-subjects index is an operator's view of who is held back right
// now: the accounts in backoff and the addresses over a limit, per tenant,
// flow and kind. The store keeps only keyed hashes, so there is nothing to
// list from the counters; the index keeps each held subject's identifier
// sealed (AES-256-GCM under a key derived from the secret with a label of
// its own), under a field named by the subject's keyed hash, so nothing
// raw is at rest. It is a view: the counters stay authoritative, an entry
// dropped or missing never frees anyone, and an entry still listed after
// its counter was reset holds no one back.
//
// An entry is written only when a call finds its subject held (a backoff
// past its free failures, a log or rate over its limit): a call that holds
// nobody builds nothing and writes nothing. On a store that keeps the
// index (Redis) the write is a write-behind of the index's own, off the
// call's path: a bounded queue that one goroutine drains into the store,
// so a verdict never waits for a round trip, and a full queue drops the
// entry (counted in HeldStats.Dropped), never the call. The index in the
// engine's memory (the memory store's) is written in the call: a map
// under a lock.

// DefaultHeldBytes is the bound to turn the index on with: 1 MiB a tenant,
// about 4,500 entries (an entry takes about 230 bytes as the bound counts
// it: its field, its sealed value and 16).
const DefaultHeldBytes = 1 << 20

// HeldKind is the kind of a held subject.
type HeldKind uint8

// Kinds of held subjects.
const (
	// HeldAccount is an account, as normalized (NormalizeAccount).
	HeldAccount HeldKind = iota + 1
	// HeldIP is a client address, as the call sent it: for a flow that
	// groups IPv6 addresses by prefix, the last address seen held of the
	// prefix, which a reset frees whole.
	HeldIP
)

var heldKindNames = [...]string{"", "account", "ip"}

func (k HeldKind) String() string { return enumName(heldKindNames[:], int(k)) }

// ParseHeldKind parses "account" or "ip"; "" is 0, every kind.
func ParseHeldKind(s string) (HeldKind, bool) {
	if s == "" {
		return 0, true
	}
	for i, n := range heldKindNames {
		if i > 0 && n == s {
			return HeldKind(i), true
		}
	}
	return 0, false
}

// HeldSubject is one entry of the index, decrypted.
type HeldSubject struct {
	Flow string
	Kind HeldKind
	// Subject is the identifier: the normalized account or the address.
	Subject string
	// Rule and Reason name the rule that held it when it was last seen
	// held.
	Rule   string
	Reason Reason
	// Since is when a call last found its hold changed; WaitUntil when
	// the wait it then had runs out (Since for a log over its limit,
	// which holds until its window slides: Over); Until when the state
	// that holds it is forgotten and the entry with it. All by the
	// engine's clock.
	Since, WaitUntil, Until time.Time
	Over                    bool
	// Wait and ExpiresIn are, in a list, how long the wait still runs
	// and how long until the entry expires, by the engine's clock.
	Wait, ExpiresIn time.Duration
}

// HeldRecord is an index entry as a store keeps it: Field is the flow, the
// kind and the subject's keyed hash ("login:account:HASH"), Value the
// sealed HeldSubject, Until when it expires.
type HeldRecord struct {
	Field string
	Value []byte
	Until time.Time
}

// HeldStore is a Store that keeps the index itself, shared by every
// instance on it (the Redis store). A store that does not is given an
// index in the engine's memory, which is the whole truth for a memory
// store. Base names a tenant's index ("tg:held:{default}"); a store keeps
// it in keys that start with it, which a Cluster places on one node.
type HeldStore interface {
	// PutHeld writes records (replacing those of the same Field) and drops
	// expired ones; while the tenant's index then holds more than maxBytes
	// it drops the records that expire first, and returns how many.
	PutHeld(ctx context.Context, base string, recs []HeldRecord, maxBytes int64, now time.Time) (dropped int, err error)
	// ListHeld returns every record not expired at now.
	ListHeld(ctx context.Context, base string, now time.Time) ([]HeldRecord, error)
	// DeleteHeld removes the records of the fields named.
	DeleteHeld(ctx context.Context, base string, fields []string) error
}

// HeldStats are the index's counters, for metrics.
type HeldStats struct {
	// Written counts entries handed to the store; Dropped those lost: a
	// full queue, a store error, or the tenant's bound (the entries that
	// expired first).
	Written, Dropped int64
}

// heldQueue bounds the entries waiting for the write-behind.
const heldQueue = 1024

// heldIndex is the engine's side of the index.
type heldIndex struct {
	aead     cipher.AEAD
	store    HeldStore
	maxBytes int64
	queue    chan heldWrite
	start    sync.Once
	written  atomic.Int64
	dropped  atomic.Int64
	// seen is when each field's entry last written runs out, so that a
	// subject refused call after call is written once per hold, not per
	// call; cleared whole when it reaches heldQueue*16 fields.
	mu   sync.Mutex
	seen map[string]heldSeen
}

type heldWrite struct {
	base  string
	now   time.Time // the engine's clock when the call saw them held
	recs  []HeldRecord
	del   []string      // fields to delete, behind the writes queued before them
	flush chan struct{} // closed once what came before is written
}

// newHeldIndex returns the index, or nil when maxBytes is zero or less
// (off). It keeps the index in store when that is a HeldStore, else in
// memory.
func newHeldIndex(secret []byte, store Store, maxBytes int64) *heldIndex {
	if maxBytes <= 0 {
		return nil
	}
	block, err := aes.NewCipher(deriveKey(secret, "held index"))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, _ := cipher.NewGCM(block)
	h := &heldIndex{aead: aead, maxBytes: maxBytes, queue: make(chan heldWrite, heldQueue), seen: map[string]heldSeen{}}
	if hs, ok := store.(HeldStore); ok {
		h.store = hs
	} else {
		h.store = newMemHeld()
	}
	return h
}

// heldBase names a tenant's index in the store.
func (e *Engine) heldBase(tenant string) string { return e.keys.prefix + ":held:{" + tenant + "}" }

// heldSeen is the one call the check and report paths make: it adds to the
// index the subjects this call found held. It builds nothing unless a
// result holds someone.
func (e *Engine) heldSeen(s *subjects, account, ip string, p *plan, b *batch) {
	h := e.held
	if h == nil || b.res == nil || len(b.res) != len(p.meta) {
		return
	}
	var recs []HeldRecord
	now := e.now()
	for i, m := range p.meta {
		r := b.res[i]
		if m.facet != FacetNone || !m.limits() || (r.Wait <= 0 && !r.Over) {
			continue
		}
		// Read as a check no result exempts: an account in backoff is held
		// even though its owner's known devices are exempt from it.
		if a, _ := reading(m.role).asks(r, false, exemption{bound: true, boundSolved: true}); a == Proceed {
			continue // a place in a queue holds no one
		}
		rule := &s.flow.Rules[m.rule]
		var kind HeldKind
		var subject, hash string
		switch {
		case rule.Subject.Parts == PartAccount && s.account != "" && account != "":
			kind, hash = HeldAccount, s.account
			subject, _ = NormalizeAccount(account)
		case rule.Subject.Parts == PartIP && rule.Subject.IPBits == 0 && s.ip != "" && ip != "":
			kind, hash, subject = HeldIP, s.ip, ip
		default:
			continue
		}
		// The entry lives as long as the state that holds the subject: a
		// backoff's counter until its failures are forgotten, a log for its
		// longest window, a rate until it is full again.
		life := max(r.Wait, r.Reset)
		switch {
		case rule.Algorithm == Backoff:
			life = max(life, rule.Backoff.ForgetAfter)
		case life <= 0:
			life = rule.Windows.Longest()
		}
		life = max(life, time.Second)
		field := s.flow.Name + ":" + kind.String() + ":" + hash
		if !h.fresh(field, now.Add(r.Wait), now.Add(life)) {
			continue
		}
		rec := h.seal(s.tenant, field, HeldSubject{Flow: s.flow.Name, Kind: kind, Subject: subject, Rule: rule.Name, Reason: rule.Reason,
			Since: now, WaitUntil: now.Add(r.Wait), Over: r.Over, Until: now.Add(life)})
		recs = append(recs, rec)
	}
	if len(recs) > 0 {
		h.enqueue(heldWrite{base: e.heldBase(s.tenant), now: now, recs: recs})
	}
}

// fresh reports whether field's entry needs writing: it was not written,
// or its wait now ends later, or a minute has passed since it was (its
// state lives on a minute longer). A subject refused call after call is
// written once per change or minute, not per call; and an entry another
// instance's bulk reset deleted is back within a minute while the
// subject is held.
func (h *heldIndex) fresh(field string, wait, until time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.seen[field]; ok && !wait.After(t.wait.Add(time.Second)) && !until.After(t.until.Add(time.Minute)) {
		return false
	}
	if len(h.seen) >= heldQueue*16 {
		clear(h.seen)
	}
	h.seen[field] = heldSeen{wait, until}
	return true
}

type heldSeen struct{ wait, until time.Time }

func (h *heldIndex) forget(fields []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range fields {
		delete(h.seen, f)
	}
}

// sealed is a HeldSubject as sealed: short names, times in Unix ms.
type sealed struct {
	Flow    string `json:"f"`
	Kind    uint8  `json:"k"`
	Subject string `json:"s"`
	Rule    string `json:"r"`
	Reason  string `json:"n"`
	Since   int64  `json:"a"`
	Wait    int64  `json:"w"`
	Over    bool   `json:"o,omitempty"`
	Until   int64  `json:"u"`
}

// seal encrypts x under the tenant and field (the additional data), so
// that a value moved to another field or tenant does not open.
func (h *heldIndex) seal(tenant, field string, x HeldSubject) HeldRecord {
	plain, _ := json.Marshal(sealed{x.Flow, uint8(x.Kind), x.Subject, x.Rule, string(x.Reason), x.Since.UnixMilli(), x.WaitUntil.UnixMilli(), x.Over, x.Until.UnixMilli()})
	out := make([]byte, h.aead.NonceSize(), h.aead.NonceSize()+len(plain)+h.aead.Overhead())
	rand.Read(out)
	out = h.aead.Seal(out, out, plain, []byte(tenant+"\x00"+field))
	return HeldRecord{Field: field, Value: out, Until: x.Until}
}

func (h *heldIndex) open(tenant string, r HeldRecord) (HeldSubject, bool) {
	n := h.aead.NonceSize()
	if len(r.Value) < n {
		return HeldSubject{}, false
	}
	plain, err := h.aead.Open(nil, r.Value[:n], r.Value[n:], []byte(tenant+"\x00"+r.Field))
	if err != nil {
		return HeldSubject{}, false
	}
	var s sealed
	if json.Unmarshal(plain, &s) != nil {
		return HeldSubject{}, false
	}
	return HeldSubject{Flow: s.Flow, Kind: HeldKind(s.Kind), Subject: s.Subject, Rule: s.Rule, Reason: Reason(s.Reason),
		Since: time.UnixMilli(s.Since), WaitUntil: time.UnixMilli(s.Wait), Over: s.Over, Until: time.UnixMilli(s.Until)}, true
}

// enqueue hands w to the write-behind, or drops it when the queue is full.
func (h *heldIndex) enqueue(w heldWrite) {
	if _, ok := h.store.(*memHeld); ok {
		h.write(w) // a map under a lock: no round trip to keep off the call
		return
	}
	h.start.Do(func() { go h.drain() })
	select {
	case h.queue <- w:
	default:
		h.dropped.Add(int64(len(w.recs)))
		h.forget(fieldsOf(w.recs))
	}
}

func fieldsOf(recs []HeldRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Field
	}
	return out
}

// drain writes what is queued, one write at a time. It runs as long as
// the process: the engine has no Close, and it blocks on the queue alone.
func (h *heldIndex) drain() {
	for w := range h.queue {
		if w.flush != nil {
			close(w.flush)
			continue
		}
		if w.del != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = h.store.DeleteHeld(ctx, w.base, w.del) // an error leaves entries that expire with their state
			cancel()
			continue
		}
		h.write(w)
	}
}

// write puts w's records in the store, counting what it wrote and lost.
func (h *heldIndex) write(w heldWrite) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	dropped, err := h.store.PutHeld(ctx, w.base, w.recs, h.maxBytes, w.now)
	cancel()
	if err != nil {
		h.dropped.Add(int64(len(w.recs)))
		h.forget(fieldsOf(w.recs))
		return
	}
	h.written.Add(int64(len(w.recs)))
	h.dropped.Add(int64(dropped))
}

// FlushHeld waits until what calls before it added to the held-subjects
// index is written, for tests and an orderly stop. It returns at once when
// the index is off.
func (e *Engine) FlushHeld(ctx context.Context) error {
	h := e.held
	if h == nil {
		return nil
	}
	h.start.Do(func() { go h.drain() })
	done := make(chan struct{})
	select {
	case h.queue <- heldWrite{flush: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HeldStats returns the index's counters; zero when it is off.
func (e *Engine) HeldStats() HeldStats {
	if e.held == nil {
		return HeldStats{}
	}
	return HeldStats{Written: e.held.written.Load(), Dropped: e.held.dropped.Load()}
}

// ErrHeldOff is returned by the index's calls when it is off
// (Config.HeldBytes).
var ErrHeldOff = errors.New("authguard: the held-subjects index is off")

// HeldListRequest asks for a page of held subjects.
type HeldListRequest struct {
	Tenant string
	// Flow, when set, keeps that flow's subjects; Kind, when not 0, that
	// kind's.
	Flow string
	Kind HeldKind
	// Cursor is the page's start, as the previous page's Next gave it;
	// "" for the first. Limit bounds the page (1 to MaxHeldPage; 0 is
	// 100).
	Cursor string
	Limit  int
}

// MaxHeldPage bounds a page of held subjects.
const MaxHeldPage = 1000

// HeldPage is a page of held subjects, ordered by flow, kind and keyed
// hash (an order that says nothing of the identifiers).
type HeldPage struct {
	Subjects []HeldSubject
	// Next is the cursor of the next page, "" at the end.
	Next string
	// Counts are the held subjects of every page by flow and kind
	// ("login:account"), for a gauge.
	Counts map[string]int
}

// ParseHeldCursor checks a cursor: the base64url (unpadded) of a field,
// at most 256 bytes decoded. It returns the field.
func ParseHeldCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	if len(c) > 344 {
		return "", &InputError{Field: "cursor", Detail: "is not a cursor this server gave"}
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 || strings.Count(string(b), ":") < 2 {
		return "", &InputError{Field: "cursor", Detail: "is not a cursor this server gave"}
	}
	return string(b), nil
}

// held lists the tenant's live entries, opened and sorted by field.
func (e *Engine) heldEntries(ctx context.Context, tenant string) ([]HeldRecord, []HeldSubject, error) {
	recs, err := e.held.store.ListHeld(ctx, e.heldBase(tenant), e.now())
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(recs, func(a, b HeldRecord) int { return cmp.Compare(a.Field, b.Field) })
	now := e.now()
	var keep []HeldRecord
	var subs []HeldSubject
	for _, r := range recs {
		x, ok := e.held.open(tenant, r)
		if !ok || !x.Until.After(now) {
			continue
		}
		x.Wait, x.ExpiresIn = max(x.WaitUntil.Sub(now), 0), x.Until.Sub(now)
		keep, subs = append(keep, r), append(subs, x)
	}
	return keep, subs, nil
}

// ListHeld returns a page of the subjects held now, their identifiers
// decrypted for the answer alone. Invalid input is an *InputError.
func (e *Engine) ListHeld(ctx context.Context, req HeldListRequest) (HeldPage, error) {
	if e.held == nil {
		return HeldPage{}, ErrHeldOff
	}
	tenant := cmp.Or(req.Tenant, DefaultTenant)
	if req.Flow != "" && e.policyFor(tenant).Flow(req.Flow) == nil {
		return HeldPage{}, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	if req.Limit < 0 || req.Limit > MaxHeldPage {
		return HeldPage{}, &InputError{Field: "limit", Detail: "must be 1 to 1000"}
	}
	limit := cmp.Or(req.Limit, 100)
	after, err := ParseHeldCursor(req.Cursor)
	if err != nil {
		return HeldPage{}, err
	}
	recs, subs, err := e.heldEntries(ctx, tenant)
	if err != nil {
		return HeldPage{}, err
	}
	page := HeldPage{Counts: map[string]int{}}
	for i, x := range subs {
		page.Counts[x.Flow+":"+x.Kind.String()]++
		if (req.Flow != "" && x.Flow != req.Flow) || (req.Kind != 0 && x.Kind != req.Kind) || recs[i].Field <= after {
			continue
		}
		if len(page.Subjects) == limit {
			if page.Next == "" {
				page.Next = base64.RawURLEncoding.EncodeToString([]byte(recs[i-1].Field))
			}
			continue
		}
		page.Subjects = append(page.Subjects, x)
	}
	return page, nil
}

// HeldResetRequest frees held subjects of a flow in one call: those named
// in Subjects (identifiers as listed), or, with none named, every subject
// of the flow (of Kind, when not 0) the index holds. DryRun counts them
// and changes nothing. Reason is required, as for Reset.
type HeldResetRequest struct {
	Tenant, Flow string
	Kind         HeldKind
	Subjects     []string
	Reason       string
	DryRun       bool
}

// MaxHeldSubjects bounds the subjects one reset names.
const MaxHeldSubjects = 1000

// HeldResetResult says what a bulk reset did, or would do.
type HeldResetResult struct {
	// Matched are the index's entries the request selects; Reset the
	// subjects reset (0 on a dry run); Keys the store keys deleted.
	Matched, Reset, Keys int
}

// ResetHeld resets, through Reset, each held subject the request selects,
// and takes it out of the index. A subject named but not in the index is
// reset all the same, as the kind says (an account unless Kind is ip):
// the index is a view, and a subject it dropped must still be freed.
func (e *Engine) ResetHeld(ctx context.Context, req HeldResetRequest) (HeldResetResult, error) {
	if e.held == nil {
		return HeldResetResult{}, ErrHeldOff
	}
	tenant := cmp.Or(req.Tenant, DefaultTenant)
	if e.policyFor(tenant).Flow(req.Flow) == nil {
		return HeldResetResult{}, &InputError{Field: "flow", Detail: "is not a configured flow", Missing: req.Flow == ""}
	}
	if req.Reason == "" || len(req.Reason) > MaxReasonBytes {
		return HeldResetResult{}, &InputError{Field: "reason", Detail: "is required: at most 200 bytes saying why, with no identifier", Missing: req.Reason == ""}
	}
	if len(req.Subjects) > MaxHeldSubjects {
		return HeldResetResult{}, &InputError{Field: "subjects", Detail: "must name at most 1000 subjects"}
	}
	for _, s := range req.Subjects {
		if s == "" || len(s) > 512 {
			return HeldResetResult{}, &InputError{Field: "subjects", Detail: "each subject must be 1 to 512 bytes"}
		}
	}
	recs, subs, err := e.heldEntries(ctx, tenant)
	if err != nil {
		return HeldResetResult{}, err
	}
	type target struct {
		kind    HeldKind
		subject string
	}
	var targets []target
	var fields []string
	named := map[string]bool{}
	for _, s := range req.Subjects {
		named[s] = true
	}
	found := map[string]bool{}
	for i, x := range subs {
		if x.Flow != req.Flow || (req.Kind != 0 && x.Kind != req.Kind) {
			continue
		}
		if len(named) > 0 && !named[x.Subject] {
			continue
		}
		found[x.Subject] = true
		targets = append(targets, target{x.Kind, x.Subject})
		fields = append(fields, recs[i].Field)
	}
	res := HeldResetResult{Matched: len(targets)}
	for _, s := range req.Subjects {
		if !found[s] {
			found[s] = true
			targets = append(targets, target{cmp.Or(req.Kind, HeldAccount), s})
		}
	}
	if req.DryRun {
		return res, nil
	}
	for _, t := range targets {
		r := ResetRequest{Tenant: tenant, Flow: req.Flow, Reason: req.Reason}
		if t.kind == HeldIP {
			r.IP = t.subject
		} else {
			r.Account = t.subject
		}
		n, err := e.Reset(ctx, r)
		var in *InputError
		if errors.As(err, &in) {
			continue // a named subject that is no account or address frees no one
		}
		if err != nil {
			return res, err
		}
		res.Reset++
		res.Keys += n
	}
	if len(fields) > 0 {
		e.held.forget(fields)
		if err := e.held.store.DeleteHeld(context.WithoutCancel(ctx), e.heldBase(tenant), fields); err != nil {
			return res, err
		}
	}
	return res, nil
}

// heldReset takes a subject Reset freed out of the index (hash is its
// keyed hash): the index lists no one the counters no longer hold. A
// store error leaves the entry, which expires with the state it showed.
func (e *Engine) heldReset(ctx context.Context, s *subjects, kind HeldKind, hash string) {
	if e.held == nil || hash == "" {
		return
	}
	e.heldDelete(ctx, s.tenant, []string{s.flow.Name + ":" + kind.String() + ":" + hash})
}

// heldCleared takes the account out of the index in flows, those whose
// counters of it a password change or a success_clears success deleted
// (passwordchange.go): as after Reset, the list names no one the
// counters no longer hold.
func (e *Engine) heldCleared(ctx context.Context, s *subjects, flows []*Flow) {
	if e.held == nil || s.account == "" || len(flows) == 0 {
		return
	}
	fields := make([]string, len(flows))
	for i, f := range flows {
		fields[i] = f.Name + ":" + HeldAccount.String() + ":" + s.account
	}
	e.heldDelete(ctx, s.tenant, fields)
}

// heldDelete deletes fields from the tenant's index and the in-process
// record of what was written, so that the subject held again is written
// again. On a store that keeps the index the delete rides the
// write-behind queue: a write queued before it (the check that found the
// subject held, just before the reset) would otherwise land after it and
// list the subject again. A full queue deletes at once. A store error
// leaves the entries, which expire with the state they showed.
func (e *Engine) heldDelete(ctx context.Context, tenant string, fields []string) {
	h := e.held
	h.forget(fields)
	w := heldWrite{base: e.heldBase(tenant), del: fields}
	if _, ok := h.store.(*memHeld); !ok {
		h.start.Do(func() { go h.drain() })
		select {
		case h.queue <- w:
			return
		default:
		}
	}
	_ = h.store.DeleteHeld(context.WithoutCancel(ctx), w.base, fields)
}

// memHeld is the index in the engine's memory, for stores that do not
// keep it.
type memHeld struct {
	mu      sync.Mutex
	tenants map[string]*memTenant
}

type memTenant struct {
	recs  map[string]HeldRecord
	bytes int64
}

func newMemHeld() *memHeld { return &memHeld{tenants: map[string]*memTenant{}} }

func heldSize(r HeldRecord) int64 { return int64(len(r.Field) + len(r.Value) + 16) }

func (m *memHeld) PutHeld(_ context.Context, base string, recs []HeldRecord, maxBytes int64, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tenants[base]
	if t == nil {
		t = &memTenant{recs: map[string]HeldRecord{}}
		m.tenants[base] = t
	}
	for _, r := range recs {
		if old, ok := t.recs[r.Field]; ok {
			t.bytes -= heldSize(old)
		}
		t.recs[r.Field] = r
		t.bytes += heldSize(r)
	}
	if t.bytes <= maxBytes {
		return 0, nil
	}
	// Past the bound: expired entries go, then the entries that expire
	// first until a tenth of the bound is free, so that a flood at the
	// bound pays one sort per tenth of the index, not a scan per write.
	all := make([]HeldRecord, 0, len(t.recs))
	for f, r := range t.recs {
		if !r.Until.After(now) {
			t.bytes -= heldSize(r)
			delete(t.recs, f)
			continue
		}
		all = append(all, r)
	}
	if t.bytes <= maxBytes {
		return 0, nil
	}
	slices.SortFunc(all, func(a, b HeldRecord) int { return cmp.Or(a.Until.Compare(b.Until), cmp.Compare(a.Field, b.Field)) })
	dropped := 0
	for _, r := range all {
		if t.bytes <= maxBytes-maxBytes/10 {
			break
		}
		t.bytes -= heldSize(r)
		delete(t.recs, r.Field)
		dropped++
	}
	return dropped, nil
}

func (m *memHeld) ListHeld(_ context.Context, base string, now time.Time) ([]HeldRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []HeldRecord
	if t := m.tenants[base]; t != nil {
		for _, r := range t.recs {
			if r.Until.After(now) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func (m *memHeld) DeleteHeld(_ context.Context, base string, fields []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.tenants[base]; t != nil {
		for _, f := range fields {
			if r, ok := t.recs[f]; ok {
				t.bytes -= heldSize(r)
				delete(t.recs, f)
			}
		}
	}
	return nil
}

// HeldCount is the number of subjects held in a flow, of a kind.
type HeldCount struct {
	Flow  string
	Kind  string
	Count int
}

// HeldCounts counts the subjects the index holds now, over the engine's
// tenants, by flow and kind, from the entries' fields alone: nothing is
// decrypted. It is nil when the index is off.
func (e *Engine) HeldCounts(ctx context.Context) ([]HeldCount, error) {
	if e.held == nil {
		return nil, nil
	}
	by := map[[2]string]int{}
	for _, tenant := range e.tenantList {
		recs, err := e.held.store.ListHeld(ctx, e.heldBase(tenant), e.now())
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			flow, rest, _ := strings.Cut(r.Field, ":")
			kind, _, _ := strings.Cut(rest, ":")
			by[[2]string{flow, kind}]++
		}
	}
	out := make([]HeldCount, 0, len(by))
	for k, n := range by {
		out = append(out, HeldCount{Flow: k[0], Kind: k[1], Count: n})
	}
	slices.SortFunc(out, func(a, b HeldCount) int { return cmp.Or(cmp.Compare(a.Flow, b.Flow), cmp.Compare(a.Kind, b.Kind)) })
	return out, nil
}
