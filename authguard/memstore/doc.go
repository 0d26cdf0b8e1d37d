// Package memstore is the authguard.Store that keeps state in process memory:
// the embedded default for a single instance, and the local safety net that
// fail-open flows answer from while Redis is down.
//
// State lives in sharded maps, each with its own mutex, so concurrent calls on
// different keys rarely contend. Idle keys expire when their state can no
// longer change a verdict.
//
// # Memory bound and eviction
//
// The store never holds more than Config.MaxEntries keys nor more than
// Config.MemoryLimit bytes: both caps are split exactly between the
// shards, and a shard makes room before it stores a key, or a key's state
// that grew, past its share of either. A key cap alone does not bound
// memory, since a key's state can be a counter of a few dozen bytes or a
// log of up to its largest limit + 1 members (a /48 spray log of the
// built-in policy at its limit: 201 members, about 10 KB; an
// ip_destinations_48 log: 801, about 40 KB), and logs at a limit are
// protected from eviction. So the store accounts for every key what it
// holds: the key's bytes, its state's heap estimated per state type, as
// the allocator rounds each object, and its share of the shard's slots and
// index. Store.Bytes reports the sum: within 2 % of the heap
// measured for fat keys, and within 20 % either way for thin ones, whose
// share of the index moves with its load (TestSize_EstimateMatchesHeap).
// A shard's slots and index stay at their high-water mark and are counted
// so. The default MemoryLimit, 320 MiB, lets a flood of fresh subjects
// (about 260 bytes a key, 250 MiB for 1,000,000) fill the default
// MaxEntries first, as before; fat keys fill the bytes first.
//
// The limit bounds the store's live heap; the process's RSS is a multiple
// of it set by the garbage collector (GOGC): measured at GOGC=100 with a
// 64 MiB limit, peak RSS was 2.9 to 3.0 times the limit over the
// process's baseline under fat logs (each change to a log copies it) and
// 2.1 times under thin keys (TestFlood_FatSprayLogsAtTheByteBudget and the
// measurements beside it).
//
// Evicting a key forgets its subject's history, which errs towards letting
// attempts through, so the store does not evict blindly. Every key is in one
// of two classes, set again by every call that touches it:
//
//   - protected: its state restricts its subject (authguard.Restricting):
//     an account counter in backoff, a log at a limit, an empty bucket;
//   - probation: everything else.
//
// and in one group: the key up to its last ':', which for authguard's keys
// (prefix:tenant:flow:rule:subject) is one rule of one flow of one tenant
// (at most 256 groups; the rest share one).
//
// A full shard drops an expired key at the end of its lists if it finds
// one (it looks at one list's end in turn, and stays on a list while its end
// is expired, so a rule whose keys have all expired drains first); else it
// evicts a probation key, the least recently used of the
// group holding the most keys among those with a probation key; and only
// when it holds no probation key at all, the least recently used protected
// key of the group holding the most keys. "The most" counts what the shard
// lacks: keys when it is at its key cap, bytes when it is at its byte
// budget, so that a few fat keys of one rule (the /48 logs a spray fills)
// turn over their own rule rather than another rule's many thin keys (the
// counters in backoff they outnumber). So a flood of fresh subjects (a
// check on a made-up account charges one failure: probation) cannot evict a
// counter in backoff, and neither can a flood that makes protected keys
// cheaply in one rule (a code sent to a made-up address leaves its
// destination counter at its limit): it turns over its own rule's keys. To
// evict a counter in backoff an attacker must make the shard hold nothing
// but protected keys and the counter's own rule hold the most of them, each
// costing real checks (Free of them for an account counter) that pass the
// IP rules, and the counter must be the rule's least recently used (by
// bytes: more bytes of counters in backoff in that shard than of any other
// rule, 30-odd counters for each /48 spray log at its limit). Stats counts
// evictions by class; a protected eviction means MaxEntries or MemoryLimit
// is too small for the attack in progress.
//
// Protected keys have no cap of their own: one below MaxEntries would let
// an attacker evict a protected key by making fewer protected keys, and an
// ordinary key forgotten gives its subject back less than Free attempts or
// a limit's worth of members. A shard whose share of MemoryLimit is
// smaller than one key keeps that key alone rather than forget it.
// Administrators' entries (package authguard's allow, block and captcha
// entries, at most authguard.MaxEntries a tenant) are kept apart, never
// evicted, and not counted in MemoryLimit.
//
// What it does not stop: a counter below its limits is ordinary, so traffic
// over more subjects than the store holds (a check on a fresh account from
// a fresh prefix writes up to six keys) forgets it. An attacker spraying a few
// guesses over more accounts than that gets up to Free−1 guesses per
// account per turn of the store without ever reaching a delay. Size
// MaxEntries above the subjects active within forget_after, or use Redis
// with room for them; the eviction metric shows when the store turns over.
//
// Memory per key is bounded by the policy, not constant: a fresh subject's
// key takes about 260 bytes of heap, but a log at its cap takes its limit
// + 1 members, about 48 bytes each (an ip_failures log of the built-in
// policy, 101 members, about 5 KiB). Building such keys costs the attacker
// one check per member; MemoryLimit bounds what they hold together.
package memstore
