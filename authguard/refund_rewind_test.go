package authguard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// TestLogin_OwnersSuccessCannotRewindAnAttackersLaterFailure: the owner's
// check reserves a failure on her account's counter, an attacker's guess is
// charged after it, and the owner's success refunds her reservation. The
// attacker's failure still counts from its own time: the refund must not
// move the counter's last failure back to the owner's check.
func TestLogin_OwnersSuccessCannotRewindAnAttackersLaterFailure(t *testing.T) {
	tests := []struct {
		name   string
		attack func(t *testing.T, h *harness, acct string) // at +1s
		want   string                                      // the verdict of a check at +1.6s
	}{
		{
			name: "a guess with a token, charged and confirmed",
			attack: func(t *testing.T, h *harness, acct string) {
				if v := h.guessFor(authguard.CheckRequest{Account: acct, IP: addr(60)}); v.Action != authguard.Proceed {
					t.Fatalf("attacker's guess at +1s: %v %v, want proceed", v.Action, v.Delay)
				}
			},
			// 5 failures remain, the last at +1s: Delay(5) = 1s, so the next
			// attempt is due at +2s.
			want: "delay 400ms",
		},
		{
			name: "a failure reported without a token",
			attack: func(t *testing.T, h *harness, acct string) {
				h.report(authguard.ReportRequest{Account: acct, IP: addr(60), Outcome: authguard.Failure})
			},
			want: "delay 400ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			const acct = "victim@example.com"
			for i := range 4 {
				h.attempt(acct, addr(i), authguard.Failure, "")
			}
			h.clock.Advance(time.Minute)
			owner := h.check(authguard.CheckRequest{Account: acct, IP: "198.51.100.1"}) // the 5th failure, reserved
			if owner.Action != authguard.Proceed {
				t.Fatalf("owner's check: %v %v, want proceed", owner.Action, owner.Delay)
			}
			h.clock.Advance(time.Second) // the 1s wait after 5 failures passes
			tt.attack(t, h, acct)        // the 6th failure
			h.clock.Advance(500 * time.Millisecond)
			h.report(authguard.ReportRequest{Account: acct, IP: "198.51.100.1", Outcome: authguard.Success, Attempt: owner.Attempt})
			h.clock.Advance(100 * time.Millisecond)
			v := h.check(authguard.CheckRequest{Account: acct, IP: addr(61)})
			if got := fmt.Sprintf("%v %v", v.Action, v.Delay); got != tt.want {
				t.Errorf("attacker's check at +1.6s after the owner's success = %q, want %q (his failure at +1s allows nothing before +2s)", got, tt.want)
			}
		})
	}
}
