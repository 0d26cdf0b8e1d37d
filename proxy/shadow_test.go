package proxy_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
	"github.com/tollgate-auth/tollgate/internal/lab/replay"
	"github.com/tollgate-auth/tollgate/proxy"
)

// A route in shadow mode refuses nobody: every request reaches the
// upstream, while the engine counts as enforcing would, the decision log
// records the verdicts enforcing would have answered, and the metrics say
// how the refused requests' answers were classified (the owner's success
// among them: a real user enforcing would have kept waiting).
// tollgate-lab replay reads that log.
func TestProxy_ShadowModeForwardsEverythingAndLogsWhatItWouldHaveDone(t *testing.T) {
	var log bytes.Buffer
	var dlog *decisionlog.Writer
	rt := formRoute()
	rt.Mode = proxy.Shadow
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{rt}}, func(c *authguard.Config) {
		dlog = decisionlog.NewWriter(&log, nil)
		observe := c.Observe
		c.Observe = func(ev authguard.Event) { observe(ev); dlog.Observe(ev) }
		c.RecordSubjects = true
	})
	for i := range 8 {
		resp := h.post(attackerAddr, owner, guess(i))
		body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("guess %d answered %d, want the upstream's form: shadow mode refuses nobody", i+1, resp.StatusCode)
		}
	}
	resp := h.post(ownerMobile, owner, ownerPassword)
	body(t, resp)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the owner answered %d, want the upstream's 302", resp.StatusCode)
	}
	if n := h.up.logins("/login"); n != 9 {
		t.Errorf("the upstream saw %d logins, want all 9", n)
	}
	// Five guesses proceed and fail; the three after them and the owner's
	// login are what enforcing would have delayed.
	if got := h.counter("tollgate_proxy_shadow_refusals_total", "route", "form-login", "action", "delay", "outcome", "failure"); got != 3 {
		t.Errorf("shadow refusals of failures = %v, want 3", got)
	}
	if got := h.counter("tollgate_proxy_shadow_refusals_total", "route", "form-login", "action", "delay", "outcome", "success"); got != 1 {
		t.Errorf("shadow refusals of successes = %v, want 1 (the owner)", got)
	}
	if got := h.counter("tollgate_proxy_answers_total", "route", "form-login", "answer", "forwarded"); got != 9 {
		t.Errorf("answers{forwarded} = %v, want 9", got)
	}
	// A refused check reserved nothing: only the five that proceeded are
	// reported, as enforcing would.
	if n := h.events.calls("report"); n != 5 {
		t.Errorf("%d reports, want 5", n)
	}
	if err := dlog.Close(); err != nil {
		t.Fatal(err)
	}
	lines, delays := strings.Count(log.String(), "\n"), strings.Count(log.String(), `"call":"check","action":"delay"`)
	if lines != 14 || delays != 4 {
		t.Fatalf("the decision log has %d lines, %d checks delayed; want 9 checks and 5 reports, 4 delayed:\n%s", lines, delays, log.String())
	}
	if strings.Contains(log.String(), owner) || strings.Contains(log.String(), "guess-") || strings.Contains(log.String(), "203.0.113") {
		t.Error("the decision log holds an identifier, a password or an address")
	}

	src := log.Bytes()
	rep, err := replay.Run(context.Background(), replay.Config{
		Candidates: []replay.Candidate{{Name: "built-in", Policy: config.DefaultPolicy()}},
		Inputs: []replay.Input{{Name: "shadow.log", Open: func() (replay.Source, error) {
			return replay.Open("shadow.log", io.NopCloser(bytes.NewReader(src)), replay.Options{Format: replay.FormatTollgate})
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 14 || rep.Attempts != 9 {
		t.Errorf("replay read %d events, %d attempts; want 14 and 9", rep.Events, rep.Attempts)
	}
	if rep.Baseline == nil || rep.Baseline.Total.OtherStopped != 4 {
		t.Errorf("replay's baseline = %+v, want the 4 attempts shadow mode would have delayed", rep.Baseline)
	}
}
