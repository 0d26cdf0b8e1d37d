package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
	"github.com/tollgate-auth/tollgate/internal/lab/replay"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

func replayRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"replay"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestReplay_UsageErrors(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.jsonl")
	os.WriteFile(log, []byte(`{"time":"2026-11-16T00:00:00Z","tenant":"default","flow":"login","call":"check","action":"proceed","computed":"proceed","source":"store","account":"a","ip":"b"}`+"\n"), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("flows:\n  login:\n    mode: sometimes\n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"no log", nil, 2, "no log given"},
		{"standard input", []string{"-"}, 2, "standard input"},
		{"unknown format", []string{"-format", "xml", log}, 2, "unknown format"},
		{"csv without mapping", []string{"-format", "csv", log}, 2, "needs -csv MAPPING"},
		{"mapping without csv", []string{"-csv", "time=t,account=a,ip=i,outcome=o", log}, 2, "goes with -format csv"},
		{"bad mapping", []string{"-format", "csv", "-csv", "time=t", log}, 2, "account= is required"},
		{"bad config", []string{"-config", bad, log}, 2, "bad.yaml: policy: line 3"},
		{"missing log", []string{filepath.Join(dir, "nope.jsonl")}, 2, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := replayRun(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("code %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.wantErr)
			}
		})
	}
}

// writeDecisionLog runs a brute force and its victim's logins through a
// real engine that writes its decision log to path, as serve does.
func writeDecisionLog(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Date(2026, 11, 16, 9, 0, 0, 0, time.UTC))
	dl := decisionlog.NewWriter(f, clock.Now)
	eng, err := authguard.New(authguard.Config{
		Policy: config.DefaultPolicy(), Store: memstore.New(memstore.Config{Now: clock.Now}),
		Secret: []byte(secret32), Now: clock.Now, Observe: dl.Observe, RecordSubjects: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	login := func(account, ip, device string, outcome authguard.Outcome) string {
		v, err := eng.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip, DeviceToken: device})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Proceed {
			return device
		}
		r, err := eng.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: outcome, Attempt: v.Attempt, DeviceToken: device})
		if err != nil {
			t.Fatal(err)
		}
		if r.DeviceToken != "" {
			return r.DeviceToken
		}
		return device
	}
	token := login("alice@example.com", "198.51.100.7", "", authguard.Success)
	for i := range 40 {
		clock.Advance(20 * time.Second)
		login("alice@example.com", fmt.Sprintf("203.0.113.%d", i), "", authguard.Failure)
	}
	clock.Advance(time.Minute)
	login("alice@example.com", "198.51.100.7", token, authguard.Failure)
	clock.Advance(10 * time.Second)
	login("alice@example.com", "198.51.100.7", token, authguard.Success)
	if err := dl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReplay_DecisionLogThroughTwoPolicies(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "decisions.jsonl")
	writeDecisionLog(t, log)
	strict := filepath.Join(dir, "strict.yaml")
	os.WriteFile(strict, []byte("flows:\n  login:\n    rules:\n      - {name: account_backoff, free: 2, base: 1m}\n"), 0o600)
	svg := filepath.Join(dir, "out.svg")

	code, stdout, stderr := replayRun(t, "-config", "builtin", log, "-config", strict, "-json", "-svg", svg)
	if code != 0 {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v in:\n%s", err, stdout)
	}
	if len(rep.Candidates) != 2 || rep.Candidates[0].Name != "builtin" || rep.Candidates[1].Name != "strict.yaml" || rep.Baseline == nil {
		t.Fatalf("candidates %+v, baseline %+v", rep.Candidates, rep.Baseline)
	}
	if rep.Attempts != 43 || rep.RealAttempts != 3 {
		t.Errorf("attempts %d, real %d; want 43, 3", rep.Attempts, rep.RealAttempts)
	}
	// The original was the built-in policy: the replay of it stops what
	// the original stopped; the stricter one more; neither slows Alice,
	// whose device token is replayed too.
	orig, builtin, strictRes := rep.Baseline.Total, rep.Candidates[0].Total, rep.Candidates[1].Total
	if builtin.OtherStopped != orig.OtherStopped || strictRes.OtherStopped <= builtin.OtherStopped {
		t.Errorf("stopped: original %d, builtin %d, strict %d; want builtin = original < strict", orig.OtherStopped, builtin.OtherStopped, strictRes.OtherStopped)
	}
	if builtin.RealDelayed+builtin.RealChallenged+strictRes.RealDelayed+strictRes.RealChallenged != 0 {
		t.Errorf("Alice slowed: %+v, %+v", builtin, strictRes)
	}
	if !strings.Contains(stderr, "replay: pass 2:") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	if data, err := os.ReadFile(svg); err != nil || !bytes.Contains(data, []byte("strict.yaml")) {
		t.Errorf("SVG: %v, %.200s", err, data)
	}
}

func TestReplay_CSV(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "logins.csv")
	var b strings.Builder
	b.WriteString("ts,user,client_ip,result\n")
	at := time.Date(2026, 11, 16, 9, 0, 0, 0, time.UTC)
	for i := range 30 { // a spray from one address
		fmt.Fprintf(&b, "%s,user%d@example.com,192.0.2.1,failure\n", at.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i)
	}
	fmt.Fprintf(&b, "%s,bob@example.com,198.51.100.2,failure\n", at.Add(time.Hour).Format(time.RFC3339))
	fmt.Fprintf(&b, "%s,bob@example.com,198.51.100.2,success\n", at.Add(time.Hour+10*time.Second).Format(time.RFC3339))
	b.WriteString("not a time,x,192.0.2.1,failure\n")
	os.WriteFile(log, []byte(b.String()), 0o600)
	mapping := "time=ts,account=user,ip=client_ip,outcome=result"

	if code, _, stderr := replayRun(t, "-format", "csv", "-csv", mapping, log); code != 1 || !strings.Contains(stderr, "logins.csv:34") {
		t.Errorf("a bad line: code %d, stderr %q; want 1 and its line", code, stderr)
	}
	code, stdout, stderr := replayRun(t, "-format", "csv", "-csv", mapping, "-skip-bad", log)
	if code != 0 {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"attempts: 32, 2 by real users, 30 by others; 1 bad lines skipped", "by ip_spray", "builtin"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	for _, secret := range []string{"example.com", "192.0.2.1", "user1"} {
		if strings.Contains(stdout, secret) {
			t.Errorf("the report shows %q:\n%s", secret, stdout)
		}
	}
}
