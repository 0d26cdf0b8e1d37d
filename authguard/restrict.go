package authguard

import (
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// Restricting reports whether state, the state op left its key in at now
// (as Apply returns it), currently restricts its subject: whether forgetting
// it would give the subject more than it has now. A bounded store uses it to
// keep such state over ordinary state when it must evict something, so that
// a flood of fresh subjects cannot buy a counter in backoff a fresh start.
//
// It is true for
//   - a backoff counter with at least Policy.Free failures: its next attempt
//     waits, or (once that wait has passed) the one after it does;
//   - a log some window of which holds at least its limit of members within
//     the window: a new member is over the limit;
//   - a token bucket with less than one token left: the next take is refused;
//   - an account's device generation above 0 (token.go): forgetting it
//     would make the device tokens it revoked valid again.
//
// Anything else, an unknown op or a state of the wrong type included, is not
// restricting. Forgetting a counter below Free failures or a log below its
// limits gives a subject back at most Free−1 attempts or limit−1 members;
// such state is not protected, or a flood of made-up accounts (one failure
// each) would be.
func Restricting(op Op, state any, now time.Time) bool {
	switch op := op.(type) {
	case *BackoffOp:
		s, ok := state.(backoff.State)
		if isDeviceGen(op) {
			return ok && s.Failures > 0 && op.Policy.Current(s, now, 0).Failures > 0
		}
		// Current only ever forgets failures, so a counter below Free
		// needs no further look (and Current's copy of Seen is skipped).
		if !ok || s.Failures < op.Policy.Free {
			return false
		}
		return op.Policy.Current(s, now, op.SeenWindow).Failures >= op.Policy.Free
	case *LogOp:
		l, ok := state.(spraydetect.Log)
		if !ok {
			return false
		}
		return logFull(op.Windows, l, now.UnixMilli())
	case *RateOp:
		if state == nil {
			return false
		}
		// Restricting when even one unit would be refused now.
		_, d := op.Rate.take(state, now, 1)
		return !d.Allowed
	}
	return false
}

// logFull reports whether some window of w holds at least its limit of
// members of l within the window at now (Unix ms): the cutoff is the one
// spraydetect.Windows.Admit uses, so then Admit refuses any new member.
// Members of a Log are distinct.
func logFull(w spraydetect.Windows, l spraydetect.Log, now int64) bool {
	for _, x := range w {
		cutoff := now - x.Length.Milliseconds()
		n := 0
		for _, e := range l.Entries {
			if e.At > cutoff {
				n++
			}
		}
		if n >= x.Limit {
			return true
		}
	}
	return false
}
