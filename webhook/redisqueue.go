package webhook

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisQueueConfig configures a Redis queue. Every instance that shares the
// queue must have the same Prefix and Secret and its own Consumer.
type RedisQueueConfig struct {
	// Prefix starts every key. The default is "tollgate:webhook:".
	Prefix string
	// Secret is the key material the entries are encrypted under (AES-256-GCM
	// under an HKDF-SHA256 key): at least 16 random bytes, the same on every
	// instance. Required.
	Secret []byte
	// Consumer is this instance's name in the streams' consumer group. The
	// default is a random name, so a restarted instance's unacknowledged
	// deliveries are claimed after ClaimAfter like a dead one's.
	Consumer string
	// ClaimAfter is how long a leased delivery may go unanswered before
	// another instance claims it (XAUTOCLAIM). Keep it above the
	// Dispatcher's Timeout, or a slow delivery is sent twice. The default
	// is 2m.
	ClaimAfter time.Duration
	// MaxLen bounds the deliveries of one lane (tenant and endpoint) waiting,
	// leased or retrying; past it Push answers ErrQueueFull, and for a
	// notice past nine tenths of it. The default is 100000.
	MaxLen int64
	// DeadCap bounds a tenant's dead letters; the oldest are dropped. The
	// default is 10000.
	DeadCap int64
	// Logger logs entries that do not decrypt (the instances' Secrets
	// differ). The default discards.
	Logger *slog.Logger
}

// RedisQueue is a Queue shared by every instance on one Redis (or Redis
// Cluster). Per lane and class (alerts, notices) a Stream holds the
// deliveries due now, read through one consumer group, and a sorted set
// holds the retries by due time; per tenant a sorted set holds the dead
// letters. A tenant's keys share one
// hash tag, so they live in one Cluster slot and move together in scripts.
// Every delivery is stored AES-GCM encrypted, bound to its lane: a dump of
// Redis shows tenants, endpoint names, webhook-ids' count and timing, but
// no event data.
type RedisQueue struct {
	c      redis.UniversalClient
	cfg    RedisQueueConfig
	aead   cipher.AEAD
	groups sync.Map // stream key → struct{}: its consumer group exists
	bad    atomic.Int64
}

var _ Queue = (*RedisQueue)(nil)

const (
	redisGroup   = "tollgate-webhook"
	redisField   = "d"
	blobVersion  = 1
	hkdfInfo     = "tollgate webhook queue v1"
	minRedisKey  = 16
	coalesceHash = 16 // bytes of SHA-256 kept in a coalescing key's name
)

// NewRedisQueue returns a Queue on c.
func NewRedisQueue(c redis.UniversalClient, cfg RedisQueueConfig) (Queue, error) {
	if c == nil {
		return nil, errors.New("webhook: NewRedisQueue: no Redis client")
	}
	if len(cfg.Secret) < minRedisKey {
		return nil, fmt.Errorf("webhook: RedisQueueConfig.Secret has %d bytes, at least %d are needed", len(cfg.Secret), minRedisKey)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "tollgate:webhook:"
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, errors.New("webhook: RedisQueueConfig.Prefix must not hold { or }: the tenant is the hash tag")
	}
	if cfg.Consumer == "" {
		cfg.Consumer = "c-" + rand.Text()[:16]
	}
	if cfg.ClaimAfter <= 0 {
		cfg.ClaimAfter = 2 * time.Minute
	}
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = 100000
	}
	if cfg.DeadCap <= 0 {
		cfg.DeadCap = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	key, err := hkdf.Key(sha256.New, cfg.Secret, nil, hkdfInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("webhook: deriving the queue key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("webhook: queue cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("webhook: queue cipher: %w", err)
	}
	return &RedisQueue{c: c, cfg: cfg, aead: aead}, nil
}

// Keys. The tenant in braces is the hash tag: all of a tenant's keys are in one slot.
func (q *RedisQueue) base(tenant string) string { return q.cfg.Prefix + "{" + tenant + "}" }
func (q *RedisQueue) stream(l Lane) string      { return q.base(l.Tenant) + ":s:" + l.Endpoint }
func (q *RedisQueue) retries(l Lane) string     { return q.base(l.Tenant) + ":r:" + l.Endpoint }
func (q *RedisQueue) alerts(l Lane) string      { return q.base(l.Tenant) + ":as:" + l.Endpoint }
func (q *RedisQueue) alertRetries(l Lane) string {
	return q.base(l.Tenant) + ":ar:" + l.Endpoint
}
func (q *RedisQueue) bucket(l Lane) string      { return q.base(l.Tenant) + ":b:" + l.Endpoint }
func (q *RedisQueue) dead(tenant string) string { return q.base(tenant) + ":dead" }
func (q *RedisQueue) window(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return q.base(tenant) + ":c:" + hex.EncodeToString(sum[:coalesceHash])
}

// laneKeys are a lane's streams and retries: the alerts' and the notices'
// (the notices' keep the names of a lane before alerts had their own, so
// that an upgrade delivers what was queued).
func (q *RedisQueue) laneKeys(l Lane) []string {
	return []string{q.alerts(l), q.alertRetries(l), q.stream(l), q.retries(l)}
}

// classKeys are the stream and retries where deliveries of class c wait.
func (q *RedisQueue) classKeys(l Lane, c Class) (stream, retries string) {
	if c.urgent() {
		return q.alerts(l), q.alertRetries(l)
	}
	return q.stream(l), q.retries(l)
}

// alertLease starts the Lease of a delivery leased from a lane's alerts;
// one from its notices is the bare stream entry id.
const alertLease = "a:"

// leaseKeys are the stream and retries of the delivery's lease, and its
// entry id.
func (q *RedisQueue) leaseKeys(d Delivery) (stream, retries, id string) {
	if id, ok := strings.CutPrefix(d.Lease, alertLease); ok {
		return q.alerts(d.lane()), q.alertRetries(d.lane()), id
	}
	return q.stream(d.lane()), q.retries(d.lane()), d.Lease
}

func aad(l Lane) []byte { return []byte("tollgate-webhook\x00" + l.Tenant + "\x00" + l.Endpoint) }

// deadLane stands for the endpoint in the additional data of a dead letter,
// which is read before its endpoint is known. Endpoint names hold no
// control character.
const deadLane = "\x00dead"

// seal encrypts a delivery for its lane: version, nonce, AES-GCM ciphertext.
func (q *RedisQueue) seal(d Delivery) (string, error) { return q.sealAs(d, d.lane()) }

// sealDead encrypts a dead letter for its tenant's dead letters.
func (q *RedisQueue) sealDead(d Delivery) (string, error) {
	return q.sealAs(d, Lane{Tenant: d.Event.Tenant, Endpoint: deadLane})
}

func (q *RedisQueue) sealAs(d Delivery, l Lane) (string, error) {
	d.Lease = ""
	plain, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("webhook: encoding a delivery: %w", err)
	}
	out := make([]byte, 1, 1+q.aead.NonceSize()+len(plain)+q.aead.Overhead())
	out[0] = blobVersion
	out = append(out, make([]byte, q.aead.NonceSize())...)
	rand.Read(out[1:])
	out = q.aead.Seal(out, out[1:], plain, aad(l))
	return string(out), nil
}

// open decrypts a blob sealed for lane l.
func (q *RedisQueue) open(l Lane, blob string) (Delivery, error) {
	var d Delivery
	ns := q.aead.NonceSize()
	if len(blob) < 1+ns || blob[0] != blobVersion {
		return d, errors.New("webhook: queue entry has an unknown format")
	}
	b := []byte(blob)
	plain, err := q.aead.Open(nil, b[1:1+ns], b[1+ns:], aad(l))
	if err != nil {
		return d, errors.New("webhook: queue entry does not decrypt (do the instances share RedisQueueConfig.Secret?)")
	}
	if err := json.Unmarshal(plain, &d); err != nil {
		return d, fmt.Errorf("webhook: queue entry: %w", err)
	}
	if d.Event.Tenant != l.Tenant || (l.Endpoint != deadLane && d.Endpoint != l.Endpoint) {
		return d, errors.New("webhook: queue entry is of another lane")
	}
	return d, nil
}

func (q *RedisQueue) ensureGroup(ctx context.Context, stream string) error {
	if _, ok := q.groups.Load(stream); ok {
		return nil
	}
	err := q.c.XGroupCreateMkStream(ctx, stream, redisGroup, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") { // the group exists: created by another instance or an earlier run
		return fmt.Errorf("webhook: creating the consumer group: %w", err)
	}
	q.groups.Store(stream, struct{}{})
	return nil
}

// forgetGroup drops the cached group of a stream after NOGROUP (a Redis
// restart lost it), so the next call creates it again.
func (q *RedisQueue) forgetGroup(stream string, err error) {
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		q.groups.Delete(stream)
	}
}

// Coalesce implements Queue with SET NX PX on the tenant's key for the
// coalescing key's hash; the window is counted by Redis's clock.
func (q *RedisQueue) Coalesce(ctx context.Context, tenant, key string, window time.Duration, _ time.Time) (bool, error) {
	ok, err := q.c.SetNX(ctx, q.window(tenant, key), 1, max(window, time.Millisecond)).Result()
	if err != nil {
		return false, fmt.Errorf("webhook: coalesce: %w", err)
	}
	return ok, nil
}

// pushScript adds an entry to a stream of a lane unless the lane holds
// the limit (MaxLen for an alert, less a tenth for a notice). KEYS: the
// stream, then the lane's keys (laneKeys). ARGV: limit, blob.
var pushScript = redis.NewScript(`
local n = redis.call('XLEN', KEYS[2]) + redis.call('ZCARD', KEYS[3]) + redis.call('XLEN', KEYS[4]) + redis.call('ZCARD', KEYS[5])
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '*', 'd', ARGV[2])
return 1`)

// Push implements Queue.
func (q *RedisQueue) Push(ctx context.Context, d Delivery) error {
	l := d.lane()
	stream, _ := q.classKeys(l, d.Event.Class)
	if err := q.ensureGroup(ctx, stream); err != nil {
		return err
	}
	blob, err := q.seal(d)
	if err != nil {
		return err
	}
	limit := q.cfg.MaxLen
	if !d.Event.Class.urgent() {
		limit = noticeLimit(limit)
	}
	n, err := pushScript.Run(ctx, q.c, append([]string{stream}, q.laneKeys(l)...), limit, blob).Int()
	if err != nil {
		return fmt.Errorf("webhook: push: %w", err)
	}
	if n == 0 {
		return ErrQueueFull
	}
	return nil
}

// nextScript leases a lane's due deliveries in one round trip: it refills
// the lane's token bucket to now and, up to the tokens and max, takes from
// the lane's alerts first, then from its notices: of each, it moves the
// retries due at now from the sorted set into the stream, claims entries
// leased longer than ClaimAfter (XAUTOCLAIM) and reads new ones
// (XREADGROUP). It spends a token per entry returned. It returns per entry
// its class ("a" alert, "n" notice), id, blob and how many earlier leases
// of it ended without an outcome (a claimed entry's delivery count in the
// pending list, less this lease: its consumer died or stopped
// mid-delivery), flat. KEYS: the lane's keys (laneKeys), bucket. ARGV:
// group, consumer, now ms, max, ClaimAfter ms, rate per second, burst.
var nextScript = redis.NewScript(`
local now, max, rate, burst = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[6]), tonumber(ARGV[7])
local b = redis.call('HMGET', KEYS[5], 't', 'ts')
local tokens, ts = tonumber(b[1]), tonumber(b[2])
if tokens == nil or ts == nil then tokens, ts = burst, now end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
  ts = now
end
local n = math.min(max, math.floor(tokens))
local out, taken = {}, 0
if n <= 0 then return out end
local function add(stream, class, entries, claimed)
  for _, e in ipairs(entries) do
    local f = e[2]
    if f then
      for i = 1, #f, 2 do
        if f[i] == 'd' then
          local earlier = 0
          if claimed then
            local p = redis.call('XPENDING', stream, ARGV[1], e[1], e[1], 1)
            if p[1] then earlier = tonumber(p[1][4]) - 1 end
          end
          out[#out + 1] = class
          out[#out + 1] = e[1]
          out[#out + 1] = f[i + 1]
          out[#out + 1] = tostring(earlier)
          taken = taken + 1
        end
      end
    end
  end
end
local function take(stream, retries, class)
  local left = n - taken
  if left <= 0 then return end
  local due = redis.call('ZRANGEBYSCORE', retries, '-inf', now, 'LIMIT', 0, left)
  for _, blob in ipairs(due) do
    redis.call('ZREM', retries, blob)
    redis.call('XADD', stream, '*', 'd', blob)
  end
  add(stream, class, redis.call('XAUTOCLAIM', stream, ARGV[1], ARGV[2], ARGV[5], '0-0', 'COUNT', left)[2], true)
  left = n - taken
  if left > 0 then
    local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', left, 'STREAMS', stream, '>')
    if r then add(stream, class, r[1][2], false) end
  end
end
take(KEYS[1], KEYS[2], 'a')
take(KEYS[3], KEYS[4], 'n')
tokens = tokens - taken
redis.call('HSET', KEYS[5], 't', tostring(tokens), 'ts', tostring(ts))
redis.call('PEXPIRE', KEYS[5], math.ceil(burst / rate * 1000) + 60000)
return out`)

// Next implements Queue in one script (nextScript): the lane's token
// bucket is in Redis, shared by every instance.
func (q *RedisQueue) Next(ctx context.Context, l Lane, now time.Time, max int, r Rate) ([]Delivery, error) {
	if max <= 0 {
		return nil, nil
	}
	r = r.orDefault()
	keys := q.laneKeys(l)
	for _, s := range []string{keys[0], keys[2]} {
		if err := q.ensureGroup(ctx, s); err != nil {
			return nil, err
		}
	}
	res, err := nextScript.Run(ctx, q.c, append(keys, q.bucket(l)),
		redisGroup, q.cfg.Consumer, now.UnixMilli(), max, q.cfg.ClaimAfter.Milliseconds(), r.PerSecond, r.Burst).StringSlice()
	if err != nil {
		q.forgetGroup(keys[0], err)
		q.forgetGroup(keys[2], err)
		return nil, fmt.Errorf("webhook: leasing deliveries: %w", err)
	}
	out := make([]Delivery, 0, len(res)/4)
	for i := 0; i+3 < len(res); i += 4 {
		class, id, blob := res[i], res[i+1], res[i+2]
		earlier, _ := strconv.Atoi(res[i+3])
		d, err := q.open(l, blob)
		if err != nil {
			// Left leased, not deleted: an instance with the right
			// secret claims it after ClaimAfter. One with a wrong secret
			// must not destroy what the others queued.
			q.bad.Add(1)
			q.cfg.Logger.Error("webhook: a queue entry does not decrypt; left for another instance", "tenant", l.Tenant, "endpoint", l.Endpoint, "entry", id, "err", err)
			continue
		}
		// The lease names the stream the entry was read from, which
		// Ack, Retry and Dead end it in, whatever class its blob says.
		d.Lease = id
		if class == "a" {
			d.Lease = alertLease + id
		}
		// A lease that ended without an outcome (its instance died or
		// stopped mid-delivery) was an attempt its blob does not count.
		// (So is a lease by an instance whose secret differs, which
		// cannot read the entry: a fleet so misconfigured backs off more.)
		if earlier > 0 {
			d.Attempts += earlier
		}
		out = append(out, d)
	}
	return out, nil
}

// takeUndecryptable returns and resets the count of entries that did not
// decrypt, for the Dispatcher's metric.
func (q *RedisQueue) takeUndecryptable() int64 { return q.bad.Swap(0) }

// ackScript ends a lease: only the first outcome of an entry counts (when a
// slow consumer's entry was claimed by another, whichever finishes second
// changes nothing, so a retry is never scheduled twice). KEYS: stream, then where the delivery goes (retries or dead).
// ARGV: group, entry id, then per mode: ack: -; retry: at ms, blob;
// dead: dead-at ms, blob, cap.
var ackScript = redis.NewScript(`
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('XDEL', KEYS[1], ARGV[2])
if ARGV[3] == 'retry' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
elseif ARGV[3] == 'dead' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[6]) - 1)
end
return 1`)

// Ack implements Queue.
func (q *RedisQueue) Ack(ctx context.Context, d Delivery) error {
	stream, retries, id := q.leaseKeys(d)
	err := ackScript.Run(ctx, q.c, []string{stream, retries}, redisGroup, id, "ack").Err()
	if err != nil {
		return fmt.Errorf("webhook: ack: %w", err)
	}
	return nil
}

// Retry implements Queue.
func (q *RedisQueue) Retry(ctx context.Context, d Delivery, at time.Time) error {
	stream, retries, id := q.leaseKeys(d)
	blob, err := q.seal(d)
	if err != nil {
		return err
	}
	err = ackScript.Run(ctx, q.c, []string{stream, retries}, redisGroup, id, "retry", at.UnixMilli(), blob).Err()
	if err != nil {
		return fmt.Errorf("webhook: retry: %w", err)
	}
	return nil
}

// Release implements Queue. On Redis it leaves the entry leased: another
// instance claims it after ClaimAfter, as when an instance dies.
func (q *RedisQueue) Release(context.Context, Delivery) error { return nil }

// Dead implements Queue.
func (q *RedisQueue) Dead(ctx context.Context, d Delivery) error {
	stream, _, id := q.leaseKeys(d)
	blob, err := q.sealDead(d)
	if err != nil {
		return err
	}
	err = ackScript.Run(ctx, q.c, []string{stream, q.dead(d.Event.Tenant)}, redisGroup, id, "dead", d.DeadAt.UnixMilli(), blob, q.cfg.DeadCap).Err()
	if err != nil {
		return fmt.Errorf("webhook: dead-letter: %w", err)
	}
	return nil
}

// openDead decrypts a dead letter of the tenant.
func (q *RedisQueue) openDead(tenant, blob string) (Delivery, bool) {
	d, err := q.open(Lane{Tenant: tenant, Endpoint: deadLane}, blob)
	if err != nil {
		q.cfg.Logger.Error("webhook: skipping a dead letter", "tenant", tenant, "err", err)
		return Delivery{}, false
	}
	return d, true
}

// DeadLetters implements Queue.
func (q *RedisQueue) DeadLetters(ctx context.Context, tenant string, limit int) ([]Delivery, error) {
	blobs, err := q.c.ZRevRange(ctx, q.dead(tenant), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("webhook: dead letters: %w", err)
	}
	out := make([]Delivery, 0, len(blobs))
	for _, b := range blobs {
		if d, ok := q.openDead(tenant, b); ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// replayScript moves one dead letter back into its lane's stream unless
// another replay took it first. KEYS: dead, stream. ARGV: old blob, new blob.
var replayScript = redis.NewScript(`
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('XADD', KEYS[2], '*', 'd', ARGV[2])
return 1`)

// Replay implements Queue.
func (q *RedisQueue) Replay(ctx context.Context, tenant, id string, now time.Time) (int, error) {
	blobs, err := q.c.ZRange(ctx, q.dead(tenant), 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("webhook: replay: %w", err)
	}
	n := 0
	for _, b := range blobs {
		d, ok := q.openDead(tenant, b)
		if !ok || d.Event.ID != id {
			continue
		}
		d = fresh(d, now)
		stream, _ := q.classKeys(d.lane(), d.Event.Class)
		if err := q.ensureGroup(ctx, stream); err != nil {
			return n, err
		}
		blob, err := q.seal(d)
		if err != nil {
			return n, err
		}
		moved, err := replayScript.Run(ctx, q.c, []string{q.dead(tenant), stream}, b, blob).Int()
		if err != nil {
			return n, fmt.Errorf("webhook: replay: %w", err)
		}
		n += moved
	}
	if n == 0 {
		return 0, ErrNotFound
	}
	return n, nil
}

// sweepScript deletes a lane whose last activity is at least ARGV[1] ms
// old by Redis's clock: the newest of its streams' last entry ids (XADD
// sets them, XDEL leaves them) and its retries' latest due times. It
// returns how many deliveries the lane held, or -1 when it is not idle
// that long. KEYS: the lane's keys (laneKeys: streams odd, retries even),
// bucket.
var sweepScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last, n = 0, 0
for k = 1, 3, 2 do
  if redis.call('EXISTS', KEYS[k]) == 1 then
    local info = redis.call('XINFO', 'STREAM', KEYS[k])
    for i = 1, #info, 2 do
      if info[i] == 'last-generated-id' then
        local id = tonumber(string.match(info[i + 1], '^(%d+)'))
        if id > last then last = id end
      end
    end
    n = n + redis.call('XLEN', KEYS[k])
  end
  local due = redis.call('ZRANGE', KEYS[k + 1], -1, -1, 'WITHSCORES')
  if due[2] and tonumber(due[2]) > last then last = tonumber(due[2]) end
end
if now - last < tonumber(ARGV[1]) then return -1 end
n = n + redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[4])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return n`)

// globEscape escapes the characters a Redis glob pattern reads.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// sweepLanes deletes the lanes of endpoints keep does not name that have
// been idle for at least idle, and returns each one's count of deliveries
// dropped. It finds lanes by SCAN on every master, by their streams and
// their retries: a walk over the whole key space, which the webhook queue
// may share with the limiter's millions of keys, so one instance of the
// fleet walks it per every (the first to take the sweep key, SET NX PX),
// and the others skip.
func (q *RedisQueue) sweepLanes(ctx context.Context, keep func(Lane) bool, idle, every time.Duration) (map[Lane]int64, error) {
	took, err := q.c.SetNX(ctx, q.cfg.Prefix+"sweep", q.cfg.Consumer, every).Result()
	if err != nil {
		return nil, fmt.Errorf("webhook: taking the sweep: %w", err)
	}
	if !took {
		return nil, nil
	}
	lanes := map[Lane]bool{}
	var mu sync.Mutex
	find := func(ctx context.Context, c *redis.Client) error {
		for _, kind := range []string{":s:", ":r:", ":as:", ":ar:"} {
			iter := c.Scan(ctx, 0, globEscape(q.cfg.Prefix)+"{*}"+kind+"*", 1000).Iterator()
			for iter.Next(ctx) {
				rest := strings.TrimPrefix(iter.Val(), q.cfg.Prefix)
				tenant, endpoint, ok := strings.Cut(strings.TrimPrefix(rest, "{"), "}"+kind)
				if ok && strings.HasPrefix(rest, "{") {
					mu.Lock()
					lanes[Lane{Tenant: tenant, Endpoint: endpoint}] = true
					mu.Unlock()
				}
			}
			if err := iter.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	switch c := q.c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, find)
	case *redis.Client:
		err = find(ctx, c)
	default:
		return nil, nil // no way to list the lanes: nothing swept
	}
	if err != nil {
		return nil, fmt.Errorf("webhook: listing the lanes: %w", err)
	}
	dropped := map[Lane]int64{}
	for l := range lanes {
		if keep(l) {
			continue
		}
		n, err := sweepScript.Run(ctx, q.c, append(q.laneKeys(l), q.bucket(l)), idle.Milliseconds()).Int64()
		if err != nil {
			return dropped, fmt.Errorf("webhook: sweeping a lane: %w", err)
		}
		if n >= 0 {
			q.groups.Delete(q.stream(l))
			q.groups.Delete(q.alerts(l))
			dropped[l] = n
		}
	}
	return dropped, nil
}

// Depth implements Queue: the lanes' streams (waiting and leased) and retries.
func (q *RedisQueue) Depth(ctx context.Context, lanes []Lane) (int64, error) {
	cmds := make([]*redis.IntCmd, 0, 4*len(lanes))
	_, err := q.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, l := range lanes {
			k := q.laneKeys(l)
			cmds = append(cmds, p.XLen(ctx, k[0]), p.ZCard(ctx, k[1]), p.XLen(ctx, k[2]), p.ZCard(ctx, k[3]))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("webhook: depth: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}
