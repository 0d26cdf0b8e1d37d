package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
)

// fakeWebhooks is a tenant's dead letters, as the server's delivery would
// keep them.
type fakeWebhooks struct {
	dead     map[string][]wire.DeadLetter // by tenant
	replayed []string
	limits   []int
	err      error
}

func (f *fakeWebhooks) DeadLetters(_ context.Context, tenant string, limit int) ([]wire.DeadLetter, error) {
	f.limits = append(f.limits, limit)
	if f.err != nil {
		return nil, f.err
	}
	return f.dead[tenant], nil
}

func (f *fakeWebhooks) Replay(_ context.Context, tenant, id string) (bool, error) {
	if f.err != nil {
		return false, f.err
	}
	for _, d := range f.dead[tenant] {
		if d.ID == id {
			f.replayed = append(f.replayed, tenant+"/"+id)
			return true, nil
		}
	}
	return false, nil
}

func deadLetter(id string) wire.DeadLetter {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return wire.DeadLetter{ID: id, Type: "login.new_device", Tenant: "default", Endpoint: "security", LastError: "status 503",
		Attempts: 17, Time: at, DeadAt: at.Add(24 * time.Hour)}
}

// The dead letters of the caller's tenant are listed as the spec says; a
// replay puts one back, is audited with its reason, and answers false for
// an id the tenant does not have.
func TestWebhookAdmin_ListsAndReplaysTheTenantsDeadLetters(t *testing.T) {
	f := &fakeWebhooks{dead: map[string][]wire.DeadLetter{"default": {deadLetter("msg_a"), deadLetter("msg_b")}}}
	h := newHarness(t, withWebhooks(f))
	res := h.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters?limit=5", "", "")
	if res.status != http.StatusOK || res.specErr != nil || !strings.Contains(string(res.body), `"id":"msg_b"`) || !strings.Contains(string(res.body), `"last_error":"status 503"`) {
		t.Fatalf("dead letters: %d %s (spec: %v)", res.status, res.body, res.specErr)
	}
	if res := h.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters", "", ""); res.status != http.StatusOK || fmt.Sprint(f.limits) != "[5 100]" {
		t.Errorf("limits asked %v (status %d), want [5 100]", f.limits, res.status)
	}
	res = h.post(t, "/v1/admin/webhooks/replay", map[string]any{"id": "msg_b", "reason": "receiver fixed"})
	if res.status != http.StatusOK || res.specErr != nil || string(res.body) != `{"replayed":true}`+"\n" || fmt.Sprint(f.replayed) != "[default/msg_b]" {
		t.Fatalf("replay: %d %s (spec: %v), replayed %v", res.status, res.body, res.specErr, f.replayed)
	}
	lines := auditLines(t, h.logs.String(), "admin webhook replay")
	if len(lines) != 1 || lines[0]["outcome"] != "ok" || lines[0]["reason"] != "receiver fixed" || lines[0]["id"] != "msg_b" {
		t.Errorf("audit lines %v, want one ok line with the id and reason", lines)
	}
	res = h.post(t, "/v1/admin/webhooks/replay", map[string]any{"id": "msg_unknown", "reason": "try"})
	if res.status != http.StatusOK || string(res.body) != `{"replayed":false}`+"\n" {
		t.Errorf("replay of an unknown id: %d %s", res.status, res.body)
	}
}

// Bad queries and bodies are 400 problems that reach nothing; a server
// without webhooks answers 404; a store that fails is 503, not 500.
func TestWebhookAdmin_BadInputAndNoWebhooks(t *testing.T) {
	f := &fakeWebhooks{dead: map[string][]wire.DeadLetter{}}
	h := newHarness(t, withWebhooks(f))
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "limit=+5", "limit=1&limit=2", "tenant=other", "limit=%zz"} {
		res := h.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters?"+q, "", "")
		if res.status != http.StatusBadRequest || !strings.HasPrefix(res.header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("?%s: %d %s, want a 400 problem", q, res.status, res.body)
		}
	}
	for _, body := range []string{`{}`, `{"id":"msg_a"}`, `{"reason":"x"}`, `{"id":"msg_a","reason":""}`, `{"id":"` + strings.Repeat("a", 129) + `","reason":"x"}`, `{"id":"a","reason":"x","tenant":"other"}`, `[1]`} {
		res := h.do(t, http.MethodPost, "/v1/admin/webhooks/replay", "application/json", body)
		if res.status != http.StatusBadRequest || res.specErr == nil && !strings.Contains(body, "129") && body != `{"id":"msg_a","reason":""}` {
			t.Errorf("replay %s: %d %s (spec: %v), want 400", body, res.status, res.body, res.specErr)
		}
	}
	if len(f.limits) != 0 || len(f.replayed) != 0 {
		t.Errorf("bad input reached the delivery: limits %v, replayed %v", f.limits, f.replayed)
	}

	f.err = fmt.Errorf("%w: redis down", authguard.ErrStoreUnavailable)
	if res := h.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters", "", ""); res.status != http.StatusServiceUnavailable || res.specErr != nil {
		t.Errorf("a failing store: %d %s (spec: %v), want 503", res.status, res.body, res.specErr)
	}

	none := newHarness(t)
	for _, res := range []*response{
		none.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters", "", ""),
		none.post(t, "/v1/admin/webhooks/replay", map[string]any{"id": "msg_a", "reason": "x"}),
	} {
		// (The harness checks a 404 against the spec's fallback answers.)
		if p := res.json(t); res.status != http.StatusNotFound || p["type"] != wire.ProblemNotFound {
			t.Errorf("no webhooks: %d %s, want 404 not-found", res.status, res.body)
		}
	}
}

// Attack: an administrator of tenant shop lists the default tenant's dead
// letters, or replays one of its events by a webhook-id learnt elsewhere,
// by naming the tenant in the query or the body, or by the id alone. The
// routes ask the delivery for the token's tenant only: shop's listing
// holds none of default's entries, naming a tenant is a 400 that reaches
// nothing, and the replay of default's id answers false and replays
// nothing. (webhook's test of the same name shows the Dispatcher keeps
// tenants apart on both queues.)
func TestDeadLetters_ATenantCannotListOrReplayAnothersEntries(t *testing.T) {
	key := auth.SigningKey{ID: "k", Alg: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef")}
	v, err := auth.New(auth.Config{Audience: "tollgate", Keys: []auth.Key{{ID: "k", Alg: "HS256", Secret: key.Secret}},
		Tenants: []auth.Tenant{{Name: "shop", Issuer: "iss"}}})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(scope auth.Scope) string {
		tok, err := auth.Sign(key, "iss", "tollgate", "shop", "desk", []auth.Scope{scope}, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	theirs, ours := deadLetter("msg_default"), deadLetter("msg_shop")
	ours.Tenant = "shop"
	f := &fakeWebhooks{dead: map[string][]wire.DeadLetter{"default": {theirs}, "shop": {ours}}}
	h := newHarness(t, withVerifier(v), withWebhooks(f), func(c *harnessConfig) { c.engine.Tenants = []string{"shop"} })
	read := []string{"Authorization", "Bearer " + sign(auth.ScopeAdminRead)}
	write := []string{"Authorization", "Bearer " + sign(auth.ScopeAdminWrite)}

	res := h.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters", "", "", read...)
	if res.status != http.StatusOK || strings.Contains(string(res.body), "msg_default") || !strings.Contains(string(res.body), "msg_shop") {
		t.Errorf("shop's listing: %d %s, want its own msg_shop only", res.status, res.body)
	}
	for _, q := range []string{"tenant=default", "tenant=default&limit=5"} {
		if res := h.do(t, http.MethodGet, "/v1/admin/webhooks/dead-letters?"+q, "", "", read...); res.status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, res.status, res.body)
		}
	}
	for _, body := range []string{`{"id":"msg_default","reason":"x","tenant":"default"}`, `{"id":"msg_default","reason":"x"}`} {
		res := h.do(t, http.MethodPost, "/v1/admin/webhooks/replay", "application/json", body, write...)
		if res.status == http.StatusOK && string(res.body) != `{"replayed":false}`+"\n" || res.status != http.StatusOK && res.status != http.StatusBadRequest {
			t.Errorf("replay %s: %d %s, want 400 or replayed false", body, res.status, res.body)
		}
	}
	if fmt.Sprint(f.limits) != "[100]" || len(f.replayed) != 0 {
		t.Errorf("the delivery was asked for limits %v and replayed %v; want one listing of shop's and no replay", f.limits, f.replayed)
	}
}
