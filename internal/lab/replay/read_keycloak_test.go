package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcT0 is 2026-11-16T09:00:00Z in epoch milliseconds.
const kcT0 = 1794819600000

// kcLogin is a Keycloak LOGIN event as the admin REST API returns it.
const kcLogin = `{"id":"e1","time":1794819600000,"type":"LOGIN","realmId":"Acme","clientId":"web","userId":"8d1f0c2e-0000-4000-8000-00000000a11c","sessionId":"s1","ipAddress":"203.0.113.7","details":{"auth_method":"openid-connect","username":"Alice@Example.com"}}`

// kcEvent is a Keycloak event at kcT0 plus dt.
func kcEvent(dt time.Duration, typ, userID, ip, errCode, username string) string {
	m := map[string]any{"id": "x", "time": kcT0 + dt.Milliseconds(), "type": typ, "realmId": "Acme", "clientId": "web", "ipAddress": ip}
	if userID != "" {
		m["userId"] = userID
	} else {
		m["userId"] = nil
	}
	if errCode != "" {
		m["error"] = errCode
	}
	if username != "" {
		m["details"] = map[string]string{"auth_method": "openid-connect", "username": username, "redirect_uri": "https://app.example.com/"}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// kcWeek is a few events of every kind, oldest first.
var kcWeek = []string{
	kcLogin,
	kcEvent(1*time.Second, "LOGIN_ERROR", "8d1f0c2e-0000-4000-8000-00000000a11c", "2001:db8:1:2::1", "invalid_user_credentials", "alice@example.com "),
	kcEvent(2*time.Second, "CODE_TO_TOKEN", "8d1f0c2e-0000-4000-8000-00000000a11c", "203.0.113.7", "", ""),
	kcEvent(3*time.Second, "LOGIN_ERROR", "", "2001:db8:1:2:ffff::9", "user_not_found", "mallory"),
	kcEvent(4*time.Second, "LOGIN_ERROR", "", "198.51.100.1", "cookie_not_found", ""),
	kcEvent(5*time.Second, "LOGOUT", "8d1f0c2e-0000-4000-8000-00000000a11c", "203.0.113.7", "", ""),
	kcEvent(6*time.Second, "LOGIN_ERROR", "8d1f0c2e-0000-4000-8000-00000000a11c", "2001:db8:1:3::1", "invalid_user_credentials", "ＡＬＩＣＥ@example.com"),
	kcEvent(7*time.Second, "LOGIN", "5e0d0000-0000-4000-8000-0000000b0b00", "2001:db8:2::1", "", ""),
	kcEvent(8*time.Second, "LOGIN", "", "2002:c000:0204::1", "", "carol"),
	kcEvent(9*time.Second, "LOGIN_ERROR", "", "192.0.2.4", "invalid_user_credentials", "carol"),
}

// kcRaw are the raw identifiers in kcWeek.
var kcRaw = []string{"alice", "mallory", "carol", "example.com", "203.0.113.7", "2001:db8", "2002:c000", "192.0.2.4", "198.51.100.1", "8d1f0c2e", "5e0d0000"}

// kcArray is the events as an indented JSON array, and the line each
// starts on.
func kcArray(events []string) (string, []int) {
	var b strings.Builder
	b.WriteString("[\n")
	line := 2
	var lines []int
	for i, e := range events {
		var ind bytes.Buffer
		json.Indent(&ind, []byte(e), "  ", "  ")
		b.WriteString("  ")
		b.Write(ind.Bytes())
		lines = append(lines, line)
		line += bytes.Count(ind.Bytes(), []byte("\n")) + 1
		if i < len(events)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.String(), lines
}

func TestReadKeycloak(t *testing.T) {
	opts := Options{Format: FormatKeycloak, Key: readKey}
	linesIn := strings.Join(kcWeek, "\n") + "\n"
	arrayIn, arrayLines := kcArray(kcWeek)
	forms := []struct {
		name, in string
	}{{"lines", linesIn}, {"array", arrayIn}}
	var byForm [][]Event
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			evs, les, src := readString(t, "events.json", form.in, opts)
			checkLineErrors(t, "events.json", les, nil)
			if got, want := src.(interface{ Skipped() int }).Skipped(), 3; got != want {
				t.Errorf("Skipped() = %d, want %d (CODE_TO_TOKEN, LOGOUT, and an error naming no user)", got, want)
			}
			if len(evs) != 7 {
				t.Fatalf("%d events, want 7", len(evs))
			}
			wantLines := []int{1, 2, 4, 7, 8, 9, 10}
			if form.name == "array" {
				wantLines = []int{arrayLines[0], arrayLines[1], arrayLines[3], arrayLines[6], arrayLines[7], arrayLines[8], arrayLines[9]}
			}
			wantOutcome := []Outcome{OutcomeSuccess, OutcomeFailure, OutcomeFailure, OutcomeFailure, OutcomeSuccess, OutcomeSuccess, OutcomeFailure}
			wantSec := []int{0, 1, 3, 6, 7, 8, 9}
			for i, ev := range evs {
				if ev.File != "events.json" || ev.Line != wantLines[i] {
					t.Errorf("event %d is of %s:%d, want events.json:%d", i, ev.File, ev.Line, wantLines[i])
				}
				if ev.Call != CallAttempt || ev.Flow != "login" || ev.Tenant != "acme" || ev.Outcome != wantOutcome[i] {
					t.Errorf("event %d: call %d, flow %q, tenant %q, outcome %d; want an attempt of login, acme, outcome %d", i, ev.Call, ev.Flow, ev.Tenant, ev.Outcome, wantOutcome[i])
				}
				if want := time.UnixMilli(kcT0).Add(time.Duration(wantSec[i]) * time.Second); !ev.Time.Equal(want) {
					t.Errorf("event %d: Time = %v, want %v", i, ev.Time, want)
				}
				if ev.Account == "" || !ev.IP.Valid() {
					t.Errorf("event %d has no account or IP: %+v", i, ev)
				}
				if ev.Action != "" || ev.Reasons != nil || ev.Device != "" || ev.Attempt != "" || ev.Fingerprint != "" {
					t.Errorf("event %d has parts Keycloak does not record: %+v", i, ev)
				}
			}
			checkNoRaw(t, evs, kcRaw...)
			alice, alice2, mallory, alice3, bob, carol6to4, carol4 := evs[0], evs[1], evs[2], evs[3], evs[4], evs[5], evs[6]
			if alice.Account != alice2.Account || alice.Account != alice3.Account {
				t.Errorf("three spellings of alice@example.com are accounts %s, %s and %s, want one", alice.Account, alice2.Account, alice3.Account)
			}
			if mallory.Account == alice.Account || bob.Account == alice.Account || carol4.Account != carol6to4.Account {
				t.Error("accounts of different users are equal, or carol's differ")
			}
			if alice2.IP.P != mallory.IP.P || !alice2.IP.V6 {
				t.Errorf("two addresses of 2001:db8:1:2::/64 are %+v and %+v, want one /64", alice2.IP, mallory.IP)
			}
			if alice3.IP.P == alice2.IP.P || alice3.IP.P56 != alice2.IP.P56 || alice3.IP.P48 != alice2.IP.P48 || alice3.IP.P48 == "" {
				t.Errorf("2001:db8:1:3::1 is %+v, 2001:db8:1:2::1 %+v: want another /64 of one /56 and /48", alice3.IP, alice2.IP)
			}
			if bob.IP.P48 == alice2.IP.P48 {
				t.Errorf("2001:db8:2::1 has the /48 of 2001:db8:1::/48")
			}
			if carol6to4.IP != carol4.IP || carol4.IP.V6 || carol4.IP.P56 != "" || alice.IP.V6 {
				t.Errorf("6to4 2002:c000:0204::1 is %+v, 192.0.2.4 %+v: want one IPv4 /32", carol6to4.IP, carol4.IP)
			}
			byForm = append(byForm, evs)
		})
	}
	if len(byForm) == 2 {
		for i := range byForm[0] {
			a, b := byForm[0][i], byForm[1][i]
			a.Line, b.Line = 0, 0
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("event %d: the lines form gives %+v, the array %+v", i, a, b)
			}
		}
	}
}

// TestKeycloak_UnknownUserErrorsCountLikeWrongPasswords: a LOGIN_ERROR for
// a user that does not exist has no userId but names the username tried;
// it is an attempt on that account like a wrong password, or a spray of
// made-up names would go uncounted.
func TestKeycloak_UnknownUserErrorsCountLikeWrongPasswords(t *testing.T) {
	in := kcEvent(0, "LOGIN_ERROR", "8d1f0c2e-0000-4000-8000-00000000a11c", "203.0.113.7", "invalid_user_credentials", "alice") + "\n" +
		kcEvent(time.Second, "LOGIN_ERROR", "", "203.0.113.7", "user_not_found", "nosuchuser") + "\n"
	evs, les, src := readString(t, "events.json", in, Options{Format: FormatKeycloak, Key: readKey})
	checkLineErrors(t, "events.json", les, nil)
	if len(evs) != 2 || src.(interface{ Skipped() int }).Skipped() != 0 {
		t.Fatalf("%d events, %d skipped; want 2 events", len(evs), src.(interface{ Skipped() int }).Skipped())
	}
	wrong, unknown := evs[0], evs[1]
	if unknown.Call != wrong.Call || unknown.Outcome != wrong.Outcome || unknown.IP != wrong.IP || unknown.Account == "" || unknown.Account == wrong.Account {
		t.Errorf("unknown user: %+v; wrong password: %+v", unknown, wrong)
	}
}

func TestTenantOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Acme", "acme"},
		{"my realm", "my_realm"},
		{"example.com", "example_com"},
		{"8d1f0c2e-0000-4000-8000-00000000a11c", "8d1f0c2e-0000-4000-8000-00000000a11c"},
		{"", "default"},
		{"-acme", "default"},
		{"Straße", "default"},
		{strings.Repeat("a", 65), "default"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		if got := tenantOf(tt.in); got != tt.want {
			t.Errorf("tenantOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadKeycloak_BadLines(t *testing.T) {
	ts := strconv.Itoa(kcT0)
	tests := []struct {
		line, wantErr string
	}{
		{`not json`, "it is not a JSON object"},
		{`{"time":` + ts + `,"type":"LOGIN"`, "it is not valid JSON: unexpected end of JSON input"},
		{`{"time":` + ts + `}`, `it has no "type"`},
		{`{"type":"LOGIN","userId":"u"}`, `it has no "time"`},
		{`{"time":null,"type":"LOGIN","userId":"u"}`, `it has no "time"`},
		{`{"time":"2026-11-16T09:00:00Z","type":"LOGIN","userId":"u"}`, `"time" is "2026-11-16T09:00:00Z", not a whole number of epoch milliseconds`},
		{`{"time":1794819600000.5,"type":"LOGIN","userId":"u"}`, `"time" is 1794819600000.5, not a whole number of epoch milliseconds`},
		{`{"time":` + ts + `,"type":7}`, `"type" is a JSON number, want string`},
		{`{"time":` + ts + `,"type":"LOGIN","details":{"username":5}}`, `"details.username" is a JSON number, want string`},
		{`{"time":` + ts + `,"type":"LOGIN","userId":"u","ipAddress":"203.0.113.7:443"}`, "ipAddress is not an IP address"},
		{`{"time":` + ts + `,"type":"LOGIN","userId":"u","ipAddress":"fe80::1%eth0"}`, "ipAddress is not an IP address"},
		{`{"time":` + ts + `,"type":"LOGIN_ERROR","details":{"username":"\u200bbob"}}`,
			"details.username must hold only letters, digits, combining marks and ASCII punctuation: invisible, control, format, symbol and compatibility characters are refused"},
		{`{"time":` + ts + `,"type":"LOGIN_ERROR","details":{"username":"` + strings.Repeat("b", 300) + `"}}`, "details.username must be at most 256 bytes"},
		{`{"time":` + ts + `,"type":"LOGIN","userId":"` + strings.Repeat("u", maxLine) + `"}`, errLongLine.Error()},
	}
	in := kcLogin + "\n"
	var want []string
	for i, tt := range tests {
		in += tt.line + "\n" + kcLogin + "\n"
		want = append(want, strconv.Itoa(2+2*i)+": "+tt.wantErr)
	}
	evs, les, _ := readString(t, "events.json", in, Options{Format: FormatKeycloak, Key: readKey})
	checkLineErrors(t, "events.json", les, want)
	if got, want := len(evs), len(tests)+1; got != want {
		t.Errorf("%d events, want %d (the good lines between the bad)", got, want)
	}
	for _, le := range les {
		for _, raw := range []string{"bob", "203.0.113.7", "fe80"} {
			if strings.Contains(le.Error(), raw) {
				t.Errorf("the error %q names the raw identifier %q", le, raw)
			}
		}
	}
}

func TestReadKeycloak_ArrayBadElements(t *testing.T) {
	in := "[\n" + kcLogin + ",\n5,\n{\"time\": 1}\n,\n" + kcLogin + "]\n"
	evs, les, _ := readString(t, "events.json", in, Options{Format: FormatKeycloak, Key: readKey})
	checkLineErrors(t, "events.json", les, []string{`3: event 2: it is not a JSON object`, `4: event 3: it has no "type"`})
	if len(evs) != 2 || evs[0].Line != 2 || evs[1].Line != 6 {
		t.Errorf("events %+v, want two, of lines 2 and 6", evs)
	}
}

func TestReadKeycloak_ArrayErrorsStopTheFile(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		wantEvents        int
	}{
		{"invalid JSON", "[\n" + kcLogin + ",\n{\"time\": ]", `events.json:3: event 2: invalid character ']' looking for beginning of value (the file cannot be read on)`, 1},
		{"cut short", "[\n" + kcLogin + ",\n" + kcLogin[:20], `events.json:3: event 2: the array of events ends early (the file cannot be read on)`, 1},
		{"something after", "[" + kcLogin + "]\n\n{}", `events.json:3: after the array of events, want another array or the end`, 1},
		{"an element too long", "[" + kcLogin + ",\n{\"a\":\"" + strings.Repeat("x", maxLine+100) + "\"}]", `events.json:2: event 2: ` + errLongLine.Error() + ` (the file cannot be read on)`, 1},
		{"two arrays (two pages of the API)", "[" + kcLogin + "]\n[" + kcLogin + "]", "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := Open("events.json", strings.NewReader(tt.in), Options{Format: FormatKeycloak, Key: readKey})
			if err != nil {
				t.Fatal(err)
			}
			evs, les, err := readAll(t, src)
			if len(les) != 0 {
				t.Errorf("line errors %v", les)
			}
			if got := errString(err); got != tt.wantErr {
				t.Errorf("error:\n got %s\nwant %s", got, tt.wantErr)
			}
			if _, ok := errors.AsType[*LineError](err); ok {
				t.Errorf("the error is a *LineError, but the array cannot be read on")
			}
			if len(evs) != tt.wantEvents {
				t.Errorf("%d events, want %d", len(evs), tt.wantEvents)
			}
		})
	}
}

// TestReadKeycloak_NewestFirstIsAnError: the admin REST API lists events
// newest first; read so, all but the first would be out of order.
func TestReadKeycloak_NewestFirstIsAnError(t *testing.T) {
	newest := []string{kcEvent(time.Hour, "LOGIN", "u", "192.0.2.1", "", "alice"), kcEvent(0, "LOGIN", "u", "192.0.2.1", "", "alice")}
	arr, lines := kcArray(newest)
	for _, tt := range []struct{ in, wantErr string }{
		{arr, `events.json:` + strconv.Itoa(lines[1]) + `: the events are newest first (this one is 2026-11-16T09:00:00Z, the one before 2026-11-16T10:00:00Z): reverse them (jq -c 'reverse[]') to replay them in time order`},
		{strings.Join(newest, "\n"), `events.json:2: the events are newest first (this one is 2026-11-16T09:00:00Z, the one before 2026-11-16T10:00:00Z): reverse the lines (tac) to replay them in time order`},
	} {
		src, err := Open("events.json", strings.NewReader(tt.in), Options{Format: FormatKeycloak, Key: readKey})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = readAll(t, src)
		if got := errString(err); got != tt.wantErr {
			t.Errorf("error:\n got %s\nwant %s", got, tt.wantErr)
		}
	}
	// Within a minute is not newest first: events of one second may come
	// in any order.
	evs, _, _ := readString(t, "events.json", kcEvent(time.Second, "LOGIN", "u", "192.0.2.1", "", "a")+"\n"+kcEvent(0, "LOGIN", "u", "192.0.2.1", "", "a"), Options{Format: FormatKeycloak, Key: readKey})
	if len(evs) != 2 {
		t.Errorf("%d events, want 2", len(evs))
	}
}

func FuzzReadKeycloak(f *testing.F) {
	arr, _ := kcArray(kcWeek[1:2])
	f.Add([]byte(arr))
	f.Add([]byte(kcLogin + "\n" + `{"time":1794819600001,"type":"CODE_TO_TOKEN"}`))
	f.Add([]byte(`[{"time":1,"type":"LOGIN"},5,{}][]`))
	f.Add([]byte(`{"time":1,"type":"LOGIN_ERROR","details":{"username":"x"},"ipAddress":"2002::1"}` + "\n{}\n"))
	f.Add([]byte(tgCheck))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRead(t, b, Options{Format: FormatKeycloak, Key: readKey})
	})
}

// The report says how many events of a Keycloak export were not logins, so
// a short replay of a long export is not a mystery.
func TestRun_ReportsKeycloakEventsThatAreNotLogins(t *testing.T) {
	in := strings.Join(kcWeek, "\n") + "\n"
	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{{
		Name: "events.json",
		Open: func() (Source, error) {
			return Open("events.json", strings.NewReader(in), Options{Format: FormatKeycloak, Key: readKey})
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.NotLogins != 3 || rep.Events != 7 {
		t.Errorf("%d events, %d not logins; want 7 and 3 (CODE_TO_TOKEN, LOGOUT, an error naming no user)", rep.Events, rep.NotLogins)
	}
	var b strings.Builder
	if err := WriteText(&b, &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "; 3 events that are not logins read past") {
		t.Errorf("the table does not say so:\n%s", b.String())
	}
}
