// Package webhook tells a tenant's endpoints what tollgate sees (a sign-in
// from a new device, an account under attack, an SMS pumping hold, a budget
// crossed, the store degraded) by HTTP POST, signed as Standard Webhooks
// (https://www.standardwebhooks.com): headers webhook-id, webhook-timestamp
// and webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
//
// A Dispatcher delivers at least once: every delivery is acknowledged in its
// Queue only after a 2xx, a failed one is retried with exponential backoff
// and full jitter until MaxAge, then dead-lettered (DeadLetters lists them,
// Replay sends one again). A delivery repeated after a crash or a lost
// acknowledgement carries the same webhook-id, so receivers deduplicate on
// it. Events with a coalescing key are kept to one per key and window, and
// each endpoint has its own rate limit and its own lane, so a slow receiver
// holds up no other.
//
// An event's Class says what goes first. In a lane every due Alert (a
// security event) is leased before any Notice (a per-sign-in event), and
// a queue near its bound refuses notices while it still takes alerts, so
// that a flood of notices neither delays nor crowds out an alert. A Local
// event (the store degraded or recovered: this instance's own state)
// waits in this process, in a bounded memory queue with a delivery loop
// of its own, whatever the Queue: a Redis queue that is down cannot hold
// the event that tells of it. Notifier gives each notice type its class
// (ClassOf).
//
// Emit never blocks and does no I/O: it puts the event in a bounded
// in-process buffer of its class, or drops it and counts the drop. Run
// moves the buffers into the queues, alerts first, and delivers.
//
// Two queues: NewMemoryQueue keeps deliveries in process, bounded; a
// restart loses what is buffered, waiting, retrying and dead-lettered, and
// the coalescing windows. NewRedisQueue shares one queue among all
// instances through Redis Streams and a consumer group (each delivery is
// made by one instance, one that dies mid-delivery has its entries claimed
// by another), encrypted at rest with AES-GCM, so a dump of Redis reveals
// no event data; Local events never go there. Either way, events still in
// Emit's buffers, and Local events, when the process stops are lost.
//
// Receivers check a delivery with Verify, before parsing the body.
//
// Security: an event's Data goes to the endpoints as the caller wrote it;
// the Coalesce key must already be a keyed hash, never a raw account,
// address or destination. Nothing here logs Data.
package webhook
