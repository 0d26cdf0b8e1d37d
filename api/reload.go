package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/tollgate-auth/tollgate/authguard"
)

// ErrConfigInvalid marks a reload that the configuration file refused: it
// does not load or validate, or its policy cannot replace the running one.
// The running policy stays; Config.Reload wraps the reason, which names the
// file's line, and /v1/admin/reload answers it as a config-invalid
// problem.
var ErrConfigInvalid = errors.New("the configuration is invalid; the running policy stays")

// reloadConfig serves POST /v1/admin/reload: the server re-reads its
// configuration file and swaps the running policy (Config.Reload). It takes
// no body ({} or nothing). Only the default tenant's administrators may
// reload: the file is the whole deployment's, and its errors may name
// other tenants' settings.
func (a *API) reloadConfig(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		var body struct{}
		if err := decode(w, r, fields{}, &body); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	if t := tenantOf(r.Context()); t != "" && t != authguard.DefaultTenant {
		a.writeError(w, r, newProblem(kindForbidden, "", "only the default tenant's administrators may reload the configuration"))
		return
	}
	if a.reload == nil {
		a.writeError(w, r, newProblem(kindConfigInvalid, "", "this server has no configuration file to re-read"))
		return
	}
	res, err := a.reload()
	var attrs []slog.Attr
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	} else if len(res.RestartNeeded) > 0 {
		attrs = append(attrs, slog.String("restart_needed", strings.Join(res.RestartNeeded, ",")))
	}
	if errors.Is(err, ErrConfigInvalid) {
		err = newProblem(kindConfigInvalid, "", strings.TrimPrefix(err.Error(), ErrConfigInvalid.Error()+": "))
	}
	a.audit(r, "admin reload", "", err, attrs...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if res.Flows == nil {
		res.Flows = []string{}
	}
	if res.RestartNeeded == nil {
		res.RestartNeeded = []string{}
	}
	a.writeJSON(w, r, http.StatusOK, res)
}
