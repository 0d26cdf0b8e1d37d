package main

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// challenger is the server's challenge service (config's challenge
// section, package challenge): the built-in proof of work out of the box.
// With Redis, spent challenges and held submissions are shared by every
// instance through a client of its own, so that a challenge is spent once
// on all of them and a submission held by one is redeemed on another.
type challenger struct {
	c      *challenge.Challenger
	client redis.UniversalClient // nil on the memory store
}

// startChallenger builds the challenge service on the server's secret: its
// token and sealing keys are derived from it, so every instance that shares
// the secret (and Redis) verifies the others' challenges.
func startChallenger(cfg *config.Config, secret []byte, log *slog.Logger) (*challenger, error) {
	ch := &challenger{}
	cc := cfg.Challenge.ChallengeConfig(secret, nil)
	if cfg.Redis != nil {
		client, err := redisstore.NewClient(*cfg.Redis)
		if err != nil {
			return nil, err
		}
		prefix := cfg.KeyPrefix
		if prefix == "" {
			prefix = authguard.DefaultKeyPrefix
		}
		ch.client, cc.Store = client, challenge.NewRedisStore(client, prefix+":challenge:")
	} else {
		cc.Store = challenge.NewMemoryStore(challenge.MemoryConfig{MaxBytes: cfg.Challenge.MemoryLimit})
	}
	c, err := challenge.New(cc)
	if err != nil {
		ch.close()
		return nil, err
	}
	ch.c = c
	log.Info("challenges ready", slog.String("page", c.PageKind().String()), slog.Int("difficulty", c.Difficulty()))
	return ch, nil
}

// close releases the Redis client, if any.
func (ch *challenger) close() {
	if ch != nil && ch.client != nil {
		ch.client.Close()
	}
}
