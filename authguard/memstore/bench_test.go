package memstore_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// loginFlow is the built-in policy's login flow, whose rules the benchmarks
// and the flood measurement use.
var loginFlow = builtinpolicy.Policy().Flow("login")

// subject is one made-up subject: its account and IP prefix hashes and the
// store keys a check on it touches, spelled as the engine spells them
// (tg:<tenant>:<flow>:<signal>:<22-character hash>).
type subject struct {
	account                    string // hash, the ip_spray member
	acctKey, rateKey, sprayKey string
	failKey                    string
	attemptID                  string // the ip_failures member
	check, success             []authguard.Op
}

// hash22 spells n as a 22-character subject hash, as long as the engine's.
func hash22(tag byte, n uint64) string {
	var b [16]byte
	b[0] = tag
	binary.BigEndian.PutUint64(b[8:], n)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newSubject returns account n checking from IP prefix n.
func newSubject(n uint64) *subject {
	f := loginFlow
	s := &subject{account: hash22('a', n), attemptID: hash22('t', n)}
	ip := hash22('i', n)
	s.acctKey = "tg:default:login:acct:" + s.account
	s.rateKey = "tg:default:login:iprate:" + ip
	s.sprayKey = "tg:default:login:ipspray:" + ip
	s.failKey = "tg:default:login:ipfail:" + ip
	// The batch of a check from an IPv4 client without a password
	// fingerprint: the account's counter, the prefix's request bucket and
	// its two logs (see authguard.Engine.Check).
	s.check = []authguard.Op{
		&authguard.BackoffOp{Key: s.acctKey, Action: authguard.BackoffCharge, Policy: f.Rule("account_backoff").Backoff, SeenWindow: f.SamePasswordWindow},
		&authguard.RateOp{Key: s.rateKey, Action: authguard.RateTake, Rate: f.Rule("ip_rate").Rate, Cost: 1},
		&authguard.LogOp{Key: s.sprayKey, Action: authguard.LogAdmit, Member: s.account, Windows: f.Rule("ip_spray").Windows},
		&authguard.LogOp{Key: s.failKey, Action: authguard.LogAdmit, Member: s.attemptID, Windows: f.Rule("ip_failures").Windows},
	}
	// And the one a success report sends.
	s.success = []authguard.Op{
		&authguard.BackoffOp{Key: s.acctKey, Action: authguard.BackoffSucceed, Policy: f.Rule("account_backoff").Backoff, SeenWindow: f.SamePasswordWindow},
		&authguard.LogOp{Key: s.sprayKey, Action: authguard.LogRemove, Member: s.account, Windows: f.Rule("ip_spray").Windows},
		&authguard.LogOp{Key: s.failKey, Action: authguard.LogRemove, Member: s.attemptID, Windows: f.Rule("ip_failures").Windows},
	}
	return s
}

// BenchmarkDo_Login is the store's share of one login (a check batch and a
// success report batch) over 4,096 subjects that stay in a store with room
// for them: every call finds its keys.
func BenchmarkDo_Login(b *testing.B) {
	s := memstore.New(memstore.Config{})
	subjects := make([]*subject, 4096)
	for i := range subjects {
		subjects[i] = newSubject(uint64(i))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sub := subjects[i%len(subjects)]
		if _, err := s.Do(ctx, sub.check); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Do(ctx, sub.success); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDo_LoginParallel is BenchmarkDo_Login from GOMAXPROCS goroutines.
func BenchmarkDo_LoginParallel(b *testing.B) {
	s := memstore.New(memstore.Config{})
	subjects := make([]*subject, 4096)
	for i := range subjects {
		subjects[i] = newSubject(uint64(i))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i += 7 {
			sub := subjects[i%len(subjects)]
			if _, err := s.Do(ctx, sub.check); err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Do(ctx, sub.success); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDo_FreshSubjectFlood is one check on a fresh account from a fresh
// prefix against a full store (100,000 entries): four inserts, each of which
// evicts an entry.
func BenchmarkDo_FreshSubjectFlood(b *testing.B) {
	s := memstore.New(memstore.Config{MaxEntries: 100_000})
	ctx := context.Background()
	n := uint64(0)
	for range 100_000 / 4 { // fill it
		s.Do(ctx, newSubject(n).check)
		n++
	}
	subjects := make([]*subject, 1<<16) // built outside the timed loop
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i % len(subjects)
		if j == 0 {
			b.StopTimer()
			for k := range subjects {
				subjects[k] = newSubject(n)
				n++
			}
			b.StartTimer()
		}
		if _, err := s.Do(ctx, subjects[j].check); err != nil {
			b.Fatal(err)
		}
	}
	if st := s.Stats(); b.N > 100_000 && st.Evicted == 0 {
		b.Fatalf("stats %+v after %d fresh checks: nothing evicted", st, b.N)
	}
}

// BenchmarkDo_SprayLogAtItsLimit is a check's admission on a /48 spray log
// at its limit (201 members, refused): the fattest key of the login flow,
// whose size the store estimates again at every call.
func BenchmarkDo_SprayLogAtItsLimit(b *testing.B) {
	s := memstore.New(memstore.Config{})
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fatLog(b, s, uint64(i))
	}
	ctx := context.Background()
	ops := make([][]authguard.Op, len(keys))
	for i, k := range keys {
		ops[i] = []authguard.Op{&authguard.LogOp{Key: k, Action: authguard.LogAdmit, Member: hash22('x', uint64(i)), Windows: spray48}}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		res, err := s.Do(ctx, ops[i%len(ops)])
		if err != nil || !res[0].Over {
			b.Fatalf("%+v %v, want refused", res, err)
		}
	}
}
