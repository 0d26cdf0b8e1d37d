package redisstore

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

// A shape is check.lua specialised to one arrangement of ops: each op's
// kind, gate and undo, and every argument its policy fixes (its action,
// windows, limits, backoff parameters), are written into the script as
// literals, so that a call sends only what varies from call to call:
// solved, deferred, now and expire once, and per op its member,
// fingerprint, attempt or cost. A login check with every signal sends 15
// arguments instead of 93; Redis parses, allocates and hands Lua the
// others once, when it compiles the shape, instead of on every call, and
// this process formats and writes them once per call as a map key instead
// of as arguments (BENCHMARKS.md, "Checks sent as shapes").
//
// The shaped script rebuilds check.lua's ARGV with one table constructor
// and runs check.lua unchanged on it, so the two answer alike by
// construction; TestEngine_RedisAnswersAsTheMemoryStore and
// TestSend_RedisAnswersAsTheMemoryStore hold both, "single" and "generic",
// to the memory store's answers.
//
// Shapes come from the policies in the config and from which optional
// signals a request carries, so there are few; each costs Redis 70-100 KB
// (its source and its compiled function, INFO memory's used_memory_scripts
// and used_memory_lua). An instance keeps at most maxShapes, about 12 MB of
// Redis's memory at most, and sends any other check with the generic
// script, so no caller can grow Redis's script cache
// (TestShapes_AFloodOfShapesCannotGrowRedisScriptCache).
const maxShapes = 128

// The shaped script's own ARGV: these four, then each op's varying
// arguments in order.
const (
	shapeSolved   = 1
	shapeDeferred = 2
	shapeNow      = 3
	shapeExpire   = 4
	shapeFirst    = 5 // the first op's first varying argument
)

// varies reports whether an op script's argument i (encode's order)
// changes from call to call, and so is sent rather than written into the
// shape; now and expire are the batch's, sent once.
func varies(kind string, i int) bool {
	switch kind {
	case "b":
		return i == bFingerprint || i == bAttempt
	case "l":
		return i == lMember || i == lBypass
	case "r":
		return i == rCost
	}
	return false
}

// batchWide reports whether an op script's argument i is now or expire:
// ARGV[shapeNow] or ARGV[shapeExpire] in a shape.
func batchWide(kind string, i int) (int, bool) {
	switch {
	case kind == "b" && i == bNow, kind == "l" && i == lNow, kind == "r" && i == rNow:
		return shapeNow, true
	case kind == "b" && i == bExpire, kind == "l" && i == lExpire, kind == "r" && i == rExpire:
		return shapeExpire, true
	}
	return 0, false
}

// shapes are an instance's shaped scripts by their key: lookups read an
// immutable map without locking; adding a shape copies it, at most
// maxShapes times.
type shapes struct {
	mu  sync.Mutex
	m   atomic.Pointer[map[string]*sourced]
	max int // maxShapes; tests lower it
}

// sourced is a script with its source, for EVAL when the node has lost it.
type sourced struct {
	*redis.Script
	source string
}

// checkSourced is the generic check script: every argument sent.
var checkSourced = &sourced{checkScript, checkSource}

// shapeOp is one op of a check as runCheck encodes it.
type shapeOp struct {
	kind, gate, undo string
	args             []any // encode's arguments, each a string
}

// appendShape appends to key what makes op's shape (its kind, gate and
// undo, and every argument of encode's that does not vary, each
// length-prefixed or ended so that no two shapes share a key), and to args
// its varying arguments in encode's order, straight from op's fields: no
// argument is formatted as a string unless it is sent. ok is false for an
// op check.lua does not run. TestAppendShape_AgreesWithEncode holds it to
// encode's arguments.
func appendShape(key []byte, args []any, op authguard.Op, gate, undo string) (_ []byte, _ []any, ok bool) {
	field := func(s string) {
		key = strconv.AppendInt(key, int64(len(s)), 10)
		key = append(key, ':')
		key = append(key, s...)
	}
	number := func(n int64) {
		key = strconv.AppendInt(key, n, 10)
		key = append(key, ',')
	}
	millis := func(d time.Duration) { number(d.Milliseconds()) }
	kind := ""
	switch op.(type) {
	case *authguard.BackoffOp:
		kind = "b"
	case *authguard.LogOp:
		kind = "l"
	case *authguard.RateOp:
		kind = "r"
	default:
		return key, args, false
	}
	field(kind)
	field(gate)
	field(undo)
	switch op := op.(type) {
	case *authguard.BackoffOp:
		p := op.Policy
		field(op.Action.String())
		number(int64(p.Free))
		millis(p.Base)
		key = strconv.AppendFloat(key, p.Factor, 'g', -1, 64)
		key = append(key, ',')
		millis(p.Max)
		millis(p.ForgetAfter)
		millis(op.SeenWindow)
		args = append(args, op.Fingerprint, op.Attempt)
	case *authguard.LogOp:
		field(op.Action.String())
		number(int64(len(op.Windows)))
		for _, w := range op.Windows {
			millis(w.Length)
			number(int64(w.Limit))
		}
		args = append(args, op.Member, flag(op.Bypass))
	case *authguard.RateOp:
		r := op.Rate
		field(r.Algorithm.String())
		field(op.Action.String())
		millis(r.Window)
		millis(r.Interval)
		number(int64(r.Limit))
		number(int64(r.MinPercent))
		args = append(args, strconv.Itoa(op.Cost))
	}
	return key, args, true
}

// lookup returns the shaped script whose shape's key is key, or nil.
func (sh *shapes) lookup(key []byte) *sourced {
	if m := sh.m.Load(); m != nil {
		return (*m)[string(key)]
	}
	return nil
}

// add makes and keeps the shaped script for ops, whose shape's key is key,
// and returns it, and whether this call made it (Redis has not seen it from
// this instance: send it with EVAL, which runs and loads it in one round
// trip, rather than an EVALSHA bound to fail with NOSCRIPT); or nil when
// maxShapes are kept already (the caller then sends the generic script).
func (sh *shapes) add(key []byte, ops []shapeOp) (_ *sourced, made bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := map[string]*sourced{}
	if m := sh.m.Load(); m != nil {
		old = *m
	}
	if sc, ok := old[string(key)]; ok {
		return sc, false
	}
	if len(old) >= sh.max {
		return nil, false
	}
	m := make(map[string]*sourced, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	src := shapeSource(ops)
	sc := &sourced{redis.NewScript(src), src}
	m[string(key)] = sc
	sh.m.Store(&m)
	return sc, true
}

// len returns how many shapes are kept.
func (sh *shapes) len() int {
	if m := sh.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}

// shapeSource is the shaped script for ops: the check script's prelude
// (the clock, the op functions), then check.lua's ARGV rebuilt from the
// shape's literals and the call's ARGV, then check.lua.
func shapeSource(ops []shapeOp) string {
	var b strings.Builder
	b.WriteString(checkPrelude)
	b.WriteString("local ARGV = {ARGV[" + strconv.Itoa(shapeSolved) + "], ARGV[" + strconv.Itoa(shapeDeferred) + "]")
	next := shapeFirst
	for _, op := range ops {
		for _, s := range []string{op.kind, op.gate, op.undo} {
			b.WriteString(", ")
			b.WriteString(luaQuote(s))
		}
		b.WriteString(", " + strconv.Itoa(len(op.args))) // n, read through tonumber
		for i, a := range op.args {
			b.WriteString(", ")
			if at, wide := batchWide(op.kind, i); wide {
				b.WriteString("ARGV[" + strconv.Itoa(at) + "]")
				continue
			}
			if varies(op.kind, i) {
				b.WriteString("ARGV[" + strconv.Itoa(next) + "]")
				next++
				continue
			}
			if v := a.(string); numeric(op.kind, i) && numberLiteral.MatchString(v) {
				b.WriteString(v)
			} else {
				b.WriteString(luaQuote(v))
			}
		}
	}
	b.WriteString("}\n")
	b.WriteString(checkLua)
	return b.String()
}

// numeric reports whether an op script reads its argument i only through
// tonumber: a shape writes it as a Lua number, which tonumber returns as it
// is, instead of a string Redis's Lua parses on every call (each a strtod).
func numeric(kind string, i int) bool {
	switch kind {
	case "b":
		return i == bFree || i == bBase || i == bFactor || i == bMax || i == bForget || i == bWindow
	case "l":
		return i >= lArgs // the window_ms, limit pairs
	case "r":
		return i == rWindow || i == rInterval || i == rLimit || i == rMinPercent
	}
	return false
}

// numberLiteral is what strconv formats a policy's number as, and a Lua 5.1
// number literal reads as the same number.
var numberLiteral = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?$`)

// luaQuote writes s as a Lua 5.1 string literal: letters, digits and a few
// marks as they are, every other byte as a decimal escape, so that no
// value can end the literal or change the script.
func luaQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("_.:-+|?", c) >= 0:
			b.WriteByte(c)
		default:
			// always three digits, so that a digit after it is not read
			// as part of it
			b.WriteByte('\\')
			b.WriteByte('0' + c/100)
			b.WriteByte('0' + c/10%10)
			b.WriteByte('0' + c%10)
		}
	}
	b.WriteByte('"')
	return b.String()
}
