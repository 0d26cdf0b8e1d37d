package replay

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// csvGood is a CSV file of the mapping time=ts,account=user,ip=client_ip,
// outcome=result.
const csvGood = "ts,user,client_ip,result\n2026-11-16T09:00:00Z,alice,192.0.2.1,ok\n"

func TestReadCSV(t *testing.T) {
	at := time.Date(2026, 11, 16, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		mapping string
		in      string
		want    []Event // File, Line, Time, Tenant, Flow, Outcome compared; keys checked apart
	}{
		{"defaults", "time=ts,account=user,ip=client_ip,outcome=result",
			"\xef\xbb\xbfts,user,client_ip,result\r\n2026-11-16T09:00:00Z,alice,192.0.2.1,ok\r\n2026-11-16T10:00:01.5+01:00, Alice ,2001:db8::1,FAILURE\r\n",
			[]Event{{Line: 2, Time: at, Outcome: OutcomeSuccess}, {Line: 3, Time: at.Add(1500 * time.Millisecond), Outcome: OutcomeFailure}}},
		{"columns in another order, more of them, quoted", "time=ts,account=user,ip=client_ip,outcome=result,flow=flow,tenant=realm",
			"id,result,user,extra,client_ip,ts,flow,realm\n1,true,\"alice, the admin\",\"a\nb\",192.0.2.1,2026-11-16T09:00:00Z,otp_login,Acme\n2,0,bob,,,2026-11-16T09:00:01Z,,\n",
			[]Event{{Line: 2, Time: at, Outcome: OutcomeSuccess, Flow: "otp_login", Tenant: "acme"}, {Line: 4, Time: at.Add(time.Second), Outcome: OutcomeFailure}}},
		{"unix seconds", "time=t,account=a,ip=i,outcome=o,time_layout=unix",
			"t,a,i,o\n1794819600,alice,192.0.2.1,1\n1794819600.25,alice,192.0.2.1,0\n",
			[]Event{{Line: 2, Time: at, Outcome: OutcomeSuccess}, {Line: 3, Time: at.Add(250 * time.Millisecond), Outcome: OutcomeFailure}}},
		{"unix milliseconds", "time=t,account=a,ip=i,outcome=o,time_layout=unixms",
			"t,a,i,o\n1794819600001,alice,192.0.2.1,success\n",
			[]Event{{Line: 2, Time: at.Add(time.Millisecond), Outcome: OutcomeSuccess}}},
		{"a Go layout, in UTC", "time=t,account=a,ip=i,outcome=o,time_layout=02/01/2006 15:04:05",
			"t,a,i,o\n16/11/2026 09:00:00,alice,192.0.2.1,error\n",
			[]Event{{Line: 2, Time: at, Outcome: OutcomeFailure}}},
		{"outcome values of its own", "time=t,account=a,ip=i,outcome=o,success=200|302,failure=401",
			"t,a,i,o\n2026-11-16T09:00:00Z,alice,192.0.2.1,302\n2026-11-16T09:00:00Z,alice,192.0.2.1,401\n",
			[]Event{{Line: 2, Time: at, Outcome: OutcomeSuccess}, {Line: 3, Time: at, Outcome: OutcomeFailure}}},
		{"a header only", "time=t,account=a,ip=i,outcome=o", "t,a,i,o\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMapping(tt.mapping)
			if err != nil {
				t.Fatal(err)
			}
			evs, les, _ := readString(t, "e.csv", tt.in, Options{Format: FormatCSV, Mapping: m, Key: readKey})
			checkLineErrors(t, "e.csv", les, nil)
			if len(evs) != len(tt.want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tt.want), evs)
			}
			for i, ev := range evs {
				w := tt.want[i]
				if w.Flow == "" {
					w.Flow = "login"
				}
				if w.Tenant == "" {
					w.Tenant = "default"
				}
				if ev.File != "e.csv" || ev.Line != w.Line || !ev.Time.Equal(w.Time) || ev.Outcome != w.Outcome || ev.Flow != w.Flow || ev.Tenant != w.Tenant || ev.Call != CallAttempt {
					t.Errorf("event %d:\n got %+v\nwant %+v", i, ev, w)
				}
				if ev.Account == "" {
					t.Errorf("event %d has no account", i)
				}
			}
			checkNoRaw(t, evs, "alice", "bob", "192.0.2.1", "2001:db8")
		})
	}
}

func TestReadCSV_Identifiers(t *testing.T) {
	m, err := ParseMapping("time=t,account=a,ip=i,outcome=o,device=d,fingerprint=fp")
	if err != nil {
		t.Fatal(err)
	}
	in := "t,a,i,o,d,fp\n" +
		"2026-11-16T09:00:00Z,Alice,2001:db8:1:2::1,ok,dev-1,pw-fp-1\n" +
		"2026-11-16T09:00:01Z,ALICE ,2001:db8:1:2:ffff::2,fail,dev-1,pw-fp-1\n" +
		"2026-11-16T09:00:02Z,ａｌｉｃｅ,2001:db8:1:ff00::3,fail,,\n" +
		"2026-11-16T09:00:03Z,bob,::ffff:192.0.2.9,fail,dev-2,pw-fp-2\n" +
		"2026-11-16T09:00:04Z,bob,2001:0:4136:e378:8000:63bf:3fff:fdd2,fail,dev-2,pw-fp-2\n" + // Teredo of 192.0.2.45
		"2026-11-16T09:00:05Z,bob,192.0.2.45,fail,dev-2,pw-fp-2\n"
	evs, les, _ := readString(t, "e.csv", in, Options{Format: FormatCSV, Mapping: m, Key: readKey})
	checkLineErrors(t, "e.csv", les, nil)
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6", len(evs))
	}
	checkNoRaw(t, evs, "alice", "ａｌｉｃｅ", "bob", "2001:db8", "192.0.2", "ffff", "4136", "dev-", "pw-fp")
	a1, a2, a3, b1, b2, b3 := evs[0], evs[1], evs[2], evs[3], evs[4], evs[5]
	if a1.Account != a2.Account || a1.Account != a3.Account || b1.Account == a1.Account {
		t.Errorf("accounts %s %s %s, bob %s: want alice's spellings to be one and bob another", a1.Account, a2.Account, a3.Account, b1.Account)
	}
	if a1.Device == "" || a1.Device != a2.Device || a1.Device == b1.Device || a3.Device != "" {
		t.Errorf("devices %q %q %q, bob %q", a1.Device, a2.Device, a3.Device, b1.Device)
	}
	if a1.Fingerprint == "" || a1.Fingerprint != a2.Fingerprint || a1.Fingerprint == b1.Fingerprint || a3.Fingerprint != "" {
		t.Errorf("fingerprints %q %q %q, bob %q", a1.Fingerprint, a2.Fingerprint, a3.Fingerprint, b1.Fingerprint)
	}
	if a1.Device == a1.Fingerprint || a1.Device == a1.Account {
		t.Error("keys of different kinds are equal")
	}
	if a1.IP.P != a2.IP.P || !a1.IP.V6 || a1.IP.P56 != a2.IP.P56 || a1.IP.P48 != a2.IP.P48 {
		t.Errorf("one /64 is %+v and %+v", a1.IP, a2.IP)
	}
	if a3.IP.P == a1.IP.P || a3.IP.P56 == a1.IP.P56 || a3.IP.P48 != a1.IP.P48 {
		t.Errorf("2001:db8:1:ff00::3 is %+v, 2001:db8:1:2::1 %+v: want another /64 and /56 of one /48", a3.IP, a1.IP)
	}
	if b1.IP.V6 || b1.IP.P56 != "" || b2.IP != b3.IP || b2.IP.V6 || b1.IP == b3.IP {
		t.Errorf("IPv4-mapped %+v, Teredo %+v, its IPv4 %+v", b1.IP, b2.IP, b3.IP)
	}
}

func TestReadCSV_BadRows(t *testing.T) {
	m, err := ParseMapping("time=t,account=a,ip=i,outcome=o,flow=f")
	if err != nil {
		t.Fatal(err)
	}
	good := "2026-11-16T09:00:00Z,alice,192.0.2.1,ok,login"
	tests := []struct {
		row, wantErr string
		lines        int
	}{
		{"2026-11-16T09:00:00Z,alice,192.0.2.1,ok", "the row has 4 fields, the header 5", 1},
		{"2026-11-16T09:00:00Z,alice,192.0.2.1,ok,login,x", "the row has 6 fields, the header 5", 1},
		{"yesterday,alice,192.0.2.1,ok,login", `column "t": "yesterday" is not an RFC 3339 time (set time_layout= in the mapping for another)`, 1},
		{"2026-11-16T09:00:00Z,alice,192.0.2.1,maybe,login", `column "o": "maybe" is neither a success (success, ok, true, 1) nor a failure (failure, fail, false, 0, error)`, 1},
		{"2026-11-16T09:00:00Z,alice,192.0.2.300,ok,login", `column "i" is not an IP address`, 1},
		{"2026-11-16T09:00:00Z,alice,192.0.2.0/24,ok,login", `column "i" is not an IP address`, 1},
		{"2026-11-16T09:00:00Z,,192.0.2.1,ok,login", `column "a" must not be empty`, 1},
		{"2026-11-16T09:00:00Z,al\u00adice,192.0.2.1,ok,login", `column "a" must hold only letters, digits, combining marks and ASCII punctuation: invisible, control, format, symbol and compatibility characters are refused`, 1},
		{"2026-11-16T09:00:00Z,alice,192.0.2.1,ok,Login", `column "f": "Login" is not a flow name (1 to 32 lower-case letters, digits and underscores, starting with a letter)`, 1},
		{"2026-11-16T09:00:00Z,al\"ice,192.0.2.1,ok,login", `bare " in non-quoted-field`, 1},
		{"2026-11-16T09:00:00Z,\"alice\nof two lines\",192.0.2.1,yes,login", `column "o": "yes" is neither a success (success, ok, true, 1) nor a failure (failure, fail, false, 0, error)`, 2},
	}
	in := "t,a,i,o,f\n" + good + "\n"
	var want []string
	line := 3
	for _, tt := range tests {
		in += tt.row + "\n" + good + "\n"
		want = append(want, strconv.Itoa(line)+": "+tt.wantErr)
		line += tt.lines + 1
	}
	evs, les, _ := readString(t, "e.csv", in, Options{Format: FormatCSV, Mapping: m, Key: readKey})
	checkLineErrors(t, "e.csv", les, want)
	if got, want := len(evs), len(tests)+1; got != want {
		t.Errorf("%d events, want %d (the good rows between the bad)", got, want)
	}
	for _, le := range les {
		for _, raw := range []string{"alice", "192.0.2"} {
			if strings.Contains(le.Error(), raw) {
				t.Errorf("the error %q names the raw identifier %q", le, raw)
			}
		}
	}
}

// TestReadCSV_ALongRowStopsTheFile: a row over maxLine (an unclosed quote
// that would swallow the file) is not held in memory.
func TestReadCSV_ALongRowStopsTheFile(t *testing.T) {
	m, _ := ParseMapping("time=t,account=a,ip=i,outcome=o")
	in := "t,a,i,o\n2026-11-16T09:00:00Z,alice,192.0.2.1,ok\n2026-11-16T09:00:00Z,\"" + strings.Repeat("alice,\n", maxLine/7+10)
	src, err := Open("e.csv", strings.NewReader(in), Options{Format: FormatCSV, Mapping: m, Key: readKey})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := readAll(t, src)
	if len(evs) != 1 || err == nil || !strings.Contains(err.Error(), errLongLine.Error()) {
		t.Errorf("%d events, error %v; want 1 event, then an error saying the row is too long", len(evs), err)
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte(csvGood))
	f.Add([]byte("ts,user,client_ip,result,extra\n1,2,3,4,5\n\"2026-11-16T09:00:00Z\",\"bob\",\"::1\",\"fail\"\n"))
	f.Add([]byte("ts,user,client_ip,result\n2026-11-16T09:00:00Z,ａｌｉｃｅ,2002:c000:0204::1,true\nx,\"y\nz\",,\n"))
	f.Add([]byte(tgCheck))
	m, err := ParseMapping("time=ts,account=user,ip=client_ip,outcome=result,flow=result")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRead(t, b, Options{Format: FormatCSV, Mapping: m, Key: readKey})
	})
}
