package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// A start that fails at the API's listener (its port taken) closes what
// Open had opened before it: the proxy's port is free again at once, not
// held by a server that never served.
func TestServerOpen_AFailedStartReleasesWhatItOpened(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := free.Addr().String()
	free.Close()

	yaml := strings.Replace(proxyYAML("http://127.0.0.1:1", "enforce"), "listen: 127.0.0.1:0\nproxy:\n  listen: 127.0.0.1:0",
		"listen: "+taken.Addr().String()+"\nproxy:\n  listen: "+proxyAddr, 1)
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Secret = []byte(secret32)
	logs := new(testkit.SyncBuffer)
	s := newServer(cfg, logs, nil)
	if err := s.Open(context.Background()); err == nil {
		s.Close()
		t.Fatal("Open on a taken port succeeded")
	}
	if !strings.Contains(logs.String(), `"msg":"proxy listening"`) {
		t.Fatalf("the proxy did not open before the API's listener failed; the test proves nothing:\n%s", logs)
	}
	ln, err := net.Listen("tcp", proxyAddr)
	if err != nil {
		t.Fatalf("after the failed start the proxy's port is still held: %v", err)
	}
	ln.Close()
}

// fakePiece is a reloadable piece that records what a reload hands it.
type fakePiece struct {
	refuse   error
	engine   *authguard.Engine
	checked  int
	reloaded []*authguard.Policy // the engine's policy when reload ran
}

func (p *fakePiece) check(*config.Config) error { p.checked++; return p.refuse }
func (p *fakePiece) reload(*config.Config) error {
	p.reloaded = append(p.reloaded, p.engine.Policy())
	return nil
}

// A reload hands the next configuration to every reloadable piece: a
// piece that refuses it in check leaves the running policy and every
// piece as they were, and a reload that every piece accepts reaches each
// piece's reload after the engine has the next policy.
func TestReloader_APieceThatRefusesChangesNothing(t *testing.T) {
	running := testConfig()
	store := memstore.New(memstore.Config{})
	defer store.Close()
	engine, err := authguard.New(authguard.Config{Policy: running.Policy, Store: store, Secret: []byte(secret32)})
	if err != nil {
		t.Fatal(err)
	}
	next := testConfig()
	next.Policy = config.DefaultPolicy()
	accepts, refuses := &fakePiece{engine: engine}, &fakePiece{engine: engine, refuse: errors.New("the corpus does not load")}
	r := &reloader{
		load:    func() (*config.Config, error) { return next, nil },
		engine:  engine,
		metrics: api.NewMetrics(running.Policy),
		log:     slog.New(slog.DiscardHandler),
		running: running,
		pieces:  []reloadable{accepts, refuses},
	}

	if _, err := r.reload("test"); err == nil || !strings.Contains(err.Error(), "the corpus does not load") {
		t.Fatalf("reload with a refusing piece = %v, want its refusal", err)
	}
	if engine.Policy() != running.Policy {
		t.Error("a refused reload swapped the engine's policy")
	}
	if len(accepts.reloaded)+len(refuses.reloaded) != 0 {
		t.Errorf("a refused reload reached a piece's reload: %d and %d", len(accepts.reloaded), len(refuses.reloaded))
	}

	refuses.refuse = nil
	if _, err := r.reload("test"); err != nil {
		t.Fatalf("reload: %v", err)
	}
	for i, p := range []*fakePiece{accepts, refuses} {
		if got, want := p.checked, 2; got != want {
			t.Errorf("piece %d checked %d times, want %d", i, got, want)
		}
		if len(p.reloaded) != 1 || p.reloaded[0] != next.Policy {
			t.Errorf("piece %d reloaded with the engine's policy %v, want once with next's", i, p.reloaded)
		}
	}
}

// Close stops the pieces in reverse order: the decision log, opened
// before the API, closes after the API has drained, so that a check in
// flight when shutdown starts is answered and its decision line written
// (with the log closed first, its line would be lost or the write would
// panic on the closed log).
func TestServe_ACheckInFlightAtShutdownIsInTheDecisionLog(t *testing.T) {
	cfg := testConfig()
	cfg.DecisionLog = filepath.Join(t.TempDir(), "decisions.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := new(testkit.SyncBuffer)
	addrs, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs, func(a net.Addr) { addrs <- a }, nil) }()
	var addr string
	select {
	case a := <-addrs:
		addr = a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	slow := startSlowCheck(t, addr)
	cancel()
	if !testkit.Eventually(5*time.Second, func() bool { return strings.Contains(logs.String(), `"msg":"shutting down`) }) {
		t.Fatalf("shutdown did not start:\n%s", logs)
	}
	if got := slow.finish(t); got != "proceed" {
		t.Errorf("the check in flight answered %q, want proceed", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, logs)
	}
	b, err := os.ReadFile(cfg.DecisionLog)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(string(b), "\n"), 1; got != want || !strings.Contains(string(b), `"login"`) {
		t.Errorf("decision log has %d lines, want %d for the login check in flight:\n%s", got, want, b)
	}
}
