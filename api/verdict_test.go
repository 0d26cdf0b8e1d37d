package api

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

// The server's verdict bytes are the verdict's JSON form, and read back as
// wire.Verdict with every field as it was.
func TestAppendVerdict_IsTheVerdictsJSON(t *testing.T) {
	tests := []struct {
		name string
		v    authguard.Verdict
	}{
		{"zero", authguard.Verdict{}},
		{"delay", authguard.Verdict{Action: authguard.Delay, Delay: 2500 * time.Millisecond, Reasons: []authguard.Reason{authguard.ReasonAccountBackoff, authguard.ReasonIPRate}}},
		{"proceed with attempt", authguard.Verdict{Attempt: "AQAAAABrDtg-AAAAAAAA_x.-Q_PdeQ"}},
		{"queued", authguard.Verdict{Delay: time.Millisecond, Reasons: []authguard.Reason{"queue"}}},
		{"deny", authguard.Verdict{Action: authguard.Deny, Reasons: []authguard.Reason{authguard.ReasonCountry}}},
		{"tokens that need escaping", authguard.Verdict{Attempt: "a\"b\\c\n\x00</script>", DeviceToken: "é \xff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendVerdict(nil, tt.v)
			want, err := tt.v.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("appendVerdict = %s, want %s", got, want)
			}
			var w wire.Verdict
			if err := json.Unmarshal(got, &w); err != nil {
				t.Fatalf("invalid JSON %s: %v", got, err)
			}
			if w.Action != tt.v.Action.String() || w.DelayMS != tt.v.Delay.Milliseconds() || w.RetryAfter != tt.v.RetryAfter() || len(w.Reasons) != len(tt.v.Reasons) {
				t.Errorf("%s reads back as %+v", got, w)
			}
		})
	}
}
