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
// The store never holds more than Config.MaxEntries keys: the cap is split
// exactly between the shards, and a shard that is full makes room before it
// inserts. Each key's memory is its state, which the policy bounds (a log
// keeps at most its largest limit + 1 members), so memory is bounded too:
// BENCHMARKS.md measures it under a flood of fresh subjects (about 620 MiB
// of peak RSS at the default 1,000,000 keys).
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
// key of the group holding the most keys. So a flood of fresh subjects (a
// check on a made-up account charges one failure: probation) cannot evict a
// counter in backoff, and neither can a flood that makes protected keys
// cheaply in one rule (a code sent to a made-up address leaves its
// destination counter at its limit): it turns over its own rule's keys. To
// evict a counter in backoff an attacker must make the shard hold nothing
// but protected keys and the counter's own rule hold the most of them, each
// costing real checks (Free of them for an account counter) that pass the
// IP rules, and the counter must be the rule's least recently used. Stats
// counts evictions by class; a protected eviction means MaxEntries is too
// small for the attack in progress.
//
// Protected keys have no cap of their own: one below MaxEntries would let
// an attacker evict a protected key by making fewer protected keys, and an
// ordinary key forgotten gives its subject back less than Free attempts or
// a limit's worth of members.
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
// key takes about 230 bytes of heap, but a log at its cap takes its limit
// + 1 members (an ip_failures log of the built-in policy, 101 members, about
// 5 KiB). Building such keys costs the attacker one check per member.
package memstore
