package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
)

// Event is one thing to tell the endpoints of its tenant.
type Event struct {
	ID     string // the webhook-id; Emit sets "msg_"+random (base32/hex, ≥128 bits) when empty
	Type   string // "login.new_device", "account.under_attack", ...
	Tenant string
	Time   time.Time       // Emit sets now when zero
	Data   json.RawMessage // the payload's "data" object; empty: {}
	// Coalesce, when not empty, keeps at most one event with this key per
	// CoalesceWindow (across all instances on Redis). It must not hold a raw
	// identifier: callers pass a keyed hash. A window of 0 coalesces nothing.
	Coalesce       string
	CoalesceWindow time.Duration
	// Class is where the event waits and what goes first (Notice, Alert,
	// Local). The default is Notice.
	Class Class
}

// Endpoint is one receiver of a tenant's events.
type Endpoint struct {
	Name   string   // for metrics and logs; unique among the endpoints
	Tenant string   // events of this tenant go here
	URL    string   // http or https
	Secret string   // "whsec_" + base64 of at least 16 bytes
	Types  []string // event types sent; empty: all
	// RatePerSecond and Burst limit deliveries to this endpoint (0: 10/s, burst 20).
	RatePerSecond float64
	Burst         int
}

// Config configures a Dispatcher.
type Config struct {
	Endpoints []Endpoint
	// Queue is where events wait for delivery. The default is NewMemoryQueue(10000).
	Queue Queue
	// MaxAge is how long a delivery is retried, from its event's queueing
	// (or replay), before it is dead-lettered. The default is 24h.
	MaxAge time.Duration
	// MinBackoff and MaxBackoff bound the wait before a retry: full jitter
	// between MinBackoff and MinBackoff·2^(attempts-1), at most MaxBackoff.
	// The defaults are 1s and 10m.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one POST. The default is 10s.
	Timeout time.Duration
	// Workers is how many deliveries run at once. The default is 4.
	Workers int
	// Buffer is how many events of each class Emit holds before the queue
	// takes them (Local ones: at most 1000); past it Emit drops. Notices
	// and alerts have buffers of their own, so a flood of notices fills
	// none an alert needs. The default is 10000.
	Buffer int
	// Poll is how often an idle Run looks for due deliveries (retries, other
	// instances' events). The default is 250ms.
	Poll time.Duration
	// Client sends the POSTs. The default has Timeout and follows no redirect.
	Client *http.Client
	// Registerer gets the tollgate_webhook_* metrics. The default (nil)
	// registers none.
	Registerer prometheus.Registerer
	// Logger logs delivery failures and queue errors. The default discards.
	Logger *slog.Logger
	// Now is the clock. The default is time.Now.
	Now func() time.Time
}

// DeadLetter is a delivery that failed until its age limit. It holds no
// event data, so listing dead letters shows no identifier.
type DeadLetter struct {
	ID        string    `json:"id"` // the webhook-id
	Type      string    `json:"type"`
	Tenant    string    `json:"tenant"`
	Endpoint  string    `json:"endpoint"`
	LastError string    `json:"last_error"` // "HTTP 503", or the connection's error
	Time      time.Time `json:"time"`       // the event's
	DeadAt    time.Time `json:"dead_at"`
	Attempts  int       `json:"attempts"`
}

// Dispatcher takes events from Emit and delivers them, signed, to the
// endpoints of their tenant, at least once. It is safe for concurrent use.
type Dispatcher struct {
	cfg       Config
	q         Queue
	endpoints []*endpoint // in Config order
	byTenant  map[string][]*endpoint
	buf       [Local + 1]chan Event // Emit's buffers, by class
	shared    *route                // the Queue
	local     *route                // where Local events wait: shared when the Queue is a MemoryQueue
	m         *metrics
	log       *slog.Logger
	now       func() time.Time
	running   atomic.Bool

	windowsMu    sync.Mutex
	windows      map[string]time.Time // coalescing key → end of its window, this instance
	windowsSwept time.Time
}

// route is a queue and what its delivery loop needs: a Dispatcher has one
// for its Queue, and, unless that is in process, one for the Local events
// of this instance, so that neither waits on the other's queue.
type route struct {
	q    Queue
	wake chan struct{}
}

// localCap bounds the Local events buffered and queued when they have a
// queue of their own: store notices come one per change of the store.
const localCap = 1000

type endpoint struct {
	Endpoint
	key   []byte
	types map[string]bool
}

// New validates the endpoints and returns a Dispatcher; Run starts it.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Queue == nil {
		cfg.Queue = NewMemoryQueue(10000)
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 24 * time.Hour
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Minute
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, fmt.Errorf("webhook: MaxBackoff %v is below MinBackoff %v", cfg.MaxBackoff, cfg.MinBackoff)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 10000
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{
			Timeout:       cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Dispatcher{
		cfg:      cfg,
		q:        cfg.Queue,
		byTenant: map[string][]*endpoint{},
		shared:   &route{q: cfg.Queue, wake: make(chan struct{}, 1)},
		log:      cfg.Logger,
		now:      cfg.Now,
		windows:  map[string]time.Time{},
	}
	d.buf[Notice] = make(chan Event, cfg.Buffer)
	d.buf[Alert] = make(chan Event, cfg.Buffer)
	d.buf[Local] = make(chan Event, min(cfg.Buffer, localCap))
	d.local = d.shared
	if _, inProcess := cfg.Queue.(*MemoryQueue); !inProcess {
		d.local = &route{q: NewMemoryQueue(localCap), wake: make(chan struct{}, 1)}
	}
	names := map[string]bool{}
	for i, e := range cfg.Endpoints {
		ep, err := newEndpoint(e)
		if err != nil {
			return nil, fmt.Errorf("webhook: endpoint %d (%q): %w", i, e.Name, err)
		}
		if names[e.Name] {
			return nil, fmt.Errorf("webhook: endpoint %d: the name %q is used twice", i, e.Name)
		}
		names[e.Name] = true
		d.endpoints = append(d.endpoints, ep)
		d.byTenant[e.Tenant] = append(d.byTenant[e.Tenant], ep)
	}
	m, err := newMetrics(cfg.Registerer, func() float64 { return float64(len(d.buf[Notice]) + len(d.buf[Alert]) + len(d.buf[Local])) })
	if err != nil {
		return nil, fmt.Errorf("webhook: metrics: %w", err)
	}
	d.m = m
	return d, nil
}

func newEndpoint(e Endpoint) (*endpoint, error) {
	switch {
	case e.Name == "":
		return nil, errors.New("the Name is empty")
	case strings.ContainsFunc(e.Name, unicode.IsControl):
		return nil, errors.New("the Name holds a control character")
	case e.Tenant == "":
		return nil, errors.New("the Tenant is empty")
	case e.RatePerSecond < 0 || math.IsNaN(e.RatePerSecond) || math.IsInf(e.RatePerSecond, 0):
		return nil, errors.New("the RatePerSecond must be a positive number (0: 10)")
	case e.Burst < 0:
		return nil, errors.New("the Burst must not be negative (0: 20)")
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("the URL must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, errors.New("the URL must not hold a user name or password (the signature authenticates)")
	}
	key, err := DecodeSecret(e.Secret)
	if err != nil {
		return nil, errors.New(`the Secret must be "whsec_" followed by standard base64`)
	}
	if len(key) < MinSecretBytes {
		return nil, fmt.Errorf("the Secret's key is %d bytes, at least %d are needed", len(key), MinSecretBytes)
	}
	if e.RatePerSecond == 0 {
		e.RatePerSecond = 10
	}
	if e.Burst == 0 {
		e.Burst = 20
	}
	ep := &endpoint{Endpoint: e, key: key}
	if len(e.Types) > 0 {
		ep.types = map[string]bool{}
		for _, t := range e.Types {
			ep.types[t] = true
		}
	}
	return ep, nil
}

func (ep *endpoint) lane() Lane { return Lane{Tenant: ep.Tenant, Endpoint: ep.Name} }

func (ep *endpoint) wants(typ string) bool { return ep.types == nil || ep.types[typ] }

func (ep *endpoint) rate() Rate { return Rate{PerSecond: ep.RatePerSecond, Burst: ep.Burst} }

// windowsCap bounds the coalescing keys Emit remembers.
const windowsCap = 100_000

// Emit hands an event over for delivery. It never blocks and does no I/O:
// an event no endpoint takes is ignored; when its class's buffer is full
// the event is dropped and counted
// (tollgate_webhook_dropped_total{reason="buffer_full"}). An event whose
// coalescing key this instance already passed in its window is dropped here
// too (tollgate_webhook_coalesced_total), so a flood on one key fills no
// buffer; across instances the Queue coalesces.
func (d *Dispatcher) Emit(e Event) {
	if !d.wanted(e) {
		return
	}
	if e.ID == "" {
		e.ID = "msg_" + rand.Text()
	}
	now := d.now()
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Data = bytes.Clone(e.Data) // the caller may reuse its buffer
	if e.Coalesce == "" || e.CoalesceWindow <= 0 {
		d.send(e)
		return
	}
	k := e.Tenant + "\x00" + e.Coalesce
	d.windowsMu.Lock()
	defer d.windowsMu.Unlock()
	if end, ok := d.windows[k]; ok && now.Before(end) {
		d.m.coalesced.Inc()
		return
	}
	if d.send(e) {
		if len(d.windows) >= windowsCap && now.Sub(d.windowsSwept) >= sweepEvery {
			// At most once a second, so that keys enough to fill the map
			// cannot make every Emit walk it.
			d.windowsSwept = now
			sweep(d.windows, now)
		}
		if len(d.windows) < windowsCap {
			d.windows[k] = now.Add(e.CoalesceWindow)
		}
	}
}

// sweepEvery is how often a full coalescing map is swept of expired keys;
// between sweeps a key that finds it full is not remembered.
const sweepEvery = time.Second

// sweep deletes the keys whose window ended by now.
func sweep(windows map[string]time.Time, now time.Time) {
	for k, end := range windows {
		if !now.Before(end) {
			delete(windows, k)
		}
	}
}

// wanted reports whether an endpoint takes the event: others are not buffered.
func (d *Dispatcher) wanted(e Event) bool {
	for _, ep := range d.byTenant[e.Tenant] {
		if ep.wants(e.Type) {
			return true
		}
	}
	return false
}

// send puts e in its class's buffer.
func (d *Dispatcher) send(e Event) bool {
	select {
	case d.buf[min(e.Class, Local)] <- e:
		return true
	default:
		d.m.dropped.WithLabelValues(dropBufferFull).Inc()
		return false
	}
}

// signal wakes the delivery loop of rt.
func (rt *route) signal() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// Run moves Emit's buffers into the queues (Local events into this
// instance's own, unless the Queue is a MemoryQueue) and delivers until
// ctx is done, then returns nil. Deliveries in flight when ctx ends are abandoned
// unacknowledged: the memory queue takes them back, on Redis another
// instance (or this one, restarted) claims them after ClaimAfter. Only one
// Run at a time.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("webhook: Run is already running")
	}
	defer d.running.Store(false)
	var wg sync.WaitGroup
	wg.Go(func() { d.move(ctx) })
	wg.Go(func() { d.moveLocal(ctx) })
	wg.Go(func() { d.sweepLoop(ctx) })
	if d.local != d.shared {
		wg.Go(func() { d.deliverLoop(ctx, &wg, d.local) })
	}
	d.deliverLoop(ctx, &wg, d.shared)
	wg.Wait()
	return nil
}

// move takes events from the notice and alert buffers into the Queue, one
// delivery per endpoint that wants it, every alert buffered before the
// next notice.
func (d *Dispatcher) move(ctx context.Context) {
	for {
		select {
		case e := <-d.buf[Alert]:
			d.enqueue(ctx, d.shared, e)
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return
		case e := <-d.buf[Alert]:
			d.enqueue(ctx, d.shared, e)
		case e := <-d.buf[Notice]:
			d.enqueue(ctx, d.shared, e)
		}
	}
}

// moveLocal takes Local events into their queue: a goroutine of its own,
// so that an outage that holds move (the Queue's) holds none of them.
func (d *Dispatcher) moveLocal(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-d.buf[Local]:
			d.enqueue(ctx, d.local, e)
		}
	}
}

// enqueue queues e on rt, one delivery per endpoint that wants it.
func (d *Dispatcher) enqueue(ctx context.Context, rt *route, e Event) {
	var targets []*endpoint
	for _, ep := range d.byTenant[e.Tenant] {
		if ep.wants(e.Type) {
			targets = append(targets, ep)
		}
	}
	if len(targets) == 0 {
		return
	}
	if len(bytes.TrimSpace(e.Data)) == 0 {
		e.Data = json.RawMessage("{}")
	}
	if t := bytes.TrimSpace(e.Data); e.Type == "" || t[0] != '{' || !json.Valid(t) {
		d.m.dropped.WithLabelValues(dropInvalid).Inc()
		d.log.Warn("webhook: an event without a type or with data that is not a JSON object; dropped", "type", e.Type, "tenant", e.Tenant, "id", e.ID)
		return
	}
	if e.Coalesce != "" && e.CoalesceWindow > 0 {
		var first bool
		err := d.persist(ctx, "coalesce", func() (err error) {
			first, err = rt.q.Coalesce(ctx, e.Tenant, e.Coalesce, e.CoalesceWindow, d.now())
			return err
		})
		if err != nil {
			return
		}
		if !first {
			d.m.coalesced.Inc()
			return
		}
	}
	e.Coalesce, e.CoalesceWindow = "", 0
	now := d.now()
	for _, ep := range targets {
		dl := Delivery{Event: e, Endpoint: ep.Name, Since: now}
		err := d.persist(ctx, "push", func() error { return rt.q.Push(ctx, dl) })
		switch {
		case errors.Is(err, ErrQueueFull):
			d.m.dropped.WithLabelValues(dropQueueFull).Inc()
			d.log.Warn("webhook: queue full; delivery dropped", "endpoint", ep.Name, "type", e.Type, "class", e.Class, "id", e.ID)
		case err == nil:
			d.m.queued.WithLabelValues(ep.Name).Inc()
		}
	}
	rt.signal()
}

// persist runs a queue operation until it succeeds, is refused as full, or
// ctx ends: a queue outage holds the event here while Emit's buffer fills.
func (d *Dispatcher) persist(ctx context.Context, what string, op func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := op()
		if err == nil || errors.Is(err, ErrQueueFull) {
			return err
		}
		d.log.Warn("webhook: queue unavailable; retrying", "op", what, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// deliverLoop leases due deliveries of rt lane by lane, as many as free
// workers and each endpoint's rate limit (kept by the queue, so shared on
// Redis) allow, and delivers each on its own goroutine. The loop of the
// Queue also keeps the depth gauge.
func (d *Dispatcher) deliverLoop(ctx context.Context, wg *sync.WaitGroup, rt *route) {
	sem := make(chan struct{}, d.cfg.Workers)
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	lanes := make([]Lane, len(d.endpoints))
	for i, ep := range d.endpoints {
		lanes[i] = ep.lane()
	}
	if rt == d.shared {
		d.updateDepth(ctx, lanes)
	}
	start := 0
	failing := false // the queue's last answer was an error: log changes only
	for {
		fetched := 0
		for i := range d.endpoints {
			ep := d.endpoints[(start+i)%len(d.endpoints)]
			free := d.cfg.Workers - len(sem)
			if free == 0 || ctx.Err() != nil {
				break
			}
			ds, err := rt.q.Next(ctx, ep.lane(), d.now(), free, ep.rate())
			if err != nil {
				if ctx.Err() == nil && !failing {
					d.log.Warn("webhook: queue unavailable; deliveries wait", "op", "next", "endpoint", ep.Name, "err", err)
				}
				failing = true
				continue
			}
			if failing {
				d.log.Info("webhook: queue available again")
				failing = false
			}
			for _, dl := range ds {
				sem <- struct{}{}
				fetched++
				wg.Go(func() {
					defer func() { <-sem; rt.signal() }()
					d.deliver(ctx, rt.q, ep, dl)
				})
			}
		}
		if len(d.endpoints) > 0 {
			start = (start + 1) % len(d.endpoints)
		}
		if fetched > 0 && len(sem) < d.cfg.Workers {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-rt.wake:
		case <-tick.C:
			if rt == d.shared {
				d.updateDepth(ctx, lanes)
			}
		}
	}
}

// How often Run looks for the lanes of removed endpoints (sweepRemoved):
// first a minute after it starts, then every ten.
var laneSweepFirst, laneSweepEvery = time.Minute, 10 * time.Minute

// laneSweeper is a Queue shared beyond this process, which can hold the
// lanes of endpoints this instance's config no longer has (RedisQueue).
type laneSweeper interface {
	sweepLanes(ctx context.Context, keep func(Lane) bool, idle, every time.Duration) (map[Lane]int64, error)
}

// sweepLoop runs sweepRemoved every laneSweepEvery until ctx is done.
func (d *Dispatcher) sweepLoop(ctx context.Context) {
	if _, ok := d.q.(laneSweeper); !ok {
		return
	}
	t := time.NewTimer(laneSweepFirst)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.sweepRemoved(ctx)
		t.Reset(laneSweepEvery)
	}
}

// sweepRemoved deletes from a shared queue the lanes of endpoints this
// instance is not configured with once they have been idle for MaxAge: no
// delivery queued, replayed or retried for as long as a delivery is tried.
// Every delivery such a lane holds is then past its age limit, and no
// instance delivers it; left, it would stay in Redis for good (up to
// MaxLen a lane). Each is counted as dropped (endpoint_removed) and the
// lane is logged. An instance still configured with the endpoint during a
// rolling change keeps its lane busy, so it is not idle.
func (d *Dispatcher) sweepRemoved(ctx context.Context) {
	s, ok := d.q.(laneSweeper)
	if !ok {
		return
	}
	keep := func(l Lane) bool {
		for _, ep := range d.byTenant[l.Tenant] {
			if ep.Name == l.Endpoint {
				return true
			}
		}
		return false
	}
	// Less than laneSweepEvery, so that the next sweep of the fleet's
	// first instance finds the key gone.
	dropped, err := s.sweepLanes(ctx, keep, d.cfg.MaxAge, laneSweepEvery*9/10)
	for l, n := range dropped {
		d.m.dropped.WithLabelValues(dropRemoved).Add(float64(n))
		d.log.Warn("webhook: deleted the queue of an endpoint no longer configured, idle for the age limit",
			"tenant", l.Tenant, "endpoint", l.Endpoint, "deliveries", n, "idle", d.cfg.MaxAge)
	}
	if err != nil && ctx.Err() == nil {
		d.log.Warn("webhook: sweeping removed endpoints' queues", "err", err)
	}
}

func (d *Dispatcher) updateDepth(ctx context.Context, lanes []Lane) {
	if u, ok := d.q.(interface{ takeUndecryptable() int64 }); ok {
		if n := u.takeUndecryptable(); n > 0 {
			d.m.undecrypt.Add(float64(n))
		}
	}
	n, err := d.q.Depth(ctx, lanes)
	if err != nil {
		return
	}
	if d.local != d.shared {
		l, _ := d.local.q.Depth(ctx, lanes)
		n += l
	}
	d.m.depth.Set(float64(n))
}

// payload is the body of a delivery (Standard Webhooks), with the tenant.
type payload struct {
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Tenant    string          `json:"tenant"`
	Data      json.RawMessage `json:"data"`
}

// Body is the JSON body a delivery of e sends.
func Body(e Event) ([]byte, error) {
	return json.Marshal(payload{Type: e.Type, Timestamp: e.Time.UTC().Format(time.RFC3339Nano), Tenant: e.Tenant, Data: e.Data})
}

// finishTimeout bounds the queue call that records a delivery's outcome,
// which runs even when Run's context has ended.
const finishTimeout = 5 * time.Second

// deliver makes one attempt of dl, leased from q, and records its outcome
// in q.
func (d *Dispatcher) deliver(ctx context.Context, q Queue, ep *endpoint, dl Delivery) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	failure := d.post(ctx, ep, dl)
	if failure == "" {
		if err := q.Ack(fctx, dl); err != nil {
			d.log.Warn("webhook: ack failed; the delivery will be repeated with the same webhook-id", "endpoint", ep.Name, "id", dl.Event.ID, "err", err)
		}
		d.m.delivered.WithLabelValues(ep.Name).Inc()
		d.m.latency.WithLabelValues(ep.Name).Observe(max(0, d.now().Sub(dl.Event.Time).Seconds()))
		return
	}
	if ctx.Err() != nil { // stopping: not the endpoint's failure
		if err := q.Release(fctx, dl); err != nil {
			d.log.Warn("webhook: release failed", "endpoint", ep.Name, "id", dl.Event.ID, "err", err)
		}
		return
	}
	now := d.now()
	dl.Attempts++
	dl.LastError = failure
	d.log.Debug("webhook: delivery failed", "endpoint", ep.Name, "type", dl.Event.Type, "id", dl.Event.ID, "attempts", dl.Attempts, "err", failure)
	deadline := dl.Since.Add(d.cfg.MaxAge)
	if !now.Before(deadline) {
		dl.DeadAt = now
		if err := q.Dead(fctx, dl); err != nil {
			d.log.Warn("webhook: dead-lettering failed", "endpoint", ep.Name, "id", dl.Event.ID, "err", err)
			return
		}
		d.m.deadLetters.WithLabelValues(ep.Name).Inc()
		d.log.Warn("webhook: delivery dead-lettered at its age limit", "endpoint", ep.Name, "type", dl.Event.Type, "id", dl.Event.ID, "attempts", dl.Attempts, "err", failure)
		return
	}
	at := now.Add(d.backoff(dl.Attempts))
	if at.After(deadline) {
		at = deadline
	}
	if err := q.Retry(fctx, dl, at); err != nil {
		d.log.Warn("webhook: retry scheduling failed", "endpoint", ep.Name, "id", dl.Event.ID, "err", err)
		return
	}
	d.m.retried.WithLabelValues(ep.Name).Inc()
}

// backoff is the wait before the next attempt after attempts failures: full
// jitter between MinBackoff and MinBackoff·2^(attempts-1), at most MaxBackoff.
func (d *Dispatcher) backoff(attempts int) time.Duration {
	lo, ceil := d.cfg.MinBackoff, d.cfg.MinBackoff
	for i := 1; i < attempts && ceil < d.cfg.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, d.cfg.MaxBackoff)
	if ceil <= lo {
		return lo
	}
	return lo + mrand.N(ceil-lo+1)
}

// post sends one attempt and returns "" on a 2xx, or why it failed.
func (d *Dispatcher) post(ctx context.Context, ep *endpoint, dl Delivery) string {
	body, err := Body(dl.Event)
	if err != nil {
		return "encoding the body: " + err.Error()
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return "building the request"
	}
	ts := d.now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tollgate-webhook")
	req.Header.Set(HeaderID, dl.Event.ID)
	req.Header.Set(HeaderTimestamp, fmt.Sprint(ts.Unix()))
	req.Header.Set(HeaderSignature, "v1,"+b64(mac(ep.key, dl.Event.ID, ts.Unix(), body)))
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // its message repeats the URL, which may hold a token
			err = ue.Err
		}
		return truncate(err.Error(), 200)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// maxDeadLetters bounds one DeadLetters answer.
const maxDeadLetters = 1000

// DeadLetters lists up to limit (1 to 1000; 0: 100) dead letters of a
// tenant, newest first: the Queue's and this instance's Local ones.
func (d *Dispatcher) DeadLetters(ctx context.Context, tenant string, limit int) ([]DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxDeadLetters)
	ds, err := d.q.DeadLetters(ctx, tenant, limit)
	if err != nil {
		return nil, err
	}
	if d.local != d.shared {
		local, _ := d.local.q.DeadLetters(ctx, tenant, limit) // in memory: no error
		ds = append(ds, local...)
		slices.SortStableFunc(ds, func(a, b Delivery) int { return b.DeadAt.Compare(a.DeadAt) })
		ds = ds[:min(len(ds), limit)]
	}
	out := make([]DeadLetter, len(ds))
	for i, dl := range ds {
		out[i] = DeadLetter{
			ID: dl.Event.ID, Type: dl.Event.Type, Tenant: dl.Event.Tenant, Endpoint: dl.Endpoint,
			LastError: dl.LastError, Time: dl.Event.Time, DeadAt: dl.DeadAt, Attempts: dl.Attempts,
		}
	}
	return out, nil
}

// Replay puts the dead letters of a tenant with this webhook-id (one per
// endpoint that gave up) back for delivery, with a fresh age limit and the
// same webhook-id; ErrNotFound when there is none. A Local event's are in
// this instance's memory, and replayed there.
func (d *Dispatcher) Replay(ctx context.Context, tenant, id string) error {
	if d.local != d.shared {
		if _, err := d.local.q.Replay(ctx, tenant, id, d.now()); err == nil {
			d.local.signal()
			return nil
		}
	}
	if _, err := d.q.Replay(ctx, tenant, id, d.now()); err != nil {
		return err
	}
	d.shared.signal()
	return nil
}
