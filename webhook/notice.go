package webhook

import (
	"encoding/json"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Notifier hands the engine's notices to a Dispatcher: it is the
// authguard.Notifier of a server that sends webhooks. Notify marshals the
// notice's data and calls Emit, which never blocks.
type Notifier struct{ D *Dispatcher }

var _ authguard.Notifier = Notifier{}

// noticeData is an event's "data" object, what the clients' WebhookData
// reads: the flow, rule and reason, the subject as the caller sent it and
// its ref, and the notice's details (never an identifier).
type noticeData struct {
	Flow    string         `json:"flow,omitempty"`
	Rule    string         `json:"rule,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Subject string         `json:"subject,omitempty"`
	Ref     string         `json:"ref,omitempty"`
	Details map[string]any `json:"details"`
}

// Notify implements authguard.Notifier.
// A notice no endpoint of its tenant takes is dropped before its data is
// marshalled.
func (n Notifier) Notify(no authguard.Notice) {
	e := Event{Type: no.Type, Tenant: tenantOf(no)}
	if !n.D.wanted(e) {
		return
	}
	n.D.Emit(EventOf(no))
}

// tenantOf is the notice's tenant, the default tenant's when empty.
func tenantOf(no authguard.Notice) string {
	if no.Tenant == "" {
		return authguard.DefaultTenant
	}
	return no.Tenant
}

// EventOf is the event that tells of notice no.
func EventOf(no authguard.Notice) Event {
	d := noticeData{Flow: no.Flow, Rule: no.Rule, Reason: no.Reason, Subject: no.Subject, Ref: no.Ref, Details: no.Details}
	if d.Details == nil {
		d.Details = map[string]any{}
	}
	data, err := json.Marshal(d)
	if err != nil { // a detail that does not marshal: say what is known
		d.Details = map[string]any{}
		data, _ = json.Marshal(d)
	}
	return Event{Type: no.Type, Tenant: tenantOf(no), Time: no.Time, Data: data, Coalesce: no.Coalesce, CoalesceWindow: no.Window,
		Class: ClassOf(no.Type)}
}

// ClassOf is where the event of a notice type waits: store.degraded and
// store.recovered, which tell of this instance's store, in this process
// (Local: a Redis queue that is down cannot hold them); the security
// events ahead of everything else (Alert); the others, login.new_device,
// login.step_up and login.breached_password (one per sign-in, at most a few
// per account and window) and account.reset (an administrator's own act),
// as notices.
func ClassOf(typ string) Class {
	switch typ {
	case authguard.NoticeStoreDegraded, authguard.NoticeStoreRecovered:
		return Local
	case authguard.NoticeUnderAttack, authguard.NoticeIPEscalated, authguard.NoticePumpingHold, authguard.NoticeBudget:
		return Alert
	}
	return Notice
}
