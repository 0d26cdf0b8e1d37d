package authguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

// EntryKind is what an administrator's entry does to the calls it matches.
type EntryKind uint8

const (
	// EntryAllow skips the flow's rules on the entry's kind of subject: an
	// IP range skips the IP rules (as the flow's allow_list does), a
	// destination prefix the destination_prefix rules, a country the
	// country rules. Nothing else: an account's, a device's, a
	// destination's own and the tenant's rules still count.
	EntryAllow EntryKind = iota + 1
	// EntryBlock refuses the call before any rule counts it: a send is
	// answered Deny, a check or report Delay until the entry expires.
	EntryBlock
	// EntryCaptcha answers Captcha before any rule counts the call, unless
	// a CAPTCHA was solved; a solved one goes on to the rules.
	EntryCaptcha
)

var entryKindNames = [...]string{"", "allow", "block", "captcha"}

func (k EntryKind) String() string { return enumName(entryKindNames[:], int(k)) }

// ParseEntryKind parses "allow", "block" or "captcha".
func ParseEntryKind(s string) (EntryKind, error) {
	i, err := parseEnum(entryKindNames[:], s, "kind")
	return EntryKind(i), err
}

// EntryScope is what an entry matches.
type EntryScope uint8

const (
	// ScopeIPRange matches the client addresses of a CIDR range.
	ScopeIPRange EntryScope = iota + 1
	// ScopeDestinationPrefix matches the phone numbers that start with an
	// E.164 prefix (a calling code, a block); send flows only.
	ScopeDestinationPrefix
	// ScopeCountry matches the phone numbers of a region; send flows only.
	ScopeCountry
)

var entryScopeNames = [...]string{"", "ip_range", "destination_prefix", "country"}

func (s EntryScope) String() string { return enumName(entryScopeNames[:], int(s)) }

// ReasonBlocked is the reason of a verdict an administrator's block or
// captcha entry gave. No rule may take it.
const ReasonBlocked Reason = "blocked"

// Limits on entries.
const (
	// MaxEntries is how many unexpired entries a tenant may hold.
	MaxEntries = 1000
	// MinEntryTTL and MaxEntryTTL bound an entry's lifetime: entries are
	// temporary; a lasting exception belongs in the policy.
	MinEntryTTL = time.Minute
	MaxEntryTTL = 30 * 24 * time.Hour
)

// Entry is an administrator's temporary allow, block or captcha entry. It
// holds no identifier: an IP range and a destination prefix are kept as a
// keyed hash of the prefix, with its length; only a country is in clear.
type Entry struct {
	// ID names the entry, for its removal.
	ID string
	// Kind is what it does.
	Kind EntryKind
	// Flow is the flow it applies to; empty for every flow of the tenant
	// (every send flow, for destination prefixes and countries).
	Flow string
	// Scope is what it matches; Length is the IP range's prefix length or
	// the destination prefix's digits; IPv6 says which family an IP range
	// is of; Country is a country entry's region.
	Scope   EntryScope
	Length  int
	IPv6    bool
	Country string
	// Reason says why, By who added it (the token's subject).
	Reason, By string
	// Created and Expires date it; it applies until Expires.
	Created, Expires time.Time

	match string // the hash of the prefix, or the region
}

// EntryRequest adds an entry: exactly one of IPRange (a CIDR range or one
// address), DestinationPrefix ("+" and 1 to 15 digits) and Country (a
// region, "FR"). Reason is required, for the audit log; TTL is between
// MinEntryTTL and MaxEntryTTL.
type EntryRequest struct {
	Tenant, Flow string
	Kind         EntryKind
	IPRange      string
	// DestinationPrefix is an E.164 prefix, such as "+4477009" or "+44".
	DestinationPrefix string
	Country           string
	TTL               time.Duration
	Reason, By        string
}

// EntryStore is a Store that keeps small records with an expiry in a set
// under one key, listed whole: the administrators' entries. The memory
// store never evicts them; Redis keeps a set in one hash.
type EntryStore interface {
	// PutEntry keeps value under id in the set at key until ttl has passed.
	// It fails with ErrTooManyEntries when the set already holds max
	// unexpired records and id is not one of them.
	PutEntry(ctx context.Context, key, id, value string, ttl time.Duration, max int) error
	// Entries returns the values of the set's unexpired records.
	Entries(ctx context.Context, key string) ([]string, error)
	// RemoveEntry deletes id from the set and reports whether it was there.
	RemoveEntry(ctx context.Context, key, id string) (bool, error)
}

// ErrTooManyEntries is returned when a tenant already holds MaxEntries.
var ErrTooManyEntries = errors.New("authguard: too many entries")

// ErrNoEntryStore is returned when the store keeps no entries.
var ErrNoEntryStore = errors.New("authguard: the store cannot keep entries")

// storedEntry is an entry as the store keeps it.
type storedEntry struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Flow    string `json:"flow,omitempty"`
	Scope   string `json:"scope"`
	Length  int    `json:"len,omitempty"`
	IPv6    bool   `json:"v6,omitempty"`
	Match   string `json:"match"`
	Reason  string `json:"reason"`
	By      string `json:"by,omitempty"`
	Created int64  `json:"created"`
	Expires int64  `json:"expires"`
}

func (x *Entry) encode() string {
	b, _ := json.Marshal(storedEntry{
		ID: x.ID, Kind: x.Kind.String(), Flow: x.Flow, Scope: x.Scope.String(), Length: x.Length, IPv6: x.IPv6,
		Match: x.match, Reason: x.Reason, By: x.By, Created: x.Created.UnixMilli(), Expires: x.Expires.UnixMilli(),
	})
	return string(b)
}

func decodeEntry(v string) (Entry, bool) {
	var s storedEntry
	if json.Unmarshal([]byte(v), &s) != nil || s.ID == "" || s.Match == "" {
		return Entry{}, false
	}
	kind, err := ParseEntryKind(s.Kind)
	if err != nil {
		return Entry{}, false
	}
	scope := EntryScope(slices.Index(entryScopeNames[:], s.Scope))
	if scope <= 0 {
		return Entry{}, false
	}
	x := Entry{
		ID: s.ID, Kind: kind, Flow: s.Flow, Scope: scope, Length: s.Length, IPv6: s.IPv6,
		Reason: s.Reason, By: s.By, Created: time.UnixMilli(s.Created), Expires: time.UnixMilli(s.Expires), match: s.Match,
	}
	if scope == ScopeCountry {
		x.Country = s.Match
	}
	return x, true
}

// entrySet is one tenant's unexpired entries, indexed for matching.
type entrySet struct {
	all []Entry
	// ip4, ip6 and digits are the distinct lengths of the IP ranges and
	// destination prefixes, longest first.
	ip4, ip6, digits []int
	byMatch          map[string][]int // match → indices in all
}

func newEntrySet(all []Entry) *entrySet {
	slices.SortFunc(all, func(a, b Entry) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	s := &entrySet{all: all, byMatch: make(map[string][]int, len(all))}
	for i, x := range all {
		s.byMatch[x.match] = append(s.byMatch[x.match], i)
		switch {
		case x.Scope == ScopeIPRange && x.IPv6:
			s.ip6 = append(s.ip6, x.Length)
		case x.Scope == ScopeIPRange:
			s.ip4 = append(s.ip4, x.Length)
		case x.Scope == ScopeDestinationPrefix:
			s.digits = append(s.digits, x.Length)
		}
	}
	for _, l := range []*[]int{&s.ip4, &s.ip6, &s.digits} {
		slices.Sort(*l)
		slices.Reverse(*l)
		*l = slices.Compact(*l)
	}
	return s
}

// entries is the engine's copy of every tenant's entries, refreshed from
// the store by RefreshEntries and at once by this engine's own writes.
type entries struct {
	mu     sync.Mutex // serialises writers of sets
	sets   sync.Map   // tenant → *entrySet
	reads  atomic.Uint64
	stored map[string]uint64 // tenant → the read whose set is stored
	// created is the Unix millisecond of the last entry this engine made.
	created atomic.Int64
}

// entryCreated returns a new entry's creation time: now to the millisecond,
// or one millisecond after the last entry this engine made when that is
// later, so entries made within one millisecond list in the order they
// were made rather than by their random ids.
func (e *Engine) entryCreated() time.Time {
	now := e.now().Truncate(time.Millisecond)
	for {
		last := e.entries.created.Load()
		at := now
		if now.UnixMilli() <= last {
			at = time.UnixMilli(last + 1).In(now.Location())
		}
		if e.entries.created.CompareAndSwap(last, at.UnixMilli()) {
			return at
		}
	}
}

func (e *Engine) entrySet(tenant string) *entrySet {
	if v, ok := e.entries.sets.Load(tenant); ok {
		return v.(*entrySet)
	}
	return nil
}

// entriesKey is the key of a tenant's entries. "_admin" is no flow name
// (those start with a letter), and no account hash starts "v1".
func (e *Engine) entriesKey(tenant string) string {
	return storeKey(keyspace{prefix: e.keys.prefix}, tenant, "_admin", "entries", "v1") // an admin key: untagged in every layout
}

func (e *Engine) entryStore() (EntryStore, error) {
	es, ok := e.store.(EntryStore)
	if !ok {
		return nil, ErrNoEntryStore
	}
	return es, nil
}

// entryTenant validates a tenant of an entry call: one the engine refreshes.
func (e *Engine) entryTenant(tenant string) (string, error) {
	if tenant == "" {
		tenant = DefaultTenant
	}
	if !slices.Contains(e.tenantList, tenant) {
		return "", &InputError{Field: "tenant", Detail: "is not a configured tenant"}
	}
	return tenant, nil
}

// AddEntry adds an allow, block or captcha entry for a tenant, stored in
// the store so that every instance applies it once it refreshes
// (RefreshEntries; this engine applies it at once). Invalid input is an
// *InputError; a tenant already holding MaxEntries gets ErrTooManyEntries.
// When the store fails, the entry it was asked to keep (its id and subject)
// comes with the error: the store may have kept it, and an audit says so.
func (e *Engine) AddEntry(ctx context.Context, req EntryRequest) (Entry, error) {
	tenant, err := e.entryTenant(req.Tenant)
	if err != nil {
		return Entry{}, err
	}
	x := Entry{Kind: req.Kind, Flow: req.Flow, Reason: req.Reason, By: req.By}
	if x.Kind < EntryAllow || x.Kind > EntryCaptcha {
		return Entry{}, &InputError{Field: "kind", Detail: `must be "allow", "block" or "captcha"`}
	}
	var f *Flow
	if req.Flow != "" {
		if f = e.policyFor(tenant).Flow(req.Flow); f == nil {
			return Entry{}, &InputError{Field: "flow", Detail: "is not a configured flow"}
		}
	}
	if req.Reason == "" || len(req.Reason) > MaxReasonBytes {
		return Entry{}, &InputError{Field: "reason", Detail: "is required: at most 200 bytes saying why, with no identifier", Missing: req.Reason == ""}
	}
	if len(req.By) > MaxReasonBytes {
		return Entry{}, &InputError{Field: "by", Detail: "must be at most 200 bytes"}
	}
	if req.TTL < MinEntryTTL || req.TTL > MaxEntryTTL {
		return Entry{}, &InputError{Field: "expires_in", Detail: "must be between 1m and 30d: entries are temporary; a lasting exception belongs in the policy", Missing: req.TTL == 0}
	}
	given := 0
	for _, v := range []string{req.IPRange, req.DestinationPrefix, req.Country} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return Entry{}, &InputError{Field: "ip_range", Detail: "give exactly one of ip_range, destination_prefix and country"}
	}
	h := e.hasher(tenant)
	switch {
	case req.IPRange != "":
		p, err := parseRange(req.IPRange)
		if err != nil {
			return Entry{}, err
		}
		x.Scope, x.Length, x.IPv6 = ScopeIPRange, p.Bits(), p.Addr().Is6()
		x.match = h.subject(tenant, "range", p.String())
	case req.DestinationPrefix != "":
		if !destPrefixRE.MatchString(req.DestinationPrefix) {
			return Entry{}, &InputError{Field: "destination_prefix", Detail: `must be "+" and 1 to 15 digits, an E.164 prefix such as "+4477009"`}
		}
		x.Scope, x.Length = ScopeDestinationPrefix, len(req.DestinationPrefix)-1
		x.match = h.subject(tenant, "dest_range", req.DestinationPrefix)
	default:
		c := strings.ToUpper(req.Country)
		if !regionRE.MatchString(c) {
			return Entry{}, &InputError{Field: "country", Detail: `must be a region: two letters, such as "FR" (or "001")`}
		}
		x.Scope, x.Country, x.match = ScopeCountry, c, c
	}
	if x.Scope != ScopeIPRange && f != nil && f.Kind != Sends {
		return Entry{}, &InputError{Field: "flow", Detail: "destination_prefix and country entries are for send flows (kind: send)"}
	}
	es, err := e.entryStore()
	if err != nil {
		return Entry{}, err
	}
	x.ID = randomID()
	x.Created = e.entryCreated()
	x.Expires = x.Created.Add(req.TTL)
	ctx = context.WithoutCancel(ctx)
	if err := es.PutEntry(ctx, e.entriesKey(tenant), x.ID, x.encode(), req.TTL, MaxEntries); err != nil {
		return x, err
	}
	_, _ = e.loadEntries(ctx, tenant) // this instance applies it at once
	return x, nil
}

var destPrefixRE = regexp.MustCompile(`^\+[0-9]{1,15}$`)

// parseRange parses a CIDR range, masked, or one address, of IPv4 /8 to /32
// or IPv6 /16 to /128; no zone, no IPv4-mapped IPv6.
func parseRange(s string) (netip.Prefix, error) {
	bad := &InputError{Field: "ip_range", Detail: "must be a CIDR range (IPv4 /8 to /32, IPv6 /16 to /128) with its host bits zero, or one address"}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil || p.Masked() != p {
			return p, bad
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, bad
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	a := p.Addr()
	switch {
	case a.Is4In6():
		return p, &InputError{Field: "ip_range", Detail: "must not be IPv4-mapped IPv6: give the IPv4 range"}
	case a.Is4() && p.Bits() < 8, a.Is6() && p.Bits() < 16:
		return p, bad
	}
	return p, nil
}

// ListEntries returns a tenant's unexpired entries, read from the store
// (and this engine's copy refreshed with them), oldest first; with flow,
// only the entries that apply to it.
func (e *Engine) ListEntries(ctx context.Context, tenant, flow string) ([]Entry, error) {
	tenant, err := e.entryTenant(tenant)
	if err != nil {
		return nil, err
	}
	if flow != "" && e.policyFor(tenant).Flow(flow) == nil {
		return nil, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	set, err := e.loadEntries(context.WithoutCancel(ctx), tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(set.all))
	for _, x := range set.all {
		if flow == "" || x.Flow == "" || x.Flow == flow {
			out = append(out, x)
		}
	}
	return out, nil
}

// RemoveEntry deletes a tenant's entry by id and reports whether it was
// there; this engine stops applying it at once, others once they refresh.
func (e *Engine) RemoveEntry(ctx context.Context, tenant, id string) (bool, error) {
	tenant, err := e.entryTenant(tenant)
	if err != nil {
		return false, err
	}
	if len(id) != hashLen {
		return false, &InputError{Field: "id", Detail: "is not an entry id"}
	}
	es, err := e.entryStore()
	if err != nil {
		return false, err
	}
	ctx = context.WithoutCancel(ctx)
	ok, err := es.RemoveEntry(ctx, e.entriesKey(tenant), id)
	if err != nil {
		return false, err
	}
	_, _ = e.loadEntries(ctx, tenant)
	return ok, nil
}

// loadEntries reads a tenant's entries from the store into the engine's
// copy.
func (e *Engine) loadEntries(ctx context.Context, tenant string) (*entrySet, error) {
	es, err := e.entryStore()
	if err != nil {
		return nil, err
	}
	// A read that started later wins: a periodic refresh that read before a
	// write on this instance must not store the set without it.
	read := e.entries.reads.Add(1)
	values, err := es.Entries(ctx, e.entriesKey(tenant))
	if err != nil {
		return nil, err
	}
	all := make([]Entry, 0, len(values))
	for _, v := range values {
		if x, ok := decodeEntry(v); ok {
			all = append(all, x)
		}
	}
	set := newEntrySet(all)
	e.entries.mu.Lock()
	defer e.entries.mu.Unlock()
	if e.entries.stored == nil {
		e.entries.stored = map[string]uint64{}
	}
	if read > e.entries.stored[tenant] {
		e.entries.sets.Store(tenant, set)
		e.entries.stored[tenant] = read
	}
	return set, nil
}

// RefreshEntries reads every configured tenant's entries from the store.
// A tenant whose read fails keeps the entries it had (each still expires on
// time); the first error is returned.
func (e *Engine) RefreshEntries(ctx context.Context) error {
	if _, err := e.entryStore(); err != nil {
		return nil // nothing to refresh: no entry can have been added
	}
	var first error
	for _, t := range e.tenantList {
		if _, err := e.loadEntries(ctx, t); err != nil && first == nil {
			first = fmt.Errorf("authguard: refreshing the entries of tenant %q: %w", t, err)
		}
	}
	return first
}

// RunEntries refreshes the entries every interval until ctx is done,
// calling onError with a failed refresh's error.
// An interval of zero or less is 5s.
func (e *Engine) RunEntries(ctx context.Context, interval time.Duration, onError func(error)) {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, max(interval, time.Second))
			if err := e.RefreshEntries(rctx); err != nil && onError != nil {
				onError(err)
			}
			cancel()
		}
	}
}

// entryMatch is what a tenant's entries say of one call.
type entryMatch struct {
	// refuse is the block or captcha entry that applies, or nil.
	refuse *Entry
	// allowed has the scopes whose rules an allow entry skips.
	allowed [ScopeCountry + 1]bool
	// matched are the entries that decided, for Explain.
	matched []*Entry
}

// scope finds, among the entries of one scope that apply to flow and have
// not expired, those of the longest matching length (a prefix's hash is
// computed for each length in use): a block wins over a captcha over an
// allow of the same length, and any refusal is kept.
func (m *entryMatch) scope(set *entrySet, flow string, now time.Time, lengths []int, hashAt func(n int) string, refuseOnly bool) {
	for _, n := range lengths {
		h := hashAt(n)
		if h == "" {
			continue
		}
		var best *Entry
		for _, i := range set.byMatch[h] {
			x := &set.all[i]
			if (x.Flow != "" && x.Flow != flow) || !now.Before(x.Expires) || (refuseOnly && x.Kind == EntryAllow) {
				continue
			}
			if best == nil || x.Kind > best.Kind || (x.Kind == best.Kind && x.Expires.After(best.Expires)) {
				best = x
			}
		}
		if best == nil {
			continue
		}
		m.matched = append(m.matched, best)
		if best.Kind == EntryAllow {
			m.allowed[best.Scope] = true
		} else if m.refuse == nil || best.Kind > m.refuse.Kind || (best.Kind == m.refuse.Kind && best.Expires.After(m.refuse.Expires)) {
			m.refuse = best
		}
		return
	}
}

// matchIP applies the tenant's IP range entries to the client address. A
// 6to4 or Teredo address is also matched, for refusals only, as the IPv4
// address it embeds: such a source can be forged from any IPv6 host, so it
// may not borrow an allowed IPv4's pass, and cannot escape a blocked one.
func (e *Engine) matchIP(m *entryMatch, set *entrySet, tenant, flow string, addr netip.Addr, now time.Time) {
	addr = addr.Unmap()
	h := e.hasher(tenant)
	at := func(a netip.Addr) func(int) string {
		return func(n int) string {
			p, err := a.Prefix(n)
			if err != nil {
				return ""
			}
			return h.subject(tenant, "range", p.String())
		}
	}
	lengths := set.ip4
	if addr.Is6() {
		lengths = set.ip6
	}
	m.scope(set, flow, now, lengths, at(addr), false)
	if v4, ok := spraydetect.EmbeddedIPv4(addr); ok && addr.Is6() {
		m.scope(set, flow, now, set.ip4, at(v4), true)
	}
}

// matchDestination applies the tenant's destination prefix and country
// entries to a phone destination (normalized E.164, region).
func (e *Engine) matchDestination(m *entryMatch, set *entrySet, tenant, flow, e164, region string, now time.Time) {
	h := e.hasher(tenant)
	m.scope(set, flow, now, set.digits, func(n int) string {
		if n+1 > len(e164) {
			return ""
		}
		return h.subject(tenant, "dest_range", e164[:n+1])
	}, false)
	if region != "" {
		m.scope(set, flow, now, []int{0}, func(int) string { return region }, false)
	}
}

// verdict is the answer a refusing entry gives, or false when none
// refuses (or a solved CAPTCHA passes a captcha entry).
// now is read only when an entry refuses.
func (m *entryMatch) verdict(kind Kind, now func() time.Time, captchaSolved bool) (Verdict, bool) {
	switch {
	case m.refuse == nil:
		return Verdict{}, false
	case m.refuse.Kind == EntryCaptcha:
		if captchaSolved {
			return Verdict{}, false
		}
		return Verdict{Action: Captcha, Reasons: []Reason{ReasonBlocked}}, true
	case kind == Sends:
		return Verdict{Action: Deny, Reasons: []Reason{ReasonBlocked}}, true
	}
	wait := m.refuse.Expires.Sub(now())
	wait = max(wait.Round(time.Millisecond), time.Millisecond)
	return Verdict{Action: Delay, Delay: wait, Reasons: []Reason{ReasonBlocked}}, true
}
