package authguard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// callKey marks the caller's context, so that a test sees which context a
// Trace hook was given.
type callKey struct{}

// traced is a Trace hook's record of one piece of work or decision.
type traced struct {
	name   string // a span's name, or "decided"
	call   any    // the callKey value of the context it was given
	ended  bool
	err    error
	source authguard.Source
}

// traceRecorder is a Trace that records what the engine tells it.
type traceRecorder struct {
	mu   sync.Mutex
	seen []*traced
}

func (r *traceRecorder) trace() authguard.Trace {
	return authguard.Trace{
		Span: func(ctx context.Context, name string) func(error) {
			tr := &traced{name: name, call: ctx.Value(callKey{})}
			r.mu.Lock()
			r.seen = append(r.seen, tr)
			r.mu.Unlock()
			return func(err error) {
				r.mu.Lock()
				tr.ended, tr.err = true, err
				r.mu.Unlock()
			}
		},
		Decided: func(ctx context.Context, ev authguard.Event) {
			r.mu.Lock()
			r.seen = append(r.seen, &traced{name: "decided", call: ctx.Value(callKey{}), ended: true, source: ev.Source})
			r.mu.Unlock()
		},
	}
}

// take returns what was recorded since the last take.
func (r *traceRecorder) take() []traced {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]traced, len(r.seen))
	for i, tr := range r.seen {
		out[i] = *tr
	}
	r.seen = nil
	return out
}

// The store's round trip must be traced under the caller's context (its
// span lives there), though the store call drops the caller's
// cancellation; a failing store's span carries the error, and the
// fallback that answered instead gets a span of its own.
func TestTrace_StoreRoundTripsAreTracedUnderTheCallersContext(t *testing.T) {
	rec := &traceRecorder{}
	store := &countingStore{Store: memstore.New(memstore.Config{})}
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: store, Fallback: memstore.New(memstore.Config{}),
		Secret: secret, Trace: rec.trace(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), callKey{}, "call-1"))
	cancel() // the caller hung up: the store call goes on, still traced under ctx
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "alice", IP: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "alice", IP: "192.0.2.1", Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
		t.Fatal(err)
	}
	want := []traced{
		{name: authguard.SpanStore, call: "call-1", ended: true},
		{name: "decided", call: "call-1", ended: true, source: authguard.SourceStore},
		{name: authguard.SpanStore, call: "call-1", ended: true},
		// login's step-up: the known network is written once the success
		// is not stepped up, in a round trip of its own.
		{name: authguard.SpanStore, call: "call-1", ended: true},
		{name: "decided", call: "call-1", ended: true, source: authguard.SourceStore},
	}
	if got := rec.take(); !equalTraced(got, want) {
		t.Errorf("a check and a report traced\n%+v\nwant\n%+v", got, want)
	}

	store.fail.Store(true)
	if _, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "bob", IP: "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if len(got) != 3 || got[0].name != authguard.SpanStore || !errors.Is(got[0].err, authguard.ErrStoreUnavailable) ||
		got[1].name != authguard.SpanFallback || got[1].err != nil || !got[1].ended || got[1].call != "call-1" ||
		got[2].name != "decided" || got[2].source != authguard.SourceFallback {
		t.Errorf("a check on a failing store traced %+v, want the store's span with its error, the fallback's, then decided from the fallback", got)
	}
}

func equalTraced(got, want []traced) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].name != want[i].name || got[i].call != want[i].call || got[i].ended != want[i].ended ||
			(got[i].err == nil) != (want[i].err == nil) || got[i].source != want[i].source {
			return false
		}
	}
	return true
}

// A trace of every admission would cost each call a span for nothing: only
// a call that has to wait for a slot is traced, with ErrOverloaded when it
// was shed.
func TestTrace_OnlyACallThatWaitsForASlotTracesItsWait(t *testing.T) {
	rec := &traceRecorder{}
	gate := &gatedStore{Store: memstore.New(memstore.Config{}), held: make(chan struct{}, 1), open: make(chan struct{})}
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: gate, Secret: secret,
		MaxInFlight: 1, QueueWait: 10 * time.Millisecond, Trace: rec.trace(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), callKey{}, "waiting")
	report := authguard.ReportRequest{Flow: "login", Account: "carol", IP: "192.0.2.2", Outcome: authguard.Failure}

	// The only slot is held by a check the store keeps waiting.
	gate.n.Store(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: "dave", IP: "192.0.2.3"})
	}()
	<-gate.held
	rec.take()
	if _, err := e.Report(ctx, report); !errors.Is(err, authguard.ErrOverloaded) {
		t.Fatalf("a report with no slot free: %v, want ErrOverloaded", err)
	}
	got := rec.take()
	if len(got) != 1 || got[0].name != authguard.SpanAdmission || got[0].call != "waiting" || !errors.Is(got[0].err, authguard.ErrOverloaded) {
		t.Errorf("a report that waited in vain traced %+v, want one admission span ended with ErrOverloaded", got)
	}
	close(gate.open)
	<-done
	rec.take()

	if _, err := e.Report(ctx, report); err != nil {
		t.Fatal(err)
	}
	for _, tr := range rec.take() {
		if tr.name == authguard.SpanAdmission {
			t.Errorf("a report that found a slot free traced an admission wait")
		}
	}
}
