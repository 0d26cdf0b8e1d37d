package demo

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
)

// maxEventBytes bounds a webhook body.
const maxEventBytes = 64 << 10

// Notice is a message the demo would e-mail a user, shown in the demo's
// inbox panel instead.
type Notice struct {
	At   time.Time
	Text string
}

// notices keeps, per user, what tollgate's events said to tell them, and
// the webhook-ids handled (delivery is at least once).
type notices struct {
	mu   sync.Mutex
	seen map[string]bool
	by   map[string][]Notice
}

func (n *notices) add(id, user string, note Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen[id] {
		return
	}
	if n.seen == nil {
		n.seen, n.by = map[string]bool{}, map[string][]Notice{}
	}
	n.seen[id] = true
	n.by[user] = append(n.by[user], note)
}

func (n *notices) of(user string) []Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Notice(nil), n.by[user]...)
}

// msgNewDevice is what the demo tells a user tollgate saw sign in from a
// browser without the account's device cookie.
const msgNewDevice = "New sign-in to your account from a browser we have not seen before. Was this you? If not, change your password."

// events receives tollgate's webhooks (POST /tollgate/events): it answers
// 400 to anything whose signature or timestamp does not verify, and turns
// login.new_device into a notice for the account the login report named
// by its ref (the demo's own user name, not the spelling typed).
func (a *App) events(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	// The signature's timestamp is the sender's clock: compare it with
	// the real time, not the App's (which tests move).
	ev, err := client.VerifyWebhook(a.webhookSecret, r.Header, body, time.Now())
	if err != nil {
		if errors.Is(err, client.ErrWebhookSecret) {
			a.log.Error("demo: the webhook secret is unusable", "err", err)
		}
		http.Error(w, "not a valid tollgate event", http.StatusBadRequest)
		return
	}
	if ev.Type == client.WebhookLoginNewDevice && ev.Data.Ref != "" && a.users.known(ev.Data.Ref) {
		a.notices.add(ev.ID, ev.Data.Ref, Notice{At: a.now(), Text: msgNewDevice})
	}
	w.WriteHeader(http.StatusNoContent)
}
