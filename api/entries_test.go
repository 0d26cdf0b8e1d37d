package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
)

// TestAdmin_DenyListRemove: on-call blocks a spraying range, sees it
// listed and explained, and removes it once the incident is over; each
// write is one audit line and a metric, and no log line holds the range.
func TestAdmin_DenyListRemove(t *testing.T) {
	h := newHarness(t)
	res := h.post(t, "/v1/admin/deny", map[string]any{"flow": "login", "ip_range": "203.0.113.0/24", "expires_in": "4h", "reason": "incident 92"})
	if res.status != http.StatusCreated || res.specErr != nil {
		t.Fatalf("deny: %d %s (spec: %v)", res.status, res.body, res.specErr)
	}
	var x wire.Entry
	if err := json.Unmarshal(res.body, &x); err != nil {
		t.Fatal(err)
	}
	if x.Kind != "block" || x.Subject != "ip_range" || x.Family != "ipv4" || x.Length != 24 || x.Flow != "login" || x.By != "unauthenticated (loopback)" {
		t.Errorf("entry = %+v", x)
	}
	if exp, _ := time.Parse(time.RFC3339Nano, x.ExpiresAt); !exp.Equal(h.clock.Now().Add(4 * time.Hour)) {
		t.Errorf("expires_at %s, want 4h from now", x.ExpiresAt)
	}
	v := h.check(t, map[string]any{"flow": "login", "account": "a@example.com", "ip": "203.0.113.50"})
	if v.Action != "delay" || v.RetryAfter != 4*3600 || strings.Join(v.Reasons, ",") != "blocked" {
		t.Errorf("a check from the range: %+v, want delay 4h [blocked]", v)
	}
	if v := h.check(t, map[string]any{"flow": "otp_verify", "account": "a@example.com", "ip": "203.0.113.50"}); v.Action != "proceed" {
		t.Errorf("another flow: %+v, want proceed", v)
	}

	list := h.do(t, http.MethodGet, "/v1/admin/entries?flow=login", "", "")
	if list.status != 200 || !strings.Contains(string(list.body), `"id":"`+x.ID+`"`) {
		t.Errorf("entries: %d %s", list.status, list.body)
	}
	if strings.Contains(string(list.body), "203.0.113") || strings.Contains(string(res.body), "203.0.113") {
		t.Error("an answer repeats the range")
	}
	ex := h.post(t, "/v1/admin/explain", map[string]any{"flow": "login", "ip": "203.0.113.9"})
	if ex.status != 200 || !strings.Contains(string(ex.body), `"id":"`+x.ID+`"`) || !strings.Contains(string(ex.body), `"reasons":["blocked"]`) {
		t.Errorf("explain: %d %s", ex.status, ex.body)
	}

	rm := h.post(t, "/v1/admin/remove", map[string]any{"id": x.ID, "reason": "incident 92 closed"})
	if rm.status != 200 || strings.TrimSpace(string(rm.body)) != `{"removed":true}` {
		t.Errorf("remove: %d %s", rm.status, rm.body)
	}
	if rm := h.post(t, "/v1/admin/remove", map[string]any{"id": x.ID, "reason": "again"}); strings.TrimSpace(string(rm.body)) != `{"removed":false}` {
		t.Errorf("remove again: %s", rm.body)
	}
	if v := h.check(t, map[string]any{"flow": "login", "account": "a@example.com", "ip": "203.0.113.50"}); v.Action != "proceed" {
		t.Errorf("after the removal: %+v, want proceed", v)
	}

	logs := h.logs.String()
	for _, want := range []string{`"msg":"admin block"`, `"reason":"incident 92"`, `"subject":"ip_range"`, `"length":24`, `"msg":"admin remove"`, `"reason":"incident 92 closed"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit lines lack %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "203.0.113") {
		t.Error("a log line holds the range or an address")
	}
	metrics := string(h.do(t, http.MethodGet, "/metrics", "", "").body)
	for _, want := range []string{`tollgate_admin_writes_total{action="block"} 1`, `tollgate_admin_writes_total{action="remove"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestAdmin_AllowAndCaptchaEntries: an allowed office's spray goes
// unchallenged, a captcha entry on a block of numbers asks for a CAPTCHA.
func TestAdmin_AllowAndCaptchaEntries(t *testing.T) {
	h := newHarness(t)
	if res := h.post(t, "/v1/admin/allow", map[string]any{"ip_range": "198.51.100.0/24", "expires_in": "1d", "reason": "office"}); res.status != 201 || res.specErr != nil {
		t.Fatalf("allow: %d %s %v", res.status, res.body, res.specErr)
	}
	for i := range 30 {
		acct := login(strings.Repeat("u", i+1)+"@example.com", "198.51.100.20")
		v := h.check(t, acct)
		if v.Action != "proceed" {
			t.Fatalf("user %d of the allowed office: %+v", i, v)
		}
		h.report(t, map[string]any{"flow": "login", "account": acct["account"], "ip": acct["ip"], "outcome": "failure", "attempt": v.Attempt})
	}
	if res := h.post(t, "/v1/admin/deny", map[string]any{"destination_prefix": "+447400", "action": "captcha", "expires_in": "90m", "reason": "pumping"}); res.status != 201 {
		t.Fatalf("deny captcha: %d %s", res.status, res.body)
	}
	r := h.post(t, "/v1/otp/send", map[string]any{"destination": "+44 7400 123456", "channel": "sms", "ip": "192.0.2.1"})
	if v := r.verdict(t); v.Action != "captcha" || strings.Join(v.Reasons, ",") != "blocked" {
		t.Errorf("a send to the block: %+v, want captcha [blocked]", v)
	}
}

// TestAdmin_EntriesNeedTheirScopesAndStayInTheirTenant: a verdicts token
// cannot add entries, admin:read can list but not write, and the entry
// lands in the token's tenant.
func TestAdmin_EntriesNeedTheirScopes(t *testing.T) {
	h, sign := authHarness(t)
	body := `{"ip_range":"203.0.113.0/24","expires_in":"1h","reason":"r"}`
	bearer := func(scopes ...auth.Scope) []string { return []string{"Authorization", "Bearer " + sign(scopes...)} }
	if res := h.do(t, http.MethodPost, "/v1/admin/deny", "application/json", body, bearer(auth.ScopeVerdicts)...); res.status != 403 {
		t.Errorf("a verdicts token adding an entry: %d", res.status)
	}
	if res := h.do(t, http.MethodPost, "/v1/admin/deny", "application/json", body, bearer(auth.ScopeAdminRead)...); res.status != 403 {
		t.Errorf("an admin:read token adding an entry: %d", res.status)
	}
	res := h.do(t, http.MethodPost, "/v1/admin/deny", "application/json", body, bearer(auth.ScopeAdminWrite)...)
	if res.status != 201 || !strings.Contains(string(res.body), `"by":"desk"`) {
		t.Fatalf("admin:write: %d %s", res.status, res.body)
	}
	if res := h.do(t, http.MethodGet, "/v1/admin/entries", "", "", bearer(auth.ScopeAdminRead)...); res.status != 200 || !strings.Contains(string(res.body), `"kind":"block"`) {
		t.Errorf("admin:read listing: %d %s", res.status, res.body)
	}
	if l, _ := h.engine.ListEntries(t.Context(), "default", ""); len(l) != 0 {
		t.Errorf("the default tenant holds %d entries; the token's tenant is shop", len(l))
	}
}
