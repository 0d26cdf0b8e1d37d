package authguard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// benchEngine returns an engine on a memory store that already tracks
// `tracked` accounts, each with one failure.
func benchEngine(b *testing.B, tracked int) *authguard.Engine {
	b.Helper()
	mem := memstore.New(memstore.Config{MaxEntries: 2*tracked + 100_000})
	e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: mem, Secret: secret})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range tracked {
		_, err := e.Report(ctx, authguard.ReportRequest{
			Flow: "login", Account: fmt.Sprintf("tracked%d@example.com", i),
			IP: fmt.Sprintf("198.18.%d.%d", i/250%250, i%250), Outcome: authguard.Failure,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if n := mem.Stats().Entries; n < tracked {
		b.Fatalf("store holds %d entries, want at least %d", n, tracked)
	}
	return e
}

// BenchmarkLoginCheckReport is one full login: a check that proceeds and a
// success report, over 4,096 rotating accounts and addresses, beside a store
// that tracks 1 or 1,000,000 other accounts. The cost must not grow with the
// number of accounts tracked.
func BenchmarkLoginCheckReport(b *testing.B) {
	for _, tracked := range []int{1, 1_000_000} {
		b.Run(fmt.Sprintf("tracked=%d", tracked), func(b *testing.B) {
			e := benchEngine(b, tracked)
			accounts, ips := names("user%d@example.com", 4096), names("203.0.%d.%d", 4096)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				login(b, e, ctx, accounts[i%4096], ips[i%4096])
			}
		})
	}
}

// BenchmarkLoginCheckReportParallel is the same from GOMAXPROCS goroutines.
func BenchmarkLoginCheckReportParallel(b *testing.B) {
	e := benchEngine(b, 1)
	accounts, ips := names("user%d@example.com", 4096), names("203.0.%d.%d", 4096)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			login(b, e, ctx, accounts[i%4096], ips[(i*7)%4096])
			i++
		}
	})
}

func login(b *testing.B, e *authguard.Engine, ctx context.Context, account, ip string) {
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip, PasswordFingerprint: "pw"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Success, Attempt: v.Attempt, PasswordFingerprint: "pw"}); err != nil {
		b.Fatal(err)
	}
}

func names(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		if format == "203.0.%d.%d" {
			out[i] = fmt.Sprintf(format, i/250%250, i%250)
		} else {
			out[i] = fmt.Sprintf(format, i)
		}
	}
	return out
}

// BenchmarkCheck is one check: over 4,096 rotating accounts and addresses
// (most proceed and are refunded by nobody: the cost of the first check of
// an attempt), and on one hot account that is already in backoff (every
// check is refused: the attack path, which refunds what it charged).
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	b.Run("subjects=random", func(b *testing.B) {
		e := benchEngine(b, 1)
		accounts, ips := names("user%d@example.com", 4096), names("203.0.%d.%d", 4096)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: accounts[i%4096], IP: ips[i%4096]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("subjects=hot", func(b *testing.B) {
		e := benchEngine(b, 1)
		for range 10 {
			e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.1", Outcome: authguard.Failure})
		}
		b.ReportAllocs()
		for b.Loop() {
			v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: "192.0.2.1"})
			if err != nil || v.Action == authguard.Proceed {
				b.Fatalf("%v %v: want a refusal", v.Action, err)
			}
		}
	})
}

// BenchmarkRecall is BenchmarkLoginCheckReport's login (a check that
// proceeds, a success report) with the recall off, on and empty, and on
// while it remembers 20,000 accounts in backoff: the cost of learning from
// every answer on the normal path.
func BenchmarkRecall(b *testing.B) {
	for _, tt := range []struct {
		name      string
		bytes     int64
		inBackoff int
	}{{"off", -1, 0}, {"on/remembering=0", 0, 0}, {"on/remembering=20000", 0, 20_000}} {
		b.Run(tt.name, func(b *testing.B) {
			mem := memstore.New(memstore.Config{})
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: mem, Secret: secret, RecallBytes: tt.bytes})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := range tt.inBackoff {
				for range 5 {
					e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: fmt.Sprintf("victim%d", i), IP: "198.18.0.1", Outcome: authguard.Failure})
				}
			}
			if got := e.Recall().Keys; tt.inBackoff > 0 && got < int64(tt.inBackoff) {
				b.Fatalf("the recall holds %d keys, want %d", got, tt.inBackoff)
			}
			accounts, ips := names("user%d@example.com", 4096), names("203.0.%d.%d", 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				login(b, e, ctx, accounts[i%4096], ips[i%4096])
			}
		})
	}
}
