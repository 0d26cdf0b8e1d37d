package main

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// reloader re-reads the configuration (SIGHUP, POST /v1/admin/reload) and
// swaps the running policy. The file is loaded and validated in full
// first, then the policies are swapped by the engine at once; a file that
// does not load, or whose policy the engine refuses, changes nothing. Only
// the policy (flows, and the tenants' flows) changes live: the settings
// that make the process (listen, store, secrets, auth, TLS, timeouts, ...)
// keep their running values, and the answer names the ones the file
// changes, for a restart to apply.
type reloader struct {
	load    func() (*config.Config, error)
	engine  *authguard.Engine
	metrics *api.Metrics
	log     *slog.Logger
	pieces  []reloadable // what else a reload changes (server.reloadables)

	mu      sync.Mutex // one reload at a time
	running *config.Config
}

// reloadable is a piece of the server that a reload hands the next
// configuration (the proxy's routes). check runs for every piece before
// anything changes and refuses what the piece cannot take; it may prepare
// what reload then swaps in (a file read once). reload runs once the
// engine has next's policy. Either error refuses the reload and is said
// to its caller.
type reloadable interface {
	check(next *config.Config) error
	reload(next *config.Config) error
}

// reload re-reads the configuration; by says what asked (SIGHUP, or the
// admin route), for the log.
func (r *reloader) reload(by string) (wire.ReloadResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, err := r.apply()
	r.metrics.ConfigReloaded(err == nil)
	if err != nil {
		r.log.Error("configuration reload refused: the running policy stays", slog.String("by", by), slog.String("error", err.Error()))
		return res, &api.ConfigError{Err: err}
	}
	attrs := []any{slog.String("by", by), slog.Any("flows", res.Flows)}
	if len(res.RestartNeeded) > 0 {
		attrs = append(attrs, slog.Any("restart_needed", res.RestartNeeded))
		r.log.Warn("configuration reloaded: the policy applies now; the other settings it changes need a restart", attrs...)
	} else {
		r.log.Info("configuration reloaded", attrs...)
	}
	return res, nil
}

func (r *reloader) apply() (wire.ReloadResult, error) {
	if r.load == nil {
		return wire.ReloadResult{}, fmt.Errorf("this process has no configuration to re-read")
	}
	next, err := r.load()
	if err != nil {
		return wire.ReloadResult{}, err
	}
	for _, p := range r.pieces {
		if err := p.check(next); err != nil {
			return wire.ReloadResult{}, err
		}
	}
	if err := r.engine.SetPolicies(next.Policy, next.TenantPolicies); err != nil {
		return wire.ReloadResult{}, err
	}
	for _, p := range r.pieces { // each checked above: the policy is next's
		if err := p.reload(next); err != nil {
			return wire.ReloadResult{}, err
		}
	}
	r.metrics.SetPolicy(next.Policy)
	res := wire.ReloadResult{Flows: next.Policy.FlowNames(), RestartNeeded: restartNeeded(r.running, next)}
	slices.Sort(res.Flows)
	// The running settings stay; the next reload compares with them.
	kept := *r.running
	kept.Policy, kept.TenantPolicies = next.Policy, next.TenantPolicies
	r.running = &kept
	return res, nil
}

// restartNeeded names the settings, as the file writes them, that differ
// between the running configuration and next and that only a restart
// applies.
func restartNeeded(running, next *config.Config) []string {
	var out []string
	for _, s := range []struct {
		name      string
		was, will any
	}{
		{"listen", running.Listen, next.Listen},
		{"secret", running.Secret, next.Secret},
		{"log_level", running.LogLevel, next.LogLevel},
		{"timeouts", running.Timeouts, next.Timeouts},
		{"redis", running.Redis, next.Redis},
		{"key_prefix", running.KeyPrefix, next.KeyPrefix},
		{"memory_limit", running.MemoryLimit, next.MemoryLimit},
		{"entries_refresh", running.EntriesRefresh, next.EntriesRefresh},
		{"decision_log", running.DecisionLog, next.DecisionLog},
		{"auth", running.Auth, next.Auth},
		{"tls", running.TLS, next.TLS},
		{"webhooks", running.Webhooks, next.Webhooks},
		{"tenant secrets", running.TenantSecrets, next.TenantSecrets},
		{"proxy", proxyRestartNeeded(running, next), false}, // its routes apply now (proxy.go)
	} {
		if !reflect.DeepEqual(s.was, s.will) {
			out = append(out, s.name)
		}
	}
	return out
}
