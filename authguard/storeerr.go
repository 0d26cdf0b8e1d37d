package authguard

import (
	"context"
	"errors"
)

// ErrStoreUnavailable is wrapped by stores' errors when the store cannot be
// reached or does not answer in time.
var ErrStoreUnavailable = errors.New("authguard: store unavailable")

// ErrCircuitOpen is wrapped by a store's errors while its circuit breaker
// fails calls at once, without trying the store.
var ErrCircuitOpen = errors.New("authguard: store circuit open after repeated failures")

// ErrStoreFull is wrapped by a store's errors when the store answers but
// refuses to write because it is out of memory (Redis with maxmemory and
// the noeviction policy answers OOM). Reads still work then.
var ErrStoreFull = errors.New("authguard: store full")

// ErrSecretMismatch is wrapped by the errors that say the store holds the
// check value of another secret (SecretCheck): an instance keyed by
// another secret shares the store, and its counts, device tokens and
// attempt tokens are apart from this instance's.
var ErrSecretMismatch = errors.New("authguard: the store is shared with an instance keyed by another secret")

// ErrStoreEvicts is wrapped by the errors that say the store may evict keys
// to make room (a Redis maxmemory-policy other than noeviction): an evicted
// counter is a reset one, so no daily bound holds.
var ErrStoreEvicts = errors.New("authguard: the store may evict keys when full")

// ErrStoreUnpersisted is wrapped by the errors that say the store keeps
// nothing on disk (a Redis without an append-only file or RDB snapshots):
// a restart brings it back empty, and every counter is a reset one.
var ErrStoreUnpersisted = errors.New("authguard: the store keeps no persistence")

// ErrStoreUnauthenticated is wrapped by the errors that say the store
// answers without a password on an address others can reach: anyone there
// can read, reset or flush the counters.
var ErrStoreUnauthenticated = errors.New("authguard: the store answers without a password off loopback")

// StoreErrorKind classifies a store error for metrics and logs: "full"
// (the store answers but is out of memory), "timeout" (no answer within the
// deadline), "circuit_open" (not tried: the breaker is open) or
// "unavailable" (anything else: refused connections, resets, errors from the
// store).
func StoreErrorKind(err error) string {
	var t interface{ Timeout() bool }
	switch {
	case errors.Is(err, ErrStoreFull):
		return "full"
	case errors.Is(err, ErrCircuitOpen):
		return "circuit_open"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &t) && t.Timeout():
		return "timeout"
	}
	return "unavailable"
}

// StoreErrorKinds lists every kind StoreErrorKind returns.
func StoreErrorKinds() []string { return []string{"full", "timeout", "unavailable", "circuit_open"} }
