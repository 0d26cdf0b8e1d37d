// Package testkit is small shared test machinery: a log buffer safe for
// concurrent writers, request-body builders, a fake environment, and the
// one wait on a condition that tests share.
package testkit

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writes, for logs written
// from a server's goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// With returns a copy of m with the key/value pairs kv set.
func With(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// Env returns a getenv function holding the key/value pairs kv.
func Env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Eventually polls cond until it holds or limit has passed, and reports
// whether it held. It is how a test waits for a real process, a server,
// Redis or a goroutine to get somewhere: on the condition itself, never
// for a guessed time, so that a loaded machine makes the test slower, not
// flaky, and an idle one does not wait longer than it must. It polls at
// once, then every millisecond, doubling up to every 50 ms: cheap
// conditions are seen soon, and costly ones (an HTTP call, a Redis INFO)
// are not run in a tight loop. cond runs on the caller's goroutine.
func Eventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		// The one sleep of the tests' waits: between two looks at a
		// condition that has no channel to wait on.
		time.Sleep(wait)
	}
}

// WaitFor is Eventually that fails tb (Fatalf, so only from the test's own
// goroutine) saying what did not happen when cond has not held within
// limit.
func WaitFor(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Eventually(limit, cond) {
		tb.Fatalf("not within %v: %s", limit, what)
	}
}
