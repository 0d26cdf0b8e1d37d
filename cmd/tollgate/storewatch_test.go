package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

var (
	evUp      = authguard.Event{Source: authguard.SourceStore}
	evTimeout = authguard.Event{Source: authguard.SourceFallback, StoreErr: fmt.Errorf("x: %w", context.DeadlineExceeded)}
	evFull    = authguard.Event{Source: authguard.SourceFallback, StoreErr: fmt.Errorf("redisstore: op 0: %w: OOM command not allowed", authguard.ErrStoreFull)}
	evOpen    = authguard.Event{Source: authguard.SourceNone, StoreErr: fmt.Errorf("x: %w", authguard.ErrCircuitOpen)}
	// A report of an attempt shadow mode refused asks no store.
	evNoStore = authguard.Event{Source: authguard.SourceNone}
)

// watchLine is one line storeWatch logged.
type watchLine struct {
	Msg        string         `json:"msg"`
	Kind       string         `json:"kind"`
	Failed     int            `json:"failed_calls"`
	ByKind     map[string]int `json:"failed_calls_by_kind"`
	Lasted     string         `json:"lasted"`
	SettledFor string         `json:"settled_for"`
}

func watchLines(t *testing.T, buf *bytes.Buffer) []watchLine {
	t.Helper()
	var lines []watchLine
	for line := range strings.Lines(buf.String()) {
		var l watchLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, l)
	}
	buf.Reset()
	return lines
}

// TestStoreWatch_OneEpisodeOneStartOneEnd: a store that flaps 40 times
// (a Redis at maxmemory fails writes and answers reads; the breaker lets a
// call through every second) is one episode: one line when it starts, one
// when the store has answered for storeSettle, with the counts.
func TestStoreWatch_OneEpisodeOneStartOneEnd(t *testing.T) {
	var buf bytes.Buffer
	clock := testclock.New(time.Time{})
	w := &storeWatch{log: slog.New(slog.NewJSONHandler(&buf, nil)), now: clock.Now}
	step := func(ev authguard.Event, d time.Duration) {
		w.observe(ev)
		clock.Advance(d)
	}
	step(evUp, time.Second)
	step(evFull, 100*time.Millisecond) // t=1s: the episode starts
	for i := range 40 {                // 40 flaps: a success, then a failure of some kind
		step(evUp, 100*time.Millisecond)
		step([]authguard.Event{evFull, evOpen, evFull, evTimeout}[i%4], 100*time.Millisecond)
	}
	// t=9.1s: the last failure was at t=9s. The store answers from now on:
	// 4.9s of successes are not enough, 5s are.
	step(evUp, 4900*time.Millisecond)
	step(evUp, 100*time.Millisecond)
	step(evUp, time.Second) // t=15s: past the end, nothing more
	step(evNoStore, 0)

	lines := watchLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (one per end of the episode): %+v", len(lines), lines)
	}
	if l := lines[0]; l.Msg != "store failing: flows answer by their fail mode (open: from this instance's local fallback store; closed: delay)" || l.Kind != "full" {
		t.Errorf("first line = %+v, want the start of an episode of kind full", l)
	}
	want := watchLine{
		Msg:        "store answering again",
		Failed:     41,
		ByKind:     map[string]int{"full": 21, "circuit_open": 10, "timeout": 10},
		Lasted:     "8.1s", // from the first failure (t=1s) to the first success of the settled run (t=9.1s)
		SettledFor: "5s",
	}
	if l := lines[1]; l.Msg != want.Msg || l.Failed != want.Failed || fmt.Sprint(l.ByKind) != fmt.Sprint(want.ByKind) || l.Lasted != want.Lasted || l.SettledFor != want.SettledFor {
		t.Errorf("last line = %+v, want %+v", l, want)
	}
}

// TestStoreWatch_Episodes is a step table of events and the lines each one
// must log.
func TestStoreWatch_Episodes(t *testing.T) {
	type step struct {
		name  string
		after time.Duration // since the previous step
		ev    authguard.Event
		want  string // the message logged, or ""
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a store that never fails logs nothing", []step{
			{"t=+0s: up", 0, evUp, ""},
			{"t=+1h: up", time.Hour, evUp, ""},
		}},
		{"two episodes separated by a settled run", []step{
			{"t=+0s: timeout starts an episode", 0, evTimeout, "store failing"},
			{"t=+1s: timeout", time.Second, evTimeout, ""},
			{"t=+2s: first success", time.Second, evUp, ""},
			{"t=+6s: 4s of successes", 4 * time.Second, evUp, ""},
			{"t=+7s: 5s of successes end it", time.Second, evUp, "store answering again"},
			{"t=+8s: a new failure is a new episode", time.Second, evFull, "store failing"},
			{"t=+9s: success", time.Second, evUp, ""},
			{"t=+13s: a failure 4s into the run starts the count again", 4 * time.Second, evOpen, ""},
			{"t=+14s: success", time.Second, evUp, ""},
			{"t=+18s: only 4s since the last failure's run began", 4 * time.Second, evUp, ""},
			{"t=+19s: 5s", time.Second, evUp, "store answering again"},
		}},
		{"without traffic an episode does not end", []step{
			{"t=+0s: failure", 0, evTimeout, "store failing"},
			{"t=+1h: the first call since is a success", time.Hour, evUp, ""},
			{"t=+1h1s: and so is the next, 1s later", time.Second, evUp, ""},
			{"t=+1h5s: 5s after the first success", 4 * time.Second, evUp, "store answering again"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			clock := testclock.New(time.Time{})
			w := &storeWatch{log: slog.New(slog.NewJSONHandler(&buf, nil)), now: clock.Now}
			for _, st := range tt.steps {
				clock.Advance(st.after)
				w.observe(st.ev)
				lines := watchLines(t, &buf)
				switch {
				case st.want == "" && len(lines) != 0:
					t.Errorf("%s: logged %+v, want nothing", st.name, lines)
				case st.want != "" && (len(lines) != 1 || !strings.HasPrefix(lines[0].Msg, st.want)):
					t.Errorf("%s: logged %+v, want one %q line", st.name, lines, st.want)
				}
			}
		})
	}
}

// TestStoreWatch_HealthSaysFull: /readyz is told the store is full from its
// first "full" answer until storeSettle has passed without one, and never
// for other kinds of failure.
func TestStoreWatch_HealthSaysFull(t *testing.T) {
	clock := testclock.New(time.Time{})
	w := &storeWatch{log: slog.New(slog.DiscardHandler), now: clock.Now}
	full := func(name string, want bool) {
		t.Helper()
		err := w.health()
		if got := errors.Is(err, authguard.ErrStoreFull); got != want || (err != nil) != want {
			t.Errorf("%s: health() = %v, want full %v", name, err, want)
		}
	}
	full("t=+0s: a store that never failed", false)
	w.observe(evTimeout)
	full("t=+0s: a timeout is not full", false)
	clock.Advance(time.Second)
	w.observe(evFull)
	full("t=+1s: full", true)
	clock.Advance(time.Second)
	w.observe(evOpen) // the breaker opened on the OOMs
	w.observe(evUp)   // a read got through
	full("t=+2s: still full (1s since the last full answer)", true)
	clock.Advance(3999 * time.Millisecond)
	full("t=+5.999s: still full", true)
	clock.Advance(time.Millisecond)
	full("t=+6s: no full answer for 5s, no traffic: ready again, to get traffic and find out", false)
	w.observe(evFull)
	full("t=+6s: full again", true)
	w.observe(evUp)
	clock.Advance(5 * time.Second)
	w.observe(evUp) // the episode ends
	full("t=+11s: settled", false)
}

// TestStoreWatch_Concurrent: the engine calls observe from every request's
// goroutine and /readyz calls health; run under -race.
func TestStoreWatch_Concurrent(t *testing.T) {
	var buf testkit.SyncBuffer
	w := &storeWatch{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				w.observe([]authguard.Event{evUp, evFull, evUp, evTimeout}[(g+i)%4])
				_ = w.health()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "store failing"); n != 1 {
		t.Errorf("%d 'store failing' lines within 5s, want 1", n)
	}
}
