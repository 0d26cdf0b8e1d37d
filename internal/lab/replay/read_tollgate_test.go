package replay

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
)

// tgCheck is a decision log's check in shadow mode: answered proceed, the
// policy wanted a delay.
const tgCheck = `{"time":"2026-11-16T09:00:00Z","tenant":"acme","flow":"login","call":"check","action":"proceed","reasons":[],"computed":"delay","computed_reasons":["ip_failures","account_failures"],"source":"store","account":"A1","ip":"I64","ip56":"I56","ip48":"I48","ipv6":true,"fingerprint":"F1","device":"D1","attempt":"T1","from_a_later_version":{"x":1}}`

func TestReadTollgate(t *testing.T) {
	at := time.Date(2026, 11, 16, 9, 0, 0, 0, time.UTC)
	in := tgCheck + "\r\n" +
		"\n" +
		`{"time":"2026-11-16T09:00:01.25Z","flow":"login","call":"report","outcome":"success","action":"proceed","computed":"proceed","source":"store","account":"A1","ip":"I4","issued":"D2","attempt":"T1"}` + "\n" +
		`  {"time":"2026-11-16T10:00:01+01:00","tenant":"acme","flow":"otp","call":"send","action":"deny","reasons":["send_budget"],"source":"none","destination":"X"}` + "\n" +
		`{"time":"2026-11-16T09:00:02Z","flow":"login","call":"report","outcome":"failure","action":"proceed","source":"fallback"}`
	want := []Event{
		{File: "d.log", Line: 1, Time: at, Tenant: "acme", Flow: "login", Call: CallCheck, Account: "A1", Fingerprint: "F1",
			IP: IPKey{V6: true, P: "I64", P56: "I56", P48: "I48"}, Device: "D1", Attempt: "T1",
			Action: "delay", Reasons: []string{"ip_failures", "account_failures"}},
		{File: "d.log", Line: 3, Time: at.Add(1250 * time.Millisecond), Tenant: "default", Flow: "login", Call: CallReport, Outcome: OutcomeSuccess,
			Account: "A1", IP: IPKey{P: "I4"}, Issued: "D2", Attempt: "T1", Action: "proceed"},
		{File: "d.log", Line: 4, Time: at.Add(time.Second), Tenant: "acme", Flow: "otp", Call: CallSend, Action: "deny", Reasons: []string{"send_budget"}},
		// A line without "computed" (an older log) keeps its answer.
		{File: "d.log", Line: 5, Time: at.Add(2 * time.Second), Tenant: "default", Flow: "login", Call: CallReport, Outcome: OutcomeFailure, Action: "proceed"},
	}
	got, les, _ := readString(t, "d.log", in, Options{Format: FormatTollgate})
	checkLineErrors(t, "d.log", les, nil)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) {
			t.Errorf("event %d: Time = %v, want %v", i, got[i].Time, want[i].Time)
		}
		got[i].Time = want[i].Time
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// TestReadTollgate_ReadsWhatDecisionlogWrites: a line as decisionlog
// writes it reads back with its computed verdict.
func TestReadTollgate_ReadsWhatDecisionlogWrites(t *testing.T) {
	l := decisionlog.Line{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Tenant: "default", Flow: "login", Call: "check",
		Action: "proceed", Computed: "captcha", ComputedReasons: []string{"spray"}, Source: "store", Account: "acct", IP: "ip", Attempt: "att"}
	b, err := json.Marshal(l) // as decisionlog.Writer encodes it
	if err != nil {
		t.Fatal(err)
	}
	line := string(b)
	evs, _, _ := readString(t, "d", line+"\n", Options{Format: FormatTollgate})
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Call != CallCheck || ev.Action != "captcha" || !reflect.DeepEqual(ev.Reasons, []string{"spray"}) || ev.Account != "acct" || ev.IP != (IPKey{P: "ip"}) || ev.Attempt != "att" || !ev.Time.Equal(l.Time) {
		t.Errorf("event = %+v, from line %s", ev, line)
	}
}

func TestReadTollgate_BadLines(t *testing.T) {
	tests := []struct {
		line, wantErr string
	}{
		{`not json`, "it is not a JSON object"},
		{`["check"]`, "it is not a JSON object"},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"check"`, "it is not valid JSON: unexpected end of JSON input"},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login"}`, `it has no "call"`},
		{`{"time":"2026-11-16T09:00:00Z","call":"check"}`, `it has no "flow"`},
		{`{"flow":"login","call":"check"}`, `it has no "time"`},
		{`{"time":"2026-11-16 09:00:00","flow":"login","call":"check"}`, `"time" "2026-11-16 09:00:00" is not an RFC 3339 time`},
		{`{"time":1763283600,"flow":"login","call":"check"}`, `"time" is a JSON number, want string`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":7}`, `"call" is a JSON number, want string`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"check","ipv6":"yes"}`, `"ipv6" is a JSON string, want bool`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"verify"}`, `"call" "verify" is not check, report or send`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"report"}`, `it is a report without an "outcome"`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"report","outcome":"maybe"}`, `"outcome" "maybe" is not failure, success, step_up_passed, step_up_failed or password_changed`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"check","outcome":"success"}`, `it is a check with an "outcome"`},
		{`{"time":"2026-11-16T09:00:00Z","flow":"login","call":"check","account":"` + strings.Repeat("a", maxLine) + `"}`, errLongLine.Error()},
	}
	in := tgCheck + "\n"
	var want []string
	for i, tt := range tests {
		in += tt.line + "\n" + tgCheck + "\n"
		want = append(want, strconv.Itoa(2+2*i)+": "+tt.wantErr)
	}
	evs, les, _ := readString(t, "d.log", in, Options{Format: FormatTollgate})
	checkLineErrors(t, "d.log", les, want)
	if got, want := len(evs), len(tests)+1; got != want {
		t.Errorf("%d events, want %d (the good lines between the bad)", got, want)
	}
	for i, ev := range evs {
		if ev.Line != 1+2*i {
			t.Errorf("event %d is of line %d, want %d", i, ev.Line, 1+2*i)
		}
	}
}

func FuzzReadTollgate(f *testing.F) {
	f.Add([]byte(tgCheck + "\n" + `{"time":"2026-11-16T09:00:01Z","flow":"login","call":"report","outcome":"success"}`))
	f.Add([]byte(`{"time":"2026-11-16T09:00:00Z","flow":"","call":"check"}` + "\n\n{}\n[]\n"))
	f.Add([]byte("\xef\xbb\xbf" + `{"time":"2026-11-16T09:00:00Z","flow":"x","call":"send","outcome":"failure"}`))
	f.Add([]byte(kcLogin))
	f.Add([]byte(`{"time":"2026-11-16T09:00:00Z","flow":"step_up","call":"report","outcome":"step_up_passed","action":"proceed"}` + "\n" +
		`{"time":"2026-11-16T09:00:01Z","flow":"login","call":"report","outcome":"password_changed","action":"proceed"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRead(t, b, Options{Format: FormatTollgate})
	})
}

// A verdict's delay is read with it: the answered delay_ms in enforce mode,
// computed_delay_ms for a shadow verdict (answered proceed), and 0 for a
// shadow delay logged before computed_delay_ms existed.
func TestReadTollgate_ReadsTheDelayOfTheVerdictItTakes(t *testing.T) {
	in := `{"time":"2026-11-16T09:00:00Z","flow":"login","call":"check","action":"delay","delay_ms":4000,"reasons":["account_backoff"],"computed":"delay","computed_reasons":["account_backoff"],"source":"store"}` + "\n" +
		`{"time":"2026-11-16T09:00:01Z","flow":"login","call":"check","action":"proceed","computed":"delay","computed_delay_ms":2000,"computed_reasons":["account_backoff"],"source":"store"}` + "\n" +
		`{"time":"2026-11-16T09:00:02Z","flow":"login","call":"check","action":"proceed","computed":"delay","computed_reasons":["account_backoff"],"source":"store"}` + "\n" +
		`{"time":"2026-11-16T09:00:03Z","flow":"login","call":"check","action":"delay","delay_ms":8000,"reasons":["account_backoff"],"source":"store"}` + "\n"
	evs, les, _ := readString(t, "d.log", in, Options{Format: FormatTollgate})
	checkLineErrors(t, "d.log", les, nil)
	var got []int64
	for _, ev := range evs {
		if ev.Action != "delay" {
			t.Errorf("line %d: action %q, want delay", ev.Line, ev.Action)
		}
		got = append(got, ev.DelayMS)
	}
	if want := []int64{4000, 2000, 0, 8000}; !reflect.DeepEqual(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
}

// decisionlog writes computed_delay_ms exactly when the computed verdict is
// not the one answered, and replay reads the computed delay back.
func TestReadTollgate_ReadsTheShadowDelayDecisionlogWrites(t *testing.T) {
	shadow := authguard.Event{Call: "check", Flow: "login", Tenant: "default",
		Answer:   authguard.Verdict{Action: authguard.Proceed},
		Computed: authguard.Verdict{Action: authguard.Delay, Delay: 3 * time.Second, Reasons: []authguard.Reason{authguard.ReasonAccountBackoff}}}
	enforce := shadow
	enforce.Answer = enforce.Computed
	for _, tc := range []struct {
		ev       authguard.Event
		computed int64
	}{{shadow, 3000}, {enforce, 0}} {
		l := decisionlog.FromEvent(tc.ev, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		if l.ComputedDelayMS != tc.computed {
			t.Errorf("answer %v: computed_delay_ms %d, want %d", tc.ev.Answer.Action, l.ComputedDelayMS, tc.computed)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		evs, _, _ := readString(t, "d", string(b)+"\n", Options{Format: FormatTollgate})
		if len(evs) != 1 || evs[0].Action != "delay" || evs[0].DelayMS != 3000 {
			t.Errorf("answer %v: read back %+v, want a 3 s delay", tc.ev.Answer.Action, evs)
		}
	}
}

// A server with step-up on writes step_up_passed, step_up_failed and
// password_changed reports, and successes answered step_up: replay read
// none of them ("outcome ... is not failure or success"). Each is read
// from the line decisionlog writes for the engine's event.
func TestReadTollgate_ReadsTheStepUpAndPasswordChangeOutcomes(t *testing.T) {
	for _, tc := range []struct {
		flow   string
		out    authguard.Outcome
		answer authguard.Action
		want   Outcome
	}{
		{"login", authguard.Success, authguard.StepUp, OutcomeSuccess},
		{"step_up", authguard.StepUpPassed, authguard.Proceed, OutcomeStepUpPassed},
		{"step_up", authguard.StepUpFailed, authguard.Delay, OutcomeStepUpFailed},
		{"login", authguard.PasswordChanged, authguard.Proceed, OutcomePasswordChanged},
	} {
		ev := authguard.Event{Call: "report", Flow: tc.flow, Tenant: "default", Outcome: tc.out,
			Answer: authguard.Verdict{Action: tc.answer}, Computed: authguard.Verdict{Action: tc.answer},
			Subjects: &authguard.EventSubjects{Account: "acct", IP: "ip", Device: "D1"}}
		b, err := json.Marshal(decisionlog.FromEvent(ev, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		if err != nil {
			t.Fatal(err)
		}
		evs, les, _ := readString(t, "d", string(b)+"\n", Options{Format: FormatTollgate})
		if len(les) != 0 || len(evs) != 1 {
			t.Fatalf("%s: %d events, errors %v; from %s", tc.out, len(evs), les, b)
		}
		if got := evs[0]; got.Call != CallReport || got.Outcome != tc.want || got.Flow != tc.flow || got.Account != "acct" || got.Action != tc.answer.String() || got.Device != "D1" {
			t.Errorf("%s: read %+v, from %s", tc.out, got, b)
		}
	}
}
