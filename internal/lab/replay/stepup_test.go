package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// stepUpLog is the decision log a server with the built-in policy (step-up
// on) writes while an attacker guesses at the owner's account: she signs
// in from a new phone and is answered step_up, fails her second factor
// once, passes it, signs in with the device token the pass gave, changes
// her password, and the attacker starts again. Every line is written by
// decisionlog.FromEvent from the engine's own events.
func stepUpLog(t *testing.T) string {
	t.Helper()
	clock := testclock.New(weekStart)
	p, err := config.LoadPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e, err := authguard.New(authguard.Config{
		Policy: p, Store: memstore.New(memstore.Config{Now: clock.Now}), Secret: []byte("a server secret of 32 bytes ....."), Now: clock.Now,
		RecordSubjects: true,
		Observe: func(ev authguard.Event) {
			b, _ := json.Marshal(decisionlog.FromEvent(ev, clock.Now()))
			log.Write(append(b, '\n'))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const owner, home, phone = "owner@example.com", "203.0.113.5", "192.0.2.7"
	step := func() { clock.Advance(time.Second) }
	check := func(flow, ip, token string) authguard.Verdict {
		t.Helper()
		step()
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: flow, Account: owner, IP: ip, DeviceToken: token})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	report := func(req authguard.ReportRequest) authguard.Verdict {
		t.Helper()
		step()
		req.Account = owner
		if req.Flow == "" {
			req.Flow = "login"
		}
		v, err := e.Report(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	attack := func(from, n int) {
		for i := from; i < from+n; i++ {
			ip := fmt.Sprintf("198.51.100.%d", i+1)
			if v := check("login", ip, ""); v.Action == authguard.Proceed {
				report(authguard.ReportRequest{IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
			}
		}
	}

	v := check("login", home, "")
	report(authguard.ReportRequest{IP: home, Outcome: authguard.Success, Attempt: v.Attempt})
	attack(0, 12)
	clock.Advance(time.Hour)
	v = check("login", phone, "")
	if v.Action != authguard.Proceed {
		t.Fatalf("the owner's check from her phone: %v %v", v.Action, v.Reasons)
	}
	v = report(authguard.ReportRequest{IP: phone, Outcome: authguard.Success, Attempt: v.Attempt})
	if v.Action != authguard.StepUp {
		t.Fatalf("the owner's success after 12 failures: %v, want step_up", v.Action)
	}
	ticket := v.Attempt
	// A try's report carries its check's attempt after the ticket, as the
	// plug-ins send it; the fourth is checked too late for its check to
	// proceed, and is reported with the ticket alone.
	try := func(c authguard.Verdict) string {
		if c.Attempt == "" {
			return ticket
		}
		return ticket + authguard.StepUpAttemptSeparator + c.Attempt
	}
	for range 4 { // she mistypes her code four times: the step_up flow's backoff waits
		c := check("step_up", phone, "")
		report(authguard.ReportRequest{Flow: "step_up", IP: phone, Outcome: authguard.StepUpFailed, Attempt: try(c)})
	}
	if v := check("step_up", phone, ""); v.Action != authguard.Delay {
		t.Fatalf("the step_up check after four failures: %v, want delay", v.Action)
	}
	clock.Advance(time.Minute)
	c := check("step_up", phone, "")
	v = report(authguard.ReportRequest{Flow: "step_up", IP: phone, Outcome: authguard.StepUpPassed, Attempt: try(c)})
	token := v.DeviceToken
	attack(12, 4) // her account is held back again: only the pass lets her in at once
	if v := check("login", phone, ""); v.Action != authguard.Proceed {
		t.Fatalf("the owner's check from the network her pass made known: %v %v, want proceed", v.Action, v.Reasons)
	}
	v = check("login", phone, token)
	if v.Action != authguard.Proceed {
		t.Fatalf("the owner's check with the pass's token: %v %v, want proceed", v.Action, v.Reasons)
	}
	report(authguard.ReportRequest{IP: phone, Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: token})
	report(authguard.ReportRequest{IP: home, Outcome: authguard.PasswordChanged})
	attack(20, 8) // a fresh ramp: five free again, then delays
	return log.String()
}

// TestReplay_ADecisionLogWithStepUpAndPasswordChangesReplaysAsItWasDecided:
// replay refused a server's log once step-up was on ("outcome
// step_up_passed is not failure or success"). Replayed with the policy
// that wrote it, every check gets the verdict it got: the owner's second
// factor is reported on the step_up flow with the candidate's own ticket
// (so her pass gives the device token her next sign-in carries), and the
// password change clears the account as it did (so the attacker's fresh
// ramp is free again, not delayed).
func TestReplay_ADecisionLogWithStepUpAndPasswordChangesReplaysAsItWasDecided(t *testing.T) {
	log := stepUpLog(t)
	for _, want := range []string{`"outcome":"step_up_passed"`, `"outcome":"step_up_failed"`, `"outcome":"password_changed"`, `"action":"step_up"`, `"flow":"step_up","call":"check"`} {
		if !strings.Contains(log, want) {
			t.Fatalf("the log has no %s:\n%s", want, log)
		}
	}
	p, err := config.LoadPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Name: "decisions.jsonl", Open: func() (Source, error) {
		return Open("decisions.jsonl", strings.NewReader(log), Options{Format: FormatTollgate})
	}}
	rep, err := Run(context.Background(), Config{Candidates: []Candidate{{Name: "builtin", Policy: p}}, Inputs: []Input{in}})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	_ = WriteText(&text, &rep)
	t.Log("\n" + text.String())
	c := rep.Candidates[0]
	if c.Errors != 0 || c.Unreported != 0 {
		t.Errorf("errors %d %q, unreported %d; want none", c.Errors, c.ErrorExamples, c.Unreported)
	}
	if rep.Baseline == nil {
		t.Fatal("no baseline")
	}
	if !reflect.DeepEqual(c.Total, rep.Baseline.Total) {
		t.Errorf("replayed:\n%+v\nas decided:\n%+v", c.Total, rep.Baseline.Total)
	}
	if !reflect.DeepEqual(c.Flows, rep.Baseline.Flows) {
		t.Errorf("replayed per flow:\n%+v\nas decided:\n%+v", c.Flows, rep.Baseline.Flows)
	}
	// The log's attacker is stopped both before and after the change, so
	// the comparison above covers what the change cleared.
	if got := rep.Baseline.Total.OtherStopped; got == 0 {
		t.Errorf("the original stopped none of the attacker's checks")
	}
}
