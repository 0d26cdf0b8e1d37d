package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/webhook"
)

// webhookStop bounds how long a stopping server waits for the deliveries in
// flight.
const webhookStop = 5 * time.Second

// webhooks is the server's event delivery (config's webhooks section): a
// webhook.Dispatcher on a Redis queue shared by every instance when the
// store is Redis, with a client and pool of its own so that deliveries never
// take a connection a verdict needs; else on a bounded in-process queue.
// It serves the admin API's dead-letter routes (api.Webhooks).
type webhooks struct {
	d      *webhook.Dispatcher
	client redis.UniversalClient // nil on the memory queue
	stop   context.CancelFunc
	done   chan struct{}
}

// startWebhooks starts delivering cfg.Webhooks' events; nil without a
// webhooks section. secret is the server's: the Redis queue's entries are
// encrypted under a key derived from it, so every instance reads them and a
// dump of Redis shows no identifier.
func startWebhooks(cfg *config.Config, secret []byte, reg prometheus.Registerer, log *slog.Logger) (*webhooks, error) {
	wc := cfg.Webhooks
	if wc == nil {
		return nil, nil
	}
	w := &webhooks{done: make(chan struct{})}
	var queue webhook.Queue
	if cfg.Redis != nil {
		client, err := redisstore.NewClient(*cfg.Redis)
		if err != nil {
			return nil, err
		}
		prefix := cfg.KeyPrefix
		if prefix == "" {
			prefix = authguard.DefaultKeyPrefix
		}
		if queue, err = webhook.NewRedisQueue(client, webhook.RedisQueueConfig{
			Prefix: prefix + ":webhook:", Secret: secret, Logger: log,
			ClaimAfter: max(2*time.Minute, 2*wc.Timeout),
		}); err != nil {
			client.Close()
			return nil, err
		}
		w.client = client
	}
	eps := make([]webhook.Endpoint, len(wc.Endpoints))
	for i, e := range wc.Endpoints {
		eps[i] = webhook.Endpoint{Name: e.Name, Tenant: e.Tenant, URL: e.URL, Secret: e.Secret, Types: e.Types,
			RatePerSecond: e.RatePerSecond, Burst: e.Burst}
	}
	d, err := webhook.New(webhook.Config{Endpoints: eps, Queue: queue, MaxAge: wc.MaxAge, Timeout: wc.Timeout,
		Registerer: reg, Logger: log})
	if err != nil {
		if w.client != nil {
			w.client.Close()
		}
		return nil, err
	}
	w.d = d
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	go func() {
		defer close(w.done)
		if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("webhook delivery stopped", slog.String("error", err.Error()))
		}
	}()
	queueName := "memory (a restart loses what is not yet delivered)"
	if w.client != nil {
		queueName = "redis (shared by every instance)"
	}
	log.Info("sending webhooks", slog.Int("endpoints", len(eps)), slog.String("queue", queueName))
	return w, nil
}

// close stops the deliveries, waiting at most webhookStop for those in
// flight.
func (w *webhooks) close() {
	if w == nil {
		return
	}
	w.stop()
	select {
	case <-w.done:
	case <-time.After(webhookStop):
	}
	if w.client != nil {
		w.client.Close()
	}
}

// DeadLetters implements api.Webhooks.
func (w *webhooks) DeadLetters(ctx context.Context, tenant string, limit int) ([]wire.DeadLetter, error) {
	l, err := w.d.DeadLetters(ctx, tenant, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: webhook dead letters: %w", authguard.ErrStoreUnavailable, err)
	}
	out := make([]wire.DeadLetter, len(l))
	for i, x := range l {
		out[i] = wire.DeadLetter{ID: x.ID, Type: x.Type, Tenant: x.Tenant, Endpoint: x.Endpoint, LastError: x.LastError,
			Attempts: x.Attempts, Time: x.Time.UTC(), DeadAt: x.DeadAt.UTC()}
	}
	return out, nil
}

// Replay implements api.Webhooks.
func (w *webhooks) Replay(ctx context.Context, tenant, id string) (bool, error) {
	switch err := w.d.Replay(ctx, tenant, id); {
	case errors.Is(err, webhook.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%w: webhook replay: %w", authguard.ErrStoreUnavailable, err)
	}
	return true, nil
}
