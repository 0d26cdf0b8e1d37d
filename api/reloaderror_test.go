package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// The route finds a refused reload's reason by its type wherever it sits
// in the chain: a *ConfigError wrapped once more (by a reloader that adds
// what it was doing) is still answered with its reason alone, not the
// wrapper's words nor the sentinel's.
func TestAdminReload_AWrappedConfigErrorIsAnsweredWithItsReason(t *testing.T) {
	reason := "tollgate.yaml: policy: line 7: flows.login.rules[x]: algorithm must be one of ..."
	h := newHarness(t, withReload(func() (wire.ReloadResult, error) {
		return wire.ReloadResult{}, fmt.Errorf("SIGHUP reload: %w", &api.ConfigError{Err: errors.New(reason)})
	}))
	res := h.do(t, http.MethodPost, "/v1/admin/reload", "", "")
	p := res.json(t)
	if res.status != http.StatusConflict || p["type"] != wire.ProblemConfigInvalid || p["detail"] != reason {
		t.Errorf("reload refused with a wrapped ConfigError: %d %s, want 409 config-invalid whose detail is %q", res.status, res.body, reason)
	}
}
