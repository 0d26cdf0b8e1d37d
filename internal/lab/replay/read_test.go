package replay

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// readKey is the key the reader tests hash identifiers under.
var readKey = []byte("0123456789abcdef0123456789abcdef")

// readAll reads src to its end: its events and its *LineErrors in order,
// and the error that stopped it (nil at io.EOF).
func readAll(t testing.TB, src Source) (evs []Event, lineErrs []*LineError, stop error) {
	t.Helper()
	for range 100000 {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			return evs, lineErrs, nil
		}
		if le, ok := errors.AsType[*LineError](err); ok {
			lineErrs = append(lineErrs, le)
			continue
		}
		if err != nil {
			return evs, lineErrs, err
		}
		evs = append(evs, ev)
	}
	t.Fatal("the source does not end")
	return
}

// readString opens s with opts and reads it all, failing on an Open error
// or an error that stops it.
func readString(t *testing.T, name, s string, opts Options) ([]Event, []*LineError, Source) {
	t.Helper()
	src, err := Open(name, strings.NewReader(s), opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	evs, les, err := readAll(t, src)
	if err != nil {
		t.Fatalf("%s: Next: %v", name, err)
	}
	return evs, les, src
}

// checkNoRaw fails if a string field of an event contains one of raws.
func checkNoRaw(t *testing.T, evs []Event, raws ...string) {
	t.Helper()
	for _, ev := range evs {
		v := reflect.ValueOf(ev)
		var fields []string
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.String:
				fields = append(fields, f.String())
			case reflect.Slice:
				for j := range f.Len() {
					fields = append(fields, f.Index(j).String())
				}
			case reflect.Struct:
				for j := range f.NumField() {
					if f.Field(j).Kind() == reflect.String {
						fields = append(fields, f.Field(j).String())
					}
				}
			}
		}
		for _, f := range fields {
			for _, raw := range raws {
				if strings.Contains(strings.ToLower(f), strings.ToLower(raw)) {
					t.Errorf("%s:%d: a field is %q, which contains the raw identifier %q", ev.File, ev.Line, f, raw)
				}
			}
		}
	}
}

// checkLineErrors compares a reader's *LineErrors with want, each
// "line: message".
func checkLineErrors(t *testing.T, file string, got []*LineError, want []string) {
	t.Helper()
	var g []string
	for _, le := range got {
		if le.File != file {
			t.Errorf("%v: File = %q, want %q", le, le.File, file)
		}
		g = append(g, le.Error())
	}
	w := make([]string, len(want))
	for i, s := range want {
		w[i] = file + ":" + s
	}
	if len(g) != len(w) || len(g) > 0 && !reflect.DeepEqual(g, w) {
		t.Errorf("line errors:\n got %s\nwant %s", strings.Join(g, "\n     "), strings.Join(w, "\n     "))
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{FormatTollgate, FormatKeycloak, FormatCSV} {
		if got, err := ParseFormat(f.String()); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v, want %v", f.String(), got, err, f)
		}
	}
	if _, err := ParseFormat("json"); err == nil || err.Error() != `replay: unknown format "json" (want tollgate, keycloak or csv)` {
		t.Errorf("ParseFormat(json) = %v", err)
	}
	if got, want := Format(9).String(), "Format(9)"; got != want {
		t.Errorf("Format(9).String() = %q, want %q", got, want)
	}
}

func TestParseMapping(t *testing.T) {
	tests := []struct {
		name, in string
		want     Mapping
		wantErr  string
	}{
		{name: "required", in: "time=ts,account=user,ip=client_ip,outcome=result",
			want: Mapping{Time: "ts", Account: "user", IP: "client_ip", Outcome: "result"}},
		{name: "everything, with spaces", in: " time = ts , account=user,ip=ip,outcome=r,flow=f,tenant=t,device=d,fingerprint=fp,success=yes|OK,failure=no,time_layout=unixms",
			want: Mapping{Time: "ts", Account: "user", IP: "ip", Outcome: "r", Flow: "f", Tenant: "t", Device: "d", Fingerprint: "fp",
				Success: []string{"yes", "OK"}, Failure: []string{"no"}, TimeLayout: "unixms"}},
		{name: "a layout with a comma", in: "time=ts,time_layout=Mon, 02 Jan 2006 15:04:05 MST,account=u,ip=i,outcome=o",
			want: Mapping{Time: "ts", Account: "u", IP: "i", Outcome: "o", TimeLayout: "Mon, 02 Jan 2006 15:04:05 MST"}},
		{name: "no ip", in: "time=ts,account=user,outcome=result",
			wantErr: "replay: mapping: ip= is required (as in time=ts,account=user,ip=client_ip,outcome=result)"},
		{name: "unknown key", in: "when=ts,account=user,ip=i,outcome=o",
			wantErr: `replay: mapping: "when=ts" is not key=value with a key of time, account, ip, outcome, flow, tenant, device, fingerprint, success, failure, time_layout`},
		{name: "twice", in: "time=ts,account=a,ip=i,outcome=o,account=b", wantErr: "replay: mapping: account is given twice"},
		{name: "empty", in: "time=,account=a,ip=i,outcome=o", wantErr: "replay: mapping: time is empty"},
		{name: "empty outcome value", in: "time=t,account=a,ip=i,outcome=o,success=ok||yes", wantErr: "replay: mapping: success has an empty value"},
		{name: "a success that fails", in: "time=t,account=a,ip=i,outcome=o,success=ok|no,failure=NO",
			wantErr: `replay: mapping: outcome "no" is both a success and a failure`},
		{name: "a default failure made a success", in: "time=t,account=a,ip=i,outcome=o,success=ok|0",
			wantErr: `replay: mapping: outcome "0" is both a success and a failure`},
		{name: "not a layout", in: "time=t,account=a,ip=i,outcome=o,time_layout=iso",
			wantErr: `replay: mapping: time_layout "iso" is not rfc3339, unix, unixms or a Go layout (such as 2006-01-02 15:04:05)`},
		{name: "a comma in a column name is a key", in: "time=ts,when=x,account=a,ip=i,outcome=o",
			wantErr: `replay: mapping: "when=x" is not key=value with a key of time, account, ip, outcome, flow, tenant, device, fingerprint, success, failure, time_layout`},
		{name: "empty string", in: "", wantErr: `replay: mapping: "" is not key=value with a key of time, account, ip, outcome, flow, tenant, device, fingerprint, success, failure, time_layout`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMapping(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseMapping(%q) error = %v, want %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMapping(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseMapping(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestOpen_Options(t *testing.T) {
	m := Mapping{Time: "t", Account: "a", IP: "i", Outcome: "o"}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no format", Options{}, "replay: f: no format given"},
		{"keycloak without a key", Options{Format: FormatKeycloak}, "replay: f: -format keycloak needs a key of at least 16 bytes to hash identifiers with"},
		{"csv with a short key", Options{Format: FormatCSV, Mapping: m, Key: []byte("short")}, "replay: f: -format csv needs a key of at least 16 bytes to hash identifiers with"},
		{"csv without a mapping", Options{Format: FormatCSV, Key: readKey}, "replay: mapping: time= is required (as in time=ts,account=user,ip=client_ip,outcome=result)"},
		{"tollgate needs no key", Options{Format: FormatTollgate}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open("f", strings.NewReader(""), tt.opts)
			if got := errString(err); got != tt.wantErr {
				t.Errorf("Open error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestOpen_WrongFormatIsAnErrorNotSilence: a file read in another format
// than its own fails at once with an error that names the file, the line,
// the format expected and the one it looks like, and is not a *LineError,
// which a replay that skips bad lines would skip.
func TestOpen_WrongFormatIsAnErrorNotSilence(t *testing.T) {
	csvMapping := Mapping{Time: "ts", Account: "user", IP: "client_ip", Outcome: "result"}
	tests := []struct {
		name    string
		file    string
		in      string
		opts    Options
		wantErr string
	}{
		{"keycloak array as tollgate", "events.json", "[\n  " + kcLogin + "\n]\n", Options{Format: FormatTollgate},
			`events.json:1: not a tollgate decision log line: it is not a JSON object (is it -format keycloak?)`},
		{"keycloak lines as tollgate", "events.json", "\n" + kcLogin + "\n", Options{Format: FormatTollgate},
			`events.json:2: not a tollgate decision log line: it has no "call" (is it -format keycloak?)`},
		{"csv as tollgate", "events.csv", csvGood, Options{Format: FormatTollgate},
			`events.csv:1: not a tollgate decision log line: it is not a JSON object (is it -format csv?)`},
		{"tollgate as keycloak", "decisions.log", tgCheck + "\n", Options{Format: FormatKeycloak, Key: readKey},
			`decisions.log:1: not a Keycloak event: it has no "type" (is it -format tollgate?)`},
		{"tollgate in an array as keycloak", "decisions.json", "[\n" + tgCheck + "\n]", Options{Format: FormatKeycloak, Key: readKey},
			`decisions.json:2: not a Keycloak event: event 1: it has no "type" (is it -format tollgate?)`},
		{"csv as keycloak", "events.csv", csvGood, Options{Format: FormatKeycloak, Key: readKey},
			`events.csv:1: not a Keycloak event file: it is neither a JSON array of events nor a JSON object a line (is it -format csv?)`},
		{"keycloak admin events", "admin.json", `{"time":1,"realmId":"acme","operationType":"CREATE","resourceType":"USER"}`, Options{Format: FormatKeycloak, Key: readKey},
			`admin.json:1: not a Keycloak event: it is an admin event (it has an "operationType"), not a login event`},
		{"tollgate as csv", "decisions.log", tgCheck + "\n", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`decisions.log:1: not a CSV file: it is JSON (is it -format tollgate?)`},
		{"keycloak as csv", "events.json", "\n\n[" + kcLogin + "]", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`events.json:3: not a CSV file: it is JSON (is it -format keycloak?)`},
		{"csv of other columns", "events.csv", "when,who,ip,result\n", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`events.csv:1: the CSV header has no columns "ts" (time=), "user" (account=), "client_ip" (ip=) of the mapping; its columns are "when", "who", "ip", "result"`},
		{"csv separated by semicolons", "events.csv", "ts;user;client_ip;result\n", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`events.csv:1: the CSV header has no columns "ts" (time=), "user" (account=), "client_ip" (ip=), "result" (outcome=) of the mapping; its columns are "ts;user;client_ip;result" (only commas separate columns)`},
		{"csv of another time layout", "events.csv", "ts,user,client_ip,result\n1763283600,alice,192.0.2.1,ok\n", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`events.csv:2: not a CSV row of the mapping: column "ts": "1763283600" is not an RFC 3339 time (set time_layout= in the mapping for another)`},
		{"csv with a bare quote in the header", "events.csv", "ts,us\"er\n", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`events.csv:1: not a CSV header row: bare " in non-quoted-field`},
		{"empty csv", "events.csv", "\n\n", Options{Format: FormatCSV, Key: readKey, Mapping: csvMapping},
			`events.csv: the file is empty: a CSV file starts with a header row`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := Open(tt.file, strings.NewReader(tt.in), tt.opts)
			if err == nil {
				_, _, err = readAll(t, src)
			}
			if err == nil {
				t.Fatalf("no error, want %s", tt.wantErr)
			}
			if _, ok := errors.AsType[*LineError](err); ok {
				t.Errorf("the error is a *LineError, which a replay may skip: %v", err)
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("error:\n got %s\nwant %s", got, tt.wantErr)
			}
		})
	}
}

// TestOpen_EmptyJSONFilesHaveNoEvents: an empty log is no traffic, not an
// error.
func TestOpen_EmptyJSONFilesHaveNoEvents(t *testing.T) {
	for _, opts := range []Options{{Format: FormatTollgate}, {Format: FormatKeycloak, Key: readKey}} {
		for _, in := range []string{"", "\n \n", "\xef\xbb\xbf"} {
			evs, les, _ := readString(t, "empty", in, opts)
			if len(evs) != 0 || len(les) != 0 {
				t.Errorf("%v %q: %d events, %d line errors, want none", opts.Format, in, len(evs), len(les))
			}
		}
	}
	evs, les, _ := readString(t, "empty", "[]", Options{Format: FormatKeycloak, Key: readKey})
	if len(evs) != 0 || len(les) != 0 {
		t.Errorf("[]: %d events, %d line errors, want none", len(evs), len(les))
	}
}

// checkFuzzEvent is what the fuzz targets require of every event.
func checkFuzzEvent(t *testing.T, ev Event) {
	t.Helper()
	if ev.Flow == "" {
		t.Errorf("%s:%d: an event without a flow: %+v", ev.File, ev.Line, ev)
	}
	if ev.Call < CallCheck || ev.Call > CallSend {
		t.Errorf("%s:%d: an event with call %d: %+v", ev.File, ev.Line, ev.Call, ev)
	}
	if ev.Tenant == "" || ev.File == "" || ev.Line < 1 {
		t.Errorf("an event without a tenant, file or line: %+v", ev)
	}
	if ev.Outcome > OutcomePasswordChanged {
		t.Errorf("%s:%d: an event with outcome %d", ev.File, ev.Line, ev.Outcome)
	}
}

// fuzzRead opens b and reads it to the end, checking every event.
func fuzzRead(t *testing.T, b []byte, opts Options) {
	src, err := Open("fuzz", strings.NewReader(string(b)), opts)
	if err != nil {
		if _, ok := errors.AsType[*LineError](err); ok {
			t.Fatalf("Open returned a *LineError: %v", err)
		}
		return
	}
	for range len(b) + 2 {
		ev, err := src.Next()
		if _, ok := errors.AsType[*LineError](err); ok {
			continue
		}
		if err != nil {
			return
		}
		checkFuzzEvent(t, ev)
	}
	t.Fatalf("more events and line errors than the %d bytes of input have lines", len(b))
}
