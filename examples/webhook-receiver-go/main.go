// Command webhook-receiver-go receives the events tollgate posts and shows
// what every receiver must do: read the raw body, verify it with
// api/client.VerifyWebhook, answer 400 to anything that does not verify,
// handle each event once although delivery is at least once (it dedupes by
// webhook-id, in memory here; use your database), and answer 204 only once
// the event is handled, so that a failure is retried.
//
//	TOLLGATE_WEBHOOK_SECRET=whsec_... go run ./examples/webhook-receiver-go -listen 127.0.0.1:8090
//
// Point a tollgate endpoint at http://127.0.0.1:8090/tollgate-events. It
// logs each event's type, flow, rule and id, never its subject (an account
// or a phone number) or ref.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv("TOLLGATE_WEBHOOK_SECRET"), os.Stderr))
}

// run parses args, serves until ctx ends and returns the exit status: 2
// for a usage error, 1 when it cannot start.
func run(ctx context.Context, args []string, secret string, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook-receiver-go", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8090", "`host:port` to listen on")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	rcv, err := NewReceiver(secret, func(_ context.Context, e client.WebhookEvent) error {
		// Act here: e.Data.Ref is your own user id, as you passed it to
		// check, report or send; e.Data.Subject the account or destination.
		log.Info("tollgate event", "type", e.Type, "flow", e.Data.Flow, "rule", e.Data.Rule, "id", e.ID)
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "webhook-receiver-go: %v\n", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.Handle("POST /tollgate-events", rcv)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "webhook-receiver-go: %v\n", err)
		return 1
	}
	log.Info("listening", "url", "http://"+ln.Addr().String()+"/tollgate-events")
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "webhook-receiver-go: %v\n", err)
		return 1
	}
	return 0
}

// maxBody caps what is read of a request: tollgate's events are well under
// 64 KiB.
const maxBody = 1 << 20

// dedupeFor is how long an id is remembered: longer than tollgate goes on
// retrying an event.
const dedupeFor = 72 * time.Hour

// Receiver is the http.Handler of an events endpoint.
type Receiver struct {
	secret string
	handle func(context.Context, client.WebhookEvent) error
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]seen // by webhook-id
}

type seen struct {
	done    bool      // handled; else being handled now
	expires time.Time // when the id may be forgotten
}

// NewReceiver returns a Receiver that hands each verified event to handle,
// once per webhook-id; an error from handle answers 500, so that tollgate
// retries it. It refuses a secret VerifyWebhook cannot use.
func NewReceiver(secret string, handle func(context.Context, client.WebhookEvent) error) (*Receiver, error) {
	if _, err := client.VerifyWebhook(secret, nil, nil, time.Time{}); errors.Is(err, client.ErrWebhookSecret) {
		return nil, errors.New("TOLLGATE_WEBHOOK_SECRET must be the endpoint's whsec_ secret")
	}
	return &Receiver{secret: secret, handle: handle, now: time.Now, seen: map[string]seen{}}, nil
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		problem(w, http.StatusRequestEntityTooLarge, "the body is over 1 MiB")
		return
	}
	e, err := client.VerifyWebhook(rc.secret, r.Header, body, rc.now())
	if err != nil {
		// Never act on it, and tell the sender nothing of why.
		problem(w, http.StatusBadRequest, "the webhook did not verify")
		return
	}
	switch rc.claim(e.ID) {
	case claimDone: // a redelivery: it was handled
		w.WriteHeader(http.StatusNoContent)
		return
	case claimBusy: // the same event is being handled by another request: let tollgate retry
		problem(w, http.StatusConflict, "this event is being handled")
		return
	}
	if err := rc.handle(r.Context(), e); err != nil {
		rc.release(e.ID)
		problem(w, http.StatusInternalServerError, "the event could not be handled; retry")
		return
	}
	rc.finish(e.ID)
	w.WriteHeader(http.StatusNoContent)
}

type claim int

const (
	claimNew claim = iota
	claimBusy
	claimDone
)

// claim marks id as being handled unless it was or is.
func (rc *Receiver) claim(id string) claim {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	now := rc.now()
	for k, s := range rc.seen { // forget old ids; a real receiver keeps them in its database
		if now.After(s.expires) {
			delete(rc.seen, k)
		}
	}
	if s, ok := rc.seen[id]; ok {
		if s.done {
			return claimDone
		}
		return claimBusy
	}
	rc.seen[id] = seen{expires: now.Add(dedupeFor)}
	return claimNew
}

func (rc *Receiver) finish(id string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.seen[id] = seen{done: true, expires: rc.now().Add(dedupeFor)}
}

func (rc *Receiver) release(id string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.seen, id)
}

// problem writes an RFC 9457 problem document.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"detail":%q}`+"\n", http.StatusText(status), status, detail)
}
