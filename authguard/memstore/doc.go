// Package memstore is the authguard.Store that keeps state in process memory:
// the embedded default for a single instance, and the local safety net that
// fail-open flows answer from while Redis is down.
//
// State lives in sharded maps, each with its own mutex, so concurrent calls on
// different keys rarely contend. Idle keys expire when their state can no
// longer change a verdict, and the number of keys is capped: past the cap the
// least recently used key is evicted, so an attacker rotating through
// addresses or account names cannot exhaust memory. Eviction forgets a
// subject's history, which errs towards letting attempts through; size
// MaxEntries so it only happens under such an attack.
package memstore
