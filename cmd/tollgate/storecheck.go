package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
)

// How often a running instance checks its store again. The secret check
// costs one round trip; the setup checks (eviction, persistence, password)
// one each per Cluster master.
const (
	secretCheckEvery   = time.Minute
	evictionCheckEvery = 5 * time.Minute
)

// checkedStore is what the store checks ask of a shared store: a
// *redisstore.Store. The memory store has one process and no policy to
// read, so it is not checked.
type checkedStore interface {
	SecretCheck(ctx context.Context, c authguard.SecretCheck) (match bool, err error)
	MaxmemoryPolicies(ctx context.Context) ([]redisstore.MaxmemoryPolicy, error)
	PersistenceModes(ctx context.Context) ([]redisstore.PersistenceMode, error)
	AuthModes(ctx context.Context) ([]redisstore.AuthMode, error)
}

// storeCheck catches four deployment mistakes on a shared store, at start
// and while running:
//
//   - instances with different secrets on one store, which keep their
//     counts apart (authguard.SecretCheck): an error line, the metric
//     tollgate_secret_mismatch and /readyz 503 secret-mismatch while it
//     lasts;
//   - a Redis that may evict tollgate's keys (a maxmemory-policy other than
//     noeviction, on any master): a warning line, the metric
//     tollgate_store_evicting and a /readyz warning; with strict
//     (-strict-store) a refusal to start and /readyz 503 store-evicts;
//   - a Redis that keeps no persistence (neither an append-only file nor
//     RDB snapshots, on any master), which a restart brings back empty:
//     likewise a warning line, tollgate_store_unpersisted, a /readyz
//     warning, and with strict a refusal and /readyz 503
//     store-unpersisted;
//   - a Redis that answers without a password on an address that is not
//     loopback, where anyone who reaches it can reset the counters:
//     likewise, with tollgate_store_unauthenticated and
//     store-unauthenticated.
//
// A store that cannot be asked (down, or refusing CONFIG) changes nothing:
// an outage is storeWatch's, and a refused CONFIG is said once at info.
// Persistence that neither CONFIG nor INFO tells is said to be unknown,
// once at info and as tollgate_store_unpersisted -1: not flagged, not ok.
// Lines name the problem and the tenant, never a secret or a check value.
// A nil *storeCheck (the memory store) checks nothing and reports nothing.
type storeCheck struct {
	store   checkedStore
	checks  []authguard.SecretCheck
	strict  bool
	log     *slog.Logger
	metrics *api.Metrics

	mu         sync.Mutex
	mismatched map[string]bool // secrets (by describe) whose check failed last time
	evicting   []redisstore.MaxmemoryPolicy
	forgets    []redisstore.PersistenceMode // masters that keep no persistence
	unknown    bool                         // some master's persistence could not be read, and this was logged
	open       []redisstore.AuthMode        // masters that answer without a password off loopback
	refused    bool                         // a refused CONFIG was logged
	readOnce   bool                         // the setup was read at least once
}

// startStoreCheck checks store at start and then every secretCheckEvery and
// evictionCheckEvery until ctx ends. It returns an error only with strict,
// for a Redis read to evict keys, keep no persistence or answer without a
// password off loopback. For a store that is not shared it returns nil,
// which checks nothing.
func startStoreCheck(ctx context.Context, store authguard.Store, engine *authguard.Engine, metrics *api.Metrics, log *slog.Logger, strict bool) (*storeCheck, error) {
	s, ok := store.(checkedStore)
	if !ok {
		return nil, nil
	}
	c := &storeCheck{store: s, checks: engine.SecretChecks(), strict: strict, log: log, metrics: metrics, mismatched: map[string]bool{}}
	c.checkSecrets(ctx)
	if err := c.checkSetup(ctx); err != nil {
		return nil, err
	}
	go c.run(ctx)
	return c, nil
}

// run checks again until ctx ends: the secrets every secretCheckEvery, the
// setup (memory policy, persistence, password) every evictionCheckEvery,
// or every secretCheckEvery until it was read once (Redis down at start).
func (c *storeCheck) run(ctx context.Context) {
	tick := time.NewTicker(secretCheckEvery)
	defer tick.Stop()
	lastPolicy := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			c.checkSecrets(ctx)
			c.mu.Lock()
			read := c.readOnce
			c.mu.Unlock()
			if !read || now.Sub(lastPolicy) >= evictionCheckEvery {
				c.checkSetup(ctx)
				lastPolicy = now
			}
		}
	}
}

// describe names a secret for logs: the main one or a tenant's.
func describe(sc authguard.SecretCheck) string {
	if sc.Tenant == "" {
		return "TOLLGATE_SECRET"
	}
	return "the secret of tenant " + sc.Tenant
}

// checkSecrets compares every secret's check value with the store's.
func (c *storeCheck) checkSecrets(ctx context.Context) {
	for _, sc := range c.checks {
		match, err := c.store.SecretCheck(ctx, sc)
		if err != nil {
			// An outage: storeWatch says so. Keep what was known.
			c.log.Debug("the secret check could not be read from the store; trying again in a minute", slog.String("error", err.Error()))
			continue
		}
		name := describe(sc)
		c.mu.Lock()
		was := c.mismatched[name]
		c.mismatched[name] = !match
		anyMismatch := false
		for _, m := range c.mismatched {
			anyMismatch = anyMismatch || m
		}
		c.mu.Unlock()
		c.metrics.SetSecretMismatch(anyMismatch)
		switch {
		case !match && !was:
			c.log.Error("another instance on this store uses a different secret: their counts, device tokens and attempt tokens are apart from this instance's; "+
				"this instance answers /readyz 503 until every instance on the store has the same secret (docs/redis.md: One secret, checked and rotated)",
				slog.String("secret", name), slog.String("check_key", sc.Key))
		case match && was:
			c.log.Info("the store's secret check matches this instance's secret again", slog.String("secret", name))
		}
	}
}

// checkSetup reads what the store is set up to keep: its memory policy, its
// persistence and whether it needs a password. With strict it returns the
// refusals of each, joined.
func (c *storeCheck) checkSetup(ctx context.Context) error {
	return errors.Join(c.checkEviction(ctx), c.checkPersistence(ctx), c.checkAuth(ctx))
}

// checkEviction reads the store's memory policy. With strict it returns an
// error when the policy may evict keys.
func (c *storeCheck) checkEviction(ctx context.Context) error {
	policies, err := c.store.MaxmemoryPolicies(ctx)
	switch {
	case errors.Is(err, redisstore.ErrConfigRefused):
		c.mu.Lock()
		first := !c.refused
		c.refused = true
		c.mu.Unlock()
		if first {
			c.log.Info("Redis refuses CONFIG GET (a managed Redis, or an ACL): its maxmemory-policy cannot be checked from here; "+
				"make sure it is noeviction (docs/redis.md: Redis memory, policy and size)", slog.String("error", err.Error()))
		}
		return nil
	case err != nil:
		c.log.Debug("the store's maxmemory-policy could not be read; trying again", slog.String("error", err.Error()))
		return nil
	}
	var evicting []redisstore.MaxmemoryPolicy
	for _, p := range policies {
		if p.Evicts() {
			evicting = append(evicting, p)
		}
	}
	c.mu.Lock()
	was := len(c.evicting) > 0
	c.evicting, c.readOnce = evicting, true
	c.mu.Unlock()
	c.metrics.SetStoreEvicting(len(evicting) > 0)
	switch {
	case len(evicting) > 0 && c.strict:
		err := fmt.Errorf("-strict-store: Redis may evict tollgate's keys (%s): an evicted counter is a reset one; set maxmemory-policy noeviction", policyList(evicting))
		if !was {
			c.log.Error(err.Error())
		}
		return err
	case len(evicting) > 0 && !was:
		c.log.Warn("Redis may evict tollgate's keys: an evicted counter is a reset one, so the daily bounds do not hold; "+
			"set maxmemory-policy noeviction (docs/redis.md: Redis memory, policy and size), or start with -strict-store to refuse it",
			slog.String("maxmemory_policy", policyList(evicting)))
	case len(evicting) == 0 && was:
		c.log.Info("Redis's maxmemory-policy is noeviction again")
	}
	return nil
}

// checkPersistence reads the store's persistence. With strict it returns
// an error when a master keeps none.
func (c *storeCheck) checkPersistence(ctx context.Context) error {
	modes, err := c.store.PersistenceModes(ctx)
	if err != nil {
		c.log.Debug("the store's persistence could not be read; trying again", slog.String("error", err.Error()))
		return nil
	}
	var forgets, unknown []redisstore.PersistenceMode
	for _, m := range modes {
		switch {
		case m.Forgets():
			forgets = append(forgets, m)
		case m.Unknown():
			unknown = append(unknown, m)
		}
	}
	c.mu.Lock()
	was, wasUnknown := len(c.forgets) > 0, c.unknown
	c.forgets, c.unknown, c.readOnce = forgets, len(unknown) > 0, true
	c.mu.Unlock()
	c.metrics.SetStoreUnpersisted(len(forgets) > 0, len(unknown) > 0)
	if len(unknown) > 0 && !wasUnknown {
		c.log.Info("Redis's persistence is unknown: it refuses CONFIG GET, and INFO persistence does not tell whether it writes snapshots (or is refused too); "+
			"make sure it keeps an append-only file (appendonly yes) or snapshots (docs/redis.md: Redis memory, policy and size)",
			slog.String("persistence", persistenceList(unknown)))
	}
	switch {
	case len(forgets) > 0 && c.strict:
		err := fmt.Errorf("-strict-store: Redis keeps no persistence (%s): a restart brings it back empty and resets every counter; set appendonly yes", persistenceList(forgets))
		if !was {
			c.log.Error(err.Error())
		}
		return err
	case len(forgets) > 0 && !was:
		c.log.Warn("Redis keeps neither an append-only file nor snapshots: a restart brings it back empty and resets every counter, so the daily bounds do not hold across one; "+
			"set appendonly yes (docs/redis.md: Redis memory, policy and size), or start with -strict-store to refuse it",
			slog.String("persistence", persistenceList(forgets)))
	case len(forgets) == 0 && was:
		c.log.Info("Redis keeps an append-only file or snapshots again")
	}
	return nil
}

// checkAuth asks the store whether it answers without a password. With
// strict it returns an error when a master does so off loopback.
func (c *storeCheck) checkAuth(ctx context.Context) error {
	modes, err := c.store.AuthModes(ctx)
	if err != nil {
		c.log.Debug("the store's password could not be checked; trying again", slog.String("error", err.Error()))
		return nil
	}
	var open []redisstore.AuthMode
	for _, m := range modes {
		if m.Open() {
			open = append(open, m)
		}
	}
	c.mu.Lock()
	was := len(c.open) > 0
	c.open, c.readOnce = open, true
	c.mu.Unlock()
	c.metrics.SetStoreUnauthenticated(len(open) > 0)
	switch {
	case len(open) > 0 && c.strict:
		err := fmt.Errorf("-strict-store: Redis answers without a password on %s: anyone who reaches it can reset every counter; set requirepass or an ACL user and give tollgate its password", authList(open))
		if !was {
			c.log.Error(err.Error())
		}
		return err
	case len(open) > 0 && !was:
		c.log.Warn("Redis answers without a password on an address that is not loopback: anyone who reaches it can reset or flush tollgate's counters; "+
			"set requirepass or an ACL user and give tollgate its password (docs/redis.md: Redis memory, policy and size), or start with -strict-store to refuse it",
			slog.String("redis", authList(open)))
	case len(open) == 0 && was:
		c.log.Info("Redis requires a password again")
	}
	return nil
}

// persistenceList is "none on 10.0.0.1:6379, …".
func persistenceList(ms []redisstore.PersistenceMode) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String() + " on " + m.Addr
	}
	return strings.Join(parts, ", ")
}

// authList is "10.0.0.1:6379, …".
func authList(ms []redisstore.AuthMode) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Addr
	}
	return strings.Join(parts, ", ")
}

// policyList is "allkeys-lru on 10.0.0.1:6379, …".
func policyList(ps []redisstore.MaxmemoryPolicy) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Policy + " on " + p.Addr
	}
	return strings.Join(parts, ", ")
}

// health wraps next (storeWatch.health) for api.Config.StoreHealth: a
// secret mismatch first, then, with strict, an evicting policy, no
// persistence and no password, then next.
func (c *storeCheck) health(next func() error) func() error {
	if c == nil {
		return next
	}
	return func() error {
		c.mu.Lock()
		var mismatched []string
		for name, m := range c.mismatched {
			if m {
				mismatched = append(mismatched, name)
			}
		}
		evicting, forgets, open := len(c.evicting) > 0, len(c.forgets) > 0, len(c.open) > 0
		c.mu.Unlock()
		switch {
		case len(mismatched) > 0:
			return fmt.Errorf("%s: %w", strings.Join(mismatched, ", "), authguard.ErrSecretMismatch)
		case evicting && c.strict:
			return authguard.ErrStoreEvicts
		case forgets && c.strict:
			return authguard.ErrStoreUnpersisted
		case open && c.strict:
			return authguard.ErrStoreUnauthenticated
		}
		return next()
	}
}

// warnings is api.Config.StoreWarnings: the evicting policies, no
// persistence and no password, unless strict (which fails /readyz
// instead). No address: /readyz is unauthenticated.
func (c *storeCheck) warnings() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.strict {
		return nil
	}
	var warnings []string
	if len(c.evicting) > 0 {
		seen := map[string]bool{}
		var policies []string
		for _, p := range c.evicting {
			if !seen[p.Policy] {
				seen[p.Policy] = true
				policies = append(policies, p.Policy)
			}
		}
		warnings = append(warnings, "Redis's maxmemory-policy "+strings.Join(policies, ", ")+
			" may evict tollgate's keys, which resets counters: set noeviction")
	}
	if len(c.forgets) > 0 {
		warnings = append(warnings, "Redis keeps neither an append-only file nor snapshots: a restart resets every counter; set appendonly yes")
	}
	if len(c.open) > 0 {
		warnings = append(warnings, "Redis answers without a password on an address that is not loopback: anyone who reaches it can reset the counters; set a password")
	}
	return warnings
}
