package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/webhook"
)

// queueWebhooks serves the admin routes from a real webhook queue, as
// `tollgate serve` does from its dispatcher's (cmd/tollgate/webhooks.go);
// failing makes every call fail as a store that does not answer.
type queueWebhooks struct {
	q       webhook.Queue
	failing bool
}

func (w *queueWebhooks) DeadLetters(ctx context.Context, tenant string, limit int) ([]wire.DeadLetter, error) {
	if w.failing {
		return nil, fmt.Errorf("%w: webhook dead letters: connection refused", authguard.ErrStoreUnavailable)
	}
	l, err := w.q.DeadLetters(ctx, tenant, limit)
	if err != nil {
		return nil, err
	}
	out := make([]wire.DeadLetter, len(l))
	for i, d := range l {
		out[i] = wire.DeadLetter{ID: d.Event.ID, Type: d.Event.Type, Tenant: d.Event.Tenant, Endpoint: d.Endpoint,
			LastError: d.LastError, Attempts: d.Attempts, Time: d.Event.Time.UTC(), DeadAt: d.DeadAt.UTC()}
	}
	return out, nil
}

func (w *queueWebhooks) Replay(ctx context.Context, tenant, id string) (bool, error) {
	switch _, err := w.q.Replay(ctx, tenant, id, time.Now()); {
	case errors.Is(err, webhook.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// deadLetter puts one delivery of event id to endpoint "security" through
// the queue into the default tenant's dead letters: queued, leased, given
// up on after attempts.
func deadLetter(t *testing.T, q webhook.Queue, id string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	lane := webhook.Lane{Tenant: authguard.DefaultTenant, Endpoint: "security"}
	ev := webhook.Event{ID: id, Type: "account.under_attack", Tenant: authguard.DefaultTenant, Time: at}
	if err := q.Push(ctx, webhook.Delivery{Event: ev, Endpoint: "security", Since: at}); err != nil {
		t.Fatal(err)
	}
	l, err := q.Next(ctx, lane, at, 1, webhook.Rate{})
	if err != nil || len(l) != 1 {
		t.Fatalf("Next = %d, %v", len(l), err)
	}
	d := l[0]
	d.Attempts, d.LastError, d.DeadAt = 17, "status 503", at.Add(24*time.Hour)
	if err := q.Dead(ctx, d); err != nil {
		t.Fatal(err)
	}
}

// startWebhookAdmin serves tollgate's API with hooks as its webhooks (nil:
// a server with no webhooks section) on 127.0.0.1, and records each
// request's method and URI.
func startWebhookAdmin(t *testing.T, hooks api.Webhooks) (*httptest.Server, func() []string) {
	t.Helper()
	engine, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{}),
		Secret: []byte("tollgate-client-tests-secret-32-bytes")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Engine: engine, Webhooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestClient_DeadLettersListsWhatWasGivenUpOnAndReplaySendsItAgain: on-call
// tooling finds the deliveries tollgate gave up on while a receiver was
// down, and replays one once it is back; a second replay of the same id,
// or of an id that never was, finds nothing.
func TestClient_DeadLettersListsWhatWasGivenUpOnAndReplaySendsItAgain(t *testing.T) {
	q := webhook.NewMemoryQueue(0)
	srv, requests := startWebhookAdmin(t, &queueWebhooks{q: q})
	c := newClient(t, srv.URL, client.Config{Timeout: 5 * time.Second})
	ctx := context.Background()

	l, err := c.DeadLetters(ctx, 0)
	if err != nil || l == nil || len(l) != 0 {
		t.Fatalf("DeadLetters with none = %#v, %v; want an empty list", l, err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	deadLetter(t, q, "msg_older", at)
	deadLetter(t, q, "msg_newer", at.Add(time.Minute))

	l, err = c.DeadLetters(ctx, 0)
	if err != nil || len(l) != 2 {
		t.Fatalf("DeadLetters = %+v, %v; want 2", l, err)
	}
	want := wire.DeadLetter{ID: "msg_newer", Type: "account.under_attack", Tenant: authguard.DefaultTenant, Endpoint: "security",
		LastError: "status 503", Attempts: 17, Time: at.Add(time.Minute), DeadAt: at.Add(24*time.Hour + time.Minute)}
	if got := l[0]; got.ID != want.ID || got.Type != want.Type || got.Tenant != want.Tenant || got.Endpoint != want.Endpoint ||
		got.LastError != want.LastError || got.Attempts != want.Attempts || !got.Time.Equal(want.Time) || !got.DeadAt.Equal(want.DeadAt) {
		t.Errorf("the newest dead letter = %+v, want %+v", got, want)
	}
	if l[1].ID != "msg_older" {
		t.Errorf("the second = %q, want msg_older (newest first)", l[1].ID)
	}
	if l, err := c.DeadLetters(ctx, 1); err != nil || len(l) != 1 || l[0].ID != "msg_newer" {
		t.Errorf("DeadLetters(1) = %+v, %v; want msg_newer alone", l, err)
	}

	r, err := c.ReplayWebhook(ctx, wire.ReplayRequest{ID: "msg_older", Reason: "receiver fixed, incident 93"})
	if err != nil || !r.Replayed {
		t.Fatalf("ReplayWebhook(msg_older) = %+v, %v; want replayed", r, err)
	}
	if l, err := c.DeadLetters(ctx, 0); err != nil || len(l) != 1 || l[0].ID != "msg_newer" {
		t.Errorf("after the replay: %+v, %v; want msg_newer alone", l, err)
	}
	for _, id := range []string{"msg_older", "msg_never_was"} {
		if r, err := c.ReplayWebhook(ctx, wire.ReplayRequest{ID: id, Reason: "again"}); err != nil || r.Replayed {
			t.Errorf("ReplayWebhook(%s) = %+v, %v; want not replayed, no error", id, r, err)
		}
	}
	wantReqs := []string{
		"GET /v1/admin/webhooks/dead-letters", "GET /v1/admin/webhooks/dead-letters",
		"GET /v1/admin/webhooks/dead-letters?limit=1", "POST /v1/admin/webhooks/replay",
		"GET /v1/admin/webhooks/dead-letters", "POST /v1/admin/webhooks/replay", "POST /v1/admin/webhooks/replay",
	}
	if got := requests(); !slices.Equal(got, wantReqs) {
		t.Errorf("requests:\n%q\nwant\n%q", got, wantReqs)
	}
}

// TestClient_DeadLettersBadLimitIsAnInvalidFieldError: a limit out of 1 to
// 1000 is refused by tollgate, a typed *Error on the field "limit", never
// read as "the default" or "no dead letters".
func TestClient_DeadLettersBadLimitIsAnInvalidFieldError(t *testing.T) {
	srv, _ := startWebhookAdmin(t, &queueWebhooks{q: webhook.NewMemoryQueue(0)})
	c := newClient(t, srv.URL, client.Config{Timeout: 5 * time.Second})
	for _, limit := range []int{-1, 1001} {
		l, err := c.DeadLetters(context.Background(), limit)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Op != "dead-letters" || ce.Status != http.StatusBadRequest ||
			ce.Type != wire.ProblemInvalidField || ce.Field != "limit" || l != nil {
			t.Errorf("DeadLetters(%d) = %v, %v; want a 400 invalid-field *client.Error on limit", limit, l, err)
		}
		if errors.Is(err, client.ErrUnavailable) {
			t.Errorf("DeadLetters(%d): a refused request reads as unavailable", limit)
		}
	}
	if l, err := c.DeadLetters(context.Background(), 1000); err != nil || len(l) != 0 {
		t.Errorf("DeadLetters(1000) = %v, %v; want an empty list", l, err)
	}
}

// TestClient_ReplayWithoutAReasonIsRefused: every replay leaves an audit
// line that says why; a replay without a reason is a typed error and
// replays nothing.
func TestClient_ReplayWithoutAReasonIsRefused(t *testing.T) {
	q := webhook.NewMemoryQueue(0)
	srv, _ := startWebhookAdmin(t, &queueWebhooks{q: q})
	c := newClient(t, srv.URL, client.Config{Timeout: 5 * time.Second})
	deadLetter(t, q, "msg_kept", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, err := c.ReplayWebhook(context.Background(), wire.ReplayRequest{ID: "msg_kept"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Op != "replay" || ce.Status != http.StatusBadRequest || ce.Field != "reason" {
		t.Errorf("ReplayWebhook without a reason = %v, want a 400 *client.Error on reason", err)
	}
	if l, err := c.DeadLetters(context.Background(), 0); err != nil || len(l) != 1 {
		t.Errorf("after the refused replay: %v, %v; want the dead letter still there", l, err)
	}
}

// TestClient_DeadLettersOnAServerWithoutWebhooksIsNotFound: a server whose
// configuration has no webhooks section answers a typed 404 not-found,
// which a script can tell from an empty list.
func TestClient_DeadLettersOnAServerWithoutWebhooksIsNotFound(t *testing.T) {
	srv, _ := startWebhookAdmin(t, nil)
	c := newClient(t, srv.URL, client.Config{Timeout: 5 * time.Second})
	l, err := c.DeadLetters(context.Background(), 0)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Op != "dead-letters" || ce.Status != http.StatusNotFound || ce.Type != wire.ProblemNotFound || l != nil {
		t.Errorf("DeadLetters = %v, %v; want a 404 not-found *client.Error", l, err)
	}
	r, err := c.ReplayWebhook(context.Background(), wire.ReplayRequest{ID: "msg_x", Reason: "r"})
	if !errors.As(err, &ce) || ce.Op != "replay" || ce.Status != http.StatusNotFound || ce.Type != wire.ProblemNotFound || r.Replayed {
		t.Errorf("ReplayWebhook = %+v, %v; want a 404 not-found *client.Error", r, err)
	}
}

// TestClient_DeadLettersStoreDownIsUnavailable: when tollgate's store does
// not answer, the 503 is an unavailability (errors.Is ErrUnavailable), not
// an empty list.
func TestClient_DeadLettersStoreDownIsUnavailable(t *testing.T) {
	srv, _ := startWebhookAdmin(t, &queueWebhooks{q: webhook.NewMemoryQueue(0), failing: true})
	c := newClient(t, srv.URL, client.Config{Timeout: 5 * time.Second})
	l, err := c.DeadLetters(context.Background(), 0)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusServiceUnavailable || !errors.Is(err, client.ErrUnavailable) || l != nil {
		t.Errorf("DeadLetters with the store down = %v, %v; want a 503 matching ErrUnavailable", l, err)
	}
}

// dispatcherWebhooks serves the admin routes from a running dispatcher,
// as cmd/tollgate's webhooks type does.
type dispatcherWebhooks struct{ d *webhook.Dispatcher }

func (w dispatcherWebhooks) DeadLetters(ctx context.Context, tenant string, limit int) ([]wire.DeadLetter, error) {
	l, err := w.d.DeadLetters(ctx, tenant, limit)
	if err != nil {
		return nil, err
	}
	out := make([]wire.DeadLetter, len(l))
	for i, x := range l {
		out[i] = wire.DeadLetter{ID: x.ID, Type: x.Type, Tenant: x.Tenant, Endpoint: x.Endpoint, LastError: x.LastError,
			Attempts: x.Attempts, Time: x.Time.UTC(), DeadAt: x.DeadAt.UTC()}
	}
	return out, nil
}

func (w dispatcherWebhooks) Replay(ctx context.Context, tenant, id string) (bool, error) {
	switch err := w.d.Replay(ctx, tenant, id); {
	case errors.Is(err, webhook.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// TestClient_AReceiverThatWasDownGetsTheDeadLetterReplayedWithItsWebhookID:
// the whole path. A receiver answers 503 until its age limit runs out and
// the event is dead-lettered; on-call lists it with the client, fixes the
// receiver and replays it; the receiver gets it again, signed, with the
// same webhook-id, so that it can tell a repeat.
func TestClient_AReceiverThatWasDownGetsTheDeadLetterReplayedWithItsWebhookID(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	var (
		mu       sync.Mutex
		up       bool
		received []string // the webhook-ids verified while up
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		ev, err := client.VerifyWebhook(secret, r.Header, body, time.Now())
		if err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		received = append(received, ev.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	d, err := webhook.New(webhook.Config{
		Endpoints: []webhook.Endpoint{{Name: "security", Tenant: authguard.DefaultTenant, URL: receiver.URL + "/tollgate/events", Secret: secret}},
		MaxAge:    time.Nanosecond, // the first failure is past the age limit
		Timeout:   5 * time.Second,
		Poll:      10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	srv, _ := startWebhookAdmin(t, dispatcherWebhooks{d})
	c := newClient(t, srv.URL, client.Config{Timeout: 5 * time.Second})
	d.Emit(webhook.Event{ID: "msg_down", Type: "account.under_attack", Tenant: authguard.DefaultTenant, Data: []byte(`{"flow":"login"}`)})

	var l []wire.DeadLetter
	testkit.Eventually(10*time.Second, func() bool {
		l, err = c.DeadLetters(context.Background(), 0)
		return err != nil || len(l) > 0
	})
	if err != nil || len(l) != 1 {
		t.Fatalf("DeadLetters = %+v, %v; want the one event", l, err)
	}
	if x := l[0]; x.ID != "msg_down" || x.Type != "account.under_attack" || x.Endpoint != "security" ||
		x.Attempts != 1 || x.LastError == "" || x.Time.IsZero() || x.DeadAt.Before(x.Time) {
		t.Errorf("the dead letter = %+v", x)
	}

	mu.Lock()
	up = true
	mu.Unlock()
	if r, err := c.ReplayWebhook(context.Background(), wire.ReplayRequest{ID: "msg_down", Reason: "receiver fixed, incident 93"}); err != nil || !r.Replayed {
		t.Fatalf("ReplayWebhook = %+v, %v", r, err)
	}
	var got []string
	testkit.Eventually(10*time.Second, func() bool {
		mu.Lock()
		got = slices.Clone(received)
		mu.Unlock()
		return len(got) > 0
	})
	if !slices.Equal(got, []string{"msg_down"}) {
		t.Errorf("the receiver verified %q after the replay, want [msg_down]", got)
	}
	if l, err := c.DeadLetters(context.Background(), 0); err != nil || len(l) != 0 {
		t.Errorf("after the replay: %+v, %v; want no dead letter", l, err)
	}
	if r, err := c.ReplayWebhook(context.Background(), wire.ReplayRequest{ID: "msg_down", Reason: "again"}); err != nil || r.Replayed {
		t.Errorf("a second replay = %+v, %v; want not replayed", r, err)
	}
}
