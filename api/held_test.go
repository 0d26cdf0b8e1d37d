package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

func withHeldIndex() harnessOption {
	return func(c *harnessConfig) { c.engine.HeldBytes = authguard.DefaultHeldBytes }
}

// holdAccount reports failures for account until a check is delayed.
func holdAccount(t *testing.T, h *harness, account, ip string) {
	t.Helper()
	for range 20 {
		if v := h.check(t, login(account, ip)); v.Action != "proceed" {
			return
		}
		h.report(t, map[string]any{"flow": "login", "account": account, "ip": ip, "outcome": "failure"})
	}
	t.Fatalf("%s was never held", account)
}

func heldList(t *testing.T, h *harness, query string) (wire.HeldList, *response) {
	t.Helper()
	if err := h.engine.FlushHeld(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := h.do(t, http.MethodGet, "/v1/admin/held"+query, "", "")
	var out wire.HeldList
	if res.status == http.StatusOK {
		if err := json.Unmarshal(res.body, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out, res
}

func TestHeldAPI_TheOperatorListsAndUnlocksTheAccountsHeldInLogin(t *testing.T) {
	h := newHarness(t, withHeldIndex())
	accounts := []string{"alice@example.com", "bob@example.com"}
	for i, a := range accounts {
		holdAccount(t, h, a, []string{"192.0.2.1", "192.0.2.2"}[i])
	}
	list, res := heldList(t, h, "?flow=login&kind=account")
	if res.status != http.StatusOK {
		t.Fatalf("list: %d %s", res.status, res.body)
	}
	var got []string
	for _, x := range list.Subjects {
		got = append(got, x.Subject)
		if x.Flow != "login" || x.Kind != "account" || x.Rule != "account_backoff" || x.WaitMS <= 0 {
			t.Errorf("listed %+v: want login, account, account_backoff and a wait", x)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, accounts) {
		t.Fatalf("listed %q, want %q", got, accounts)
	}
	lines := auditLines(t, h.logs.String(), "admin held list")
	if len(lines) != 1 || lines[0]["listed"] != float64(2) {
		t.Errorf("audit lines of the list: %v, want one saying 2 listed", lines)
	}

	dry := h.post(t, "/v1/admin/reset-held", map[string]any{"flow": "login", "kind": "account", "reason": "incident 9", "dry_run": true})
	if dry.status != http.StatusOK || !strings.Contains(string(dry.body), `"matched":2`) || !strings.Contains(string(dry.body), `"reset":0`) {
		t.Fatalf("dry run: %d %s, want 2 matched, 0 reset", dry.status, dry.body)
	}
	if v := h.check(t, login("alice@example.com", "192.0.2.1")); v.Action == "proceed" {
		t.Fatal("the dry run freed alice")
	}
	done := h.post(t, "/v1/admin/reset-held", map[string]any{"flow": "login", "kind": "account", "reason": "incident 9"})
	if done.status != http.StatusOK || !strings.Contains(string(done.body), `"reset":2`) {
		t.Fatalf("reset: %d %s, want 2 reset", done.status, done.body)
	}
	for i, a := range accounts {
		if v := h.check(t, login(a, []string{"192.0.2.1", "192.0.2.2"}[i])); v.Action != "proceed" {
			t.Errorf("after the bulk unlock %s gets %s", a, v.Action)
		}
	}
	if l := auditLines(t, h.logs.String(), "admin reset-held"); len(l) != 2 || l[1]["reset"] != float64(2) {
		t.Errorf("reset-held audit lines: %v, want the dry run's and the reset's", l)
	}
	for _, a := range accounts {
		if strings.Contains(h.logs.String(), a) {
			t.Errorf("the log holds %s", a)
		}
	}
}

func TestHeldAPI_BadInputIsAProblemAndChangesNothing(t *testing.T) {
	h := newHarness(t, withHeldIndex())
	holdAccount(t, h, "alice@example.com", "192.0.2.1")
	for _, q := range []string{"?kind=user", "?limit=0", "?limit=x", "?limit=1001", "?cursor=%21%21", "?flow=nope", "?flow=login&flow=login", "?account=alice"} {
		if _, res := heldList(t, h, q); res.status != http.StatusBadRequest {
			t.Errorf("GET held%s: %d %s, want 400", q, res.status, res.body)
		}
	}
	for _, body := range []string{`{"flow":"login"}`, `{"reason":"x"}`, `{"flow":"login","reason":"x","kind":"user"}`,
		`{"flow":"login","reason":"x","subjects":"alice"}`, `{"flow":"login","reason":"x","subjects":[1]}`, `{"flow":"login","reason":"x","extra":1}`, `[]`} {
		if res := h.do(t, http.MethodPost, "/v1/admin/reset-held", "application/json", body); res.status != http.StatusBadRequest {
			t.Errorf("POST reset-held %s: %d %s, want 400", body, res.status, res.body)
		}
	}
	for _, body := range []string{`{"flow":"login","reason":"x","subjects":"alice"}`, `{"flow":"login","reason":"x","subjects":[1]}`, `{"flow":"login","reason":"x","subjects":[""]}`} {
		if res := h.do(t, http.MethodPost, "/v1/admin/reset-held", "application/json", body); !strings.Contains(string(res.body), `"field":"subjects"`) {
			t.Errorf("POST reset-held %s: %s, want a problem on subjects", body, res.body)
		}
	}
	if v := h.check(t, login("alice@example.com", "192.0.2.1")); v.Action == "proceed" {
		t.Error("a refused call freed alice")
	}
	named := h.post(t, "/v1/admin/reset-held", map[string]any{"flow": "login", "subjects": []string{"alice@example.com"}, "reason": "ticket 5"})
	if named.status != http.StatusOK || !strings.Contains(string(named.body), `"reset":1`) {
		t.Fatalf("reset by list: %d %s", named.status, named.body)
	}
	if v := h.check(t, login("alice@example.com", "192.0.2.1")); v.Action != "proceed" {
		t.Errorf("after her reset by list alice gets %s", v.Action)
	}
}

func TestHeldAPI_OffIsNotFound(t *testing.T) {
	h := newHarness(t)
	if _, res := heldList(t, h, ""); res.status != http.StatusNotFound {
		t.Errorf("list with the index off: %d", res.status)
	}
	if res := h.post(t, "/v1/admin/reset-held", map[string]any{"flow": "login", "reason": "x"}); res.status != http.StatusNotFound {
		t.Errorf("reset-held with the index off: %d", res.status)
	}
}

func TestHeldAPI_TheGaugeCountsHeldSubjectsByFlowAndKind(t *testing.T) {
	h := newHarness(t, withHeldIndex())
	h.metrics.AddEngine(h.engine) // as serve does: it adds the held gauge
	holdAccount(t, h, "alice@example.com", "192.0.2.1")
	holdAccount(t, h, "bob@example.com", "192.0.2.2")
	if err := h.engine.FlushHeld(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := h.do(t, http.MethodGet, "/metrics", "", "")
	body := string(res.body)
	if want := `tollgate_held_subjects{flow="login",kind="account"} 2`; !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if strings.Contains(body, "alice") {
		t.Error("/metrics holds an identifier")
	}
}
