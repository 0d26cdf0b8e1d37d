package spraydetect_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// base is the fixed instant every test counts from (testclock.Epoch); at and
// ms are base+d as a time and in Unix milliseconds.
var (
	base = testclock.Epoch
	at   = testclock.At
	ms   = testclock.Ms
)

// logOp is one operation on a log.
type logOp int

const (
	admit logOp = iota
	bypass
	add
	peek
	remove
	renew
)

func (o logOp) String() string {
	return [...]string{"Admit", "Admit(bypass)", "Add", "Peek", "Remove", "Renew"}[o]
}

func applyLog(w spraydetect.Windows, l spraydetect.Log, o logOp, member string, now time.Time) (spraydetect.Log, spraydetect.LogResult) {
	switch o {
	case admit:
		return w.Admit(l, member, now, false)
	case bypass:
		return w.Admit(l, member, now, true)
	case add:
		return w.Add(l, member, now)
	case peek:
		return w.Peek(l, member, now)
	case renew:
		return w.Renew(l, member, now)
	default:
		return w.Remove(l, member, now)
	}
}

// logStep is one row of a log's step table: apply op at base+at, then expect
// the result and the members left in the log, oldest first.
type logStep struct {
	name   string
	at     time.Duration
	op     logOp
	member string
	want   spraydetect.LogResult
	left   string // members in the log after the step, oldest first, space separated
}

func members(l spraydetect.Log) string {
	ms := make([]string, len(l.Entries))
	for i, e := range l.Entries {
		ms[i] = e.Member
	}
	return strings.Join(ms, " ")
}

func copyLog(l spraydetect.Log) spraydetect.Log {
	return spraydetect.Log{Entries: slices.Clone(l.Entries)}
}

// runLog runs a step table against one log and returns the final log. Every
// step also checks that the operation left its input untouched.
func runLog(t *testing.T, w spraydetect.Windows, l spraydetect.Log, steps []logStep) spraydetect.Log {
	t.Helper()
	for _, st := range steps {
		in := copyLog(l)
		next, r := applyLog(w, l, st.op, st.member, at(st.at))
		if r != st.want {
			t.Errorf("%s: %v(%q) = %+v, want %+v", st.name, st.op, st.member, r, st.want)
		}
		if got := members(next); got != st.left {
			t.Errorf("%s: log holds [%s], want [%s]", st.name, got, st.left)
		}
		if !reflect.DeepEqual(copyLog(l), in) {
			t.Errorf("%s: %v modified its input log: %+v, was %+v", st.name, st.op, l, in)
		}
		if t.Failed() {
			t.FailNow()
		}
		l = next
	}
	return l
}

func ok(n int) spraydetect.LogResult    { return spraydetect.LogResult{Added: true, Count: n} }
func again(n int) spraydetect.LogResult { return spraydetect.LogResult{Count: n} } // refreshed, or nothing to do
func over(n int) spraydetect.LogResult  { return spraydetect.LogResult{Over: true, Count: n} }
func forced(n int) spraydetect.LogResult {
	return spraydetect.LogResult{Added: true, Over: true, Count: n}
}

func TestWindows_AdmitUpToLimit(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Hour, Limit: 3}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: alice", 0, admit, "alice", ok(1), "alice"},
		{"t=+1m: bob", time.Minute, admit, "bob", ok(2), "alice bob"},
		{"t=+2m: carol reaches the limit", 2 * time.Minute, admit, "carol", ok(3), "alice bob carol"},
		{"t=+3m: dave is one too many", 3 * time.Minute, admit, "dave", over(3), "alice bob carol"},
		{"t=+3m: dave again, still refused", 3 * time.Minute, admit, "dave", over(3), "alice bob carol"},
		{"t=+4m: alice again is admitted, not refreshed", 4 * time.Minute, admit, "alice", again(3), "alice bob carol"},
		{"t=+4m: peek dave: over", 4 * time.Minute, peek, "dave", over(3), "alice bob carol"},
		{"t=+4m: peek bob: fine", 4 * time.Minute, peek, "bob", again(3), "alice bob carol"},
		{"t=+5m: dave with a solved CAPTCHA", 5 * time.Minute, bypass, "dave", forced(4), "alice bob carol dave"},
		{"t=+5m: a bypass of a member already in is neither Added nor refreshed", 5 * time.Minute, bypass, "bob", spraydetect.LogResult{Over: true, Count: 4}, "alice bob carol dave"},
		{"t=+6m: add refreshes bob", 6 * time.Minute, add, "bob", spraydetect.LogResult{Over: true, Count: 4}, "alice carol dave bob"},
	})
}

// TestWindows_RenewKeepsAPlaceItHolds: device slots (3 a day) are renewed
// at each failure a device's allowance pays for. A member renews at a full
// log and moves to now; a new member is refused, as by Admit. In one step:
// a removal then an admission would leave a moment in which another device
// could take the place.
func TestWindows_RenewKeepsAPlaceItHolds(t *testing.T) {
	w := spraydetect.Windows{{Length: 24 * time.Hour, Limit: 3}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: a", 0, admit, "a", ok(1), "a"},
		{"t=+1m: b", time.Minute, admit, "b", ok(2), "a b"},
		{"t=+2m: c fills the log", 2 * time.Minute, admit, "c", ok(3), "a b c"},
		{"t=+1h: a renews at a full log and moves to now", time.Hour, renew, "a", again(3), "b c a"},
		{"t=+1h: d is refused a renewal", time.Hour, renew, "d", over(3), "b c a"},
		{"t=+24h1m: b slid out, d renews into its place", 24*time.Hour + time.Minute, renew, "d", ok(3), "c a d"},
		{"t=+24h2m: c slid out; a, renewed at +1h, has not", 24*time.Hour + 2*time.Minute, peek, "e", again(2), "a d"},
	})
}

func TestWindows_AdmitSlides(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Hour, Limit: 2}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: a", 0, admit, "a", ok(1), "a"},
		{"t=+10m: b", 10 * time.Minute, admit, "b", ok(2), "a b"},
		{"t=+59m59.999s: c refused, a still counts", time.Hour - time.Millisecond, admit, "c", over(2), "a b"},
		{"t=+1h: a slides out; c admitted", time.Hour, admit, "c", ok(2), "b c"},
		{"t=+1h: d refused", time.Hour, admit, "d", over(2), "b c"},
		{"t=+1h10m: b slides out; d admitted", time.Hour + 10*time.Minute, admit, "d", ok(2), "c d"},
		{"t=+3h: everything slid out", 3 * time.Hour, peek, "e", again(0), ""},
		{"t=+3h: e admitted into an empty log", 3 * time.Hour, admit, "e", ok(1), "e"},
	})
}

// TestSpray_LowAndSlowCaughtByLongWindow: an attacker pacing accounts to stay
// under the burst limit is caught by the daily one.
func TestSpray_LowAndSlowCaughtByLongWindow(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Minute, Limit: 2}, {Length: time.Hour, Limit: 4}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: a", 0, admit, "a", ok(1), "a"},
		{"t=+10s: b", 10 * time.Second, admit, "b", ok(2), "a b"},
		{"t=+20s: c is a burst: short window refuses", 20 * time.Second, admit, "c", over(2), "a b"},
		{"t=+61s: a left the short window: c admitted", 61 * time.Second, admit, "c", ok(3), "a b c"},
		{"t=+3m: d, alone in the short window", 3 * time.Minute, admit, "d", ok(4), "a b c d"},
		{"t=+5m: e, alone in the short window, fifth in the hour", 5 * time.Minute, admit, "e", over(4), "a b c d"},
		{"t=+50m: still five in the hour", 50 * time.Minute, admit, "e", over(4), "a b c d"},
		{"t=+1h0m1s: a slides out of the hour: e admitted", time.Hour + time.Second, admit, "e", ok(4), "b c d e"},
	})
}

// TestWindows_ShortWindowEdge: an entry exactly a window's length old has
// left that window, though the longer window still holds it.
func TestWindows_ShortWindowEdge(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Minute, Limit: 1}, {Length: time.Hour, Limit: 10}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: a", 0, admit, "a", ok(1), "a"},
		{"t=+59.999s: b refused by the minute", time.Minute - time.Millisecond, admit, "b", over(1), "a"},
		{"t=+1m: a is exactly a minute old: b admitted", time.Minute, admit, "b", ok(2), "a b"},
		{"t=+1m: peek c: b fills the minute", time.Minute, peek, "c", over(2), "a b"},
		{"t=+2m: c admitted", 2 * time.Minute, admit, "c", ok(3), "a b c"},
	})
}

func TestWindows_RemoveThenReadmit(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Hour, Limit: 2}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: a", 0, admit, "a", ok(1), "a"},
		{"t=+1s: b", time.Second, admit, "b", ok(2), "a b"},
		{"t=+2s: c refused", 2 * time.Second, admit, "c", over(2), "a b"},
		{"t=+3s: a succeeded: removed", 3 * time.Second, remove, "a", again(1), "b"},
		{"t=+3s: removing a again does nothing", 3 * time.Second, remove, "a", again(1), "b"},
		{"t=+3s: removing a stranger does nothing", 3 * time.Second, remove, "zed", again(1), "b"},
		{"t=+4s: c admitted", 4 * time.Second, admit, "c", ok(2), "b c"},
		{"t=+5s: a is new again and refused", 5 * time.Second, admit, "a", over(2), "b c"},
		{"t=+6s: b succeeded: removed", 6 * time.Second, remove, "b", again(1), "c"},
		{"t=+7s: a admitted", 7 * time.Second, admit, "a", ok(2), "c a"},
	})
	// Remove's Over says what Admit of the removed member would say now.
	l := spraydetect.Log{Entries: []spraydetect.Entry{{"a", ms(0)}, {"b", ms(0)}, {"c", ms(0)}}}
	if _, r := w.Remove(l, "c", at(time.Second)); r != over(2) {
		t.Errorf("Remove(c) from an over-full log = %+v, want %+v", r, over(2))
	}
}

func TestWindows_AddRecordsWhateverTheLimit(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Hour, Limit: 1}}
	runLog(t, w, spraydetect.Log{}, []logStep{
		{"t=+0s: a", 0, add, "a", ok(1), "a"},
		{"t=+1s: b is over, recorded anyway", time.Second, add, "b", forced(2), "a b"},
		{"t=+2s: c pushes out the oldest (cap 2)", 2 * time.Second, add, "c", forced(2), "b c"},
		{"t=+3s: c again refreshes", 3 * time.Second, add, "c", spraydetect.LogResult{Over: true, Count: 2}, "b c"},
		{"t=+2h: after the window a fresh start", 2 * time.Hour, add, "d", ok(1), "d"},
	})
}

func TestWindows_PeekChangesNothing(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Minute, Limit: 2}, {Length: time.Hour, Limit: 3}}
	l := spraydetect.Log{Entries: []spraydetect.Entry{{"a", ms(0)}, {"b", ms(30 * time.Second)}, {"c", ms(40 * time.Minute)}}}
	tests := []struct {
		name   string
		member string
		at     time.Duration
		want   spraydetect.LogResult
	}{
		{"new member over the long window", "d", 50 * time.Minute, over(3)},
		{"known member is fine", "a", 50 * time.Minute, again(3)},
		{"after a left the hour", "d", time.Hour + time.Second, again(2)},
		{"one within the minute, four in the hour", "d", 40*time.Minute + 10*time.Second, over(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(tt.at)
			in := copyLog(l)
			got, r := w.Peek(l, tt.member, now)
			if r != tt.want {
				t.Errorf("Peek(%q) = %+v, want %+v", tt.member, r, tt.want)
			}
			if want := w.Current(in, now); !reflect.DeepEqual(got, want) {
				t.Errorf("Peek returned log %+v, want Current %+v", got, want)
			}
			if !reflect.DeepEqual(l, in) {
				t.Errorf("Peek modified its input: %+v, was %+v", l, in)
			}
			// Peek predicts Admit.
			_, ra := w.Admit(l, tt.member, now, false)
			if ra.Over != r.Over {
				t.Errorf("Peek(%q).Over = %v, Admit(%q).Over = %v", tt.member, r.Over, tt.member, ra.Over)
			}
		})
	}
}

// TestWindows_BypassSpamStaysBounded: a client with one solved CAPTCHA, or a
// flood of reports, cannot grow a log past Cap.
func TestWindows_BypassSpamStaysBounded(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Minute, Limit: 3}, {Length: 24 * time.Hour, Limit: 5}}
	if got, want := w.Cap(), 6; got != want {
		t.Fatalf("Cap() = %d, want %d", got, want)
	}
	tests := []struct {
		name string
		op   logOp
		step time.Duration
	}{
		{"bypass, one per second", bypass, time.Second},
		{"add, one per second", add, time.Second},
		{"bypass, all at one instant", bypass, 0},
		{"add, all at one instant", add, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l spraydetect.Log
			var r spraydetect.LogResult
			for i := 0; i < 1000; i++ {
				l, r = applyLog(w, l, tt.op, fmt.Sprintf("m%04d", i), at(time.Duration(i)*tt.step))
				if len(l.Entries) > w.Cap() {
					t.Fatalf("after %d ops the log holds %d entries, over Cap %d", i+1, len(l.Entries), w.Cap())
				}
			}
			if !r.Over || !r.Added || r.Count != w.Cap() {
				t.Errorf("last result = %+v, want Added, Over, Count %d", r, w.Cap())
			}
			// The newest are kept.
			if got, want := members(l), "m0994 m0995 m0996 m0997 m0998 m0999"; got != want {
				t.Errorf("log holds [%s], want [%s]", got, want)
			}
		})
	}
}

func TestWindows_Current(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Minute, Limit: 5}, {Length: 10 * time.Minute, Limit: 5}}
	l := spraydetect.Log{Entries: []spraydetect.Entry{{"a", ms(0)}, {"b", ms(5 * time.Minute)}, {"c", ms(9 * time.Minute)}}}
	tests := []struct {
		name string
		at   time.Duration
		want string
	}{
		{"all within the longest window", 5 * time.Minute, "a b c"},
		{"1ms before a leaves", 10*time.Minute - time.Millisecond, "a b c"},
		{"a exactly 10m old is gone", 10 * time.Minute, "b c"},
		{"b gone", 15 * time.Minute, "c"},
		{"all gone", 19 * time.Minute, ""},
		{"long after", 48 * time.Hour, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := copyLog(l)
			if got := members(w.Current(l, at(tt.at))); got != tt.want {
				t.Errorf("Current at +%v holds [%s], want [%s]", tt.at, got, tt.want)
			}
			if !reflect.DeepEqual(l, in) {
				t.Errorf("Current modified its input")
			}
		})
	}
}

func TestWindows_TTL(t *testing.T) {
	w := spraydetect.Windows{{Length: time.Minute, Limit: 5}, {Length: time.Hour, Limit: 9}}
	l := spraydetect.Log{Entries: []spraydetect.Entry{{"a", ms(0)}, {"b", ms(5 * time.Minute)}}}
	tests := []struct {
		name string
		l    spraydetect.Log
		at   time.Duration
		want time.Duration
	}{
		{"empty log", spraydetect.Log{}, 0, 0},
		{"newest entry now", l, 5 * time.Minute, time.Hour},
		{"newest entry 10m old", l, 15 * time.Minute, 50 * time.Minute},
		{"1ms left", l, time.Hour + 5*time.Minute - time.Millisecond, time.Millisecond},
		{"newest entry just expired", l, time.Hour + 5*time.Minute, 0},
		{"long expired", l, 30 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.TTL(tt.l, at(tt.at)); got != tt.want {
				t.Errorf("TTL at +%v = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

func TestWindows_Validate(t *testing.T) {
	tests := []struct {
		name    string
		w       spraydetect.Windows
		wantErr bool
	}{
		{"one window", spraydetect.Windows{{time.Hour, 10}}, false},
		{"short and long", spraydetect.Windows{{time.Hour, 10}, {24 * time.Hour, 30}}, false},
		{"1ms, limit 1", spraydetect.Windows{{time.Millisecond, 1}}, false},
		{"limit at MaxLimit", spraydetect.Windows{{time.Hour, spraydetect.MaxLimit}}, false},
		{"no windows", nil, true},
		{"empty windows", spraydetect.Windows{}, true},
		{"zero length", spraydetect.Windows{{0, 10}}, true},
		{"negative length", spraydetect.Windows{{-time.Hour, 10}}, true},
		{"sub-millisecond length", spraydetect.Windows{{time.Microsecond, 10}}, true},
		{"length not whole ms", spraydetect.Windows{{time.Second + time.Microsecond, 10}}, true},
		{"zero limit", spraydetect.Windows{{time.Hour, 0}}, true},
		{"negative limit", spraydetect.Windows{{time.Hour, -1}}, true},
		{"limit over MaxLimit", spraydetect.Windows{{time.Hour, spraydetect.MaxLimit + 1}}, true},
		{"second window bad", spraydetect.Windows{{time.Hour, 10}, {24 * time.Hour, 0}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Validate()
			if got := err != nil; got != tt.wantErr {
				t.Errorf("%v.Validate() = %v, want error %v", tt.w, err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "spraydetect: ") {
				t.Errorf("%v.Validate() = %q, want the spraydetect: prefix", tt.w, err)
			}
		})
	}
}

func TestWindows_LongestAndCap(t *testing.T) {
	tests := []struct {
		name        string
		w           spraydetect.Windows
		wantLongest time.Duration
		wantCap     int
	}{
		{"one", spraydetect.Windows{{time.Hour, 10}}, time.Hour, 11},
		{"short with the larger limit", spraydetect.Windows{{time.Minute, 50}, {time.Hour, 30}}, time.Hour, 51},
		{"long listed first", spraydetect.Windows{{24 * time.Hour, 30}, {time.Hour, 10}}, 24 * time.Hour, 31},
		{"limit 1", spraydetect.Windows{{time.Second, 1}}, time.Second, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.w.Longest(); got != tt.wantLongest {
				t.Errorf("%v.Longest() = %v, want %v", tt.w, got, tt.wantLongest)
			}
			if got := tt.w.Cap(); got != tt.wantCap {
				t.Errorf("%v.Cap() = %d, want %d", tt.w, got, tt.wantCap)
			}
		})
	}
}

// model is a reference for a log: every member's last recording time, with
// no cap and nothing dropped. Without removals a log must answer exactly as
// the model does, and hold the newest Cap of its members.
type model map[string]int64

func (m model) over(w spraydetect.Windows, member string, now int64) bool {
	for _, x := range w {
		n := 1
		for k, t := range m {
			if k != member && t > now-x.Length.Milliseconds() {
				n++
			}
		}
		if n > x.Limit {
			return true
		}
	}
	return false
}

// newest is what the log should hold: the model's members within the
// longest window, sorted by time then member, the newest Cap of them.
func (m model) newest(w spraydetect.Windows, now int64) string {
	var es []spraydetect.Entry
	for k, t := range m {
		if t > now-w.Longest().Milliseconds() {
			es = append(es, spraydetect.Entry{Member: k, At: t})
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].At != es[j].At {
			return es[i].At < es[j].At
		}
		return es[i].Member < es[j].Member
	})
	if len(es) > w.Cap() {
		es = es[len(es)-w.Cap():]
	}
	return members(spraydetect.Log{Entries: es})
}

// checkLog checks what must hold of a log after any operation at now.
func checkLog(w spraydetect.Windows, l spraydetect.Log, r spraydetect.LogResult, now int64) string {
	if len(l.Entries) > w.Cap() {
		return fmt.Sprintf("%d entries, over Cap %d", len(l.Entries), w.Cap())
	}
	if r.Count != len(l.Entries) {
		return fmt.Sprintf("Count %d, but the log holds %d", r.Count, len(l.Entries))
	}
	seen := map[string]bool{}
	for i, e := range l.Entries {
		if seen[e.Member] {
			return fmt.Sprintf("member %q twice", e.Member)
		}
		seen[e.Member] = true
		if i > 0 {
			p := l.Entries[i-1]
			if p.At > e.At || (p.At == e.At && p.Member >= e.Member) {
				return fmt.Sprintf("entries %d and %d out of order", i-1, i)
			}
		}
		if e.At <= now-w.Longest().Milliseconds() || e.At > now {
			return fmt.Sprintf("entry %+v outside the longest window", e)
		}
	}
	return ""
}

// fuzzLog runs ops encoded as bytes (low 3 bits: op, next 3: member, high 2:
// how far time moves) and checks every step against checkLog and, until the
// first Remove, against the model.
func fuzzLog(w spraydetect.Windows, ops []byte, steps []time.Duration) string {
	var l spraydetect.Log
	m := model{}
	exact := true
	now := base
	for i, b := range ops {
		o := logOp(b&7) % 5
		member := string(rune('a' + (b>>3)&7))
		now = now.Add(steps[b>>6])
		nowMS := now.UnixMilli()
		prev := w.Current(l, now)
		wantOver := m.over(w, member, nowMS)
		in := copyLog(l)
		next, r := applyLog(w, l, o, member, now)
		where := fmt.Sprintf("step %d: %v(%q) at +%v on [%s] = [%s], %+v", i, o, member, now.Sub(base), members(l), members(next), r)
		if !reflect.DeepEqual(copyLog(l), in) {
			return where + ": input modified"
		}
		if err := checkLog(w, next, r, nowMS); err != "" {
			return where + ": " + err
		}
		switch o {
		case admit:
			if r.Over && !reflect.DeepEqual(next, prev) {
				return where + ": a refused Admit changed the log"
			}
			if !r.Over && index(next, member) < 0 {
				return where + ": an admitted member is not in the log"
			}
		case peek:
			if !reflect.DeepEqual(next, prev) {
				return where + ": Peek changed the log"
			}
		case remove:
			if index(next, member) >= 0 {
				return where + ": a removed member is still in the log"
			}
		}
		if (o == bypass || o == add || (o == admit && !r.Over)) && r.Added != (index(prev, member) < 0) {
			return where + ": Added is wrong"
		}
		if exact && o != remove {
			if r.Over != wantOver {
				return fmt.Sprintf("%s: Over = %v, the model says %v", where, r.Over, wantOver)
			}
		}
		switch {
		case o == remove:
			exact = false
		case o == add:
			m[member] = nowMS
		case (o == bypass || (o == admit && !r.Over)) && index(prev, member) < 0:
			m[member] = nowMS // Admit records new members only; it never refreshes
		}
		if exact {
			if got, want := members(next), m.newest(w, nowMS); got != want {
				return fmt.Sprintf("%s: log holds [%s], the model's newest are [%s]", where, got, want)
			}
		}
		l = next
	}
	return ""
}

func index(l spraydetect.Log, member string) int {
	for i, e := range l.Entries {
		if e.Member == member {
			return i
		}
	}
	return -1
}

func TestWindows_RandomOpsKeepInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 400; i++ {
		w := make(spraydetect.Windows, 1+r.IntN(3))
		for j := range w {
			w[j] = spraydetect.Window{Length: time.Duration(1+r.IntN(120)) * time.Second, Limit: 1 + r.IntN(6)}
		}
		ops := make([]byte, 80)
		for j := range ops {
			ops[j] = byte(r.Uint32())
		}
		steps := []time.Duration{0, time.Millisecond, time.Duration(r.IntN(10_000)) * time.Millisecond, time.Duration(r.IntN(120_000)) * time.Millisecond}
		if err := fuzzLog(w, ops, steps); err != "" {
			t.Fatalf("windows %v: %s", w, err)
		}
	}
}

func FuzzWindowLog(f *testing.F) {
	f.Add(int64(60_000), 2, int64(3_600_000), 4, []byte{0, 8, 16, 24, 32, 0x40, 0x81, 0xc2, 3, 4, 11, 12})
	f.Add(int64(1), 1, int64(0), 0, []byte{1, 9, 17, 25, 33, 2, 10, 4, 12})
	f.Fuzz(func(t *testing.T, len1 int64, lim1 int, len2 int64, lim2 int, ops []byte) {
		w := spraydetect.Windows{{Length: time.Duration(len1) * time.Millisecond, Limit: lim1}}
		if len2 != 0 {
			w = append(w, spraydetect.Window{Length: time.Duration(len2) * time.Millisecond, Limit: lim2})
		}
		if w.Validate() != nil || len1 > 1<<40 || len2 > 1<<40 || lim1 > 20 || lim2 > 20 || len(ops) > 300 {
			t.Skip()
		}
		steps := []time.Duration{0, time.Millisecond, w[0].Length / 3, w.Longest() / 2}
		if err := fuzzLog(w, ops, steps); err != "" {
			t.Fatalf("windows %v: %s", w, err)
		}
	})
}
