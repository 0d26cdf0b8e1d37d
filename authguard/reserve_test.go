package authguard

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

type nopStore struct{}

func (nopStore) Do(context.Context, []Op) ([]Result, error) { return nil, nil }
func (nopStore) Ping(context.Context) error                 { return nil }
func (nopStore) Close() error                               { return nil }

// TestGates_AgreeWithCombine: for plans with every kind of rule, known and
// unknown clients, and random results, Blocked says "do not proceed"
// exactly when combine's verdict is not Proceed. A store that undoes a
// check's reservations by the gates therefore undoes exactly what the
// engine's refund would.
func TestGates_AgreeWithCombine(t *testing.T) {
	bo := backoff.Policy{Free: 2, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}
	wins := spraydetect.Windows{{Length: time.Hour, Limit: 3}}
	f := &Flow{
		Name: "mixed", FailClosedRetry: time.Second, AttemptTTL: time.Minute, DeviceTokenTTL: time.Hour,
		Rules: []Rule{
			{Name: "acct", Subject: Subject{Parts: PartAccount}, Algorithm: Backoff, Backoff: bo},
			{Name: "dev", Subject: Subject{Parts: PartDevice}, Algorithm: Backoff, Backoff: bo, DeviceFree: 2, DeviceSlots: 2},
			{Name: "spray", Subject: Subject{Parts: PartIP}, Algorithm: Distinct, Of: PartAccount, Windows: wins, Clients: AllClients},
			{Name: "fails", Subject: Subject{Parts: PartIP}, Algorithm: SlidingLog, Counts: OnFailure, Windows: wins},
			{Name: "queue", Subject: Subject{Parts: PartIP}, Algorithm: LeakyBucket, Rate: RateLimit{Interval: time.Second, Limit: 3}, Counts: OnProceed, Clients: AllClients},
			{Name: "flood", Subject: Subject{Parts: PartIP}, Algorithm: TokenBucket, Rate: RateLimit{Interval: time.Second, Limit: 3}},
			{Name: "quota", Subject: Subject{Parts: PartAccount}, Algorithm: FixedWindow, Rate: RateLimit{Window: time.Hour, Limit: 3}, Past: PastCaptcha, Counts: OnProceed, Clients: AllClients},
		},
	}
	send := &Flow{
		Name: "sends", Kind: Sends, FailClosedRetry: time.Second, AttemptTTL: time.Minute, DeviceTokenTTL: time.Hour,
		Rules: []Rule{
			{Name: "resend", Subject: Subject{Parts: PartDestination}, Algorithm: Backoff, Backoff: bo},
			{Name: "budget", Subject: Subject{Parts: PartCountry}, Algorithm: FixedWindow, Rate: RateLimit{Window: time.Hour, Limit: 3}, Counts: OnProceed, Past: PastDeny},
			{Name: "block", Subject: Subject{Parts: PartDestPrefix}, Algorithm: Distinct, Of: PartDestination, Windows: wins},
			{Name: "pumping", Subject: Subject{Parts: PartIP}, Algorithm: Distinct, Of: PartDestination, Windows: wins, Past: PastDeny},
			{Name: "flood", Subject: Subject{Parts: PartIP}, Algorithm: TokenBucket, Rate: RateLimit{Interval: time.Second, Limit: 3}},
			{Name: "daily", Subject: Subject{Parts: PartDestination}, Algorithm: SlidingLog, Rate: RateLimit{Window: time.Hour, Limit: 3}, Counts: OnProceed, Clients: AllClients},
			// shared, as a delay rule on the destination: a wait not Over
			// is no place in a queue for a send the owner's codes do not
			// exempt
			{Name: "drip", Subject: Subject{Parts: PartDestination}, Algorithm: LeakyBucket, Rate: RateLimit{Interval: time.Second, Limit: 3}, Counts: OnProceed, Clients: AllClients},
		},
		Send: SendPolicy{OwnerCodes: 2},
	}
	p, err := NewPolicy(f, send)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Policy: p, Store: nopStore{}, Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.subjects(Attempts, "", "mixed", "ann", "192.0.2.1", "")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := e.subjects(Sends, "", "sends", "", "192.0.2.1", "")
	if err != nil {
		t.Fatal(err)
	}
	ss.dest, ss.destPrefix, ss.country = "d", "p", "c"
	owned := ss // a known device's send, with the owner's allowance
	owned.account = "a"
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		s      *subjects
		f      *Flow
		device string
	}{{&s, f, ""}, {&s, f, randomID()}, {&ss, send, ""}, {&owned, send, randomID()}, {&owned, send, ""}} {
		s, f, device := c.s, c.f, c.device
		for _, solved := range []bool{false, true} {
			plan := e.checkPlan(s, device, randomID(), solved)
			gates := plan.gates(f)
			if len(gates) != len(plan.ops) {
				t.Fatalf("%d gates for %d ops", len(gates), len(plan.ops))
			}
			for range 5000 {
				res := make([]Result, len(plan.ops))
				for i := range res {
					res[i] = Result{Charged: rng.IntN(2) == 0, Over: rng.IntN(4) == 0}
					if rng.IntN(3) == 0 {
						res[i].Wait = time.Duration(1+rng.IntN(3)) * time.Second
					}
				}
				v := e.combine(f, &plan, batch{res: res}, solved)
				if blocked := Blocked(gates, res, solved); blocked != (v.Action != Proceed) {
					t.Fatalf("device %v, solved %v, results %+v: Blocked %v, verdict %v %v", device != "", solved, res, blocked, v.Action, v.Reasons)
				}
			}
		}
	}
}

// TestUndoAction_IsUndosAction: the action a store reruns an op with is
// the one Undo builds, for every op kind.
func TestUndoAction_IsUndosAction(t *testing.T) {
	for _, op := range []Op{&BackoffOp{Action: BackoffCharge}, &LogOp{Action: LogAdmit}, &RateOp{Action: RateTake}, &DeleteOp{}} {
		var want string
		switch u := Undo(op).(type) {
		case *BackoffOp:
			want = u.Action.String()
		case *LogOp:
			want = u.Action.String()
		case *RateOp:
			want = u.Action.String()
		}
		if got := UndoAction(op); got != want {
			t.Errorf("%T: UndoAction %q, Undo's action %q", op, got, want)
		}
	}
}

// recordingStore answers every op within its limits and records the
// actions of the log ops each Do was sent.
type recordingStore struct {
	nopStore
	calls [][]LogAction
}

func (r *recordingStore) Do(_ context.Context, ops []Op) ([]Result, error) {
	var acts []LogAction
	for _, op := range ops {
		if lo, ok := op.(*LogOp); ok {
			acts = append(acts, lo.Action)
		}
	}
	r.calls = append(r.calls, acts)
	return make([]Result, len(ops)), nil
}

// However many spare allowances a batch carries, Reserve sends every one as
// its peek and spends none when no shared wait needs them: a spare sent as
// its admission would be spent on a check it did not exempt.
func TestReserve_EverySpareIsPeekedHoweverMany(t *testing.T) {
	for _, n := range []int{1, 4, 5, 9} {
		ops := []Op{&BackoffOp{Key: "acct", Action: BackoffCharge}}
		gates := []Gate{{Block: BlockShared, Undo: true}}
		for i := range n {
			ops = append(ops, &LogOp{Key: "spare", Action: LogAdmit, Member: string(rune('a' + i))})
			gates = append(gates, Gate{Block: BlockOwner, Undo: true})
		}
		st := &recordingStore{}
		if _, _, err := Reserve(context.Background(), st, ops, gates, false); err != nil {
			t.Fatal(err)
		}
		if len(st.calls) != 1 {
			t.Fatalf("%d spares: %d store calls, want one (nothing to apply without a wait)", n, len(st.calls))
		}
		for j, a := range st.calls[0] {
			if a != LogPeek {
				t.Errorf("%d spares: spare %d sent as %v, want its peek", n, j, a)
			}
		}
		for j, op := range ops[1:] {
			if a := op.(*LogOp).Action; a != LogAdmit {
				t.Errorf("%d spares: spare %d left as %v after the call, want its own action back", n, j, a)
			}
		}
	}
}
