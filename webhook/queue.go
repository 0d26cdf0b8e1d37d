package webhook

import (
	"context"
	"errors"
	"time"
)

// Errors a Queue returns, checked with errors.Is.
var (
	// ErrQueueFull means the queue holds its capacity: the delivery is
	// dropped and counted (tollgate_webhook_dropped_total{reason="queue_full"}).
	ErrQueueFull = errors.New("webhook: queue full")
	// ErrNotFound means no dead letter has the id Replay was given.
	ErrNotFound = errors.New("webhook: no such dead letter")
)

// Lane is where the deliveries of one endpoint of one tenant wait: each
// lane has its own rate limit, so a slow or limited endpoint holds up no
// other.
type Lane struct {
	Tenant   string
	Endpoint string
}

// Class is where an event waits and what goes first: a lane leases its
// alerts before its notices, and a queue near its bound refuses notices
// while it still takes alerts, so that a flood of per-sign-in notices
// neither delays nor crowds out a security alert. Any value past Local is
// an Alert.
type Class uint8

const (
	// Notice is a per-sign-in event (login.new_device), and any event not
	// given a class: it waits behind its lane's alerts, and a queue that
	// holds nine tenths of its bound refuses it (ErrQueueFull).
	Notice Class = iota
	// Alert is a security event (account.under_attack, ip.escalated,
	// otp.pumping_hold, otp.budget): leased ahead of every notice of its
	// lane, with the last tenth of the queue's bound kept for it.
	Alert
	// Local is an event about this instance itself (store.degraded,
	// store.recovered): whatever the Queue, it waits, as an alert, in a
	// bounded queue in this process with a delivery loop of its own, so
	// that an outage of a shared queue (Redis) cannot hold the event that
	// tells of it. A restart loses it.
	Local
)

// String is the class's lower-case name.
func (c Class) String() string {
	switch c {
	case Notice:
		return "notice"
	case Local:
		return "local"
	}
	return "alert"
}

// urgent reports whether the class goes ahead of notices.
func (c Class) urgent() bool { return c != Notice }

// alertShare is the part of a queue's bound kept for alerts: notices are
// refused once it holds capacity - capacity/alertShare.
const alertShare = 10

// noticeLimit is how many deliveries a queue bounded at capacity may hold
// and still take a notice.
func noticeLimit(capacity int64) int64 { return capacity - capacity/alertShare }

// Rate is an endpoint's token bucket: PerSecond tokens a second, at most
// Burst; each delivery attempt spends one.
type Rate struct {
	PerSecond float64
	Burst     int
}

// orDefault is r with the Endpoint defaults (10/s, burst 20) for zeros.
func (r Rate) orDefault() Rate {
	if !(r.PerSecond > 0) {
		r.PerSecond = 10
	}
	if r.Burst <= 0 {
		r.Burst = 20
	}
	return r
}

// Delivery is one event on its way to one endpoint, with its own retry
// state. The deliveries of one event to several endpoints share its ID, the
// webhook-id.
type Delivery struct {
	Event    Event // Coalesce and CoalesceWindow are not kept
	Endpoint string
	// Since starts the age limit: when the event was queued, or replayed.
	Since     time.Time
	Attempts  int
	LastError string
	DeadAt    time.Time
	// Lease is the queue's handle on a delivery Next returned (on Redis a
	// stream entry id, "a:" before it for the lane's alerts); Ack, Retry,
	// Release and Dead take it back.
	Lease string
}

func (d Delivery) lane() Lane { return Lane{Tenant: d.Event.Tenant, Endpoint: d.Endpoint} }

// Queue is where events wait for delivery: NewMemoryQueue or NewRedisQueue.
// A delivery Next returns is leased to the caller until it is acknowledged
// (Ack, after a 2xx), put back for later (Retry), handed back untried
// (Release) or dead-lettered (Dead). A Queue is safe for concurrent use.
type Queue interface {
	// Coalesce reports whether an event with this coalescing key is the
	// first of its tenant in window (and so is to be queued); later ones in
	// the window get false.
	Coalesce(ctx context.Context, tenant, key string, window time.Duration, now time.Time) (bool, error)
	// Push queues a delivery for its lane, due now, behind the lane's
	// alerts when it is a Notice. ErrQueueFull when full, which for a
	// notice is nine tenths of the bound.
	Push(ctx context.Context, d Delivery) error
	// Next leases up to max deliveries of the lane that are due at now,
	// every due alert before any notice, including ones leased by a
	// consumer that stopped answering, and no more than the lane's token
	// bucket holds at now; it spends a token for each. The bucket is the
	// queue's, so on Redis all instances share it.
	Next(ctx context.Context, l Lane, now time.Time, max int, r Rate) ([]Delivery, error)
	// Ack removes a delivered delivery.
	Ack(ctx context.Context, d Delivery) error
	// Retry puts a delivery back, due at at, with its new Attempts and LastError.
	Retry(ctx context.Context, d Delivery, at time.Time) error
	// Release hands back a delivery that was not tried (its consumer is
	// stopping), due at once where the queue can.
	Release(ctx context.Context, d Delivery) error
	// Dead moves a delivery to the tenant's dead letters.
	Dead(ctx context.Context, d Delivery) error
	// DeadLetters lists up to limit dead letters of a tenant, newest first.
	DeadLetters(ctx context.Context, tenant string, limit int) ([]Delivery, error)
	// Replay queues again, due now with a fresh age limit from now, every
	// dead letter of the tenant with this event id; ErrNotFound if none.
	Replay(ctx context.Context, tenant, id string, now time.Time) (int, error)
	// Depth counts the deliveries waiting or leased in these lanes.
	Depth(ctx context.Context, lanes []Lane) (int64, error)
}
