package memstore

import (
	"context"
	"errors"
	"hash/maphash"
	"iter"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

var _ authguard.Store = (*Store)(nil)

// Config configures a Store.
type Config struct {
	// MaxEntries caps the number of keys kept: the store never holds more.
	// The default is 1,000,000.
	MaxEntries int
	// MemoryLimit caps the bytes the keys hold, as the store accounts them
	// (Store.Bytes: each key's bytes, its state's heap and its share of the
	// store's slots and index; within 2 % of the heap they take for fat keys,
	// 20 % for thin ones): the store makes room before it would hold more. It
	// bounds the store's live heap, not the process's RSS, a multiple of it
	// that the garbage collector sets (see the package doc). Both caps apply,
	// whichever binds first: MaxEntries keeps bounding the number of keys, and
	// with it the slots and index (kept at their high-water mark), MemoryLimit
	// what fat keys hold. A shard whose share of the limit is smaller than one
	// key still keeps that key. The default is 320 MiB: the default 1,000,000
	// keys of a flood of fresh subjects, about 260 bytes each, take 250 MiB,
	// so such a flood fills MaxEntries first as it did before the limit, while
	// fat keys (logs at their limit, up to 40 KB each) stop at 320 MiB. A
	// store of fewer keys wants a limit to match (serve's fail-open fallback
	// of 100,000 keys: 32 MiB).
	MemoryLimit int64
	// Shards is the number of independently locked maps. Both caps are
	// split between them, and each evicts on its own. The default is 64.
	Shards int
	// Now is the store's clock. The default is time.Now.
	Now func() time.Time
}

// Store is an authguard.Store in process memory. It is safe for concurrent use.
type Store struct {
	shards  []shard
	seed    maphash.Seed
	now     func() time.Time
	evicted [classes]atomic.Int64
	closed  atomic.Bool
	sets    entrySets
	groups  groups
}

// class is an entry's eviction class. Every Do puts the key it touches in
// the class its new state calls for.
type class uint8

const (
	// probation holds ordinary entries; they are evicted first.
	probation class = iota
	// protected holds entries whose state restricts its subject
	// (authguard.Restricting): evicted only when a shard has no probation
	// entry left.
	protected
	classes
)

// A shard keeps its entries in one slice, linked into LRU lists by index
// rather than by pointer: a million entries are then a few large objects for
// the garbage collector to scan instead of millions of small ones. There is
// one list per group and class (lists[2*group+class]), for the groups the
// shard has held.
//
// The index maps a key's hash (the maphash that chose its shard) to its
// slot, so that it holds no pointer: the garbage collector does not scan it,
// and a lookup hashes the key once. A key whose hash another key of the
// shard already holds goes into clash, keyed by the key itself; with 64-bit
// hashes under a seed chosen at start-up that happens about once in 10¹³
// stores of a million keys, and no caller can aim for it.
type shard struct {
	mu    sync.Mutex
	index map[uint64]int32
	clash map[string]int32
	n     int // keys held: len(index) + len(clash)
	slots []slot
	lists []lru
	free  int32 // first free slot (linked through next), or none
	cap   int
	sweep int32 // the list whose tail the next eviction checks for expiry
	// bytes is what the shard holds as size accounts it: the size of every
	// key held, and entryBytes for every free slot (a slot and its room in
	// the index are kept once made). It is never more than budget, but
	// for one key alone larger than budget.
	bytes  int64
	budget int64
}

// lru is one group's list of one class.
type lru struct {
	head  int32 // most recently used, or none
	tail  int32 // least recently used, or none
	len   int
	bytes int64 // the sizes of its entries
}

type slot struct {
	key        string
	hash       uint64 // maphash of key: its place in the index
	state      any
	expires    int64 // Unix nanoseconds
	prev, next int32
	list       int32 // its index in shard.lists
	bytes      int32 // size(key, state)
}

// A group is the rule a key belongs to: the key up to its last ':', which
// for authguard's keys (prefix:tenant:flow:rule:subject) is one rule of one
// flow of one tenant. A full shard makes room in the group that holds the
// most keys, so a flood of one rule's keys turns over that rule's keys
// rather than another's (docs/design.md §7, "Memory store").
// Groups are numbered as they first come; past maxGroups, the rest share
// the last number.
const maxGroups = 256

// groups numbers groups. Lookups read an immutable map without locking;
// adding a group copies it, at most maxGroups times.
type groups struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]int32]
}

// of returns key's group number.
func (g *groups) of(key string) int32 {
	name := key[:max(strings.LastIndexByte(key, ':'), 0)]
	if m := g.m.Load(); m != nil {
		if n, ok := (*m)[name]; ok {
			return n
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := map[string]int32{}
	if m := g.m.Load(); m != nil {
		old = *m
	}
	if n, ok := old[name]; ok {
		return n
	}
	if len(old) >= maxGroups-1 {
		return maxGroups - 1
	}
	m := make(map[string]int32, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	n := int32(len(old))
	m[strings.Clone(name)] = n
	g.m.Store(&m)
	return n
}

const none = -1

// ErrClosed is returned by a closed Store.
var ErrClosed = errors.New("memstore: closed")

// New returns a Store.
func New(cfg Config) *Store {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 1_000_000
	}
	if cfg.MemoryLimit <= 0 {
		cfg.MemoryLimit = 320 << 20
	}
	if cfg.Shards <= 0 {
		cfg.Shards = 64
	}
	cfg.Shards = min(cfg.Shards, cfg.MaxEntries)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{shards: make([]shard, cfg.Shards), seed: maphash.MakeSeed(), now: cfg.Now}
	// The shards' caps add up to MaxEntries exactly, and their budgets to
	// MemoryLimit.
	per, rest := cfg.MaxEntries/cfg.Shards, cfg.MaxEntries%cfg.Shards
	perB, restB := cfg.MemoryLimit/int64(cfg.Shards), cfg.MemoryLimit%int64(cfg.Shards)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.index, sh.free, sh.cap, sh.budget = make(map[uint64]int32), none, per, perB
		if i < rest {
			sh.cap++
		}
		if int64(i) < restB {
			sh.budget++
		}
	}
	return s
}

// Do applies ops in order, each atomically on its own key, with the
// semantics of authguard.Apply.
func (s *Store) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	now := s.now()
	res := make([]authguard.Result, len(ops))
	for i, op := range ops {
		res[i] = s.apply(op, now)
	}
	return res, nil
}

func (s *Store) apply(op authguard.Op, now time.Time) authguard.Result {
	key := op.StoreKey()
	h := maphash.String(s.seed, key)
	sh := &s.shards[h%uint64(len(s.shards))]
	ns := now.UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()

	var state any
	i, ok := sh.lookup(h, key)
	if ok && ns < sh.slots[i].expires {
		state = sh.slots[i].state
	}
	next, ttl, r := authguard.Apply(op, state, now)
	if ttl <= 0 || next == nil {
		if ok {
			sh.remove(i)
		}
		return r
	}
	c := probation
	if authguard.Restricting(op, next, now) {
		c = protected
	}
	var n int64
	if ok {
		sl := &sh.slots[i]
		n = resize(key, next, state, int64(sl.bytes))
		g := sl.list / int32(classes)
		sh.unlink(i)
		sh.bytes += n - int64(sl.bytes)
		sl.state, sl.expires, sl.bytes = next, ns+int64(ttl), int32(n)
		// A state that grew past the budget makes room as a new key does,
		// while off its list: it cannot evict itself.
		for sh.bytes > sh.budget && sh.n > 1 {
			s.evict(sh, ns, g, true)
		}
		sh.pushFront(i, listOf(g, c))
		return r
	}
	g := s.groups.of(key)
	n = size(key, next)
	for sh.n > 0 {
		if sh.n >= sh.cap {
			s.evict(sh, ns, g, false)
		} else if sh.bytes+sh.adds(n) > sh.budget {
			s.evict(sh, ns, g, true)
		} else {
			break
		}
	}
	sh.insert(h, key, next, ns+int64(ttl), listOf(g, c), n)
	return r
}

// adds is what inserting a key of size n adds to sh.bytes: a free slot is
// already counted.
func (sh *shard) adds(n int64) int64 {
	if sh.free != none {
		return n - entryBytes
	}
	return n
}

// listOf is the index in shard.lists of group g's list of class c.
func listOf(g int32, c class) int32 { return g*int32(classes) + int32(c) }

// evict makes room in sh for an entry of group g: the least recently used
// probation entry of the group holding the most entries among those that
// hold a probation entry; else (only when the shard holds nothing but
// protected entries) the least recently used entry of the group holding
// the most. Ties go to g, the group that needs the room. The most is
// counted in the resource the shard lacks: in keys when it holds MaxEntries
// keys' share, in bytes (size) when it lacks bytes, so that a flood of a
// few fat keys turns over its own rule's keys too, not the many thin keys
// of another.
//
// Expired entries go first, uncounted: the end of one list, taken in turn
// (and the same list again while its end is expired, so an expired group
// drains), and the end of the list chosen. Choosing looks only at the
// lists' lengths and bytes, so an eviction reads at most two entries: a
// full store's slots are far bigger than the CPU's caches.
func (s *Store) evict(sh *shard, ns int64, g int32, byBytes bool) {
	if k := sh.sweep; k < int32(len(sh.lists)) {
		if t := sh.lists[k].tail; t != none && ns >= sh.slots[t].expires {
			sh.remove(t)
			return
		}
	}
	sh.sweep = (sh.sweep + 1) % int32(len(sh.lists))
	groups := int32(len(sh.lists)) / int32(classes)
	bestP, nP := int32(-1), int64(0) // largest group with a probation entry
	best, n := int32(-1), int64(0)   // largest group
	for x := range groups {
		lp, lq := &sh.lists[listOf(x, probation)], &sh.lists[listOf(x, protected)]
		p, k := lp.len, int64(lp.len+lq.len)
		if byBytes {
			k = lp.bytes + lq.bytes
		}
		if k > n || k == n && x == g {
			best, n = x, k
		}
		if p > 0 && (k > nP || k == nP && x == g) {
			bestP, nP = x, k
		}
	}
	l, c := listOf(best, protected), protected
	if bestP >= 0 {
		l, c = listOf(bestP, probation), probation
	}
	t := sh.lists[l].tail
	live := ns < sh.slots[t].expires
	sh.remove(t)
	if live {
		s.evicted[c].Add(1)
	}
}

// lookup returns the slot of key, whose hash is h, if sh holds it.
func (sh *shard) lookup(h uint64, key string) (int32, bool) {
	i, ok := sh.index[h]
	if ok && sh.slots[i].key == key {
		return i, true
	}
	if len(sh.clash) > 0 {
		i, ok = sh.clash[key]
		return i, ok
	}
	return 0, false
}

func (sh *shard) insert(h uint64, key string, state any, expires int64, l int32, n int64) {
	sh.bytes += sh.adds(n)
	i := sh.free
	if i == none {
		i = int32(len(sh.slots))
		sh.slots = append(sh.slots, slot{})
	} else {
		sh.free = sh.slots[i].next
	}
	sh.slots[i] = slot{key: key, hash: h, state: state, expires: expires, bytes: int32(n)}
	if _, taken := sh.index[h]; taken {
		if sh.clash == nil {
			sh.clash = make(map[string]int32)
		}
		sh.clash[key] = i
	} else {
		sh.index[h] = i
	}
	sh.n++
	sh.pushFront(i, l)
}

func (sh *shard) remove(i int32) {
	sh.unlink(i)
	sl := &sh.slots[i]
	if j, ok := sh.index[sl.hash]; ok && j == i {
		delete(sh.index, sl.hash)
	} else {
		delete(sh.clash, sl.key)
	}
	sh.n--
	sh.bytes -= int64(sh.slots[i].bytes) - entryBytes // the slot stays
	sh.slots[i] = slot{next: sh.free}                 // drop the references for the GC
	sh.free = i
}

// held yields the slot of every key sh holds. The loop's body may remove
// the slot it is given.
func (sh *shard) held() iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for _, j := range sh.index {
			if !yield(j) {
				return
			}
		}
		for _, j := range sh.clash {
			if !yield(j) {
				return
			}
		}
	}
}

func (sh *shard) unlink(i int32) {
	sl := &sh.slots[i]
	l := &sh.lists[sl.list]
	if sl.prev != none {
		sh.slots[sl.prev].next = sl.next
	} else {
		l.head = sl.next
	}
	if sl.next != none {
		sh.slots[sl.next].prev = sl.prev
	} else {
		l.tail = sl.prev
	}
	l.len--
	l.bytes -= int64(sl.bytes)
}

func (sh *shard) pushFront(i, list int32) {
	for int32(len(sh.lists)) <= list { // whole groups: both classes' lists
		sh.lists = append(sh.lists, lru{head: none, tail: none}, lru{head: none, tail: none})
	}
	l := &sh.lists[list]
	sl := &sh.slots[i]
	sl.list, sl.prev, sl.next = list, none, l.head
	if l.head != none {
		sh.slots[l.head].prev = i
	}
	l.head = i
	if l.tail == none {
		l.tail = i
	}
	l.len++
	l.bytes += int64(sl.bytes)
}

// Sweep drops every expired entry. Expired entries are also dropped when
// they are touched or reach the end of the LRU list, so calling Sweep is only
// needed to give memory back sooner.
func (s *Store) Sweep() {
	ns := s.now().UnixNano()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for j := range sh.held() {
			if ns >= sh.slots[j].expires {
				sh.remove(j)
			}
		}
		sh.mu.Unlock()
	}
}

// Stats describes the store's contents: Entries is never more than
// Config.MaxEntries, and Bytes (Store.Bytes) never more than MemoryLimit,
// Config.MemoryLimit with its default applied. It is authguard.MemoryStats,
// so that the metrics can read it without importing this package.
type Stats = authguard.MemoryStats

// Stats returns the store's current Stats.
func (s *Store) Stats() Stats {
	st := Stats{
		EvictedProbation: s.evicted[probation].Load(),
		EvictedProtected: s.evicted[protected].Load(),
	}
	st.Evicted = st.EvictedProbation + st.EvictedProtected
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Entries += sh.n
		st.Bytes += sh.bytes
		st.MemoryLimit += sh.budget
		for l := int(protected); l < len(sh.lists); l += int(classes) {
			st.Protected += sh.lists[l].len
		}
		sh.mu.Unlock()
	}
	return st
}

// Bytes returns the memory the keys hold as the store accounts it: for each
// key its bytes, its state's estimated heap and its share of the store's
// slots and index (free slots included: the store keeps them). Reading it
// locks each shard in turn, as Stats does.
func (s *Store) Bytes() int64 {
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.bytes
		sh.mu.Unlock()
	}
	return n
}

// Keys returns every live key, for tests and the admin view.
func (s *Store) Keys() []string {
	ns := s.now().UnixNano()
	var keys []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for j := range sh.held() {
			if ns < sh.slots[j].expires {
				keys = append(keys, sh.slots[j].key)
			}
		}
		sh.mu.Unlock()
	}
	return keys
}

// DeleteMatching deletes every key matching pattern, a glob as
// Engine.AccountKeys returns (* and ? only; keys hold no '/'), and returns
// how many live keys it deleted: an administrator's reset.
func (s *Store) DeleteMatching(_ context.Context, pattern string) (int, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return 0, err
	}
	ns, n := s.now().UnixNano(), 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for j := range sh.held() {
			if ok, _ := path.Match(pattern, sh.slots[j].key); ok {
				if ns < sh.slots[j].expires {
					n++
				}
				sh.remove(j)
			}
		}
		sh.mu.Unlock()
	}
	return n, nil
}

// Ping reports whether the store is open.
func (s *Store) Ping(context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Close marks the store closed; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
