package api

import (
	"context"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Verdicts decides what POST /v1/check, /v1/report and /v1/otp/send
// answer. *authguard.Engine satisfies it.
type Verdicts interface {
	Check(context.Context, authguard.CheckRequest) (authguard.Verdict, error)
	Report(context.Context, authguard.ReportRequest) (authguard.Verdict, error)
	Send(context.Context, authguard.SendRequest) (authguard.Verdict, error)
}

// Admin answers the administrators' calls under /v1/admin.
// *authguard.Engine satisfies it.
type Admin interface {
	Explain(context.Context, authguard.ExplainRequest) (authguard.Explanation, error)
	Reset(context.Context, authguard.ResetRequest) (int, error)
	AddEntry(context.Context, authguard.EntryRequest) (authguard.Entry, error)
	ListEntries(ctx context.Context, tenant, flow string) ([]authguard.Entry, error)
	RemoveEntry(ctx context.Context, tenant, id string) (bool, error)
}

// Engine is everything the API calls: the verdicts, the administrators'
// calls, and the policy the default Metrics label their series by.
// *authguard.Engine satisfies it.
type Engine interface {
	Verdicts
	Admin
	Policy() *authguard.Policy
}

// EngineStats is what Metrics.AddEngine reads at every scrape.
// *authguard.Engine satisfies it.
type EngineStats interface {
	Recall() authguard.RecallStats
	WriteBack() authguard.WriteBackStats
}

// MemoryStore is a store held in this process's memory, whose keys and
// evictions Metrics.AddMemoryStore reads at every scrape.
// *memstore.Store satisfies it.
type MemoryStore interface {
	Stats() authguard.MemoryStats
}

var (
	_ Engine      = (*authguard.Engine)(nil)
	_ EngineStats = (*authguard.Engine)(nil)
)
