package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

var _ authguard.EntryStore = (*Store)(nil)

// entrySets hold the administrators' entries apart from the sharded keys:
// they are few, and no flood of fresh subjects may evict them.
type entrySets struct {
	mu   sync.Mutex
	sets map[string]map[string]record
}

type record struct {
	value   string
	expires int64 // Unix nanoseconds
}

// live drops the expired records of set at ns and returns how many remain.
func live(set map[string]record, ns int64) int {
	for id, r := range set {
		if ns >= r.expires {
			delete(set, id)
		}
	}
	return len(set)
}

// PutEntry keeps value under id in the set at key until ttl has passed;
// ErrTooManyEntries when the set holds max unexpired records and id is
// not one of them.
func (s *Store) PutEntry(_ context.Context, key, id, value string, ttl time.Duration, max int) error {
	if s.closed.Load() {
		return ErrClosed
	}
	ns := s.now().UnixNano()
	s.sets.mu.Lock()
	defer s.sets.mu.Unlock()
	if s.sets.sets == nil {
		s.sets.sets = map[string]map[string]record{}
	}
	set := s.sets.sets[key]
	if set == nil {
		set = map[string]record{}
		s.sets.sets[key] = set
	}
	if _, ok := set[id]; !ok && live(set, ns) >= max {
		return authguard.ErrTooManyEntries
	}
	set[id] = record{value: value, expires: ns + int64(ttl)}
	return nil
}

// Entries returns the values of the set's unexpired records.
func (s *Store) Entries(_ context.Context, key string) ([]string, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ns := s.now().UnixNano()
	s.sets.mu.Lock()
	defer s.sets.mu.Unlock()
	set := s.sets.sets[key]
	if live(set, ns) == 0 {
		delete(s.sets.sets, key)
		return nil, nil
	}
	out := make([]string, 0, len(set))
	for _, r := range set {
		out = append(out, r.value)
	}
	return out, nil
}

// RemoveEntry deletes id from the set and reports whether it was there
// (unexpired).
func (s *Store) RemoveEntry(_ context.Context, key, id string) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	ns := s.now().UnixNano()
	s.sets.mu.Lock()
	defer s.sets.mu.Unlock()
	r, ok := s.sets.sets[key][id]
	delete(s.sets.sets[key], id)
	return ok && ns < r.expires, nil
}
