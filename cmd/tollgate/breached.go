package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/breached"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// breachedRanges serves GET /v1/breached/{prefix} (config's breached
// section): the corpus is loaded at start, where a corpus that does not
// load (past max_bytes, a malformed line) stops the server from starting,
// and again on every reload, where it refuses the reload and the running
// corpus stays. A reload holds the running corpus and the next one at once
// while the next one loads: max_bytes bounds each, so twice it bounds the
// peak.
type breachedRanges struct {
	live    breached.Live
	metrics *breached.Metrics
	log     *slog.Logger

	// next is what check prepared for reload to swap in.
	next     *breached.Service
	nextLoad loaded
}

// loaded is a corpus just read and how long that took; nil without one.
type loaded struct {
	corpus *breached.Corpus
	took   time.Duration
}

// openBreached builds the range service of cfg's breached section (off
// without one) and registers its metrics on reg.
func openBreached(cfg *config.Config, reg prometheus.Registerer, log *slog.Logger) (*breachedRanges, error) {
	m, err := breached.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("breached: %w", err)
	}
	b := &breachedRanges{metrics: m, log: log}
	s, l, err := b.build(cfg.Breached)
	if err != nil {
		return nil, err
	}
	b.use(s, l)
	return b, nil
}

// build loads c's corpus, if any, and returns the service to answer with;
// nil when c is nil (the route answers breached-off).
func (b *breachedRanges) build(c *config.Breached) (*breached.Service, loaded, error) {
	if c == nil {
		return nil, loaded{}, nil
	}
	var l loaded
	if c.Corpus != "" {
		start := time.Now()
		corpus, err := breached.Load(c.Corpus, c.MaxBytes)
		if err != nil {
			return nil, loaded{}, err // its errors say "breached:"
		}
		l = loaded{corpus: corpus, took: time.Since(start)}
	}
	s, err := breached.New(c.ServiceConfig(l.corpus, b.metrics))
	if err != nil {
		return nil, loaded{}, err
	}
	return s, l, nil
}

// use makes s the service that answers and records its corpus.
func (b *breachedRanges) use(s *breached.Service, l loaded) {
	b.live.Set(s)
	b.metrics.SetCorpus(l.corpus, l.took)
	switch {
	case l.corpus != nil:
		// Counts only: the log says nothing of the corpus's contents.
		b.log.Info("breached-password corpus loaded",
			slog.Int64("hashes", l.corpus.Hashes()), slog.Int64("bytes", l.corpus.Bytes()),
			slog.Float64("seconds", l.took.Seconds()), slog.Int("lines", s.Lines()))
	case s != nil:
		b.log.Info("breached-password ranges forwarded to the upstream range API", slog.Int("lines", s.Lines()))
	}
}

// check loads next's corpus; a corpus that does not load refuses the
// reload.
func (b *breachedRanges) check(next *config.Config) error {
	s, l, err := b.build(next.Breached)
	if err != nil {
		return err // its errors say "breached:"
	}
	b.next, b.nextLoad = s, l
	return nil
}

// reload swaps in what check loaded.
func (b *breachedRanges) reload(*config.Config) error {
	b.use(b.next, b.nextLoad)
	b.next, b.nextLoad = nil, loaded{}
	return nil
}

// Range answers as the service in use.
func (b *breachedRanges) Range(ctx context.Context, prefix string) ([]byte, error) {
	return b.live.Range(ctx, prefix)
}
