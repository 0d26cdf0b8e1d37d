package redisstore

import (
	"strconv"

	"github.com/tollgate-auth/tollgate/authguard"
)

// One key per subject. On one node (or Sentinel's master) a flow's log and
// bucket rules on one subject keep their state in one sorted set, the
// subject's (authguard.Part, authguard.SubjectKey): a fresh address's
// bucket, spray log and failure log make one key where they made three,
// and the bucket's state no longer lives in a key of its own that expires
// 50 ms later. Part N of the set holds:
//
//   - a log's entries as members with the part's two-character prefix
//     (partPrefix), scored N·2^43 + their time in ms: every part's scores
//     lie in [N·2^43, (N+1)·2^43), so a log trims, counts and ranks its own
//     range and never another part's (times stay below 2^43 ms, the year
//     2248, and the scores below 2^53, where a double is exact);
//   - a bucket's TAT, as the score N·2^43 + TAT of the prefix alone.
//
// Every write sets the set's expiry to the subject's span, the longest any
// of its parts keeps state, so that no part's write cuts another's short.
// A bucket's TAT in the past reads as no state at all, as an expired key
// does, so the bucket's member needs no expiry of its own. A Cluster keeps
// a key per rule (its checks run op by op), as does Config.PerRuleKeys.
const partShift = 43

// partPrefixes are the parts' member prefixes, by N: two characters of a
// 32-letter alphabet, 10 bits.
var partPrefixes = func() (p [authguard.MaxPart + 1]string) {
	const alphabet = "0123456789abcdefghijklmnopqrstuv"
	for n := range p {
		p[n] = string([]byte{alphabet[n>>5], alphabet[n&31]})
	}
	return p
}()

// partMember is a member of part p: its prefix and member (a bucket's is
// the prefix alone).
func partMember(p authguard.Part, member string) string {
	return partPrefixes[p.N] + member
}

// partRange is part p's lowest score, its end as an exclusive bound
// ("(" and the next part's lowest), and the subject's span in ms.
func partRange(p authguard.Part) (lo, hi, span string) {
	n := int64(p.N)
	return strconv.FormatInt(n<<partShift, 10), "(" + strconv.FormatInt((n+1)<<partShift, 10), ms(p.Span)
}

// partOf is op's part, if it has one.
func partOf(op authguard.Op) authguard.Part {
	switch op := op.(type) {
	case *authguard.LogOp:
		return op.Part
	case *authguard.RateOp:
		return op.Part
	case *authguard.DeleteOp:
		return op.Part
	}
	return authguard.Part{}
}

// keyOf is the Redis key op reads and writes: its subject's sorted set
// when it is a part and parts are kept, else its own key.
func keyOf(op authguard.Op, parts bool) string {
	if parts && partOf(op).N != 0 {
		return authguard.SubjectKey(op.StoreKey())
	}
	return op.StoreKey()
}
