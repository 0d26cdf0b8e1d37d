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
	// Lease is the queue's handle on a delivery Next returned (a stream
	// entry id on Redis); Ack, Retry, Release and Dead take it back.
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
	// Push queues a delivery for its lane, due now. ErrQueueFull when full.
	Push(ctx context.Context, d Delivery) error
	// Next leases up to max deliveries of the lane that are due at now,
	// including ones leased by a consumer that stopped answering, and no
	// more than the lane's token bucket holds at now; it spends a token for
	// each. The bucket is the queue's, so on Redis all instances share it.
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
