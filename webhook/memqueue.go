package webhook

import (
	"container/heap"
	"context"
	"strconv"
	"sync"
	"time"
)

// memDeadCap bounds the dead letters a memory queue keeps; the oldest go first.
const memDeadCap = 1000

// memCoalesceCap bounds the coalescing keys a memory queue remembers; past
// it (after expired keys are swept) events are queued uncoalesced.
const memCoalesceCap = 100_000

// MemoryQueue is a bounded in-process Queue. A restart loses everything in
// it: waiting deliveries, retry state, dead letters and coalescing windows.
// Each lane keeps its alerts (Alert and Local) and its notices apart, and
// leases the alerts first.
type MemoryQueue struct {
	mu       sync.Mutex
	capacity int
	n        int // waiting and leased
	seq      uint64
	lanes    map[Lane]*memLane
	buckets  map[Lane]*bucket
	leased   map[string]Delivery
	windows  map[string]time.Time // coalescing key → end of its window
	swept    time.Time            // when windows was last swept
	dead     []Delivery           // oldest first
}

var _ Queue = (*MemoryQueue)(nil)

// NewMemoryQueue returns an in-process queue holding at most capacity
// deliveries (waiting or leased), of which notices at most nine tenths; a
// capacity below 1 means 10000.
func NewMemoryQueue(capacity int) Queue {
	if capacity < 1 {
		capacity = 10000
	}
	return &MemoryQueue{
		capacity: capacity,
		lanes:    map[Lane]*memLane{},
		buckets:  map[Lane]*bucket{},
		leased:   map[string]Delivery{},
		windows:  map[string]time.Time{},
	}
}

// Coalesce implements Queue.
func (q *MemoryQueue) Coalesce(_ context.Context, tenant, key string, window time.Duration, now time.Time) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := tenant + "\x00" + key
	if end, ok := q.windows[k]; ok && now.Before(end) {
		return false, nil
	}
	if len(q.windows) >= memCoalesceCap && now.Sub(q.swept) >= sweepEvery {
		q.swept = now
		sweep(q.windows, now)
	}
	if len(q.windows) >= memCoalesceCap {
		return true, nil
	}
	q.windows[k] = now.Add(window)
	return true, nil
}

// Push implements Queue.
func (q *MemoryQueue) Push(_ context.Context, d Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	limit := int64(q.capacity)
	if !d.Event.Class.urgent() {
		limit = noticeLimit(limit)
	}
	if int64(q.n) >= limit {
		return ErrQueueFull
	}
	q.n++
	q.put(d, time.Time{})
	return nil
}

// put adds a delivery to its lane, due at at (zero: at once). q.mu is held.
func (q *MemoryQueue) put(d Delivery, at time.Time) {
	d.Lease = ""
	ml := q.lanes[d.lane()]
	if ml == nil {
		ml = &memLane{}
		q.lanes[d.lane()] = ml
	}
	q.seq++
	heap.Push(ml.of(d.Event.Class), memItem{at: at, seq: q.seq, d: d})
}

// Next implements Queue.
func (q *MemoryQueue) Next(_ context.Context, l Lane, now time.Time, max int, r Rate) ([]Delivery, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r = r.orDefault()
	ml := q.lanes[l]
	if ml == nil || (!ml.alerts.due(now) && !ml.notices.due(now)) {
		return nil, nil
	}
	b := q.buckets[l]
	if b == nil {
		b = &bucket{tokens: float64(r.Burst), last: now}
		q.buckets[l] = b
	}
	max = min(max, b.available(now, r))
	var out []Delivery
	defer func() { b.tokens -= float64(len(out)) }()
	for len(out) < max {
		h := &ml.alerts
		if !h.due(now) {
			h = &ml.notices
		}
		if !h.due(now) {
			break
		}
		it := heap.Pop(h).(memItem)
		q.seq++
		it.d.Lease = strconv.FormatUint(q.seq, 10)
		q.leased[it.d.Lease] = it.d
		out = append(out, it.d)
	}
	return out, nil
}

// take ends a lease; false when it is not held. q.mu is held.
func (q *MemoryQueue) take(d Delivery) bool {
	if _, ok := q.leased[d.Lease]; !ok {
		return false
	}
	delete(q.leased, d.Lease)
	return true
}

// Ack implements Queue.
func (q *MemoryQueue) Ack(_ context.Context, d Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.take(d) {
		q.n--
	}
	return nil
}

// Retry implements Queue.
func (q *MemoryQueue) Retry(_ context.Context, d Delivery, at time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.take(d) {
		q.put(d, at)
	}
	return nil
}

// Release implements Queue.
func (q *MemoryQueue) Release(_ context.Context, d Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.take(d) {
		q.put(d, time.Time{})
	}
	return nil
}

// Dead implements Queue.
func (q *MemoryQueue) Dead(_ context.Context, d Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.take(d) {
		return nil
	}
	q.n--
	d.Lease = ""
	if len(q.dead) == memDeadCap {
		q.dead = append(q.dead[:0], q.dead[1:]...)
	}
	q.dead = append(q.dead, d)
	return nil
}

// DeadLetters implements Queue.
func (q *MemoryQueue) DeadLetters(_ context.Context, tenant string, limit int) ([]Delivery, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Delivery
	for i := len(q.dead) - 1; i >= 0 && len(out) < limit; i-- {
		if q.dead[i].Event.Tenant == tenant {
			out = append(out, q.dead[i])
		}
	}
	return out, nil
}

// Replay implements Queue. A replay may exceed the capacity by the
// deliveries it puts back: they were counted in it before.
func (q *MemoryQueue) Replay(_ context.Context, tenant, id string, now time.Time) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.dead[:0]
	n := 0
	for _, d := range q.dead {
		if d.Event.Tenant != tenant || d.Event.ID != id {
			kept = append(kept, d)
			continue
		}
		q.put(fresh(d, now), time.Time{})
		q.n++
		n++
	}
	clear(q.dead[len(kept):])
	q.dead = kept
	if n == 0 {
		return 0, ErrNotFound
	}
	return n, nil
}

// fresh is a dead letter made new for a replay: no attempts, its age limit
// counted from now.
func fresh(d Delivery, now time.Time) Delivery {
	d.Attempts, d.LastError, d.DeadAt, d.Since, d.Lease = 0, "", time.Time{}, now, ""
	return d
}

// Depth implements Queue: the whole queue's count, whatever the lanes.
func (q *MemoryQueue) Depth(context.Context, []Lane) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(q.n), nil
}

type memItem struct {
	at  time.Time
	seq uint64
	d   Delivery
}

// memLane is a lane's deliveries: its alerts, leased first, and its
// notices.
type memLane struct{ alerts, notices memHeap }

// of is the heap where deliveries of class c wait.
func (ml *memLane) of(c Class) *memHeap {
	if c.urgent() {
		return &ml.alerts
	}
	return &ml.notices
}

// memHeap orders a lane's deliveries by due time, then by arrival.
type memHeap []memItem

// due reports whether the heap's first delivery is due at now.
func (h memHeap) due(now time.Time) bool { return len(h) > 0 && !h[0].at.After(now) }

func (h memHeap) Len() int { return len(h) }
func (h memHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h memHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *memHeap) Push(x any)   { *h = append(*h, x.(memItem)) }
func (h *memHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = memItem{}
	*h = old[:len(old)-1]
	return it
}

// bucket is a lane's token bucket in process.
type bucket struct {
	tokens float64
	last   time.Time
}

// available refills the bucket to now and returns its whole tokens.
func (b *bucket) available(now time.Time, r Rate) int {
	if now.After(b.last) {
		b.tokens = min(float64(r.Burst), b.tokens+now.Sub(b.last).Seconds()*r.PerSecond)
		b.last = now
	}
	return int(b.tokens)
}
