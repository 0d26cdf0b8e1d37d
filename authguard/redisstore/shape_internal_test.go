package redisstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// shapeKey is a key of ops' shape from encode's arguments: per op its
// kind, gate, undo, its number of arguments and every argument that does
// not vary, each length-prefixed so that no two shapes share a key. The
// store keys shapes by appendShape, which writes the same fields without
// encode; its test holds the two to each other.
func shapeKey(key []byte, ops []shapeOp) []byte {
	field := func(s string) {
		key = strconv.AppendInt(key, int64(len(s)), 10)
		key = append(key, ':')
		key = append(key, s...)
	}
	for _, op := range ops {
		field(op.kind)
		field(op.gate)
		field(op.undo)
		key = strconv.AppendInt(key, int64(len(op.args)), 10)
		key = append(key, ';')
		for i, a := range op.args {
			if _, wide := batchWide(op.kind, i); wide || varies(op.kind, i) {
				key = append(key, '.')
				continue
			}
			field(a.(string))
		}
	}
	return key
}

// shapeArgs appends the shaped script's ARGV for ops: solved, deferred,
// now, expire, then each op's varying arguments.
func shapeArgs(args []any, solved, deferred bool, now, expire string, ops []shapeOp) []any {
	args = append(args, flag(solved), flag(deferred), now, expire)
	for _, op := range ops {
		for i, a := range op.args {
			if varies(op.kind, i) {
				args = append(args, a)
			}
		}
	}
	return args
}

// TestAppendShape_AgreesWithEncode: the store keys a shape by appendShape
// and makes its script from encode's arguments, so two ops share an
// appendShape key exactly when encode gives them the same fixed arguments
// (else a check would run with another policy's windows or limits, which
// an attacker could aim for with a flow of laxer limits), and appendShape
// sends exactly encode's varying arguments, in encode's order. Each op
// below differs from the first of its kind in one field.
func TestAppendShape_AgreesWithEncode(t *testing.T) {
	policy := backoff.Policy{Free: 5, Base: time.Second, Factor: 2, Max: 30 * time.Minute, ForgetAfter: 24 * time.Hour}
	with := func(f func(*backoff.Policy)) backoff.Policy { p := policy; f(&p); return p }
	rate := authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: 50 * time.Millisecond, Limit: 200}
	withRate := func(f func(*authguard.RateLimit)) authguard.RateLimit { r := rate; f(&r); return r }
	windows := spraydetect.Windows{{Length: time.Hour, Limit: 10}, {Length: 24 * time.Hour, Limit: 20}}
	ops := []authguard.Op{
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: policy, Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffPeek, Policy: policy, Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: with(func(p *backoff.Policy) { p.Free = 6 }), Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: with(func(p *backoff.Policy) { p.Base = 2 * time.Second }), Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: with(func(p *backoff.Policy) { p.Factor = 2.5 }), Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: with(func(p *backoff.Policy) { p.Max = time.Hour }), Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: with(func(p *backoff.Policy) { p.ForgetAfter = time.Hour }), Fingerprint: "f", SeenWindow: time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: policy, Fingerprint: "f", SeenWindow: 2 * time.Hour, Attempt: "a"},
		&authguard.BackoffOp{Key: "other", Action: authguard.BackoffCharge, Policy: policy, Fingerprint: "g", SeenWindow: time.Hour, Attempt: "b"},
		&authguard.LogOp{Key: "k", Action: authguard.LogAdmit, Member: "m", Windows: windows},
		&authguard.LogOp{Key: "k", Action: authguard.LogPeek, Member: "m", Windows: windows},
		&authguard.LogOp{Key: "k", Action: authguard.LogAdmit, Member: "m", Windows: windows[:1]},
		&authguard.LogOp{Key: "k", Action: authguard.LogAdmit, Member: "m", Windows: spraydetect.Windows{{Length: time.Hour, Limit: 11}, windows[1]}},
		&authguard.LogOp{Key: "k", Action: authguard.LogAdmit, Member: "m", Windows: spraydetect.Windows{windows[0], {Length: 25 * time.Hour, Limit: 20}}},
		&authguard.LogOp{Key: "other", Action: authguard.LogAdmit, Member: "n", Windows: windows, Bypass: true},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: rate, Cost: 1},
		&authguard.RateOp{Key: "k", Action: authguard.RatePeek, Rate: rate, Cost: 1},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: withRate(func(r *authguard.RateLimit) { r.Algorithm = authguard.SlidingLog }), Cost: 1},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: withRate(func(r *authguard.RateLimit) { r.Window = time.Minute }), Cost: 1},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: withRate(func(r *authguard.RateLimit) { r.Interval = time.Second }), Cost: 1},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: withRate(func(r *authguard.RateLimit) { r.Limit = 201 }), Cost: 1},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: withRate(func(r *authguard.RateLimit) { r.MinPercent = 80 }), Cost: 1},
		&authguard.RateOp{Key: "other", Action: authguard.RateTake, Rate: rate, Cost: 3},
	}
	type shaped struct {
		direct, encoded string
		sent, varying   []string
	}
	var all []shaped
	for _, op := range ops {
		for _, gate := range []string{"0", "d", "s"} {
			for _, undo := range []string{"", authguard.UndoAction(op)} {
				name := fmt.Sprintf("%T %+v gate %s undo %q", op, op, gate, undo)
				key, args, ok := appendShape(nil, nil, op, gate, undo)
				if !ok {
					t.Fatalf("%s: appendShape refused it", name)
				}
				c, err := encode(op, "", "1")
				if err != nil {
					t.Fatal(err)
				}
				sop := shapeOp{kind: scriptKinds[c.script], gate: gate, undo: undo, args: c.args}
				all = append(all, shaped{direct: string(key), encoded: string(shapeKey(nil, []shapeOp{sop})),
					sent: strs(args), varying: strs(shapeArgs(nil, false, false, "", "1", []shapeOp{sop})[4:])})
				if got, want := all[len(all)-1].sent, all[len(all)-1].varying; !slices.Equal(got, want) {
					t.Errorf("%s: appendShape sends %q; encode varies in %q", name, got, want)
				}
			}
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if (a.direct == b.direct) != (a.encoded == b.encoded) {
				t.Errorf("appendShape keys %q and %q equal %v; encode's fixed arguments %q and %q equal %v",
					a.direct, b.direct, a.direct == b.direct, a.encoded, b.encoded, a.encoded == b.encoded)
			}
		}
	}
}

func strs(args []any) []string {
	var s []string
	for _, a := range args {
		switch a := a.(type) {
		case string:
			s = append(s, a)
		case int:
			s = append(s, strconv.Itoa(a))
		default:
			s = append(s, fmt.Sprint(a))
		}
	}
	return s
}

// TestShapeSource_PolicyNumbersAreLuaNumbers: the numbers an op script
// reads only through tonumber are written into a shape as Lua numbers (no
// strtod per call); every other fixed argument as a quoted string.
func TestShapeSource_PolicyNumbersAreLuaNumbers(t *testing.T) {
	ops := []authguard.Op{
		&authguard.BackoffOp{Key: "k", Action: authguard.BackoffCharge, Policy: backoff.Policy{Free: 5, Base: time.Second, Factor: 1.5, Max: 30 * time.Minute, ForgetAfter: 24 * time.Hour}, SeenWindow: time.Hour},
		&authguard.LogOp{Key: "k", Action: authguard.LogAdmit, Windows: spraydetect.Windows{{Length: 7 * time.Hour, Limit: 17}}},
		&authguard.RateOp{Key: "k", Action: authguard.RateTake, Rate: authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: 50 * time.Millisecond, Limit: 200}, Cost: 1},
	}
	var sops []shapeOp
	for _, op := range ops {
		c, err := encode(op, "", "1")
		if err != nil {
			t.Fatal(err)
		}
		sops = append(sops, shapeOp{kind: scriptKinds[c.script], gate: "0", args: c.args})
	}
	src := shapeSource(sops)
	for _, n := range []string{"5", "1000", "1.5", "1800000", "86400000", "3600000", "25200000", "17", "50", "200"} {
		if !strings.Contains(src, ", "+n+",") && !strings.Contains(src, ", "+n+"}") {
			t.Errorf("%s is not written as a number in the shape", n)
		}
		if strings.Contains(src, `"`+n+`"`) {
			t.Errorf("%s is written as a string in the shape", n)
		}
	}
	for _, s := range []string{`"charge"`, `"admit"`, `"token_bucket"`, `"take"`} {
		if !strings.Contains(src, s) {
			t.Errorf("%s is not written as a string in the shape", s)
		}
	}
}
