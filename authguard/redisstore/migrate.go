package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Switching a Cluster to subject hash tags (Config.SubjectTags) renames
// every key: an instance on the new names does not see what the old names
// hold, and an account in backoff would be let go at once. So the switch is
// opt-in, and a running Cluster's keys are copied to their new names first
// (MigrateKeyLayout), on every master, each with its time to live:
//
//  1. run the migration while every instance still writes today's names;
//  2. turn the setting on, instance by instance;
//  3. run it again: what the old instances wrote meanwhile reaches the new
//     names too (Replace: the copy with the longer time to live stays).
//
// Between 1 and 3 an account's old and new names may both count, each part
// of the failures of the switch's minutes; nothing counted before 1 is
// lost. Reading the old names too, for a longest time to live, would close
// that gap at the price of a call per subject on every check (not built).
// The old names expire on their own; RemoveOld deletes them in the last run.

// MigrateOptions are a migration's choices.
type MigrateOptions struct {
	// Prefix is the key prefix of the keys to move. The default is "tg".
	Prefix string
	// RemoveOld deletes each old name once its copy is made: only in the
	// last run, when no instance reads the old names any more. The default
	// is false.
	RemoveOld bool
}

// MigrateStats counts what a migration did.
type MigrateStats struct {
	// Scanned are the keys under the prefix seen on the masters; Copied
	// those copied to their new names; Kept those whose new name held a
	// longer time to live already (left as it was); Removed the old names
	// deleted (RemoveOld).
	Scanned, Copied, Kept, Removed int64
}

// MigrateKeyLayout copies every subject's key of today's layout to its name
// with subject hash tags (authguard.SubjectTaggedKey), on every master of
// the Store's Cluster: DUMP and PTTL of the old name, then RESTORE under the
// new one with that time to live, unless the new name holds a key that
// lives longer (a later write: it stays). Keys that are not a subject's are
// left. It is not atomic: a key written between its DUMP and RESTORE keeps
// the longer-lived copy.
func (s *Store) MigrateKeyLayout(ctx context.Context, o MigrateOptions) (MigrateStats, error) {
	if s.cluster == nil {
		return MigrateStats{}, errors.New("redisstore: the key layout is a Cluster's")
	}
	if o.Prefix == "" {
		o.Prefix = authguard.DefaultKeyPrefix
	}
	var st struct{ scanned, copied, kept, removed atomic.Int64 }
	sweep := func(ctx context.Context, m *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := m.Scan(ctx, cursor, o.Prefix+":*", 500).Result()
			if err != nil {
				return err
			}
			st.scanned.Add(int64(len(keys)))
			for _, old := range keys {
				to, ok := authguard.SubjectTaggedKey(old)
				if !ok {
					continue
				}
				copied, err := s.moveKey(ctx, m, old, to)
				if err != nil {
					return fmt.Errorf("%s: %w", old, err)
				}
				if copied {
					st.copied.Add(1)
				} else {
					st.kept.Add(1)
				}
				if o.RemoveOld {
					if err := m.Unlink(ctx, old).Err(); err != nil {
						return err
					}
					st.removed.Add(1)
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	err := s.cluster.ForEachMaster(ctx, sweep)
	out := MigrateStats{Scanned: st.scanned.Load(), Copied: st.copied.Load(), Kept: st.kept.Load(), Removed: st.removed.Load()}
	if err != nil {
		return out, fmt.Errorf("redisstore: migrating the key layout: %w", err)
	}
	return out, nil
}

// moveKey copies old (on master m) to the name to (on whichever master owns
// its slot), unless to holds what must stay; copied says whether it did.
func (s *Store) moveKey(ctx context.Context, m *redis.Client, old, to string) (copied bool, _ error) {
	dump, err := m.Dump(ctx, old).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil // expired or deleted since the scan
	}
	if err != nil {
		return false, err
	}
	ttl, err := m.PTTL(ctx, old).Result()
	if err != nil {
		return false, err
	}
	if ttl == -2 || ttl == -2*time.Millisecond {
		return false, nil // gone since the DUMP
	}
	if ttl < 0 {
		ttl = 0 // no expiry: RESTORE's 0
	}
	if keep, err := s.keepNew(ctx, m, old, to, ttl); err != nil || keep {
		return false, err
	}
	if err := s.cluster.RestoreReplace(ctx, to, ttl, dump).Err(); err != nil {
		return false, err
	}
	return true, nil
}

// keepNew reports whether the new name to holds what must stay rather than
// old's copy (which lives ttl, 0 for ever): a backoff counter (a string
// "<failures>|...") with as many failures or more, in a tie or for any
// other state the one that lives longer (written later). So an instance on
// the new names that checked an account while others still counted its
// failures under the old name leaves the failures to the copy.
func (s *Store) keepNew(ctx context.Context, m *redis.Client, old, to string, ttl time.Duration) (bool, error) {
	have, err := s.cluster.PTTL(ctx, to).Result()
	if err != nil {
		return false, err
	}
	if have == -2 || have == -2*time.Millisecond {
		return false, nil // no new name yet
	}
	if kind, err := m.Type(ctx, old).Result(); err == nil && kind == "string" {
		a, errA := m.Get(ctx, old).Result()
		b, errB := s.cluster.Get(ctx, to).Result()
		if na, okA := failures(a); errA == nil && errB == nil && okA {
			if nb, okB := failures(b); okB && nb != na {
				return nb > na, nil
			}
		}
	}
	switch {
	case have < 0: // the new name never expires
		return true, nil
	case ttl == 0:
		return false, nil
	}
	return have >= ttl, nil
}

// failures reads a backoff counter's count of failures, the first field of
// backoff.lua's "n|l|p|fingerprints|pending".
func failures(v string) (int, bool) {
	n, _, ok := strings.Cut(v, "|")
	if !ok {
		return 0, false
	}
	f, err := strconv.Atoi(n)
	return f, err == nil
}
