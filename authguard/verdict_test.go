package authguard_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

func TestVerdict_SameFieldsInTheSameOrder(t *testing.T) {
	tests := []struct {
		v    authguard.Verdict
		want string
	}{
		{authguard.Verdict{}, `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}`},
		{authguard.Verdict{Action: authguard.Delay, Delay: 1500 * time.Millisecond, Reasons: []authguard.Reason{authguard.ReasonAccountBackoff, authguard.ReasonIPRate}},
			`{"action":"delay","delay_ms":1500,"retry_after":2,"reasons":["account_backoff","ip_rate"],"attempt":"","device_token":""}`},
		{authguard.Verdict{Action: authguard.Captcha, Reasons: []authguard.Reason{authguard.ReasonPasswordSpray}, Attempt: "a.b.c"},
			`{"action":"captcha","delay_ms":0,"retry_after":0,"reasons":["password_spray"],"attempt":"a.b.c","device_token":""}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("got  %s\nwant %s", b, tt.want)
		}
	}
}

func TestVerdict_RetryAfterRoundsUp(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {30 * time.Minute, 1800}} {
		if got := (authguard.Verdict{Delay: tt.d}).RetryAfter(); got != tt.want {
			t.Errorf("RetryAfter(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// The built-in rules keep the reason codes callers already log and alert on.
func TestReasons_BuiltInFlowsKeepTheirCodes(t *testing.T) {
	for flow, want := range map[string]string{
		"login":      "[account_backoff device_backoff ip_rate ip_spray ip_failures credential_stuffing password_spray unavailable overloaded]",
		"otp_verify": "[account_backoff device_backoff destination_backoff ip_rate ip_spray ip_failures unavailable overloaded]",
		"otp_send":   "[destination_backoff destination_limit ip_sends ip_destinations account_sends prefix_destinations country_sends low_conversion spend_budget number_type country unavailable overloaded]",
	} {
		if got := fmt.Sprint(builtinpolicy.Policy().Flow(flow).Reasons()); got != want {
			t.Errorf("%s: reasons %s, want %s", flow, got, want)
		}
	}
}

func ExampleVerdict_MarshalJSON() {
	v := authguard.Verdict{Action: authguard.Delay, Delay: 2 * time.Second, Reasons: []authguard.Reason{authguard.ReasonAccountBackoff}}
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
	// Output: {"action":"delay","delay_ms":2000,"retry_after":2,"reasons":["account_backoff"],"attempt":"","device_token":""}
}

// Tokens are copied into the JSON as they are when they are base64url and
// dots; anything else is escaped, so a verdict's JSON stays valid and
// says exactly its tokens whatever they hold.
func TestVerdict_TokensInTheJSONAreExactlyTheTokens(t *testing.T) {
	for _, tok := range []string{"", "AQAAAABrDtg-AAAAAAAA_x.-Q_PdeQ", `a"b`, `back\slash`, "new\nline", "é", "\x00", "</script>", "a b"} {
		v := authguard.Verdict{Attempt: tok, DeviceToken: tok + "x"}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Attempt     string `json:"attempt"`
			DeviceToken string `json:"device_token"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("token %q: invalid JSON %s: %v", tok, b, err)
		}
		if got.Attempt != tok || got.DeviceToken != tok+"x" {
			t.Errorf("token %q: JSON %s reads back as %q, %q", tok, b, got.Attempt, got.DeviceToken)
		}
	}
}
