package authguard_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testclock"
)

// partLog is a Store that records the part of every op it is sent, by the
// op's rule field.
type partLog struct {
	authguard.Store
	mu    sync.Mutex
	parts map[string]authguard.Part
}

func (p *partLog) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	p.mu.Lock()
	for _, op := range ops {
		var part authguard.Part
		switch op := op.(type) {
		case *authguard.LogOp:
			part = op.Part
		case *authguard.RateOp:
			part = op.Part
		case *authguard.DeleteOp:
			part = op.Part
		}
		p.parts[strings.Split(op.StoreKey(), ":")[3]] = part
	}
	p.mu.Unlock()
	return p.Store.Do(ctx, ops)
}

func newPartLog(t *testing.T, policy *authguard.Policy) (*partLog, *authguard.Engine) {
	t.Helper()
	clock := testclock.New(time.Time{})
	store := &partLog{Store: memstore.New(memstore.Config{Now: clock.Now}), parts: map[string]authguard.Part{}}
	e, err := authguard.New(authguard.Config{Policy: policy, Store: store, Secret: secret, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return store, e
}

// The built-in login flow's address bucket, spray log and failure log are
// parts of one structure per address, each at a part of its own, kept as
// long as the longest of them (the spray log's day); the account's
// counter, the password's spray log and the wider prefixes' logs, alone on
// their subjects, keep keys of their own.
func TestParts_TheAddressRulesShareOneStructure(t *testing.T) {
	store, e := newPartLog(t, config.DefaultPolicy())
	ctx := context.Background()
	for _, ip := range []string{"192.0.2.1", "2001:db8::1"} {
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "ann@example.com", IP: ip, PasswordFingerprint: "pw"})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "ann@example.com", IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt, PasswordFingerprint: "pw"})
	}
	seen := map[uint16]string{}
	for _, rule := range []string{"iprate", "ipspray", "ipfail"} {
		p, ok := store.parts[rule]
		if !ok {
			t.Fatalf("no op of %s was sent", rule)
		}
		if p.N == 0 || p.N > authguard.MaxPart {
			t.Errorf("%s: part %d, want 1 to %d", rule, p.N, authguard.MaxPart)
		}
		if other, ok := seen[p.N]; ok {
			t.Errorf("%s and %s share part %d", rule, other, p.N)
		}
		seen[p.N] = rule
		if p.Span != 24*time.Hour {
			t.Errorf("%s: span %v, want the spray log's 24h", rule, p.Span)
		}
	}
	for _, rule := range []string{"acct", "pwspray", "ipspray56", "ipspray48"} {
		if p, ok := store.parts[rule]; !ok || p != (authguard.Part{}) {
			t.Errorf("%s: part %+v (sent %v), want a key of its own", rule, p, ok)
		}
	}
	if got, want := authguard.SubjectKey("tg:t:login:ipspray:HASH"), "tg:t:login:@:HASH"; got != want {
		t.Errorf("SubjectKey: %s, want %s", got, want)
	}
	if got, want := authguard.SubjectKey("x:y:t:login:knownnet:A.B"), "x:y:t:login:@:A.B"; got != want {
		t.Errorf("SubjectKey with a prefix holding ':': %s, want %s", got, want)
	}
}

// Two rules whose keys hash to one part number would read each other's
// entries in one structure: both keep keys of their own instead, and a
// third rule on the subject still gets a part.
func TestParts_RulesWhosePartsCollideKeepTheirOwnKeys(t *testing.T) {
	number := func(key string) uint32 {
		h := fnv.New32a()
		h.Write([]byte(key))
		return 1 + h.Sum32()%authguard.MaxPart
	}
	at := map[uint32]string{}
	var a, b string
	for i := 0; a == ""; i++ {
		k := fmt.Sprint("k", i)
		if o, ok := at[number(k)]; ok {
			a, b = o, k
		}
		at[number(k)] = k
	}
	p, err := config.LoadPolicy([]byte(fmt.Sprintf(`
flows:
  api:
    rules:
      - {name: one, key: %s, subject: ip, algorithm: distinct, of: account, windows: [{window: 1h, limit: 5}]}
      - {name: two, key: %s, subject: ip, algorithm: distinct, of: account, windows: [{window: 2h, limit: 5}]}
      - {name: three, key: third, subject: ip, algorithm: token_bucket, limit: 5, rate: 1/s}
`, a, b)))
	if err != nil {
		t.Fatal(err)
	}
	store, e := newPartLog(t, p)
	ctx := context.Background()
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "api", Account: "ann", IP: "192.0.2.1"})
	e.Report(ctx, authguard.ReportRequest{Flow: "api", Account: "ann", IP: "192.0.2.1", Outcome: authguard.Failure, Attempt: v.Attempt})
	for _, k := range []string{a, b} {
		if got, ok := store.parts[k]; !ok || got.N != 0 {
			t.Errorf("rule key %s (part number %d, as %s's): part %+v (sent %v), want a key of its own", k, number(k), map[string]string{a: b, b: a}[k], got, ok)
		}
	}
	if got := store.parts["third"]; got.N == 0 || got.Span != 2*time.Hour {
		t.Errorf("third: part %+v, want one, kept 2h", got)
	}
}
