package redisstore

import (
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
)

// A check goes first without its spares only when check.lua can give back
// everything it did before it finds it needs them: every op before the last
// shared gate is undone when blocked, or a peek. Attack: a rate that counts
// every check (no undo) placed before the account's wait would otherwise
// be charged twice for each check the owner's network sends again.
func TestDeferrable_OnlyWhenAllBeforeTheWaitCanBeGivenBack(t *testing.T) {
	record := &authguard.LogOp{Action: authguard.LogPeek}
	admit := &authguard.LogOp{Action: authguard.LogAdmit}
	take := &authguard.RateOp{Action: authguard.RateTake}
	charge := &authguard.BackoffOp{Action: authguard.BackoffCharge}
	verified, shared := authguard.Gate{Block: authguard.BlockVerified}, authguard.Gate{Block: authguard.BlockShared, Undo: true}
	counts, spare := authguard.Gate{Block: authguard.BlockDelay}, authguard.Gate{Block: authguard.BlockOwner, Undo: true}
	tests := []struct {
		name  string
		ops   []authguard.Op
		gates []authguard.Gate
		want  bool
	}{
		{"the login check: record, account, rate, spares", []authguard.Op{record, charge, take, admit, admit},
			[]authguard.Gate{verified, shared, counts, spare, spare}, true},
		{"a rate that counts every check before the account's wait", []authguard.Op{record, take, charge, admit, admit},
			[]authguard.Gate{verified, counts, shared, spare, spare}, false},
		{"no spares", []authguard.Op{record, charge, take}, []authguard.Gate{verified, shared, counts}, false},
		{"an undone admission before the wait", []authguard.Op{admit, charge, admit},
			[]authguard.Gate{{Block: authguard.BlockCaptcha, Undo: true}, shared, spare}, true},
	}
	for _, tt := range tests {
		if got := deferrable(tt.ops, tt.gates); got != tt.want {
			t.Errorf("%s: deferrable %v, want %v", tt.name, got, tt.want)
		}
	}
}
