package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/auth"
)

// A reload answers the flows in force and the settings that need a
// restart, is audited, and counts as an admin write.
func TestAdminReload_AnswersTheFlowsAndWhatNeedsARestart(t *testing.T) {
	calls := 0
	h := newHarness(t, withReload(func() (wire.ReloadResult, error) {
		calls++
		return wire.ReloadResult{Flows: []string{"login"}, RestartNeeded: []string{"listen"}}, nil
	}))
	res := h.do(t, http.MethodPost, "/v1/admin/reload", "", "")
	if res.status != http.StatusOK || res.specErr != nil || calls != 1 {
		t.Fatalf("reload: %d %s (spec: %v), %d calls", res.status, res.body, res.specErr, calls)
	}
	if got := string(res.body); !strings.Contains(got, `"flows":["login"]`) || !strings.Contains(got, `"restart_needed":["listen"]`) {
		t.Errorf("reload answered %s", got)
	}
	lines := auditLines(t, h.logs.String(), "admin reload")
	if len(lines) != 1 || lines[0]["outcome"] != "ok" || lines[0]["restart_needed"] != "listen" {
		t.Errorf("audit lines %v, want one ok line naming listen", lines)
	}
	if res := h.do(t, http.MethodPost, "/v1/admin/reload", "application/json", "{}"); res.status != http.StatusOK {
		t.Errorf("reload with {}: %d %s", res.status, res.body)
	}
}

// A file that does not validate is answered 409 config-invalid with its
// reason (which names the line), audited as failed; a body with anything
// in it is a 400 and reloads nothing.
func TestAdminReload_ABadFileIsA409NamingItsLine(t *testing.T) {
	calls := 0
	h := newHarness(t, withReload(func() (wire.ReloadResult, error) {
		calls++
		return wire.ReloadResult{}, &api.ConfigError{Err: errors.New("tollgate.yaml: policy: line 7: flows.login.rules[x]: algorithm must be one of ...")}
	}))
	res := h.do(t, http.MethodPost, "/v1/admin/reload", "", "")
	p := res.json(t)
	if res.status != http.StatusConflict || p["type"] != wire.ProblemConfigInvalid || !strings.HasPrefix(fmt.Sprint(p["detail"]), "tollgate.yaml: policy: line 7:") || res.specErr != nil {
		t.Errorf("reload of a bad file: %d %s (spec: %v), want 409 config-invalid with the file's error", res.status, res.body, res.specErr)
	}
	if lines := auditLines(t, h.logs.String(), "admin reload"); len(lines) != 1 || lines[0]["outcome"] != "failed" || lines[0]["problem"] != "config-invalid" {
		t.Errorf("audit lines %v, want one failed line", lines)
	}
	if res := h.do(t, http.MethodPost, "/v1/admin/reload", "application/json", `{"file":"/etc/shadow"}`); res.status != http.StatusBadRequest || calls != 1 {
		t.Errorf("reload with a body: %d %s after %d reloads, want 400 and no reload", res.status, res.body, calls)
	}
}

// Only a *ConfigError's reason is answered: an error that merely wraps
// ErrConfigInvalid is answered with the sentinel's own words, so that no
// other text (here a secret file's path) reaches the caller by starting
// with them.
func TestAdminReload_AnErrorThatOnlyWrapsTheSentinelIsNotEchoed(t *testing.T) {
	h := newHarness(t, withReload(func() (wire.ReloadResult, error) {
		return wire.ReloadResult{}, fmt.Errorf("%w: open /etc/tollgate/secret-acme: permission denied", api.ErrConfigInvalid)
	}))
	res := h.do(t, http.MethodPost, "/v1/admin/reload", "", "")
	p := res.json(t)
	if res.status != http.StatusConflict || p["type"] != wire.ProblemConfigInvalid || p["detail"] != api.ErrConfigInvalid.Error() || strings.Contains(string(res.body), "secret-acme") {
		t.Errorf("reload failing with a wrapped sentinel: %d %s, want 409 config-invalid saying only %q", res.status, res.body, api.ErrConfigInvalid)
	}
	if err := (&api.ConfigError{Err: errors.New("line 3: x")}); !errors.Is(err, api.ErrConfigInvalid) {
		t.Errorf("errors.Is(%v, ErrConfigInvalid) = false", err)
	}
}

// The file is the whole deployment's: another tenant's administrator may
// not reload it, whatever the token's scopes.
func TestAdminReload_AnotherTenantsAdministratorIsRefused(t *testing.T) {
	h, sign := authHarness(t)
	res := h.do(t, http.MethodPost, "/v1/admin/reload", "", "", "Authorization", "Bearer "+sign(auth.ScopeAdminWrite))
	if p := res.json(t); res.status != http.StatusForbidden || p["type"] != wire.ProblemForbidden {
		t.Errorf("tenant shop's admin reloading: %d %s, want 403", res.status, res.body)
	}
}
