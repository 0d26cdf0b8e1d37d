package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

var _ authguard.Store = (*Store)(nil)

var (
	// timeLua goes in front of every script that reads the time (each of
	// the files below): Redis's clock, read in that one place.
	//go:embed time.lua
	timeLua string
	//go:embed backoff.lua
	backoffLua string
	//go:embed log.lua
	logLua string
	//go:embed rate.lua
	rateLua string

	backoffScript = redis.NewScript(timeLua + backoffLua)
	logScript     = redis.NewScript(timeLua + logLua)
	rateScript    = redis.NewScript(timeLua + rateLua)
	deleteScript  = redis.NewScript(`redis.call('DEL', KEYS[1]) return {0, 0, 0, 0}`)
	//go:embed check.lua
	checkLua string
	// checkPrelude is what the check script runs before check.lua: the
	// clock, and the three op scripts' bodies as functions of their own.
	checkPrelude = timeLua + opFunction("op_b", backoffLua) + opFunction("op_l", logLua) + opFunction("op_r", rateLua)
	// checkSource runs a whole check batch on one node: the op functions,
	// then check.lua's dispatch and gates. A shape (shape.go) is the same
	// with check.lua's ARGV rebuilt from literals first.
	checkSource = checkPrelude + checkLua
	checkScript = redis.NewScript(checkSource)

	// scripts are all the scripts, for Preload.
	scripts = []*redis.Script{backoffScript, logScript, rateScript, deleteScript, checkScript, entriesScript}
)

// opBody marks where an op script's body starts: above it the script reads
// its key and arguments as a script (KEYS[1], ARGV from 0) and puts Redis
// TIME (time.lua's redisNow) in its now argument when that is ""; below, the
// body names its arguments once, A[o + 1 ... o + nargs] in encode's order,
// from the key, A, o and nargs check.lua passes (check.lua has set now
// already).
const opBody = "\n--- op body"

// opFunction is an op script's body as a Lua function of (key, A, o,
// nargs), for check.lua.
func opFunction(name, script string) string {
	_, body, ok := strings.Cut(script, opBody)
	if !ok {
		panic("redisstore: " + name + "'s script has no op body marker")
	}
	return "local function " + name + "(key, A, o, nargs)\n--" + body + "\nend\n"
}

// Config configures a Store.
type Config struct {
	// Client reaches Redis: a *redis.Client, *redis.ClusterClient or a
	// failover client (NewClient builds one from a URL or seed addresses).
	// It is required; Close closes it.
	Client redis.UniversalClient
	// Timeout bounds one batch (one round trip), queueing included. The
	// default is 50ms.
	Timeout time.Duration
	// BreakAfter is how many batches in a row must fail before the circuit
	// breaker opens. On a Cluster each master has a breaker of its own,
	// which counts the batches that needed it (failover.go). The default
	// is 5.
	BreakAfter int
	// Cooldown is how long an open breaker fails batches at once before it
	// lets one through to try Redis again (one at a time: a Redis still
	// down costs one batch's timeout a cooldown). The default is 100ms.
	Cooldown time.Duration
	// Now, when set, gives the scripts an explicit time instead of Redis
	// TIME, and leaves expiry to the scripts' own logic (no PEXPIRE, since
	// Redis expires keys on its own clock). Only tests set it. The default
	// is nil.
	Now func() time.Time
	// Clock is the breaker's clock. The default is time.Now.
	Clock func() time.Time
	// SharedRoundTrips sends the check scripts of concurrent calls in
	// shared round trips once more than two are in flight (shared.go): on
	// one node (or Sentinel's master) on one connection, on a Cluster on
	// one connection per master, each call on its slot's master's. The
	// default is false; tollgate serve turns it on unless its config says
	// store.redis.shared_round_trips: false.
	SharedRoundTrips bool
	// SubjectTags, on a Cluster, keeps every key of a subject under one
	// hash tag, the subject's (authguard.SubjectTagger): a check's keys
	// are then in as many slots as subjects, and each slot's ops one call
	// (slots.go). It renames every key, so a Cluster holding today's names
	// moves them first (MigrateKeyLayout), or the accounts in backoff are
	// forgotten. New refuses it on one node or Sentinel, where a check is
	// one call already. The default is false: today's names.
	SubjectTags bool
}

// Store is an authguard.Store on Redis. It is safe for concurrent use.
type Store struct {
	client  redis.UniversalClient
	timeout time.Duration
	now     func() time.Time
	breaker breaker
	hints   hints // keys expected to block a check, on a Cluster (hints.go)
	// cluster is the client when it is a Cluster's, with a breaker per
	// master in nodes and the slot map reloaded on a lost node's errors
	// (failover.go); nil otherwise, and the Store has the one breaker.
	cluster    *redis.ClusterClient
	nodes      *nodeBreakers
	mapped     atomic.Bool // a batch went through: go-redis holds a slot map
	reloadMu   sync.Mutex
	reloadedAt time.Time    // when the slot map was last asked to reload
	reloads    atomic.Int64 // how many times it was asked
	// pipelineBatches sends every batch as a pipeline of op scripts, as
	// before batches on one node were one script (tests compare the two).
	pipelineBatches bool
	shared          *shared // nil unless Config.SharedRoundTrips
	shapes          shapes  // the checks' shaped scripts (shape.go)
	subjectTags     bool    // Config.SubjectTags
}

var _ authguard.SubjectTagger = (*Store)(nil)

// SubjectTags reports whether the engine is to write keys with subject hash
// tags (Config.SubjectTags).
func (s *Store) SubjectTags() bool { return s.subjectTags }

// New returns a Store on cfg.Client.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("redisstore: a client is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 50 * time.Millisecond
	}
	if cfg.BreakAfter <= 0 {
		cfg.BreakAfter = 5
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = 100 * time.Millisecond
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Store{
		client:  cfg.Client,
		timeout: cfg.Timeout,
		now:     cfg.Now,
		breaker: breaker{after: cfg.BreakAfter, cooldown: cfg.Cooldown, clock: cfg.Clock},
		shapes:  shapes{max: maxShapes},
	}
	if cfg.SharedRoundTrips {
		sh, err := newShared(cfg.Client)
		if err != nil {
			return nil, err
		}
		s.shared = sh
	}
	if _, ok := cfg.Client.(*redis.ClusterClient); !ok && cfg.SubjectTags {
		return nil, errors.New("redisstore: subject hash tags are for a Cluster client")
	}
	s.subjectTags = cfg.SubjectTags
	if c, ok := cfg.Client.(*redis.ClusterClient); ok {
		s.cluster = c
		s.nodes = &nodeBreakers{after: cfg.BreakAfter, cooldown: cfg.Cooldown, clock: cfg.Clock}
	}
	return s, nil
}

// ErrCircuitOpen is returned, wrapped with authguard.ErrStoreUnavailable,
// while the breaker is open.
var ErrCircuitOpen = authguard.ErrCircuitOpen

// Do runs ops as one pipeline of EVALSHAs: one round trip. On a Cluster it
// fails at once only when a master the batch needs has its breaker open.
func (s *Store) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if s.cluster != nil && s.mapped.Load() {
		return s.doCluster(ctx, ops)
	}
	if !s.breaker.allow() {
		return nil, fmt.Errorf("%w: %w", authguard.ErrStoreUnavailable, ErrCircuitOpen)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.do(ctx, ops)
	s.breaker.record(answered(err))
	if err != nil {
		if s.cluster != nil && nodeLost(err) {
			s.reloadSlots()
		}
		return nil, unavailable(err)
	}
	if s.cluster != nil {
		s.mapped.Store(true) // from now on, a breaker per master (failover.go)
	}
	if _, single := s.client.(*redis.Client); !single {
		s.hints.learnFailures(ops, res, s.clock())
	}
	return res, nil
}

func (s *Store) do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	if _, single := s.client.(*redis.Client); single && len(ops) > 1 && !s.pipelineBatches && scripted(ops) {
		// One node: the batch is one call of the check script with no
		// gates (nothing blocks, nothing is undone), one EVALSHA and one
		// Redis TIME instead of one of each per op.
		res, _, err := s.doCheck(ctx, ops, make([]authguard.Gate, len(ops)), false)
		return res, err
	}
	now, expire := "", "1"
	if s.now != nil {
		now, expire = strconv.FormatInt(s.now().UnixMilli(), 10), "0"
	}
	if s.subjectTags && len(ops) > 1 && !s.pipelineBatches {
		// A Cluster with subject hash tags: a call per slot (slots.go).
		// With today's names a batch's keys share a slot only by chance,
		// and a group made of chance would be a shape of its own.
		return s.doSlots(ctx, ops, now, expire)
	}
	calls := make([]call, len(ops))
	for i, op := range ops {
		c, err := encode(op, now, expire)
		if err != nil {
			return nil, err
		}
		calls[i] = c
	}

	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = evalCmd(ctx, "evalsha", c.script.Hash(), []string{c.key}, c.args)
	}
	s.exec(ctx, cmds) // errors are read per command below

	// Scripts missing on a node (restart, SCRIPT FLUSH, failover): send
	// those commands again with EVAL, which loads the script as it runs.
	s.resend(ctx, cmds, noScript, func(pipe redis.Pipeliner, i int) *redis.Cmd {
		return calls[i].script.Eval(ctx, pipe, []string{calls[i].key}, calls[i].args...)
	})

	// Each op's error is kept (opErrors), so that on a Cluster only the
	// masters whose ops failed count the failure (failover.go).
	res := make([]authguard.Result, len(ops))
	var errs []error
	for i, cmd := range cmds {
		r, err := decode(cmd)
		switch {
		case redis.HasErrorPrefix(err, "OOM"):
			// maxmemory reached with noeviction: Redis answers, reads work,
			// writes are refused. Its own kind, so it is not mistaken for
			// an outage.
			err = fmt.Errorf("op %d on %s: %w: %w", i, calls[i].key, authguard.ErrStoreFull, err)
		case err != nil:
			err = fmt.Errorf("op %d on %s: %w", i, calls[i].key, err)
		}
		if err != nil {
			if errs == nil {
				errs = make([]error, len(cmds))
			}
			errs[i] = err
			continue
		}
		res[i] = r
	}
	if errs != nil {
		return nil, &opErrors{errs}
	}
	return res, nil
}

type call struct {
	script *redis.Script
	key    string
	args   []any
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// The op scripts' arguments (ARGV), in order: encode writes each at its
// index here, each script names them in this order on the first line of its
// body, and the script's header and check.lua take the now and action
// arguments at these indexes (TestScripts_ArgumentsInEncodesOrder holds the
// scripts to them).
const (
	bAction = iota // backoff.lua
	bFree
	bBase
	bFactor
	bMax
	bForget
	bFingerprint
	bWindow
	bNow
	bExpire
	bAttempt
	bArgs
)

const (
	lAction = iota // log.lua, then a window_ms, limit pair per window
	lMember
	lBypass
	lNow
	lExpire
	lArgs
)

const (
	rAlgorithm = iota // rate.lua
	rAction
	rWindow
	rInterval
	rLimit
	rCost
	rNow
	rExpire
	rMinPercent
	rArgs
)

func encode(op authguard.Op, now, expire string) (call, error) {
	switch op := op.(type) {
	case *authguard.BackoffOp:
		p := op.Policy
		return call{backoffScript, op.Key, []any{
			bAction: op.Action.String(), bFree: strconv.Itoa(p.Free), bBase: ms(p.Base),
			bFactor: strconv.FormatFloat(p.Factor, 'g', -1, 64), bMax: ms(p.Max), bForget: ms(p.ForgetAfter),
			bFingerprint: op.Fingerprint, bWindow: ms(op.SeenWindow), bNow: now, bExpire: expire, bAttempt: op.Attempt,
		}}, nil
	case *authguard.LogOp:
		args := make([]any, lArgs, lArgs+2*len(op.Windows))
		args[lAction], args[lMember], args[lBypass] = op.Action.String(), op.Member, flag(op.Bypass)
		args[lNow], args[lExpire] = now, expire
		for _, w := range op.Windows {
			args = append(args, ms(w.Length), strconv.Itoa(w.Limit))
		}
		return call{logScript, op.Key, args}, nil
	case *authguard.RateOp:
		r := op.Rate
		return call{rateScript, op.Key, []any{
			rAlgorithm: r.Algorithm.String(), rAction: op.Action.String(), rWindow: ms(r.Window), rInterval: ms(r.Interval),
			rLimit: strconv.Itoa(r.Limit), rCost: strconv.Itoa(op.Cost), rNow: now, rExpire: expire, rMinPercent: strconv.Itoa(r.MinPercent),
		}}, nil
	case *authguard.DeleteOp:
		return call{deleteScript, op.Key, nil}, nil
	}
	return call{}, fmt.Errorf("unknown operation %T", op)
}

func decode(cmd *redis.Cmd) (authguard.Result, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return authguard.Result{}, err
	}
	return decodeValues(v)
}

func decodeValues(v []int64) (authguard.Result, error) {
	if len(v) != 4 && len(v) != 6 {
		return authguard.Result{}, fmt.Errorf("script returned %d values, want 4 or 6", len(v))
	}
	r := authguard.Result{
		Charged: v[0] == 1,
		Wait:    time.Duration(v[1]) * time.Millisecond,
		Over:    v[2] == 1,
		Count:   int(v[3]),
	}
	if len(v) == 6 { // rate.lua
		r.Remaining, r.Reset = int(v[4]), time.Duration(v[5])*time.Millisecond
	}
	return r, nil
}

// Preload loads the scripts on every node, so that the first calls after
// start-up do not pay a second round trip for NOSCRIPT. Calls work without
// it; the server calls it once at start-up.
func (s *Store) Preload(ctx context.Context) error {
	load := func(ctx context.Context, c *redis.Client) error {
		for _, sc := range scripts {
			if err := sc.Load(ctx, c).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, load)
	case *redis.Client:
		err = load(ctx, c)
	default:
		for _, sc := range scripts {
			if err = sc.Load(ctx, s.client).Err(); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("redisstore: loading scripts: %w", err)
	}
	return nil
}

// DeleteMatching deletes every key matching pattern (a Redis glob, as
// authguard.Engine.AccountKeys returns) on every node, with SCAN MATCH and
// UNLINK, and returns how many it deleted: an administrator's reset. It is
// not atomic: a key written while it scans may stay.
func (s *Store) DeleteMatching(ctx context.Context, pattern string) (int, error) {
	var n atomic.Int64
	sweep := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				// One UNLINK per key: a Cluster node refuses keys of
				// several slots in one command.
				pipe := c.Pipeline()
				for _, k := range keys {
					pipe.Unlink(ctx, k)
				}
				cmds, err := pipe.Exec(ctx)
				if err != nil {
					return err
				}
				for _, cmd := range cmds {
					n.Add(cmd.(*redis.IntCmd).Val())
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, sweep)
	case *redis.Client:
		err = sweep(ctx, c)
	default:
		err = errors.New("redisstore: this client cannot scan")
	}
	if err != nil {
		return int(n.Load()), unavailable(err)
	}
	return int(n.Load()), nil
}

// Ping reports whether Redis answers (every node, on a Cluster).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	var err error
	if c, ok := s.client.(*redis.ClusterClient); ok {
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })
	} else {
		err = s.client.Ping(ctx).Err()
	}
	if err != nil {
		return fmt.Errorf("redisstore: %w: %w", authguard.ErrStoreUnavailable, err)
	}
	return nil
}

// Close closes the shared round trips' pipeliner, then the client.
func (s *Store) Close() error {
	return errors.Join(s.shared.close(), s.client.Close())
}

// breaker opens after `after` failed batches in a row and then fails batches
// at once for `cooldown`. After that it lets one batch through to try Redis
// (half-open) and keeps failing the others at once until that one ends: its
// success closes the breaker, its failure opens it for another cooldown. So
// a Redis that is still down costs one batch's timeout a cooldown, not
// every waiting batch's.
type breaker struct {
	after    int
	cooldown time.Duration
	clock    func() time.Time

	mu        sync.Mutex
	failures  int
	openUntil time.Time
	trying    bool // the half-open trial batch is in flight
}

func (b *breaker) allow() bool {
	ok, _ := b.admit()
	return ok
}

// admit is allow, and reports whether the batch let through is the
// half-open trial.
func (b *breaker) admit() (ok, trial bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.failures < b.after:
		return true, false
	case b.trying || b.clock().Before(b.openUntil):
		return false, false
	}
	b.trying = true
	return true, true
}

// release gives back a trial that admit granted to a batch that was then
// not sent (another breaker it needed was open).
func (b *breaker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trying = false
}

func (b *breaker) record(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trying = false
	if ok {
		b.failures = 0
		return
	}
	b.failures++
	if b.failures >= b.after {
		b.openUntil = b.clock().Add(b.cooldown)
	}
}

// open reports whether b fails batches at once.
func (b *breaker) open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures >= b.after && (b.trying || b.clock().Before(b.openUntil))
}

// Open reports whether the breaker is failing batches at once: on a
// Cluster, whether any master's is.
func (s *Store) Open() bool {
	return s.breaker.open() || (s.nodes != nil && s.nodes.open())
}

// answered reports whether a batch's Redis answered: it did unless err is
// something other than a refusal to write past maxmemory. A full Redis
// answers, and its reads are what keep a counter in backoff delayed while
// it is full (authguard's full path peeks it), so refusals must not open
// the breaker: a flood of writes refused while full would otherwise shut
// those reads off and leave only the empty fallback.
func answered(err error) bool { return err == nil || errors.Is(err, authguard.ErrStoreFull) }

// PoolSize is the client's connection pool size per node (go-redis fills in
// its default of 10 per CPU): how many batches can be in flight at once
// without waiting for a connection, the engine's authguard.Config.MaxInFlight.
func (s *Store) PoolSize() int {
	switch c := s.client.(type) {
	case *redis.Client:
		return c.Options().PoolSize
	case *redis.ClusterClient:
		return c.Options().PoolSize
	}
	return 10 * runtime.GOMAXPROCS(0)
}

// pipelined hides a Store's DoCheck, for authguard.Reserve's two-step path.
type pipelined struct{ authguard.Store }

// blockLetters are the gates' blocks as check.lua reads them.
var blockLetters = map[authguard.Block]string{
	authguard.BlockNone: "0", authguard.BlockDelay: "d", authguard.BlockQueue: "q",
	authguard.BlockCaptcha: "c", authguard.BlockAllowance: "a", authguard.BlockShared: "s",
	authguard.BlockDeny: "x", authguard.BlockVerified: "v", authguard.BlockAllowanceSolved: "A", authguard.BlockOwner: "o",
}

// scriptKinds name the op scripts as check.lua calls them.
var scriptKinds = map[*redis.Script]string{backoffScript: "b", logScript: "l", rateScript: "r"}

// scripted reports whether every op is one check.lua runs (not a delete).
func scripted(ops []authguard.Op) bool {
	for _, op := range ops {
		switch op.(type) {
		case *authguard.BackoffOp, *authguard.LogOp, *authguard.RateOp:
		default:
			return false
		}
	}
	return true
}

// DoCheck implements authguard.Reserver. On one node (a single server, or
// Sentinel's master) the whole batch and its undo run in one script: one
// round trip whatever the verdict, and nobody sees a reservation that is
// about to be undone. Once a delay, queue or CAPTCHA gate has decided the
// check, the script peeks instead of reserving, so refused checks write only
// what counts every check (check.lua). On a Cluster, where a check's keys
// live on different nodes, it is authguard.Reserve's pipeline and, for a
// refused check, a second one, unless an op is expected to block: then one
// pipeline that peeks the rest (hints.go).
func (s *Store) DoCheck(ctx context.Context, ops []authguard.Op, gates []authguard.Gate, solved bool) ([]authguard.Result, bool, error) {
	if _, single := s.client.(*redis.Client); !single {
		return s.doClusterCheck(ctx, ops, gates, solved)
	}
	if !s.breaker.allow() {
		return nil, false, fmt.Errorf("%w: %w", authguard.ErrStoreUnavailable, ErrCircuitOpen)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, undone, err := s.doCheck(ctx, ops, gates, solved)
	s.breaker.record(answered(err))
	if err != nil {
		return nil, false, unavailable(err)
	}
	return res, undone, nil
}

func (s *Store) doCheck(ctx context.Context, ops []authguard.Op, gates []authguard.Gate, solved bool) ([]authguard.Result, bool, error) {
	if deferrable(ops, gates) {
		res, undone, err := s.runCheck(ctx, ops, gates, solved, true)
		if !errors.Is(err, errSpares) {
			return res, undone, err
		}
	}
	return s.runCheck(ctx, ops, gates, solved, false)
}

// errSpares is check.lua's answer when it needs the spare allowances it was
// sent without: it undid what it charged, and the batch goes again with them.
var errSpares = errors.New("the check needs its spare allowances")

// deferrable reports whether a check can be sent without its spare
// allowances first (check.lua): it has some, and every op before its last
// shared gate is undone when blocked or writes nothing, so the script can
// give back all it did before it finds it needs them.
func deferrable(ops []authguard.Op, gates []authguard.Gate) bool {
	last, spares := -1, false
	for i, g := range gates {
		switch {
		case g.Block == authguard.BlockShared:
			last = i
		case g.Spare():
			spares = true
		}
	}
	if !spares {
		return false
	}
	for i := range last {
		if !gates[i].Undo && !isPeek(ops[i]) {
			return false
		}
	}
	return true
}

func isPeek(op authguard.Op) bool {
	switch op := op.(type) {
	case *authguard.LogOp:
		return op.Action == authguard.LogPeek
	case *authguard.BackoffOp:
		return op.Action == authguard.BackoffPeek
	case *authguard.RateOp:
		return op.Action == authguard.RatePeek
	}
	return false
}

// runCheck sends ops to check.lua, without their spare allowances when
// deferSpares (their results then zero: within their limits, as check.lua
// answers for spares it does not run).
func (s *Store) runCheck(ctx context.Context, ops []authguard.Op, gates []authguard.Gate, solved, deferSpares bool) ([]authguard.Result, bool, error) {
	now, expire := "", "1"
	if s.now != nil {
		now, expire = strconv.FormatInt(s.now().UnixMilli(), 10), "0"
	}
	c, err := s.checkCall(ops, gates, solved, deferSpares, now, expire)
	if err != nil {
		return nil, false, err
	}
	cmd, err := s.evalCheck(ctx, c.script, c.made, c.keys, c.args)
	if err != nil {
		return nil, false, fmt.Errorf("batch script: %w", err)
	}
	return checkResults(cmd, ops, gates, deferSpares)
}

// checkCall is one call of a check script: the script (a shape, or the
// generic one), whether this call made it (send it with EVAL), its keys
// and its arguments.
type checkCall struct {
	script *sourced
	made   bool
	keys   []string
	args   []any
}

// checkCall returns the call of check.lua that runs ops under gates, at
// now and expire (as encode takes them), without their spare allowances
// when deferSpares.
func (s *Store) checkCall(ops []authguard.Op, gates []authguard.Gate, solved, deferSpares bool, now, expire string) (checkCall, error) {
	// skipped says which ops were left out (the spares when deferSpares).
	skipped := func(i int) bool { return deferSpares && gates[i].Spare() }
	keys := make([]string, 0, len(ops))
	var kb [512]byte
	shape := kb[:0]
	args := make([]any, 0, 4+2*len(ops))
	args = append(args, flag(solved), flag(deferSpares), now, expire)
	for i, op := range ops {
		if i >= len(gates) {
			return checkCall{}, fmt.Errorf("op %d (%T) has no gate", i, op)
		}
		if skipped(i) {
			continue
		}
		gate, undo := header(op, gates[i])
		var ok bool
		if shape, args, ok = appendShape(shape, args, op, gate, undo); !ok {
			return checkCall{}, fmt.Errorf("op %d (%T) cannot be part of a check", i, op)
		}
		keys = append(keys, op.StoreKey())
	}
	script, made := s.shapes.lookup(shape), false
	if script == nil {
		// A shape not seen yet, or one past maxShapes: every argument
		// formatted, for the shape's script or the generic one.
		sops := make([]shapeOp, 0, len(keys))
		for i, op := range ops {
			if skipped(i) {
				continue
			}
			c, err := encode(op, now, expire)
			if err != nil {
				return checkCall{}, fmt.Errorf("op %d (%T) cannot be part of a check", i, op)
			}
			gate, undo := header(op, gates[i])
			sops = append(sops, shapeOp{kind: scriptKinds[c.script], gate: gate, undo: undo, args: c.args})
		}
		if script, made = s.shapes.add(shape, sops); script == nil {
			script, args = checkSourced, genericArgs(solved, deferSpares, sops)
		}
	}
	return checkCall{script: script, made: made, keys: keys, args: args}, nil
}

// checkResults reads a check script's answer to ops under gates: each op's
// result (a spare left out when deferSpares: zero, within its limit) and
// whether the script undid the check.
func checkResults(cmd *redis.Cmd, ops []authguard.Op, gates []authguard.Gate, deferSpares bool) ([]authguard.Result, bool, error) {
	skipped := func(i int) bool { return deferSpares && gates[i].Spare() }
	out, err := cmd.Slice()
	if redis.HasErrorPrefix(err, "OOM") {
		return nil, false, fmt.Errorf("batch script: %w: %w", authguard.ErrStoreFull, err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("batch script: %w", err)
	}
	if len(out) == 1 && out[0] == "spares" && deferSpares {
		return nil, false, errSpares
	}
	sent := 0
	for i := range ops {
		if !skipped(i) {
			sent++
		}
	}
	if len(out) != sent+1 {
		return nil, false, fmt.Errorf("batch script returned %d values for %d operations", len(out), sent)
	}
	res := make([]authguard.Result, len(ops))
	j := 0
	for i := range ops {
		if skipped(i) {
			continue
		}
		vs, ok := out[j].([]any)
		if !ok {
			return nil, false, fmt.Errorf("batch script: op %d returned %T", i, out[j])
		}
		j++
		ints := make([]int64, len(vs))
		for k, v := range vs {
			if ints[k], ok = v.(int64); !ok {
				return nil, false, fmt.Errorf("batch script: op %d value %d is %T", i, k, v)
			}
		}
		if res[i], err = decodeValues(ints); err != nil {
			return nil, false, fmt.Errorf("batch script: op %d: %w", i, err)
		}
	}
	undone, _ := out[sent].(int64)
	return res, undone == 1, nil
}

// header is an op's gate as check.lua reads it, and its undo action ("" for
// none).
func header(op authguard.Op, g authguard.Gate) (gate, undo string) {
	if g.Undo {
		undo = authguard.UndoAction(op)
	}
	return blockLetters[g.Block], undo
}

// genericArgs is the generic check script's ARGV for ops: solved,
// deferred, then per op its kind, gate, undo, number of arguments and every
// argument (check.lua).
func genericArgs(solved, deferred bool, ops []shapeOp) []any {
	args := make([]any, 0, 2+len(ops)*24)
	args = append(args, flag(solved), flag(deferred))
	for _, op := range ops {
		args = append(args, op.kind, op.gate, op.undo, len(op.args))
		args = append(args, op.args...)
	}
	return args
}

// unavailable wraps a failed call's error as authguard.ErrStoreUnavailable.
// Waiting too long for one of the pool's connections is a timeout, as a
// deadline is: time this process spent queueing, which the engine answers
// as overload while it is queueing calls, not by the fail mode.
func unavailable(err error) error {
	if errors.Is(err, redis.ErrPoolTimeout) {
		return fmt.Errorf("redisstore: %w: %w: %w", authguard.ErrStoreUnavailable, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("redisstore: %w: %w", authguard.ErrStoreUnavailable, err)
}
