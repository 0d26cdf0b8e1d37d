package authguard

import (
	"container/list"
	"hash/maphash"
	"path"
	"sync"
	"sync/atomic"
	"time"
)

// The recall is what an engine remembers of the store's answers, per store
// key, for the keys whose state holds their subject back: a backoff counter
// at or past Free (its count and until when it waits), a log at its limit,
// a rate that refused. It is learned from every answer the store gives and
// read in two cases only:
//
//   - the store fails: the remembered results are the batch's held state, as
//     a full store's peeks are (combine reads them, continueHeld makes the
//     fallback count on from them), so an account in backoff stays in
//     backoff through a blip, on every instance that has seen it there;
//   - the process is flooded (no call slot is free): a check or send whose
//     remembered results already refuse it is answered from them, without
//     the store and without waiting for a slot, so a flood against one
//     account or from few addresses never reaches the queue.
//
// In steady state the store decides every call: an administrator's reset on
// another instance, or a success that refunds, is seen at the next answer.
// Keys are store keys (identifier hashes, never identifiers). Memory is
// bounded in bytes (Config.RecallBytes), in two tiers, each least recently
// learned first out: a counter at or past Free (it holds an account back for
// as long as forget_after) is evicted only when its shard holds nothing
// else; a log over its limit or a rate that refused (held for a window at
// most) and a record go first. So an attacker's short-lived entries, cheap
// to make (a rate's refusal takes two checks from a fresh address), cannot
// push out an account's backoff however many he makes: only counters in
// backoff can, each made by Free failures that pass the address rules, by
// outnumbering the whole budget since the account's was last learned (a
// key under attack is learned again at every answer).
type recall struct {
	shards []recallShard
	seed   maphash.Seed
	budget int64        // bytes per shard
	n      atomic.Int64 // entries in all shards: an empty recall costs no lock
}

type recallShard struct {
	mu sync.Mutex
	m  map[string]*list.Element
	// lru are the entries (*recalled) of each tier, most recently learned
	// first.
	lru   [recallTiers]list.List
	bytes int64
}

// The recall's tiers: the short-lived entries are evicted first.
const (
	tierShort   = iota // a log over its limit, a rate that refused, a record
	tierHeld           // a backoff counter at or past Free
	recallTiers = 2
)

// tier is e's tier: a remembered counter holds its account back (observe
// keeps one only at or past Free), anything else is short-lived.
func (e *recalled) tier() int {
	if e.count > 0 {
		return tierHeld
	}
	return tierShort
}

func (sh *recallShard) len() int { return sh.lru[tierShort].Len() + sh.lru[tierHeld].Len() }

// recalled is one key's remembered answer. Times are Unix milliseconds on
// the engine's clock.
type recalled struct {
	key string
	// count is a backoff counter's failures.
	count int
	// wait is when a backoff counter's or a rate's wait ends.
	wait int64
	// over is until when a log or rate is taken to stay over its limit.
	over int64
	// expires is when the entry says nothing any more: a counter's
	// forget_after after it was learned, a log's or rate's over.
	expires int64
}

// recallEntryBytes is what an entry costs beside its key: the list element
// (48 bytes), the entry (56), the map's slot and its share of buckets (about
// 40), rounded up.
const recallEntryBytes = 160

// recallShards is the number of independently locked parts.
const recallShards = 16

// recallOverMax bounds how long a log or a rate without a wait is taken to
// stay over its limit after the store last said so.
const recallOverMax = 10 * time.Minute

func newRecall(bytes int64) *recall {
	if bytes <= 0 {
		return nil
	}
	r := &recall{shards: make([]recallShard, recallShards), seed: maphash.MakeSeed(), budget: max(bytes/recallShards, 1)}
	for i := range r.shards {
		r.shards[i].m = map[string]*list.Element{}
	}
	return r
}

func (r *recall) shard(key string) *recallShard {
	return &r.shards[maphash.String(r.seed, key)%recallShards]
}

// learn records what res, the store's answer to ops at now, says of each
// key: remembered while it holds its subject back, forgotten when it no
// longer does. undone says the store undid the batch's reservations (a
// refused check), so a charge it reports did not stay.
func (r *recall) learn(ops []Op, res []Result, undone bool, now time.Time) {
	if r == nil || len(res) != len(ops) {
		return
	}
	ms := now.UnixMilli()
	for i, op := range ops {
		e, keep, forget := observe(op, res[i], undone, ms)
		switch {
		case keep:
			r.put(e)
		case forget && r.n.Load() > 0:
			r.forget(op.StoreKey())
		}
	}
}

// observe reads one op's result: the entry to remember (keep), or whether
// what was remembered of its key no longer holds (forget).
func observe(op Op, res Result, undone bool, now int64) (e recalled, keep, forget bool) {
	switch op := op.(type) {
	case *BackoffOp:
		if op.Action == BackoffClear {
			return e, false, true
		}
		count, wait := res.Count, now+res.Wait.Milliseconds()
		switch {
		case res.Charged && undone: // the charge went ahead and was undone
			count, wait = count-1, now
		case res.Charged: // a charge or failure counted now
			wait = now + op.Policy.Delay(count).Milliseconds()
		}
		if count < op.Policy.Free {
			return e, false, true
		}
		return recalled{key: op.Key, count: count, wait: wait, expires: now + op.Policy.ForgetAfter.Milliseconds()}, true, false
	case *LogOp:
		switch {
		case res.Over:
			until := now + min(op.Windows.Shortest(), recallOverMax).Milliseconds()
			return recalled{key: op.Key, over: until, expires: until}, true, false
		case res.Charged, op.Action == LogRemove: // a new member went in: not full
			return e, false, true
		}
	case *RateOp:
		switch {
		case op.Action == RateCredit, op.Action == RateRefund:
		case res.Over && res.Wait > 0:
			until := now + res.Wait.Milliseconds()
			return recalled{key: op.Key, wait: until, over: until, expires: until}, true, false
		case res.Over:
			until := now + min(op.Rate.Window, recallOverMax).Milliseconds()
			if op.Rate.Window <= 0 {
				until = now + time.Second.Milliseconds()
			}
			return recalled{key: op.Key, over: until, expires: until}, true, false
		case res.Charged:
			return e, false, true
		}
	case *DeleteOp:
		return e, false, true
	}
	return e, false, false
}

func (r *recall) put(e recalled) {
	sh := r.shard(e.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := e.tier()
	if el, ok := sh.m[e.key]; ok {
		old := el.Value.(*recalled)
		if ot := old.tier(); ot != t {
			sh.lru[ot].Remove(el)
			*old = e
			sh.m[e.key] = sh.lru[t].PushFront(old)
			return
		}
		*old = e
		sh.lru[t].MoveToFront(el)
		return
	}
	sh.m[e.key] = sh.lru[t].PushFront(&e)
	sh.bytes += int64(len(e.key)) + recallEntryBytes
	r.n.Add(1)
	for sh.bytes > r.budget && sh.len() > 1 {
		l := &sh.lru[tierShort]
		if l.Len() == 0 {
			l = &sh.lru[tierHeld]
		}
		sh.drop(l.Back(), r)
	}
}

func (sh *recallShard) drop(el *list.Element, r *recall) {
	e := el.Value.(*recalled)
	sh.lru[e.tier()].Remove(el)
	delete(sh.m, e.key)
	sh.bytes -= int64(len(e.key)) + recallEntryBytes
	r.n.Add(-1)
}

// forget forgets key and reports whether it was remembered.
func (r *recall) forget(key string) bool {
	sh := r.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.m[key]
	if ok {
		sh.drop(el, r)
	}
	return ok
}

// forgetMatching forgets every key that matches a glob pattern (an
// administrator's reset of an account's keys).
func (r *recall) forgetMatching(pattern string) {
	if r == nil || r.n.Load() == 0 {
		return
	}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for key, el := range sh.m {
			if ok, _ := path.Match(pattern, key); ok {
				sh.drop(el, r)
			}
		}
		sh.mu.Unlock()
	}
}

// held returns what is remembered of ops' keys at now as the results the
// store last gave, one per op (zero for a key with nothing remembered), or
// nil when nothing is remembered of any of them.
//
// During an outage (outage true) a backoff counter is taken to hold one
// failure more than the store last said, made when its wait ran out: the
// attempt any other instance may have let through then, which this one
// cannot see. So a fault shorter than a counter's current delay gives its
// subject no attempt on any instance, however many there are; over a
// longer outage each instance counts on its own from there.
func (r *recall) held(ops []Op, now time.Time, outage bool) []Result {
	if r == nil || r.n.Load() == 0 {
		return nil
	}
	ms := now.UnixMilli()
	var out []Result
	for i, op := range ops {
		e, ok := r.get(op.StoreKey(), ms)
		if !ok {
			continue
		}
		var res Result
		switch op := op.(type) {
		case *BackoffOp:
			count, until := e.count, e.wait
			if outage {
				count++
				until += op.Policy.Delay(count).Milliseconds()
			}
			res = Result{Count: count, Wait: time.Duration(max(until-ms, 0)) * time.Millisecond}
		case *LogOp:
			res = Result{Over: e.over > ms}
		case *RateOp:
			res = Result{Over: e.over > ms, Wait: time.Duration(max(e.wait-ms, 0)) * time.Millisecond}
		default:
			continue
		}
		if out == nil {
			out = make([]Result, len(ops))
		}
		out[i] = res
	}
	return out
}

// has reports whether key is remembered, expired or not: whether the store
// was last seen holding its subject back.
func (r *recall) has(key string) bool {
	if r == nil || r.n.Load() == 0 {
		return false
	}
	sh := r.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.m[key]
	return ok
}

func (r *recall) get(key string, now int64) (recalled, bool) {
	sh := r.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.m[key]
	if !ok {
		return recalled{}, false
	}
	e := el.Value.(*recalled)
	if now >= e.expires {
		sh.drop(el, r)
		return recalled{}, false
	}
	return *e, true
}

// RecallStats says what an engine's recall holds.
type RecallStats struct {
	// Keys is the number of store keys remembered.
	Keys int64
	// Bytes is what they are accounted to cost.
	Bytes int64
	// Records and RecordBytes are the same for the records the store was
	// last seen to hold (known networks, verified destinations:
	// records.go), in a budget of their own.
	Records, RecordBytes int64
}

// Recall reports what the engine remembers of the store's answers.
func (e *Engine) Recall() RecallStats {
	var st RecallStats
	st.Keys, st.Bytes = e.recall.stats()
	st.Records, st.RecordBytes = e.records.stats()
	return st
}

// stats returns the entries r holds and what they are accounted to cost.
func (r *recall) stats() (keys, bytes int64) {
	if r == nil {
		return 0, 0
	}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		keys += int64(sh.len())
		bytes += sh.bytes
		sh.mu.Unlock()
	}
	return keys, bytes
}
