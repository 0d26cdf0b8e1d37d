package authguard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// TestDevices_ASlotLastsADayFromTheDevicesLastFailure: an attacker holding
// more tokens of one account than it has device slots (3) spends three of
// them within a day, then, as the first slots' day runs out, takes the
// slots again with three more tokens: six allowances in 24 hours, 102
// failed checks where the budget says 90. A slot a device's failure paid
// for now lasts a day from that failure, so the fourth token finds no slot
// and shares the account's device counter (one failure, then a delay).
func TestDevices_ASlotLastsADayFromTheDevicesLastFailure(t *testing.T) {
	h := newHarness(t, "")
	const account = "victim@example.com"
	tokens := make([]string, 4)
	for i := range tokens {
		tokens[i] = h.attempt(account, addr(i), authguard.Success, "").DeviceToken
		if tokens[i] == "" {
			t.Fatalf("success %d returned no device token", i)
		}
	}
	fail := func(d int) authguard.Verdict {
		t.Helper()
		v := h.check(authguard.CheckRequest{Account: account, IP: addr(10 + d), DeviceToken: tokens[d]})
		if v.Action == authguard.Proceed {
			h.report(authguard.ReportRequest{Account: account, IP: addr(10 + d), Outcome: authguard.Failure, Attempt: v.Attempt, DeviceToken: tokens[d]})
		}
		return v
	}
	h.clock.Advance(time.Hour)
	for d := range 3 { // the three slots taken
		if v := fail(d); v.Action != authguard.Proceed {
			t.Fatalf("device %d's first failure: %v, want proceed", d, v.Action)
		}
	}
	h.clock.Advance(12 * time.Hour)
	for d := range 3 { // and used again half a day later
		if v := fail(d); v.Action != authguard.Proceed {
			t.Fatalf("device %d's second failure: %v, want proceed", d, v.Action)
		}
	}
	h.clock.Advance(12*time.Hour + time.Minute) // the slots' first day is over
	var got []string
	for range 3 {
		v := fail(3)
		got = append(got, fmt.Sprintf("%v %v", v.Action, v.Reasons))
	}
	if want := "[proceed [] delay [device_backoff] delay [device_backoff]]"; fmt.Sprint(got) != want {
		t.Errorf("a fourth device within a day of the others' failures: %v, want %s (no slot: the shared counter's one failure, then its delay)", got, want)
	}
}
