package authguard

import "testing"

// TestWriteBackOf_QueuesCopiesNotThePlansOps: what the write-back queues
// while the store is down is a copy of each op, never a pointer into its
// plan's planOps, which would keep the whole buffer for as long as the op
// waits.
func TestWriteBackOf_QueuesCopiesNotThePlansOps(t *testing.T) {
	p := newPlan()
	tests := []struct {
		name string
		op   Op
		res  Result
	}{
		{"a settled backoff", setBackoff(p.backoffOp(), BackoffSucceed), Result{}},
		{"a failure counted", setBackoff(p.backoffOp(), BackoffFail), Result{Charged: true}},
		{"a charge", setBackoff(p.backoffOp(), BackoffCharge), Result{Charged: true}},
		{"a log add", setLog(p.logOp(), LogAdd), Result{}},
		{"a log removal", setLog(p.logOp(), LogRemove), Result{}},
		{"a log admission", setLog(p.logOp(), LogAdmit), Result{Charged: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := writeBackOf(tt.op, tt.res)
			if got == nil {
				t.Fatal("writeBackOf = nil, want an op")
			}
			if got == tt.op {
				t.Errorf("writeBackOf returned the plan's op %p itself, want a copy", tt.op)
			}
			if got.StoreKey() != tt.op.StoreKey() {
				t.Errorf("the copy's key = %q, want %q", got.StoreKey(), tt.op.StoreKey())
			}
		})
	}
}

func setBackoff(o *BackoffOp, a BackoffAction) Op {
	*o = BackoffOp{Key: "k:backoff", Action: a, Attempt: "a"}
	return o
}

func setLog(o *LogOp, a LogAction) Op {
	*o = LogOp{Key: "k:log", Action: a, Member: "m"}
	return o
}
