package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// strictPolicy is the built-in policy with two free attempts, a first
// delay of 30 s, and spray limits a fifth of the built-in ones.
const strictPolicy = `
flows:
  login:
    rules:
      - {name: account_backoff, free: 2, base: 30s}
      - name: ip_spray
        windows: [{window: 1h, limit: 2}, {window: 24h, limit: 4}]
      - name: ip_spray_56
        windows: [{window: 1h, limit: 6}, {window: 24h, limit: 20}]
      - name: ip_spray_48
        windows: [{window: 1h, limit: 10}, {window: 24h, limit: 40}]
`

func candidates(t testing.TB) []Candidate {
	t.Helper()
	cs, err := loadCandidates()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func loadCandidates() ([]Candidate, error) {
	strict, err := config.LoadPolicy([]byte(strictPolicy))
	if err != nil {
		return nil, err
	}
	return []Candidate{{Name: "builtin", Policy: config.DefaultPolicy()}, {Name: "strict", Policy: strict}}, nil
}

// weekReplay is the generated week and its replay through candidates.
type weekReplay struct {
	w   week
	rep Report
	err error
}

// replayedWeek replays the generated week as one input once for the tests
// that read it: a run is deterministic, and they only read the report.
var replayedWeek = sync.OnceValue(func() (r weekReplay) {
	r.w = generateWeek()
	cs, err := loadCandidates()
	if err != nil {
		r.err = err
		return r
	}
	r.rep, r.err = Run(context.Background(), Config{Candidates: cs, Inputs: []Input{inputOf("week.csv", r.w.events, nil)}})
	return r
})

// aReplayedWeek returns replayedWeek's week and report.
func aReplayedWeek(t *testing.T) (week, Report) {
	t.Helper()
	r := replayedWeek()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.w, r.rep
}

func TestReplay_AGeneratedWeek(t *testing.T) {
	w, rep := aReplayedWeek(t)
	var text bytes.Buffer
	if err := WriteText(&text, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("groups %v\n%s", w.groups, text.String())

	if got, want := rep.Events, int64(len(w.events)); got != want {
		t.Errorf("events = %d, want %d", got, want)
	}
	// Pass 1 tells exactly the generated real users' attempts from the
	// attackers'.
	if got, want := rep.RealAttempts, int64(w.real); got != want {
		t.Errorf("real attempts = %d, want %d (the generated users')", got, want)
	}
	if rep.Baseline != nil {
		t.Errorf("baseline = %+v, want none (no recorded verdicts)", rep.Baseline)
	}
	builtin, strict := rep.Candidates[0].Total, rep.Candidates[1].Total
	others := int64(w.groups["botnet"] + w.groups["bruteforce"])

	// The built-in policy delays and challenges no real user: not the
	// office behind one address while a botnet sprays its accounts, not
	// the users who forget their password, not the CEO whose account is
	// under attack all week (the device token).
	if builtin.RealDelayed != 0 || builtin.RealChallenged != 0 || builtin.SuccessesRefused != 0 {
		t.Errorf("builtin: real users delayed %d, challenged %d, successes refused %d; want none",
			builtin.RealDelayed, builtin.RealChallenged, builtin.SuccessesRefused)
	}
	// ... while it stops most of the attackers' attempts.
	if builtin.OtherAttempts != others || builtin.OtherStopped*10 < others*8 {
		t.Errorf("builtin: stopped %d of %d others, want at least 80%% of %d", builtin.OtherStopped, builtin.OtherAttempts, others)
	}
	// The strict policy stops more, and pays with real users' time.
	if strict.OtherStopped <= builtin.OtherStopped || strict.RealDelayed == 0 || strict.RealDelayMS == 0 {
		t.Errorf("strict: stopped %d (builtin %d), real users delayed %d for %dms; want more stopped and some delayed",
			strict.OtherStopped, builtin.OtherStopped, strict.RealDelayed, strict.RealDelayMS)
	}

	// The engine is deterministic on the virtual clock: the exact figures.
	tests := []struct {
		name      string
		got, want int64
	}{
		{"real attempts", rep.RealAttempts, 800},
		{"other attempts", builtin.OtherAttempts, 3896},
		{"builtin: others stopped", builtin.OtherStopped, 3368},
		{"builtin: stopped by account_backoff", builtin.StoppedBy["account_backoff"], 1568},
		{"builtin: stopped by ip_spray", builtin.StoppedBy["ip_spray"], 1800},
		{"strict: others stopped", strict.OtherStopped, 3534},
		{"strict: stopped by account_backoff", strict.StoppedBy["account_backoff"], 1574},
		{"strict: stopped by ip_spray", strict.StoppedBy["ip_spray"], 1960},
		{"strict: real users delayed", strict.RealDelayed, 6},
		{"strict: real users challenged", strict.RealChallenged, 0},
		{"strict: real users' delay in ms", strict.RealDelayMS, 65000},
		{"strict: longest delay in ms", strict.RealDelayMaxMS, 15000},
		{"strict: successes refused", strict.SuccessesRefused, 3},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	// The strict spray limits no longer hit the office's NAT address: the
	// botnet's guesses put its users' accounts in backoff, but each user
	// signs in from the office, a known network of her account, at once,
	// and her success takes her typo off the address's spray list before
	// it fills (before known networks the office's users waited out their
	// accounts' delays with their typos on that list: 50 challenged, 65
	// successes refused, and the office's address the most refused).
	for _, p := range rep.Candidates[1].TopPrefixes {
		if p.Prefix == "v4-offic" {
			t.Errorf("strict: the office's address among the most refused: %+v", rep.Candidates[1].TopPrefixes)
		}
	}
	golden(t, "replay-week.txt", text.Bytes())
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update to accept):\n%s\nwant:\n%s", path, got, want)
	}
}

func TestReplay_OutOfOrderInputIsALineError(t *testing.T) {
	at := weekStart
	events := []Event{
		{File: "a.csv", Line: 1, Time: at, Flow: "login", Call: CallAttempt, Outcome: OutcomeFailure, Account: "a", IP: v4("x")},
		{File: "a.csv", Line: 2, Time: at.Add(2 * time.Minute), Flow: "login", Call: CallAttempt, Outcome: OutcomeFailure, Account: "a", IP: v4("x")},
		{File: "a.csv", Line: 3, Time: at.Add(90 * time.Second), Flow: "login", Call: CallAttempt, Outcome: OutcomeFailure, Account: "a", IP: v4("x")}, // 30 s back: fine
		{File: "a.csv", Line: 4, Time: at, Flow: "login", Call: CallAttempt, Outcome: OutcomeFailure, Account: "a", IP: v4("x")},                       // 2 min back
	}
	_, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("a.csv", events, nil)}})
	var le *LineError
	if !errors.As(err, &le) || le.File != "a.csv" || le.Line != 4 || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("Run = %v, want a *LineError out of order at a.csv:4", err)
	}

	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("a.csv", events, nil)}, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 3 || rep.Skipped != 1 || len(rep.SkippedExamples) != 1 || !strings.HasPrefix(rep.SkippedExamples[0], "a.csv:4: out of order") {
		t.Errorf("with SkipBad: events %d, skipped %d %q; want 3, 1, a.csv:4: out of order", rep.Events, rep.Skipped, rep.SkippedExamples)
	}
}

func TestReplay_SkipBadCountsSkippedLines(t *testing.T) {
	w := generateWeek()
	errs := map[int]error{}
	for _, i := range []int{0, 10, 11, 500, len(w.events) - 1} {
		errs[i] = &LineError{File: "week.csv", Line: i + 1, Err: errors.New("bad time")}
	}
	in := inputOf("week.csv", w.events, errs)
	_, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{in}})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 {
		t.Fatalf("without SkipBad: %v, want the *LineError of line 1", err)
	}
	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{in}, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Skipped, int64(len(errs)); got != want {
		t.Errorf("skipped = %d, want %d", got, want)
	}
	if got, want := rep.Events, int64(len(w.events)-len(errs)); got != want {
		t.Errorf("events = %d, want %d", got, want)
	}
	if got, want := len(rep.SkippedExamples), maxExamples; got != want {
		t.Errorf("%d examples, want %d", got, want)
	}

	// An error that is not a line's stops the run whatever SkipBad says.
	broken := Input{Name: "b", Open: func() (Source, error) { return errSource{io.ErrUnexpectedEOF}, nil }}
	if _, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{broken}, SkipBad: true}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Run = %v, want the read error", err)
	}
}

type errSource struct{ err error }

func (s errSource) Next() (Event, error) { return Event{}, s.err }

func TestReplay_MergesInputsByTime(t *testing.T) {
	w, one := aReplayedWeek(t)
	var a, b []Event
	for i, ev := range w.events {
		if i%3 == 0 {
			a = append(a, ev)
		} else {
			b = append(b, ev)
		}
	}
	two, err := Run(context.Background(), Config{Candidates: candidates(t), Inputs: []Input{inputOf("a", a, nil), inputOf("b", b, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	one.Inputs, two.Inputs = nil, nil
	j1, _ := json.Marshal(one)
	j2, _ := json.Marshal(two)
	if !bytes.Equal(j1, j2) {
		t.Errorf("two inputs merged:\n%s\nwant the same as one:\n%s", j2, j1)
	}
}

// decisionLog is a small decision log (tollgate's own, in shadow mode, so
// every check proceeded, except one the original refused).
func decisionLog() []Event {
	at := weekStart
	var evs []Event
	add := func(d time.Duration, ev Event) {
		ev.File, ev.Line, ev.Time, ev.Tenant = "decisions.jsonl", len(evs)+1, at.Add(d), "default"
		if ev.Flow == "" {
			ev.Flow = "login"
		}
		evs = append(evs, ev)
	}
	owner, home := "k-owner", v4("p-home")
	// The owner logs in and gets device token D1.
	add(0, Event{Call: CallCheck, Account: owner, IP: home, Attempt: "a0", Action: "proceed"})
	add(time.Second, Event{Call: CallReport, Outcome: OutcomeSuccess, Account: owner, IP: home, Attempt: "a0", Issued: "D1"})
	// An attacker fails 20 times on the owner's account from 20 addresses.
	for i := range 20 {
		id := fmt.Sprintf("x%d", i)
		ip := v4(fmt.Sprintf("p-attacker-%02d", i))
		add(time.Minute+time.Duration(i)*time.Second, Event{Call: CallCheck, Account: owner, IP: ip, Attempt: id, Action: "proceed"})
		add(time.Minute+time.Duration(i)*time.Second+time.Millisecond, Event{Call: CallReport, Outcome: OutcomeFailure, Account: owner, IP: ip, Attempt: id})
	}
	// The owner, with D1, mistypes and succeeds: the device token lets it
	// through whatever the attacker did.
	add(time.Hour, Event{Call: CallCheck, Account: owner, IP: v4("p-cafe"), Device: "D1", Attempt: "a1", Action: "proceed"})
	add(time.Hour+time.Second, Event{Call: CallReport, Outcome: OutcomeFailure, Account: owner, IP: v4("p-cafe"), Device: "D1", Attempt: "a1"})
	add(time.Hour+10*time.Second, Event{Call: CallCheck, Account: owner, IP: v4("p-cafe"), Device: "D1", Attempt: "a2", Action: "proceed"})
	add(time.Hour+11*time.Second, Event{Call: CallReport, Outcome: OutcomeSuccess, Account: owner, IP: v4("p-cafe"), Device: "D1", Attempt: "a2", Issued: "D1"})
	// A check the original refused (no attempt id): a candidate that lets
	// it through leaves it unreported.
	add(2*time.Hour, Event{Call: CallCheck, Account: "k-other", IP: v4("p-x"), Action: "captcha", Reasons: []string{"ip_spray"}})
	// A report without an attempt, and one whose check is not in the log.
	add(2*time.Hour+time.Second, Event{Call: CallReport, Outcome: OutcomeFailure, Account: "k-other", IP: v4("p-x")})
	add(2*time.Hour+2*time.Second, Event{Call: CallReport, Outcome: OutcomeFailure, Account: "k-other", IP: v4("p-x"), Attempt: "gone"})
	// A send.
	add(3*time.Hour, Event{Call: CallSend, Flow: "otp_send", Action: "proceed"})
	return evs
}

func TestReplay_DecisionLog(t *testing.T) {
	rep, err := Run(context.Background(), Config{Candidates: candidates(t), Inputs: []Input{inputOf("decisions.jsonl", decisionLog(), nil)}})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	_ = WriteText(&text, &rep)
	t.Log("\n" + text.String())
	if rep.Sends != 1 || rep.Attempts != 24 || rep.RealAttempts != 3 {
		t.Errorf("sends %d, attempts %d, real %d; want 1, 24, 3", rep.Sends, rep.Attempts, rep.RealAttempts)
	}
	if rep.Baseline == nil || rep.Baseline.DelayUnknown || rep.Baseline.Total.OtherStopped != 1 || rep.Baseline.Total.StoppedBy["ip_spray"] != 1 {
		t.Fatalf("baseline = %+v, want the original's one captcha for ip_spray", rep.Baseline)
	}
	for _, c := range rep.Candidates {
		f := c.Total
		// The owner's three attempts go ahead under both: the first before
		// any failure, the other two with the device token D1 (without it,
		// 20 failures would delay them).
		if f.RealAttempts != 3 || f.RealDelayed != 0 || f.RealChallenged != 0 {
			t.Errorf("%s: the owner's attempts %d, delayed %d, challenged %d; want 3, 0, 0", c.Name, f.RealAttempts, f.RealDelayed, f.RealChallenged)
		}
		if c.Unreported != 1 {
			t.Errorf("%s: unreported = %d, want 1 (the check the original refused)", c.Name, c.Unreported)
		}
		if c.Errors != 0 {
			t.Errorf("%s: errors %d %q", c.Name, c.Errors, c.ErrorExamples)
		}
	}
	// The attacker, one attempt a second: 5 free, then delays of 1 s, 2 s,
	// ... (built-in); 2 free, then 30 s (strict).
	if got := rep.Candidates[0].Total.OtherStopped; got != 11 {
		t.Errorf("builtin stopped %d of the attacker's 20, want 11", got)
	}
	if got := rep.Candidates[1].Total.OtherStopped; got != 18 {
		t.Errorf("strict stopped %d of the attacker's 20, want 18", got)
	}
}

// TestReplay_WithoutTheDeviceTokenTheOwnerWaits is the control of
// TestReplay_DecisionLog: the same log without device ids delays the
// owner, so the device token is what let it through there.
func TestReplay_WithoutTheDeviceTokenTheOwnerWaits(t *testing.T) {
	evs := decisionLog()
	for i := range evs {
		evs[i].Device, evs[i].Issued = "", ""
	}
	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("d", evs, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Candidates[0].Total; f.RealDelayed == 0 {
		t.Errorf("owner without device token: delayed %d, want some", f.RealDelayed)
	}
}

func TestReplay_CountsEventsItsPolicyCannotTake(t *testing.T) {
	evs := []Event{{File: "f", Line: 1, Time: weekStart, Flow: "checkout", Call: CallAttempt, Outcome: OutcomeFailure, Account: "a", IP: v4("x")}}
	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("f", evs, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Candidates[0]; c.Errors != 1 || len(c.ErrorExamples) != 1 || !strings.Contains(c.ErrorExamples[0], "flow") {
		t.Errorf("errors %d %q, want 1 about the flow", c.Errors, c.ErrorExamples)
	}
}

func TestReplay_StopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := Input{Name: "big", Open: func() (Source, error) { return newBigSource(100_000), nil }}
	if _, err := Run(ctx, Config{Candidates: candidates(t)[:1], Inputs: []Input{in}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestReplay_ClosesItsSources(t *testing.T) {
	var opened, closed int
	in := Input{Name: "c", Open: func() (Source, error) {
		opened++
		return &closingSource{Source: &sliceSource{events: decisionLog()}, closed: &closed}, nil
	}}
	if _, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{in}}); err != nil {
		t.Fatal(err)
	}
	if opened != 2 || closed != 2 {
		t.Errorf("opened %d, closed %d; want 2 and 2 (one per pass)", opened, closed)
	}
}

type closingSource struct {
	Source
	closed *int
}

func (s *closingSource) Close() error { *s.closed++; return nil }

func TestReplay_Progress(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 70,000 events: runs in the full make test, not under -short")
	}
	var buf bytes.Buffer
	in := Input{Name: "big", Open: func() (Source, error) { return newBigSource(70_000), nil }}
	if _, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{in}, Progress: &buf}); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "replay: pass 1: 70.0k events, done\n") || !strings.Contains(got, "replay: pass 2: 70.0k events, done\n") {
		t.Errorf("progress:\n%s", got)
	}
}

func TestWriteJSON(t *testing.T) {
	rep, err := Run(context.Background(), Config{Candidates: candidates(t), Inputs: []Input{inputOf("decisions.jsonl", decisionLog(), nil)}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "replay-decisions.json", buf.Bytes())
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Candidates[1].Name != "strict" || back.Candidates[1].Total.OtherStopped != rep.Candidates[1].Total.OtherStopped {
		t.Errorf("read back %+v", back.Candidates)
	}
	for _, key := range []string{`"sends_not_replayed": 1`, `"baseline": {`, `"top_prefixes": [`, `"real_delay_ms": `, `"stopped_by": {`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestWriteText_ShowsFlowsAndPrefixesAsEightCharacters(t *testing.T) {
	evs := decisionLog()
	for i := range 12 { // a second flow, and a long prefix key
		evs = append(evs, Event{File: "d", Line: 100 + i, Time: weekStart.Add(4*time.Hour + time.Duration(i)*time.Second), Tenant: "acme", Flow: "otp_verify",
			Call: CallAttempt, Outcome: OutcomeFailure, Account: "k-owner", IP: v4("0123456789abcdef0123")})
	}
	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("d", evs, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"flow acme/otp_verify", "flow login", "01234567 ", "1 sends not replayed", "original  builtin"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "012345678") {
		t.Errorf("table shows more than 8 characters of a prefix key:\n%s", out)
	}
}

func TestSVG(t *testing.T) {
	_, rep := aReplayedWeek(t)
	svg := SVG(&rep)
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	for _, want := range []string{"<svg ", "real users&#39; delay, seconds", "attempts by others stopped", ">builtin<", ">strict<",
		fmt.Sprintf(">%d<", rep.Candidates[0].Total.OtherStopped)} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	golden(t, "replay-week.svg", svg)
}

func TestUsers_RealIsASuccessLaterFromTheSameDeviceOrPrefix(t *testing.T) {
	u := newUsers(7 * 24 * time.Hour)
	h := u.hash
	day := int64(24 * time.Hour)
	// Successes from device d on prefix p every day for 30 days (most
	// dropped as redundant), and one from prefix q on day 40.
	for d := range int64(30) {
		u.add(1, d*day, h("d"), h("p"))
	}
	u.add(1, 40*day, 0, h("q"))
	if n := len(u.m[1].recs); n > 7 {
		t.Errorf("%d successes kept of 31, want at most 7 (two a week)", n)
	}
	tests := []struct {
		name     string
		at       int64
		dev, pfx string
		want     bool
	}{
		{"day 0, same device elsewhere", 0, "d", "x", true},
		{"day 10, same prefix", 10*day + 1, "", "p", true},
		{"day 29 noon, device: next success is day 40 from q", 29*day + day/2, "d", "x", false},
		{"day 35, prefix q", 35 * day, "", "q", true},
		{"day 35, another prefix", 35 * day, "", "y", false},
		{"day 41: no success after", 41 * day, "", "q", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := u.real(1, tt.at, h(tt.dev), h(tt.pfx)); got != tt.want {
				t.Errorf("real(%s) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
	if u.real(2, 0, h("d"), h("p")) {
		t.Error("an account without successes has a real user")
	}
}

func TestPendingSet_DropsAfterTTLAndBeyondMax(t *testing.T) {
	s := newPendingSet(3, 10*time.Minute)
	min := int64(time.Minute)
	for i := range int64(4) {
		s.put(fmt.Sprint(i), pending{at: i * min, proceeded: true})
	}
	if _, ok := s.take("0"); ok {
		t.Error("the oldest of 4 is still held with max 3")
	}
	s.expire(12 * min) // drops those older than 2 min
	if _, ok := s.take("1"); ok {
		t.Error("a check 11 minutes old is still held")
	}
	if p, ok := s.take("2"); !ok || !p.proceeded {
		t.Error("a check 10 minutes old is gone")
	}
	if _, ok := s.take("2"); ok {
		t.Error("a check taken twice")
	}
}

func TestLRU_KeepsTheMostRecentlyUsed(t *testing.T) {
	c := newLRU(2)
	c.put("a", "A")
	c.put("b", "B")
	c.get("a")
	c.put("c", "C")
	if got := c.get("b"); got != "" {
		t.Errorf("b = %q, want evicted", got)
	}
	if c.get("a") != "A" || c.get("c") != "C" || c.get("") != "" {
		t.Error("a or c lost")
	}
}

func TestTopK_ExactWithinCapacityBoundedBeyond(t *testing.T) {
	k := newTopK(3)
	for _, key := range strings.Split("aaaaaaaaaa-b-b-b-c-c-a-b-a", "") {
		if key != "-" {
			k.add(key + "-prefix-key")
		}
	}
	if got, want := fmt.Sprint(k.top(2)), "[{a-prefix 12 false} {b-prefix 4 false}]"; got != want {
		t.Errorf("top = %s, want %s", got, want)
	}
	for range 5 {
		k.add("d")
	}
	top := k.top(10)
	if len(top) != 3 || top[0].Prefix != "a-prefix" || !top[1].Approximate || top[1].Prefix != "d" || top[1].Refused != 7 {
		t.Errorf("top = %+v, want a exact, then d with 7, approximate", top)
	}
}

func TestSynth(t *testing.T) {
	s := newSynth()
	tests := []struct {
		name string
		key  IPKey
		want string
	}{
		{"first IPv4", v4("a"), "0.0.0.1"},
		{"second IPv4", v4("b"), "0.0.0.2"},
		{"first IPv4 again", v4("a"), "0.0.0.1"},
		{"first /64 of a /48", v6("X", "X1", "X1a"), "3000::1"},
		{"second /64 of its /56", v6("X", "X1", "X1b"), "3000:0:0:1::1"},
		{"a second /56 of the /48", v6("X", "X2", "X2a"), "3000:0:0:100::1"},
		{"another /48", v6("Y", "Y1", "Y1a"), "3000:0:1::1"},
		{"the first /56 again", v6("X", "X1", "X1c"), "3000:0:0:2::1"},
		{"no /48 or /56: a fresh /48", v6("", "", "lone"), "3000:0:2::1"},
		{"invalid", IPKey{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.ip(tt.key); got != tt.want {
				t.Errorf("ip(%+v) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestSynth_KeepsTheStructureTheEngineCounts(t *testing.T) {
	s := newSynth()
	parse := func(k IPKey) (p48, p56, p64 string) {
		a := s.ip(k)
		addr, err := parseAddr(a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		for _, b := range []struct {
			bits int
			out  *string
		}{{48, &p48}, {56, &p56}, {64, &p64}} {
			p, _ := addr.Prefix(b.bits)
			*b.out = p.String()
		}
		if !addr.Is6() || addr.As16()[0]>>4 != 3 {
			t.Errorf("%s is not in 3000::/4", a)
		}
		return
	}
	// Every /64 of one /56 of one /48, and a second /48.
	seen := map[string]bool{}
	var first48 string
	for i := range 256 {
		p48, p56, p64 := parse(v6("A", "A-0", fmt.Sprint("A-0-", i)))
		if i == 0 {
			first48 = p48
		}
		if p48 != first48 || seen[p64] {
			t.Fatalf("/64 %d: %s in %s, %s (seen %v)", i, p64, p56, p48, seen[p64])
		}
		seen[p64] = true
	}
	a48, a56, _ := parse(v6("A", "A-1", "A-1-0"))
	b48, b56, _ := parse(v6("B", "B-0", "B-0-0"))
	if a48 != first48 || a56 == b56 || b48 == first48 {
		t.Errorf("a second /56 %s (in %s), another /48 %s: want the /56 in %s and the /48 apart", a56, a48, b48, first48)
	}
	// And the engine counts them as native IPv6, not as an embedded IPv4.
	for _, a := range []string{s.ip(v6("A", "A-0", "A-0-0")), s.ip(v6("B", "B-0", "B-0-0"))} {
		addr, _ := parseAddr(a)
		if p := authguardPrefix(addr); p.Bits() != 64 {
			t.Errorf("%s counts as %s, want its /64", a, p)
		}
	}
}

func TestSynth_AccountsStayApartAndNormalised(t *testing.T) {
	s := newSynth()
	a, b := s.account("Ab"), s.account("aB")
	if a == b || a != "h4162" || b != "h6142" {
		t.Errorf("account(Ab) = %q, account(aB) = %q", a, b)
	}
	for _, acct := range []string{a, s.account(strings.Repeat("\xff", 120))} {
		if n, err := authguard.NormalizeAccount(acct); err != nil || n != acct {
			t.Errorf("NormalizeAccount(%q) = %q, %v; want it unchanged", acct, n, err)
		}
	}
	if s.account("") != "" {
		t.Error("an empty key gave an account")
	}
}

func parseAddr(s string) (netip.Addr, error) { return spraydetect.ParseIP(s) }

// authguardPrefix is the prefix the built-in grouping counts addr as.
func authguardPrefix(addr netip.Addr) netip.Prefix { return spraydetect.Grouping{}.Prefix(addr) }

// An attacker tries one account 20 times in 20 seconds; its owner logs in
// a minute later from home. Which attempts would each policy have stopped?
func ExampleRun() {
	at := time.Date(2026, 11, 16, 9, 0, 0, 0, time.UTC)
	var events []Event
	for i := range 20 {
		events = append(events, Event{Time: at.Add(time.Duration(i) * time.Second), Flow: "login", Call: CallAttempt,
			Outcome: OutcomeFailure, Account: "k-victim", IP: IPKey{P: fmt.Sprintf("k-attacker-%d", i)}})
	}
	events = append(events, Event{Time: at.Add(time.Minute), Flow: "login", Call: CallAttempt,
		Outcome: OutcomeSuccess, Account: "k-victim", IP: IPKey{P: "k-home"}})
	strict, _ := config.LoadPolicy([]byte("flows: {login: {rules: [{name: account_backoff, free: 2, base: 1m}]}}"))

	rep, err := Run(context.Background(), Config{
		Candidates: []Candidate{{Name: "builtin", Policy: config.DefaultPolicy()}, {Name: "strict", Policy: strict}},
		Inputs:     []Input{{Name: "log", Open: func() (Source, error) { return &sliceSource{events: events}, nil }}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range rep.Candidates {
		f := c.Total
		fmt.Printf("%s: stopped %d of %d attacks; the owner delayed %d times, %s\n",
			c.Name, f.OtherStopped, f.OtherAttempts, f.RealDelayed, formatMS(f.RealDelayMS))
	}
	// Output:
	// builtin: stopped 11 of 20 attacks; the owner delayed 0 times, 0
	// strict: stopped 18 of 20 attacks; the owner delayed 1 times, 1s
}

// sliceSource is a Source over events held in memory; errs, when set,
// are returned in place of the events at the same index.
type sliceSource struct {
	events []Event
	errs   map[int]error
	i      int
}

func (s *sliceSource) Next() (Event, error) {
	if s.i >= len(s.events) {
		return Event{}, io.EOF
	}
	i := s.i
	s.i++
	if err, ok := s.errs[i]; ok {
		return Event{}, err
	}
	return s.events[i], nil
}

// inputOf is an Input that replays events.
func inputOf(name string, events []Event, errs map[int]error) Input {
	return Input{Name: name, Open: func() (Source, error) {
		return &sliceSource{events: events, errs: errs}, nil
	}}
}

// weekStart is the Monday the generated week starts.
var weekStart = time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)

// week is a generated week of login attempts as a CSV with a device column
// would give them (CallAttempt, device id on every attempt of a device,
// Issued on its successes), and how many of them are real users'.
type week struct {
	events []Event
	real   int // attempts by real users
	groups map[string]int
}

func v4(p string) IPKey             { return IPKey{P: p} }
func v6(p48, p56, p64 string) IPKey { return IPKey{V6: true, P: p64, P56: p56, P48: p48} }

// generateWeek makes, from a fixed seed:
//
//   - an office of 50 people behind one IPv4 address, logging in twice
//     each weekday; 1 in 10 logins starts with a typo, 1 in 30 with two;
//     half of them keep a device token;
//   - 20 people at home (half on IPv6), logging in once a day, 1 in 10
//     with a typo, and once in the week forgetting their password: three
//     failures 20 s apart before the success;
//   - the CEO, logging in each morning from home with a device token,
//     whose account a patient attacker tries every 5 minutes from Monday
//     10:00 from 300 rotating IPv4 addresses;
//   - a botnet spraying 2,000 accounts (the office's among them) once
//     each on Wednesday, from 256 /64s of one /48.
func generateWeek() week {
	rng := rand.New(rand.NewPCG(13, 2026))
	w := week{groups: map[string]int{}}
	line := 0
	add := func(group string, at time.Time, acct string, ip IPKey, dev string, out Outcome) {
		line++
		ev := Event{File: "week.csv", Line: line, Time: at, Tenant: "default", Flow: "login", Call: CallAttempt, Outcome: out,
			Account: acct, IP: ip, Device: dev}
		if out == OutcomeSuccess {
			ev.Issued = dev
		}
		w.events = append(w.events, ev)
		w.groups[group]++
		if group != "botnet" && group != "bruteforce" {
			w.real++
		}
	}
	// login is a real user's login at at: typos failures 15 s apart, then
	// the success.
	login := func(group string, at time.Time, acct string, ip IPKey, dev string, typos int, gap time.Duration) {
		for i := range typos {
			add(group, at.Add(time.Duration(i)*gap), acct, ip, dev, OutcomeFailure)
		}
		add(group, at.Add(time.Duration(typos)*gap), acct, ip, dev, OutcomeSuccess)
	}
	typos := func() int {
		switch x := rng.IntN(30); {
		case x == 0:
			return 2
		case x < 3:
			return 1
		}
		return 0
	}
	day := 24 * time.Hour
	for d := range 7 {
		date := weekStart.Add(time.Duration(d) * day)
		if d < 5 {
			for u := range 50 {
				dev := ""
				if u%2 == 0 {
					dev = fmt.Sprintf("dev-office-%02d", u)
				}
				acct := fmt.Sprintf("office-%02d", u)
				for _, start := range []time.Duration{8*time.Hour + 30*time.Minute, 13 * time.Hour} {
					at := date.Add(start + time.Duration(rng.IntN(3600))*time.Second)
					login("office", at, acct, v4("v4-office"), dev, typos(), 15*time.Second)
				}
			}
		}
		for u := range 20 {
			ip := v4(fmt.Sprintf("v4-home-%02d", u))
			if u%2 == 1 {
				ip = v6(fmt.Sprintf("v6-home-%02d-48", u), fmt.Sprintf("v6-home-%02d-56", u), fmt.Sprintf("v6-home-%02d-64", u))
			}
			at := date.Add(7*time.Hour + time.Duration(rng.IntN(14*3600))*time.Second)
			n := typos()
			if u%7 == d { // the day this one forgets the password
				n = 3
			}
			login("home", at, fmt.Sprintf("home-%02d", u), ip, "", n, 20*time.Second)
		}
		login("ceo", date.Add(7*time.Hour+45*time.Minute), "ceo", v4("v4-ceo-home"), "dev-ceo", 0, 0)
	}
	for at := weekStart.Add(10 * time.Hour); at.Before(weekStart.Add(7 * day)); at = at.Add(5 * time.Minute) {
		add("bruteforce", at, "ceo", v4(fmt.Sprintf("v4-bf-%03d", rng.IntN(300))), "", OutcomeFailure)
	}
	victims := make([]string, 0, 2000)
	for i := range 50 {
		victims = append(victims, fmt.Sprintf("office-%02d", i))
	}
	for i := len(victims); i < 2000; i++ {
		victims = append(victims, fmt.Sprintf("victim-%04d", i))
	}
	rng.Shuffle(len(victims), func(i, j int) { victims[i], victims[j] = victims[j], victims[i] })
	wed := weekStart.Add(2 * day)
	for i, acct := range victims {
		n56, n64 := rng.IntN(16), rng.IntN(16)
		ip := v6("v6-bot-48", fmt.Sprintf("v6-bot-56-%02d", n56), fmt.Sprintf("v6-bot-64-%02d-%02d", n56, n64))
		add("botnet", wed.Add(time.Duration(i)*day/2000), acct, ip, "", OutcomeFailure)
	}
	slices.SortStableFunc(w.events, func(a, b Event) int { return a.Time.Compare(b.Time) })
	for i := range w.events {
		w.events[i].Line = i + 1
	}
	return w
}

// bigSource generates a stream of n login attempts over a week without
// holding them: 500,000 users (half with a device token, a third on IPv6)
// who mistype one login in 12 and then succeed 10 s later, a botnet
// spraying 2,000,000 accounts from 50 /48s, a brute force on 100 accounts
// from 1,000,000 IPv4 addresses, and credential stuffing.
type bigSource struct {
	n, i   int
	rng    *rand.Rand
	step   time.Duration
	follow []Event // successes after a typo, in time order
	head   int
}

func newBigSource(n int) *bigSource {
	return &bigSource{n: n, rng: rand.New(rand.NewPCG(10, 1_000_000)), step: 7 * 24 * time.Hour / time.Duration(n)}
}

func (s *bigSource) Next() (Event, error) {
	if s.i >= s.n {
		return Event{}, io.EOF
	}
	at := weekStart.Add(time.Duration(s.i) * s.step)
	if s.head < len(s.follow) && !s.follow[s.head].Time.After(at) {
		ev := s.follow[s.head]
		s.follow[s.head] = Event{}
		s.head++
		if s.head == len(s.follow) {
			s.follow, s.head = s.follow[:0], 0
		}
		s.i++
		return ev, nil
	}
	s.i++
	ev := Event{File: "big", Line: s.i, Time: at, Tenant: "default", Flow: "login", Call: CallAttempt, Outcome: OutcomeFailure}
	switch x := s.rng.IntN(100); {
	case x < 60: // a real user
		u := s.rng.IntN(500_000)
		ev.Account = fmt.Sprintf("u%d", u)
		if u%3 == 0 {
			ev.IP = v6(fmt.Sprintf("h48-%d", u), fmt.Sprintf("h56-%d", u), fmt.Sprintf("h64-%d", u))
		} else {
			ev.IP = v4(fmt.Sprintf("h4-%d", u))
		}
		if u%2 == 0 {
			ev.Device = fmt.Sprintf("d%d", u)
		}
		if s.rng.IntN(12) == 0 {
			ok := ev
			ok.Time, ok.Outcome, ok.Issued = at.Add(10*time.Second), OutcomeSuccess, ev.Device
			s.follow = append(s.follow, ok)
		} else {
			ev.Outcome, ev.Issued = OutcomeSuccess, ev.Device
		}
	case x < 85: // the botnet
		b, n56, n64 := s.rng.IntN(50), s.rng.IntN(16), s.rng.IntN(64)
		ev.Account = fmt.Sprintf("v%d", s.rng.IntN(2_000_000))
		ev.IP = v6(fmt.Sprintf("b48-%d", b), fmt.Sprintf("b56-%d-%d", b, n56), fmt.Sprintf("b64-%d-%d-%d", b, n56, n64))
	case x < 95: // brute force
		ev.Account = fmt.Sprintf("t%d", s.rng.IntN(100))
		ev.IP = v4(fmt.Sprintf("bf-%d", s.rng.IntN(1_000_000)))
	default: // credential stuffing
		ev.Account = fmt.Sprintf("v%d", s.rng.IntN(2_000_000))
		ev.IP = v4(fmt.Sprintf("cs-%d", s.rng.IntN(5_000)))
	}
	return ev, nil
}

// TestReplay_TenMillionEvents replays a generated stream of 10,000,000
// login attempts (bigSource, never held in memory) through two policies,
// and logs the wall time and peak RSS. It runs only with
// TOLLGATE_REPLAY_BIG=1 (TOLLGATE_REPLAY_BIG=N for N events):
//
//	TOLLGATE_REPLAY_BIG=1 go test -run TestReplay_TenMillionEvents -v -timeout 2h ./internal/replay/
func TestReplay_TenMillionEvents(t *testing.T) {
	env := os.Getenv("TOLLGATE_REPLAY_BIG")
	if env == "" {
		t.Skip("set TOLLGATE_REPLAY_BIG=1 to replay 10,000,000 events")
	}
	n := 10_000_000
	if v, err := strconv.Atoi(env); err == nil && v > 1 {
		n = v
	}
	in := Input{Name: "generated", Open: func() (Source, error) { return newBigSource(n), nil }}
	start := time.Now()
	rep, err := Run(context.Background(), Config{Candidates: candidates(t), Inputs: []Input{in}, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var text bytes.Buffer
	_ = WriteText(&text, &rep)
	t.Logf("%d events, 2 candidates: %s wall, %.0f events/s, peak RSS %d MiB\n%s",
		rep.Events, took.Round(time.Second), float64(rep.Events)/took.Seconds(), ru.Maxrss/1024, text.String())
	if rep.Events != int64(n) {
		t.Errorf("events = %d, want %d", rep.Events, n)
	}
}

// BenchmarkReplay replays 100,000 generated events through two policies
// per iteration.
func BenchmarkReplay(b *testing.B) {
	const n = 100_000
	in := Input{Name: "generated", Open: func() (Source, error) { return newBigSource(n), nil }}
	cands := candidates(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), Config{Candidates: cands, Inputs: []Input{in}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// The original's delays count in the baseline with their recorded lengths;
// a shadow delay logged without its length makes the baseline's delay
// figures unknown rather than zero.
func TestReplay_BaselineDelaysHaveTheirRecordedLengths(t *testing.T) {
	evs := decisionLog()
	late := evs[len(evs)-1].Time
	owner, home := "k-owner", v4("p-home")
	add := func(ev Event) {
		late = late.Add(time.Minute)
		ev.File, ev.Line, ev.Time, ev.Tenant, ev.Flow = "decisions.jsonl", len(evs)+1, late, "default", "login"
		evs = append(evs, ev)
	}
	// The owner, a real user (she succeeded from home), delayed twice.
	add(Event{Call: CallCheck, Account: owner, IP: home, Action: "delay", DelayMS: 4000, Reasons: []string{"account_backoff"}})
	add(Event{Call: CallCheck, Account: owner, IP: home, Action: "delay", DelayMS: 1000, Reasons: []string{"account_backoff"}})
	// and then in from home: that makes her delayed attempts a real user's
	add(Event{Call: CallCheck, Account: owner, IP: home, Attempt: "a9", Action: "proceed"})
	add(Event{Call: CallReport, Outcome: OutcomeSuccess, Account: owner, IP: home, Attempt: "a9"})
	rep, err := Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("decisions.jsonl", evs, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Baseline
	if b == nil || b.DelayUnknown || b.Total.RealDelayed != 2 || b.Total.RealDelayMS != 5000 || b.Total.RealDelayMaxMS != 4000 {
		t.Fatalf("baseline %+v: want 2 real delays, 5 s in total, 4 s the longest, known", b)
	}
	evs = evs[:len(evs)-2]                                                                                       // before her success, so that it counts as hers too
	add(Event{Call: CallCheck, Account: owner, IP: home, Action: "delay", Reasons: []string{"account_backoff"}}) // no length
	add(Event{Call: CallCheck, Account: owner, IP: home, Attempt: "a9", Action: "proceed"})
	add(Event{Call: CallReport, Outcome: OutcomeSuccess, Account: owner, IP: home, Attempt: "a9"})
	rep, err = Run(context.Background(), Config{Candidates: candidates(t)[:1], Inputs: []Input{inputOf("decisions.jsonl", evs, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Baseline.DelayUnknown {
		t.Error("a delay without its length left the baseline's delays known")
	}
	var text bytes.Buffer
	if err := WriteText(&text, &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "?") {
		t.Errorf("the table shows the unknown delays as figures:\n%s", text.String())
	}
}
