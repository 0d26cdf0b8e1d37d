package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// sharedAfter is how many of this instance's check scripts (on a Cluster,
// batches) must already be in flight before the next one rides a shared
// round trip. Below it each
// call has a connection to itself: at low load there is nothing to share,
// and handing a call to the pipeliner's goroutine and back costs more CPU
// than its round trip saves (BENCHMARKS.md, "Shared round trips").
const sharedAfter = 2

// shared sends concurrent check scripts together, as with envoy's
// ratelimit: go-redis's auto-pipeliner holds one connection with a writer
// goroutine that writes every call queued at that moment in one write and a
// reader that reads the replies as they come (full duplex: no batch waits
// for the one before it). Redis then makes one pair of network system calls
// for many calls. Each call keeps its own deadline and its own reply: a
// script's error, NOSCRIPT or OOM is that call's alone.
//
// On a Cluster the pipeliner is go-redis's cluster router: one such
// connection per master, each call sent on its slot's master's (the slot
// map go-redis holds, no round trip). So the calls of concurrent checks to
// one master share its writes and reads, as on one node: on 3 masters a
// fresh check's 3 calls ride 3 shared round trips instead of each check
// paying 3 of its own. A call answered MOVED or ASK (a slot moved or
// moving) is sent again by the router through the Cluster client, which
// follows the redirect as the client's own pipelines do; any other error,
// TRYAGAIN too, is the call's reply, for slots.go to handle as it handles a
// pipeline's.
type shared struct {
	ap       *redis.AutoPipeliner
	inflight atomic.Int32
	// after is sharedAfter; tests set it to 0 to send every call shared.
	after int32
}

// newShared returns the pipeliner for c (one node, Sentinel's master or a
// Cluster), or nil for any other client.
func newShared(c redis.UniversalClient) (*shared, error) {
	// The asynchronous face, so that a call can stop waiting at its own
	// deadline (WaitContext). Full duplex measured better than go-redis's
	// half-duplex batches here, which wait for each other and cost this
	// process more CPU than they save (BENCHMARKS.md, "Shared round trips").
	// With the client's retries off, one node's pipeliner fails a broken
	// connection's calls and replays none; a Cluster's would replay those
	// unanswered up to the client's redirects, so every call is marked
	// never to be sent twice (once).
	o := redis.DefaultBlockingAutoPipelineOptions()
	o.FullDuplex = true
	var (
		ap  *redis.AutoPipeliner
		err error
	)
	switch c := c.(type) {
	case *redis.Client:
		ap, err = c.AsyncAutoPipelineWithOptions(o)
	case *redis.ClusterClient:
		ap, err = c.AsyncAutoPipelineWithOptions(o)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: shared round trips: %w", err)
	}
	return &shared{ap: ap, after: sharedAfter}, nil
}

// once is a call go-redis sends at most once: a script whose request was
// written may have run though its reply was lost, and run again it would
// charge its subjects twice. (A MOVED or ASK reply says it ran nowhere, and
// is followed all the same.)
type once struct{ *redis.Cmd }

// NoRetry reports true: never replayed.
func (once) NoRetry() bool { return true }

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
		alone = sh.inflight.Add(1) <= sh.after
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
	cmd := evalCmd(ctx, name, script, keys, args)
	if err := sh.ap.Submit(ctx, once{cmd}).WaitContext(ctx); err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	return cmd, nil
}

// run queues every call of cmds, then waits for each reply or ctx's end. A
// call still unanswered at ctx's end is replaced in cmds by one that failed
// with ctx's error (the pipeliner may still write the queued one's reply).
// What that costs: a call queued or written before its deadline passed is
// still sent and run by its master, so it may charge its subjects though
// its check was answered overloaded or from the fail mode, as on one node.
func (sh *shared) run(ctx context.Context, cmds []*redis.Cmd) {
	waits := make([]redis.AutoFuture, len(cmds))
	for i, cmd := range cmds {
		waits[i] = sh.ap.Submit(ctx, once{cmd})
	}
	for i, w := range waits {
		if err := w.WaitContext(ctx); err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			failed := redis.NewCmd(ctx)
			failed.SetErr(err)
			cmds[i] = failed
		}
	}
}

// evalCmd is one EVALSHA (name "evalsha", script its hash) or EVAL of
// script with keys and args, not yet sent.
func evalCmd(ctx context.Context, name, script string, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // a Cluster's slot is the first key's
	}
	return cmd
}

// resend sends again, in one pipeline and as redo builds it, each command
// of cmds whose error refused accepts (NOSCRIPT: a script the master lost;
// NOPERM: an ACL that refuses EVAL).
func (s *Store) resend(ctx context.Context, cmds []*redis.Cmd, refused func(k int, err error) bool, redo func(pipe redis.Pipeliner, k int) *redis.Cmd) {
	var idx []int
	for k, cmd := range cmds {
		if refused(k, cmd.Err()) {
			idx = append(idx, k)
		}
	}
	if len(idx) == 0 {
		return
	}
	pipe := s.client.Pipeline()
	for _, k := range idx {
		cmds[k] = redo(pipe, k)
	}
	_, _ = pipe.Exec(ctx)
}

// noScript reports a script missing on the master that answered.
func noScript(_ int, err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }

// exec sends cmds, a batch's calls, and leaves each its reply. On a
// Cluster with shared round trips, once more than sh.after batches are in
// flight, each call goes in the next write of its master's shared
// connection (run); otherwise they go in one pipeline of the client's,
// which go-redis splits per master, a round trip of the batch's own on
// each.
func (s *Store) exec(ctx context.Context, cmds []*redis.Cmd) {
	if sh := s.shared; sh != nil && s.cluster != nil {
		defer sh.inflight.Add(-1)
		if sh.inflight.Add(1) > sh.after {
			sh.run(ctx, cmds)
			return
		}
	}
	pipe := s.client.Pipeline()
	for _, cmd := range cmds {
		_ = pipe.Process(ctx, cmd)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
}

func (sh *shared) close() error {
	if sh == nil {
		return nil
	}
	return sh.ap.Close()
}
