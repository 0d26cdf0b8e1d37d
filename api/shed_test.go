package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// blockingStore holds every batch until release is closed.
type blockingStore struct {
	authguard.Store
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.Do(ctx, ops)
}

// A flood beyond MaxInFlight is shed with a delay verdict of reason
// overloaded, as openapi.yaml describes, with one warning line instead of a
// line per call; nothing is counted for a shed call. Before, a shed check
// was a 503, which a caller that fails open let through unchecked.
func TestOverload_ShedChecksAnswerADelayWithOneLogLine(t *testing.T) {
	bs := &blockingStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	h := newHarness(t, func(hc *harnessConfig) {
		c := &hc.engine
		bs.Store = c.Store
		c.Store, c.MaxInFlight, c.QueueWait = bs, 1, 5*time.Millisecond
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.engine.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: "held@example.com", IP: "192.0.2.1"})
	}()
	<-bs.entered // the one call allowed in flight is now in the store
	keys := h.keys()
	for range 20 {
		res := h.post(t, "/v1/check", map[string]any{"flow": "login", "account": "ann@example.com", "ip": "192.0.2.2"})
		p := res.json(t)
		if reasons, _ := p["reasons"].([]any); res.status != 200 || p["action"] != "delay" || p["delay_ms"] != 2000.0 || len(reasons) != 1 || reasons[0] != "overloaded" {
			t.Fatalf("a check beyond MaxInFlight: %d %v, want 200 delay 2000 ms, reason overloaded", res.status, p)
		}
	}
	if got := h.keys(); len(got) != len(keys) {
		t.Errorf("shed calls changed the store: %d keys before, %d after", len(keys), len(got))
	}
	close(bs.release)
	<-done
	if v := h.check(t, map[string]any{"flow": "login", "account": "ann@example.com", "ip": "192.0.2.2"}); v.Action != "proceed" {
		t.Errorf("after the flood: %+v, want proceed", v)
	}
	logs := h.logs.String()
	if n := strings.Count(logs, `"msg":"shedding calls`); n != 1 {
		t.Errorf("%d shedding lines for 20 shed calls within a second, want 1:\n%s", n, logs)
	}
	if strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("shed calls were logged as errors:\n%s", logs)
	}
	if !strings.Contains(logs, `"shed":1`) { // the first shed call writes the line at once
		t.Errorf("the shedding line does not count the shed calls:\n%s", logs)
	}
}
