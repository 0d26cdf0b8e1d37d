package client

import (
	"container/heap"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"hash"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// The FailOpen allowance's defaults. Each tracked subject (an account or a
// send's destination, and an address) has a bucket of fallback proceeds
// that refills evenly over the window: with the defaults an account gets 5
// at once and one more every 6 minutes, an address 50 at once and one more
// every 36 seconds. In any span of time L while tollgate gives no verdict,
// one account so gets at most 5 + L/6min fallback proceeds, whatever the
// number of addresses they come from.
//
// Why these figures, against tollgate's built-in login policy:
//
//   - 5 per account is the policy's own `free` (account_backoff): a user
//     who mistypes once or twice and then signs in spends 3, and can sign
//     in again from another device within the window. Past 5, tollgate too
//     starts to delay.
//   - 30 minutes keeps a credential-stuffing run during an outage to a
//     handful of guesses per account: 7 in the first 15 minutes and 15 in
//     the first hour (or any hour), where tollgate itself, when up, lets
//     14 and 16 through to a guesser who waits out every delay. A longer outage gives more than
//     tollgate would (245 in a day against its 62): lower the allowance,
//     lengthen the window, or use FailDelay or FailCaptcha where that
//     matters.
//   - 50 per address (100 more an hour) matches the policy's ip_failures
//     (100 failures an hour), since the client cannot tell a proceed that
//     will fail from one that will succeed and counts each, as tollgate
//     does until the report: an office of 50 people behind one address can
//     all sign in at once. A carrier's NAT (CGNAT) carries far more: raise
//     FailOpenPerAddress, or turn it off, if many users share addresses.
//   - A send's destination gets an account's figures, looser than the
//     policy's otp_send (one code, then 30 s, 1 min, ...; 5 an hour): a
//     send site that can show a CAPTCHA should rather use FailCaptcha.
//   - 10,000 subjects of each kind is what a login service sees in a
//     30-minute outage at about 5 new accounts a second, in 1.6 MB; see
//     Config.FailOpenSubjects for what a full table gives back.
const (
	// DefaultFailOpenPerAccount is Config.FailOpenPerAccount's default.
	DefaultFailOpenPerAccount = 5
	// DefaultFailOpenPerAddress is Config.FailOpenPerAddress's default.
	DefaultFailOpenPerAddress = 50
	// DefaultFailOpenWindow is Config.FailOpenWindow's default.
	DefaultFailOpenWindow = 30 * time.Minute
	// DefaultFailOpenSubjects is Config.FailOpenSubjects's default.
	DefaultFailOpenSubjects = 10_000
)

// ReasonFallbackAllowance follows ReasonFallback in the reasons of a
// FailOpen call answered with a delay because its account, destination or
// address had spent its allowance of fallback proceeds; tollgate itself
// never answers it.
const ReasonFallbackAllowance = "client_fallback_allowance"

// Stats counts what FailOpen answered while tollgate gave no verdict, since
// New. The client exports no metrics of its own: put these in yours, and
// alert on the refusals, which mean an outage is being used.
type Stats struct {
	// FailOpenProceeds is how many FailOpen calls (checks and sends)
	// proceeded while tollgate gave no verdict: within the allowance, or
	// every one with the allowance turned off.
	FailOpenProceeds uint64
	// FailOpenRefusedAccount is how many FailOpen calls were answered with
	// a delay (ReasonFallbackAllowance) because their account, or a send's
	// destination, had spent its allowance.
	FailOpenRefusedAccount uint64
	// FailOpenRefusedAddress is how many were answered with a delay because
	// their address had spent its allowance (and their account had not).
	FailOpenRefusedAddress uint64
	// TrackedAccounts and TrackedAddresses are how many subjects the
	// allowance holds now, each at most Config.FailOpenSubjects; a subject
	// whose allowance has refilled is dropped.
	TrackedAccounts, TrackedAddresses int
	// Evicted is how many subjects were dropped from a full table before
	// their allowance had refilled, which gave them back what they had
	// spent; see Config.FailOpenSubjects.
	Evicted uint64
}

// Stats returns the counts of the FailOpen allowance. It is safe to call
// at any time.
func (c *Client) Stats() Stats {
	a := c.allow
	s := Stats{
		FailOpenProceeds:       a.proceeds.Load(),
		FailOpenRefusedAccount: a.refusedAccount.Load(),
		FailOpenRefusedAddress: a.refusedAddress.Load(),
		Evicted:                a.evicted.Load(),
	}
	a.mu.Lock()
	if a.accounts != nil {
		s.TrackedAccounts = len(a.accounts.byKey)
	}
	if a.addresses != nil {
		s.TrackedAddresses = len(a.addresses.byKey)
	}
	a.mu.Unlock()
	return s
}

// The kinds of subject, the first byte of what is hashed, so that an
// account, a destination and an address never share a key.
const (
	kindAccount     byte = 'a'
	kindDestination byte = 'd'
	kindAddress     byte = 'i'
)

// subject is what a FailOpen call is counted on, as the caller sent it; it
// lives for the call only. An empty field is not counted.
type subject struct {
	kind      byte // kindAccount or kindDestination
	flow      string
	account   string // the account or the destination, folded
	ip        string
	captchaOK bool // the request's CaptchaSolved
}

// checkSubject is what a check is counted on: its flow's account and
// address. The account is folded as tollgate folds it (foldAccount), so
// that " ALICE ", "ａｌｉｃｅ" and "al\u200dice" share one allowance.
func checkSubject(req wire.CheckRequest) subject {
	return subject{kind: kindAccount, flow: req.Flow, account: foldAccount(req.Account), ip: req.IP, captchaOK: req.CaptchaSolved}
}

// sendSubject is what a send is counted on: its flow's destination (an
// e-mail address folded like an account, a phone number by its digits,
// whatever the channel) and address.
func sendSubject(req wire.SendRequest) subject {
	flow := req.Flow
	if flow == "" {
		flow = wire.DefaultSendFlow
	}
	dst := req.Destination
	if req.Channel == wire.ChannelEmail || strings.Contains(dst, "@") {
		dst = "e:" + foldAccount(dst)
	} else {
		dst = "p:" + digits(dst)
	}
	return subject{kind: kindDestination, flow: flow, account: dst, ip: req.IP, captchaOK: req.CaptchaSolved}
}

func digits(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// addressKey is the form of an address that is hashed: an IPv4 address
// (IPv4-mapped ones too) whole, an IPv6 address by its /64, which one
// subscriber usually holds whole; anything else as it is.
func addressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "?" + ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// fallbackFor is mode's answer to a call that failed with err (see FailMode),
// with FailOpen's proceeds held to the allowance for s.
func (c *Client) fallbackFor(mode FailMode, s subject, err error) Verdict {
	v := fallback(mode, s.captchaOK, err)
	if mode != FailOpen || v.Action != wire.ActionProceed {
		return v
	}
	if c.allow.take(c.now(), s) {
		return v
	}
	v = fallback(FailDelay, false, err)
	v.Reasons = append(v.Reasons, ReasonFallbackAllowance)
	return v
}

// allowance is FailOpen's local limit: a table of accounts (and sends'
// destinations) and one of addresses, each keyed by an HMAC of the subject
// under a key made for this Client, so that no identifier is kept.
type allowance struct {
	proceeds, refusedAccount, refusedAddress, evicted atomic.Uint64

	mu        sync.Mutex
	mac       hash.Hash // HMAC-SHA-256 under a random key; under mu
	sum       []byte    // mac's output buffer; under mu
	accounts  *buckets  // nil when turned off
	addresses *buckets  // nil when turned off
}

// newAllowance checks cfg's allowance fields and returns the allowance.
func newAllowance(cfg Config) (*allowance, error) {
	if cfg.FailOpenPerAccount == 0 {
		cfg.FailOpenPerAccount = DefaultFailOpenPerAccount
	}
	if cfg.FailOpenPerAddress == 0 {
		cfg.FailOpenPerAddress = DefaultFailOpenPerAddress
	}
	switch {
	case cfg.FailOpenWindow == 0:
		cfg.FailOpenWindow = DefaultFailOpenWindow
	case cfg.FailOpenWindow < 0:
		return nil, errors.New("client: FailOpenWindow must not be negative")
	}
	switch {
	case cfg.FailOpenSubjects == 0:
		cfg.FailOpenSubjects = DefaultFailOpenSubjects
	case cfg.FailOpenSubjects < 0:
		return nil, errors.New("client: FailOpenSubjects must not be negative")
	}
	a := &allowance{}
	for _, t := range []struct {
		n   int
		dst **buckets
	}{{cfg.FailOpenPerAccount, &a.accounts}, {cfg.FailOpenPerAddress, &a.addresses}} {
		if t.n < 0 {
			continue // turned off
		}
		every := cfg.FailOpenWindow / time.Duration(t.n)
		if every <= 0 {
			return nil, errors.New("client: FailOpenWindow is too short for its allowance")
		}
		*t.dst = &buckets{
			every: int64(every),
			slack: int64(cfg.FailOpenWindow - every),
			max:   cfg.FailOpenSubjects,
			byKey: make(map[bucketKey]*bucket),
		}
	}
	if a.accounts == nil && a.addresses == nil {
		return a, nil
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	a.mac = hmac.New(sha256.New, key)
	a.sum = make([]byte, 0, sha256.Size)
	return a, nil
}

// take spends one fallback proceed of s's account and address at now, and
// reports whether both had one left; when either had not, neither is
// spent, so that a spraying address does not spend its victims' allowance
// and a hammered account does not spend its guessers' addresses'.
func (a *allowance) take(now time.Time, s subject) bool {
	if a.accounts == nil && a.addresses == nil {
		a.proceeds.Add(1)
		return true
	}
	t := now.UnixNano()
	a.mu.Lock()
	defer a.mu.Unlock()
	var acct, addr *bucket
	var acctKey, addrKey bucketKey
	if a.accounts != nil && s.account != "" {
		a.accounts.prune(t)
		acctKey = a.key(s.kind, s.flow, s.account)
		if acct = a.accounts.byKey[acctKey]; acct != nil && !a.accounts.has(acct, t) {
			a.refusedAccount.Add(1)
			return false
		}
	}
	if a.addresses != nil && s.ip != "" {
		a.addresses.prune(t)
		addrKey = a.key(kindAddress, s.flow, addressKey(s.ip))
		if addr = a.addresses.byKey[addrKey]; addr != nil && !a.addresses.has(addr, t) {
			a.refusedAddress.Add(1)
			return false
		}
	}
	if a.accounts != nil && s.account != "" {
		a.evicted.Add(a.accounts.spend(acct, acctKey, t))
	}
	if a.addresses != nil && s.ip != "" {
		a.evicted.Add(a.addresses.spend(addr, addrKey, t))
	}
	a.proceeds.Add(1)
	return true
}

// key is the truncated HMAC of a subject: kind, flow, a zero byte, value.
func (a *allowance) key(kind byte, flow, value string) bucketKey {
	a.mac.Reset()
	a.mac.Write([]byte{kind})
	a.mac.Write([]byte(flow))
	a.mac.Write([]byte{0})
	a.mac.Write([]byte(value))
	var k bucketKey
	copy(k[:], a.mac.Sum(a.sum[:0]))
	return k
}

// bucketKey is a subject's key: 128 bits of its HMAC.
type bucketKey [16]byte

// bucket is one subject's allowance as a GCRA (the token bucket of
// x/time/rate, kept as one instant): tat is when its bucket will be full
// again, in Unix nanoseconds.
type bucket struct {
	key bucketKey
	tat int64
	pos int // in buckets.heap
}

// buckets is one kind's table: at most max buckets, in a min-heap by tat,
// so that the one dropped first is the one closest to full.
type buckets struct {
	every int64 // window/n: one proceed comes back every `every`
	slack int64 // window - every: how far tat may run ahead of now
	max   int
	byKey map[bucketKey]*bucket
	heap  bucketHeap
}

// has reports whether b has a proceed left at t.
func (bs *buckets) has(b *bucket, t int64) bool { return b.tat-bs.slack <= t }

// prune drops the buckets that are full at t: they hold nothing a fresh
// one would not.
func (bs *buckets) prune(t int64) {
	for len(bs.heap) > 0 && bs.heap[0].tat <= t {
		b := heap.Pop(&bs.heap).(*bucket)
		delete(bs.byKey, b.key)
	}
}

// spend takes one proceed from b (nil: a new bucket for key) at t, which
// has one left, and answers how many buckets were evicted to make room.
func (bs *buckets) spend(b *bucket, key bucketKey, t int64) (evicted uint64) {
	if b != nil {
		b.tat = max(b.tat, t) + bs.every
		heap.Fix(&bs.heap, b.pos)
		return 0
	}
	if len(bs.heap) >= bs.max {
		// Full: drop the bucket closest to full, which gives back the
		// least; reuse it.
		b = heap.Pop(&bs.heap).(*bucket)
		delete(bs.byKey, b.key)
		evicted = 1
	} else {
		b = new(bucket)
	}
	b.key, b.tat = key, t+bs.every
	bs.byKey[key] = b
	heap.Push(&bs.heap, b)
	return evicted
}

// bucketHeap is a container/heap of buckets, earliest tat first.
type bucketHeap []*bucket

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i].tat < h[j].tat }
func (h bucketHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *bucketHeap) Push(x any) {
	b := x.(*bucket)
	b.pos = len(*h)
	*h = append(*h, b)
}
func (h *bucketHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return b
}
