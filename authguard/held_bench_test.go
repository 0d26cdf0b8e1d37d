package authguard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// heldBenchEngine is an engine on a memory store with the index at
// heldBytes (0: off).
func heldBenchEngine(b *testing.B, heldBytes int64) (*authguard.Engine, *testclock.Clock) {
	b.Helper()
	clock := testclock.New(time.Time{})
	p, err := policyfile.LoadPolicy(nil)
	if err != nil {
		b.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: p, Store: memstore.New(memstore.Config{Now: clock.Now}), Secret: secret, Now: clock.Now, HeldBytes: heldBytes})
	if err != nil {
		b.Fatal(err)
	}
	return e, clock
}

// BenchmarkHeld_CheckThatHoldsNobody: a fresh account's check, index off
// and on side by side. Holding nobody, the index builds and writes nothing.
func BenchmarkHeld_CheckThatHoldsNobody(b *testing.B) {
	for _, tt := range []struct {
		name  string
		bytes int64
	}{{"off", 0}, {"on", authguard.DefaultHeldBytes}} {
		b.Run(tt.name, func(b *testing.B) {
			e, _ := heldBenchEngine(b, tt.bytes)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("u%d@example.com", i), IP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeld_FailureThatHoldsAnAccount: a failure report that puts a
// fresh account past its free failures (the index's one write per hold),
// off and on.
func BenchmarkHeld_FailureThatHoldsAnAccount(b *testing.B) {
	for _, tt := range []struct {
		name  string
		bytes int64
	}{{"off", 0}, {"on", authguard.DefaultHeldBytes}} {
		b.Run(tt.name, func(b *testing.B) {
			e, _ := heldBenchEngine(b, tt.bytes)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				a, ip := fmt.Sprintf("u%d@example.com", i), fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
				for range 4 {
					e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: authguard.Failure})
				}
				b.StartTimer()
				if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: a, IP: ip, Outcome: authguard.Failure}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
