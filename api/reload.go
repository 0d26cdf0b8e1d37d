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
// The running policy stays. errors.Is finds it in a *ConfigError.
var ErrConfigInvalid = errors.New("the configuration is invalid; the running policy stays")

// ConfigError is the error of a reload that the configuration file
// refused. Err is the reason, which names the file's line (the config
// package's *Error beneath has Line and Path); /v1/admin/reload answers it
// 409 config-invalid with Err's text as the detail. Any other error that
// wraps ErrConfigInvalid is answered with ErrConfigInvalid's words alone:
// the route takes a reason as a value, never by cutting an error's text.
type ConfigError struct {
	Err error
}

func (e *ConfigError) Error() string { return ErrConfigInvalid.Error() + ": " + e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrConfigInvalid) hold for a *ConfigError.
func (e *ConfigError) Is(target error) bool { return target == ErrConfigInvalid }

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
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		err = newProblem(kindConfigInvalid, "", ce.Err.Error())
	case errors.Is(err, ErrConfigInvalid):
		err = newProblem(kindConfigInvalid, "", ErrConfigInvalid.Error())
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
