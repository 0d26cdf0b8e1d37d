package authguard

import (
	"hash/fnv"
	"strings"
	"time"
)

// Part places an op's state in one structure a store may keep per subject
// of a flow, shared by the flow's log and bucket rules on that subject
// (the address's failure log, its spray log and its check bucket), instead
// of a key of its own: a store that honours it creates one key per fresh
// subject where it would create three. The memory store ignores it; the
// Redis store on one node keeps the parts in one sorted set at
// SubjectKey(Key) (redisstore, "One key per subject"). What each op
// answers is the same either way: Apply on Key's state alone.
type Part struct {
	// N numbers the part within its subject's structure, from 1 to
	// MaxPart; 0 means the op's state has its key of its own. It is a
	// hash of the rule's key, so a rule keeps its part across reloads and
	// instances, whatever rules are added or removed beside it.
	N uint16
	// Span is how long the structure must be kept after a write: the
	// longest any part of the subject keeps state (a log's longest window,
	// a bucket's capacity). Every write sets the same expiry, so no part's
	// write cuts another's short.
	Span time.Duration
}

// MaxPart is the highest Part.N.
const MaxPart = 1023

// subjectField is the rule field of a SubjectKey: no rule key has '@'.
const subjectField = "@"

// SubjectKey returns the key of the structure that holds the parts of
// key's subject: key with its rule field (the one before the subject's
// hashes) replaced by "@". Subject hashes hold no ':'.
func SubjectKey(key string) string {
	last := strings.LastIndexByte(key, ':')
	if last < 0 {
		return key
	}
	rule := strings.LastIndexByte(key[:last], ':')
	return key[:rule+1] + subjectField + key[last:]
}

// partable reports whether a rule's state can be a Part: a log (a
// Distinct rule or a failure log) or a bucket, whose state is one number.
func (r *Rule) partable() bool {
	return r.logRule() || (r.rateRule() && (r.Algorithm == TokenBucket || r.Algorithm == LeakyBucket))
}

// span is how long a partable rule keeps state after a write.
func (r *Rule) span() time.Duration {
	if r.logRule() {
		return r.Windows.Longest()
	}
	return time.Duration(r.Rate.Limit) * r.Rate.Interval
}

// partNumber is the part a rule key's state takes: 1 + its FNV-1a hash
// modulo MaxPart.
func partNumber(key string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return uint16(1 + h.Sum32()%MaxPart)
}

// compileParts gives each partable rule that shares its subject with
// another one a Part. Rules whose part numbers collide keep keys of their
// own, so no two rules ever read one part, and a subject with a single
// partable rule left keeps its key too.
func (f *Flow) compileParts() {
	for i := range f.Rules {
		f.Rules[i].part = Part{}
	}
	for i := range f.Rules {
		r := &f.Rules[i]
		if !r.partable() || i == f.device {
			continue
		}
		var group []int
		var span time.Duration
		for j := range f.Rules {
			o := &f.Rules[j]
			if o.partable() && j != f.device && o.Subject == r.Subject {
				group = append(group, j)
				span = max(span, o.span())
			}
		}
		n := partNumber(r.Key)
		clash := false
		for _, j := range group {
			if j != i && partNumber(f.Rules[j].Key) == n {
				clash = true
			}
		}
		if !clash && len(group) > 1 {
			r.part = Part{N: n, Span: span}
		}
	}
}
