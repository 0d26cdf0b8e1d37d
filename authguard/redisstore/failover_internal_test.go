package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// redisError is the error a real Redis reply carries, as go-redis returns
// it: miniredis runs the script and go-redis parses its reply.
func redisError(t *testing.T, c *redis.Client, msg string) error {
	t.Helper()
	err := c.Eval(context.Background(), "return redis.error_reply(ARGV[1])", nil, msg).Err()
	if err == nil {
		t.Fatalf("%q: no error", msg)
	}
	return fmt.Errorf("op 0 on k: %w", err) // as do wraps it
}

// refusedDial is a dial to a port nobody listens on, as go-redis reports it.
func refusedDial(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	err = c.Ping(context.Background()).Err()
	if err == nil {
		t.Fatalf("a ping to %s (closed) succeeded", addr)
	}
	return err
}

func TestNodeLost_TheErrorsOfADeadOrMovedNode(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	refused := refusedDial(t)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"dial refused", refused, true},
		{"EOF", fmt.Errorf("op 0 on k: %w", io.EOF), true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"batch deadline", context.DeadlineExceeded, true},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}, true},
		{"CLUSTERDOWN", redisError(t, c, "CLUSTERDOWN The cluster is down"), true},
		{"MOVED", redisError(t, c, "MOVED 3999 127.0.0.1:6381"), true},
		{"ASK", redisError(t, c, "ASK 3999 127.0.0.1:6381"), true},
		{"TRYAGAIN", redisError(t, c, "TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"READONLY", redisError(t, c, "READONLY You can't write against a read only replica."), true},
		{"one op of a pipeline", &opErrors{[]error{nil, refused}}, true},
		{"caller hung up", context.Canceled, false},
		{"waiting for a pooled connection", redis.ErrPoolTimeout, false},
		{"full", fmt.Errorf("op 0 on k: %w: %w", authguard.ErrStoreFull, redisError(t, c, "OOM command not allowed")), false},
		{"a script's error", redisError(t, c, "ERR backoff.lua: unknown action x"), false},
		{"no pipeline op lost", &opErrors{[]error{nil, redisError(t, c, "ERR x")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := nodeLost(tt.err), tt.want; got != want {
				t.Errorf("nodeLost(%v) = %v, want %v", tt.err, got, want)
			}
		})
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestBlame_ADeadMastersDeadlineIsNotAHealthyMastersFailure: a pipeline on
// masters 0 and 1 where master 0 is dead. go-redis waits to retry master 0's
// op, the batch's deadline runs out, and it stamps the deadline on master
// 1's op, which master 1 had answered: that must not count against master 1.
func TestBlame_ADeadMastersDeadlineIsNotAHealthyMastersFailure(t *testing.T) {
	refused := refusedDial(t)
	deadline := fmt.Errorf("op 1 on k: %w", context.DeadlineExceeded)
	ioTimeout := fmt.Errorf("op 1 on k: %w", &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}})
	full := fmt.Errorf("op 1 on k: %w", authguard.ErrStoreFull)
	tests := []struct {
		name           string
		err            error
		of             []int
		failed, unsure []bool
	}{
		{"answered", nil, []int{0, 1}, []bool{false, false}, []bool{false, false}},
		{"master 0 refused, master 1 answered", &opErrors{[]error{refused, nil}}, []int{0, 1}, []bool{true, false}, []bool{false, false}},
		{"master 0 refused, master 1 stamped", &opErrors{[]error{refused, deadline}}, []int{0, 1}, []bool{true, false}, []bool{false, true}},
		{"both only the deadline", &opErrors{[]error{deadline, deadline}}, []int{0, 1}, []bool{true, true}, []bool{false, false}},
		{"master 1's own i/o timeout", &opErrors{[]error{refused, ioTimeout}}, []int{0, 1}, []bool{true, true}, []bool{false, false}},
		{"master 1 full", &opErrors{[]error{refused, full}}, []int{0, 1}, []bool{true, false}, []bool{false, false}},
		{"one of master 0's two ops", &opErrors{[]error{nil, refused, nil}}, []int{0, 0, 1}, []bool{true, false}, []bool{false, false}},
		{"not a pipeline's", errors.New("unknown operation"), []int{0, 1}, []bool{true, true}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, unsure := blame(tt.err, tt.of, len(tt.failed))
			if fmt.Sprint(failed, unsure) != fmt.Sprint(tt.failed, tt.unsure) {
				t.Errorf("blame(%v) = failed %v, unsure %v, want %v, %v", tt.err, failed, unsure, tt.failed, tt.unsure)
			}
		})
	}
}

// TestReload_AskedAtMostOnceEveryQuarterSecond: a flood of batches failing on
// a dead master asks go-redis for a slot map reload at most once every
// reloadEvery, however many fail.
func TestReload_AskedAtMostOnceEveryQuarterSecond(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody answers: the reloads go-redis starts fail at once
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	clock := testclock.New(time.Time{})
	s, err := New(Config{Client: c, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		asks    int
		want    int64
	}{
		{"t=0: the first failures ask once", 0, 100, 1},
		{"t=+249ms: not again", 249 * time.Millisecond, 100, 1},
		{"t=+250ms: once more", time.Millisecond, 100, 2},
		{"t=+10s: once more", 10 * time.Second, 1, 3},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		for range st.asks {
			s.reloadSlots()
		}
		if got := s.reloads.Load(); got != st.want {
			t.Errorf("%s: %d reloads asked, want %d", st.name, got, st.want)
		}
	}
}

// TestBreaker_AClusterUnreachableSinceStartUpFailsAtOnce: with no slot map
// yet, finding a key's master would cost go-redis a round trip to look for
// one, so the Store's one breaker decides, as on one node: after BreakAfter
// failures a batch fails at once, before any network.
func TestBreaker_AClusterUnreachableSinceStartUpFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	clock := testclock.New(time.Time{})
	s, err := New(Config{Client: c, Clock: clock.Now, BreakAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	op := []authguard.Op{&authguard.DeleteOp{Key: "k"}}
	for i := range 3 {
		if _, err := s.Do(context.Background(), op); !errors.Is(err, authguard.ErrStoreUnavailable) || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("failure %d: %v, want unavailable from the Cluster itself", i, err)
		}
	}
	if _, err := s.Do(context.Background(), op); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("after 3 failures: %v, want the circuit open", err)
	}
	if !s.Open() {
		t.Error("Open() = false after 3 failures")
	}
}
