package decisionlog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// loginPolicy is a login flow with a rule on each subject the log hashes
// (the account, the address at /64 and at /48, the password fingerprint),
// so that each hash keys the store. The built-in policy would do as well,
// but its loader (internal/config) links ninety more packages into this
// test, twice its link time.
func loginPolicy(t *testing.T) *authguard.Policy {
	t.Helper()
	rule := func(name string, s authguard.Subject) authguard.Rule {
		return authguard.Rule{Name: name, Subject: s, Algorithm: authguard.Backoff,
			Backoff: backoff.Policy{Free: 3, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}}
	}
	p, err := authguard.NewPolicy(&authguard.Flow{Name: "login", Rules: []authguard.Rule{
		rule("account", authguard.Subject{Parts: authguard.PartAccount}),
		rule("ip", authguard.Subject{Parts: authguard.PartIP}),
		rule("ip48", authguard.Subject{Parts: authguard.PartIP, IPBits: 48}),
		rule("fingerprint", authguard.Subject{Parts: authguard.PartFingerprint}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriter_LinesCarryTheStoresHashesAndNoIdentifier: a check, a failure
// and a success report give three lines whose subjects are the hashes the
// store keys them by (the IPv6 /64 and /48 included), linked by the
// attempt id and the issued device, with no account, address or
// fingerprint in clear.
func TestWriter_LinesCarryTheStoresHashesAndNoIdentifier(t *testing.T) {
	clock := testclock.New(testclock.Epoch)
	mem := memstore.New(memstore.Config{Now: clock.Now})
	var out bytes.Buffer
	w := decisionlog.NewWriter(&out, clock.Now)
	e, err := authguard.New(authguard.Config{Policy: loginPolicy(t), Store: mem, Secret: []byte("decision-log-test-secret-32-bytes!"),
		Now: clock.Now, RecordSubjects: true, Observe: w.Observe})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const account, ip, fp = "raw-alice@example.com", "2001:db8:77:1::5", "raw-fingerprint"
	v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: ip, PasswordFingerprint: fp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: fp}); err != nil {
		t.Fatal(err)
	}
	keys := strings.Join(mem.Keys(), "\n") // before the success takes the account off the spray logs
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: ip, Outcome: authguard.Success}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var lines []decisionlog.Line
	sc := bufio.NewScanner(&out)
	raw := ""
	for sc.Scan() {
		raw += sc.Text() + "\n"
		var l decisionlog.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), raw)
	}
	for _, s := range []string{"raw-", "alice", "2001:db8", "example.com"} {
		if strings.Contains(raw, s) {
			t.Errorf("the log holds %q:\n%s", s, raw)
		}
	}
	c, f, ok := lines[0], lines[1], lines[2]
	if c.Call != "check" || c.Action != "proceed" || c.Attempt == "" || !c.IPv6 || c.IP56 == "" || c.IP48 == "" || c.Fingerprint == "" {
		t.Errorf("check line = %+v", c)
	}
	if f.Call != "report" || f.Outcome != "failure" || f.Attempt != c.Attempt || f.Account != c.Account || f.IP != c.IP {
		t.Errorf("failure line = %+v, want the check's attempt and subjects", f)
	}
	if ok.Outcome != "success" || ok.Issued == "" || ok.Attempt != "" {
		t.Errorf("success line = %+v, want an issued device and no attempt (no token)", ok)
	}
	for name, h := range map[string]string{"account": c.Account, "ip /64": c.IP, "ip /48": c.IP48, "fingerprint": c.Fingerprint} {
		if !strings.Contains(keys, h) {
			t.Errorf("the %s hash %q keys nothing in the store:\n%s", name, h, keys)
		}
	}
	if !c.Time.Equal(testclock.Epoch) {
		t.Errorf("time %v, want the clock's %v", c.Time, testclock.Epoch)
	}
}

// TestWriter_AFullQueueDropsAndCountsNeverBlocks: with the disk stuck,
// Observe returns at once and counts what it drops.
func TestWriter_AFullQueueDropsAndCountsNeverBlocks(t *testing.T) {
	r, pw := io.Pipe() // nobody reads: the writer goroutine blocks on its first flush
	defer r.Close()
	w := decisionlog.NewWriter(pw, nil)
	for range decisionlog.QueueLength + 70_000 {
		w.Observe(authguard.Event{Call: "check", Flow: "login"})
	}
	if w.Dropped() == 0 {
		t.Error("nothing dropped with the writer stuck")
	}
	r.Close() // unstick the writer so Close returns
	_ = w.Close()
}
