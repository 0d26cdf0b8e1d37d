package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
)

// halfDoneStore is a memory store whose writes, while fail is set, take
// effect and then report the store unavailable: a Redis sweep cut off after
// a batch, a Cluster master timing out after it wrote.
type halfDoneStore struct {
	*memstore.Store
	fail *atomic.Bool
}

func (s halfDoneStore) err() error {
	return fmt.Errorf("redisstore: i/o timeout: %w", authguard.ErrStoreUnavailable)
}

func (s halfDoneStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	res, err := s.Store.Do(ctx, ops)
	if s.fail.Load() {
		return nil, s.err()
	}
	return res, err
}

func (s halfDoneStore) DeleteMatching(ctx context.Context, pattern string) (int, error) {
	n, _ := s.Store.DeleteMatching(ctx, pattern)
	if s.fail.Load() {
		return n, s.err()
	}
	return n, nil
}

func (s halfDoneStore) PutEntry(ctx context.Context, key, id, value string, ttl time.Duration, max int) error {
	err := s.Store.PutEntry(ctx, key, id, value, ttl, max)
	if s.fail.Load() {
		return s.err()
	}
	return err
}

func (s halfDoneStore) RemoveEntry(ctx context.Context, key, id string) (bool, error) {
	ok, err := s.Store.RemoveEntry(ctx, key, id)
	if s.fail.Load() {
		return false, s.err()
	}
	return ok, err
}

// halfDoneHarness is a harness on a halfDoneStore, and the switch that
// makes its writes fail.
func halfDoneHarness(t *testing.T) (*harness, *atomic.Bool) {
	t.Helper()
	fail := new(atomic.Bool)
	h := newHarness(t, func(c *harnessConfig) {
		c.engine.Store = halfDoneStore{c.engine.Store.(*memstore.Store), fail}
	})
	return h, fail
}

// auditLines returns the log lines whose message is msg, decoded.
func auditLines(t *testing.T, logs, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// wantFailedAudit checks that res is 503 store-unavailable and that the log
// holds exactly one line msg saying the write failed, with want's fields,
// and none of the raw values.
func wantFailedAudit(t *testing.T, h *harness, res *response, msg string, want map[string]any, raw ...string) {
	t.Helper()
	if p := res.json(t); res.status != http.StatusServiceUnavailable || p["type"] != wire.ProblemBase+"store-unavailable" {
		t.Errorf("answer: %d %s, want 503 store-unavailable", res.status, res.body)
	}
	logs := h.logs.String()
	lines := auditLines(t, logs, msg)
	if len(lines) != 1 {
		t.Fatalf("%d %q audit lines, want 1; logs:\n%s", len(lines), msg, logs)
	}
	want["outcome"], want["problem"] = "failed", "store-unavailable"
	for k, v := range want {
		if got := lines[0][k]; fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("audit %s = %v, want %v; line %v", k, got, v, lines[0])
		}
	}
	for _, s := range raw {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds %q", s)
		}
	}
}

// TestAdmin_AResetThatFailsMidwayIsStillAudited: a reset whose store
// deletes the account's keys and then fails answers 503 and has unlocked
// the account; so does an IP reset that cleared the fallback store before
// the store timed out. Each is an audit line saying it failed and how many
// keys went; a reset refused for its input is none.
func TestAdmin_AResetThatFailsMidwayIsStillAudited(t *testing.T) {
	t.Run("account: the sweep fails after deleting", func(t *testing.T) {
		h, fail := halfDoneHarness(t)
		acct := login("carol@example.com", "192.0.2.8")
		for range 6 {
			h.report(t, map[string]any{"flow": "login", "account": "carol@example.com", "ip": "192.0.2.8", "outcome": "failure"})
		}
		if v := h.check(t, acct); v.Action != "delay" {
			t.Fatalf("before the reset: %+v, want delay", v)
		}
		if res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "account": "carol@example.com"}); res.status != 400 {
			t.Errorf("a reset without a reason: %d", res.status)
		}
		if n := len(auditLines(t, h.logs.String(), "admin reset")); n != 0 {
			t.Errorf("a reset refused for its input wrote %d audit lines", n)
		}
		fail.Store(true)
		res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "account": "carol@example.com", "reason": "ticket 9"})
		fail.Store(false)
		if v := h.check(t, acct); v.Action != "proceed" {
			t.Errorf("after the failed reset: %+v; the scenario needs the account unlocked", v)
		}
		wantFailedAudit(t, h, res, "admin reset", map[string]any{
			"subject": "account", "reason": "ticket 9", "flow": "login", "tenant": "default", "by": "unauthenticated (loopback)",
		}, "carol@example.com")
		if l := auditLines(t, h.logs.String(), "admin reset"); len(l) == 1 {
			if n, _ := l[0]["deleted"].(float64); n < 1 {
				t.Errorf("audit deleted = %v, want the keys the store deleted", l[0]["deleted"])
			}
		}
	})
	t.Run("ip: the store times out after the fallback was cleared", func(t *testing.T) {
		h, fail := halfDoneHarness(t)
		fail.Store(true)
		res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "ip": "198.51.100.77", "reason": "ticket 10"})
		fail.Store(false)
		wantFailedAudit(t, h, res, "admin reset", map[string]any{"subject": "ip", "reason": "ticket 10"}, "198.51.100")
	})
}

// TestAdmin_AnEntryWriteThatFailsIsStillAudited: a block entry the store
// keeps before it fails applies, and its removal the store does before it
// fails stops applying, though both answered 503 (once the entries are
// refreshed, as every instance does): each is an audit line saying it
// failed, naming the entry's id, without the range.
func TestAdmin_AnEntryWriteThatFailsIsStillAudited(t *testing.T) {
	h, fail := halfDoneHarness(t)
	from := map[string]any{"flow": "login", "account": "a@example.com", "ip": "203.0.113.50"}

	fail.Store(true)
	res := h.post(t, "/v1/admin/deny", map[string]any{"flow": "login", "ip_range": "203.0.113.0/24", "expires_in": "4h", "reason": "incident 93"})
	fail.Store(false)
	refresh(t, h)
	if v := h.check(t, from); v.Action != "delay" {
		t.Errorf("a check from the range after the failed deny: %+v; the scenario needs the entry kept", v)
	}
	l, err := h.engine.ListEntries(context.Background(), "", "")
	if err != nil || len(l) != 1 {
		t.Fatalf("entries: %v %v", l, err)
	}
	wantFailedAudit(t, h, res, "admin block", map[string]any{ // naming the entry the store kept
		"id": l[0].ID, "subject": "ip_range", "length": 24, "reason": "incident 93", "flow": "login", "expires_in": "4h",
	}, "203.0.113")

	fail.Store(true)
	res = h.post(t, "/v1/admin/remove", map[string]any{"id": l[0].ID, "reason": "incident 93 closed"})
	fail.Store(false)
	refresh(t, h)
	if v := h.check(t, from); v.Action != "proceed" {
		t.Errorf("a check from the range after the failed remove: %+v; the scenario needs the entry gone", v)
	}
	wantFailedAudit(t, h, res, "admin remove", map[string]any{"id": l[0].ID, "reason": "incident 93 closed"}, "203.0.113")
}

// refresh reads the entries from the store, as every instance does
// periodically.
func refresh(t *testing.T, h *harness) {
	t.Helper()
	if err := h.engine.RefreshEntries(context.Background()); err != nil {
		t.Fatal(err)
	}
}
