package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// sharedAfter is how many of this instance's check scripts must already be
// in flight before the next one rides a shared round trip. Below it each
// call has a connection to itself: at low load there is nothing to share,
// and handing a call to the pipeliner's goroutine and back costs more CPU
// than its round trip saves (BENCHMARKS.md, "Shared round trips").
const sharedAfter = 2

// shared sends concurrent check scripts on one node together, as with
// envoy's ratelimit: go-redis's auto-pipeliner holds one connection with a
// writer goroutine that writes every call queued at that moment in one
// write and a reader that reads the replies as they come (full duplex: no
// batch waits for the one before it). Redis then makes one pair of network
// system calls for many calls. Each call keeps its own deadline and its own
// reply: a script's error, NOSCRIPT or OOM is that call's alone.
type shared struct {
	ap       *redis.AutoPipeliner
	inflight atomic.Int32
}

// newShared returns the pipeliner for c, or nil when c is not one node's
// client (a Cluster's checks are per-op pipelines with hints of their own).
func newShared(c redis.UniversalClient) (*shared, error) {
	one, ok := c.(*redis.Client)
	if !ok {
		return nil, nil
	}
	// The asynchronous face, so that a call can stop waiting at its own
	// deadline (WaitContext). Full duplex measured better than go-redis's
	// half-duplex batches here, which wait for each other and cost this
	// process more CPU than they save (BENCHMARKS.md, "Shared round trips").
	// With the client's retries off, a broken connection fails its calls
	// and replays none.
	o := redis.DefaultBlockingAutoPipelineOptions()
	o.FullDuplex = true
	ap, err := one.AsyncAutoPipelineWithOptions(o)
	if err != nil {
		return nil, fmt.Errorf("redisstore: shared round trips: %w", err)
	}
	return &shared{ap: ap}, nil
}

// evalCheck runs script (check.lua or a shape of it) with keys and args:
// on a connection of its own when few calls are in flight, else in the
// pipeliner's next batch. A script new to Redis (a shape this call made)
// goes by EVAL, which runs and loads it; any other by EVALSHA, and again by
// EVAL when the node has lost it (restart, SCRIPT FLUSH, failover). Where
// an ACL refuses EVAL (NOPERM), the script is loaded with SCRIPT LOAD and
// run by EVALSHA. The error is a transport's or the deadline's; the
// script's own reply, error or not, is in the command.
func (s *Store) evalCheck(ctx context.Context, script *sourced, isNew bool, keys []string, args []any) (*redis.Cmd, error) {
	sh := s.shared
	alone := sh == nil
	if !alone {
		defer sh.inflight.Add(-1)
		alone = sh.inflight.Add(1) <= sharedAfter
	}
	// call sends one EVALSHA (byHash) or EVAL of script.
	call := func(byHash bool) (*redis.Cmd, error) {
		switch {
		case alone && byHash:
			return script.EvalSha(ctx, s.client, keys, args...), nil
		case alone:
			return script.Eval(ctx, s.client, keys, args...), nil
		case byHash:
			return sh.send(ctx, "evalsha", script.Hash(), keys, args)
		}
		return sh.send(ctx, "eval", script.source, keys, args)
	}
	if !isNew {
		cmd, err := call(true)
		if err != nil || !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			return cmd, err
		}
	}
	cmd, err := call(false)
	if err == nil && redis.HasErrorPrefix(cmd.Err(), "NOPERM") && script.Load(ctx, s.client).Err() == nil {
		cmd, err = call(true)
	}
	return cmd, err
}

// send queues one EVALSHA or EVAL and waits for its reply or ctx's end. A
// call that stops waiting returns ctx's error and leaves the command
// alone: the pipeliner may still be writing its reply.
func (sh *shared) send(ctx context.Context, name, script string, keys []string, args []any) (*redis.Cmd, error) {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if err := sh.ap.Submit(ctx, cmd).WaitContext(ctx); err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	return cmd, nil
}

func (sh *shared) close() error {
	if sh == nil {
		return nil
	}
	return sh.ap.Close()
}
