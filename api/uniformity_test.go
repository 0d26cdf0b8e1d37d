package api_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// tokenRE finds the token values of a verdict.
var tokenRE = regexp.MustCompile(`"(attempt|device_token)":"([^"]*)"`)

// mask replaces token values by their lengths: two masked bodies are equal
// only when the tokens had equal lengths.
func mask(body []byte) string {
	return tokenRE.ReplaceAllStringFunc(string(body), func(m string) string {
		sub := tokenRE.FindStringSubmatch(m)
		return fmt.Sprintf(`"%s":"<%d bytes>"`, sub[1], len(sub[2]))
	})
}

// TestUniformity_UnknownAccountLooksLikeKnownOne runs one scripted attack —
// failures with and without attempt tokens, a repeated password, a forged
// device token, waits, a solved CAPTCHA — on an account that exists (its
// owner logged in earlier and holds a device token) and on one that does
// not, at the same instants. Every response body must be byte for byte the
// same once token values are replaced by their lengths: nothing an attacker
// sees tells the two apart.
func TestUniformity_UnknownAccountLooksLikeKnownOne(t *testing.T) {
	h := newHarness(t)

	// The known account's history: its owner logged in successfully from
	// home and holds a device token.
	home := login("alice@example.com", "192.0.2.44")
	v := h.check(t, home)
	owner := h.report(t, testkit.With(home, "outcome", "success", "attempt", v.Attempt))
	if owner.DeviceToken == "" {
		t.Fatal("no device token for the owner")
	}

	type step struct {
		name string
		wait time.Duration // the clock moves this much before the step
		do   func(acct map[string]any, attempt string) *response
	}
	checkStep := func(extra ...any) func(map[string]any, string) *response {
		return func(acct map[string]any, _ string) *response {
			return h.post(t, "/v1/check", testkit.With(acct, extra...))
		}
	}
	// failStep reports a failure with the last attempt token, or without
	// one when tokenless.
	failStep := func(tokenless bool, extra ...any) func(map[string]any, string) *response {
		return func(acct map[string]any, attempt string) *response {
			body := testkit.With(acct, append([]any{"outcome", "failure"}, extra...)...)
			if !tokenless {
				body["attempt"] = attempt
			}
			return h.post(t, "/v1/report", body)
		}
	}
	var script []step
	for i := range 4 {
		fp := fmt.Sprintf("fp-%d", i)
		script = append(script,
			step{fmt.Sprintf("check %d", i+1), 0, checkStep("password_fingerprint", fp)},
			step{fmt.Sprintf("failure %d", i+1), 0, failStep(false, "password_fingerprint", fp)},
		)
	}
	script = append(script,
		step{"check, repeated password", 0, checkStep("password_fingerprint", "fp-0")},
		step{"failure, repeated password", 0, failStep(false, "password_fingerprint", "fp-0")},
		step{"check 5", 0, checkStep()},
		step{"failure 5: a delay appears", 0, failStep(false)},
		step{"check during the delay", 500 * time.Millisecond, checkStep()},
		step{"check with a forged device token", 0, checkStep("device_token", owner.DeviceToken[:len(owner.DeviceToken)-4]+"AAAA")},
		step{"check after the delay", 500 * time.Millisecond, checkStep()},
		step{"failure 6", 0, failStep(false)},
		step{"failure 7 without attempt token", 0, failStep(true)},
		step{"failure 8 without attempt token", 4 * time.Second, failStep(true)},
		step{"check after an hour", time.Hour, checkStep("captcha_solved", true)},
		step{"failure 9", 0, failStep(false)},
	)

	known := login("alice@example.com", "203.0.113.10")
	unknown := login("nobody-7f3a@example.com", "203.0.113.20")
	var knownAttempt, unknownAttempt string
	for _, st := range script {
		h.clock.Advance(st.wait)
		a := st.do(known, knownAttempt)
		b := st.do(unknown, unknownAttempt)
		if a.status != 200 || b.status != 200 {
			t.Fatalf("%s: status %d and %d", st.name, a.status, b.status)
		}
		if ma, mb := mask(a.body), mask(b.body); ma != mb {
			t.Errorf("%s: bodies differ\nknown:   %s\nunknown: %s", st.name, ma, mb)
		}
		va, vb := a.verdict(t), b.verdict(t)
		t.Logf("%-34s %s", st.name, mask(a.body))
		if va.Attempt != "" {
			knownAttempt, unknownAttempt = va.Attempt, vb.Attempt
		}
	}
}
