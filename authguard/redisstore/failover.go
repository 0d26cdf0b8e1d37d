package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

// On a Cluster a dead master must cost only its own keys, and only until
// its replica has taken over.
//
// A breaker per master. One breaker per Store opened on a dead master's
// failures and then failed every key, on the healthy masters too. So on a
// Cluster each master has a breaker of its own, found from the master that
// owns the key's slot in go-redis's slot map (ClusterClient.MasterForKey: a
// CRC16 and a search of the map go-redis already holds, no round trip), and
// a batch is failed at once only if a master it needs is open. A batch's
// failure counts against the masters whose ops failed; the others answered
// and count as successes (but see blame for the deadline go-redis stamps on
// every op). After a failover the slot's new master is another address, so
// its keys meet a closed breaker at once. Until a first batch has gone
// through, go-redis may hold no slot map, and finding the master would cost
// it a round trip to look for one, which an open breaker must not make: so
// until then the Store's one breaker stands for every master, as on one
// node (a Cluster unreachable since start-up fails at once as it did).
//
// A slot map reloaded on the errors of a dead or moved node. go-redis
// reloads its map on MOVED but otherwise only on its 60 s timer, so after a
// master died the Store sent the master's keys to the dead address for up to
// a minute after the Cluster had failed over. A batch that fails as a dead
// or moved node fails (refused or reset connections, EOF, timeouts,
// CLUSTERDOWN, MOVED, ASK, TRYAGAIN, READONLY, MASTERDOWN) asks go-redis to
// reload the map, at most once every reloadEvery; the reload runs in
// go-redis's own goroutine and never holds up a call. While the master is
// dead its breaker lets a trial through every cooldown, and each trial's
// failure asks again, so the map follows the failover within about
// reloadEvery and a cooldown of the Cluster's promoting the replica.

// reloadEvery is how often at most a Store asks for the slot map to be
// reloaded: one CLUSTER SLOTS on one node each time.
const reloadEvery = 250 * time.Millisecond

// maxNodeBreakers bounds the breakers a Store keeps, one per master address
// it has seen; past it they are all dropped at once (each failover makes a
// new master address, the old ones stay behind).
const maxNodeBreakers = 1024

// nodeBreakers are a Cluster's breakers, one per master address.
type nodeBreakers struct {
	after    int
	cooldown time.Duration
	clock    func() time.Time

	mu sync.Mutex
	m  map[string]*breaker
}

// of returns addr's breaker.
func (n *nodeBreakers) of(addr string) *breaker {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := n.m[addr]
	if b == nil {
		if n.m == nil || len(n.m) >= maxNodeBreakers {
			n.m = make(map[string]*breaker)
		}
		b = &breaker{after: n.after, cooldown: n.cooldown, clock: n.clock}
		n.m[addr] = b
	}
	return b
}

// open reports whether any master's breaker is open.
func (n *nodeBreakers) open() bool {
	n.mu.Lock()
	bs := make([]*breaker, 0, len(n.m))
	for _, b := range n.m {
		bs = append(bs, b)
	}
	n.mu.Unlock()
	return slices.ContainsFunc(bs, (*breaker).open)
}

// nodeBreaker returns the breaker of the master that owns key's slot in
// go-redis's slot map, or false when go-redis has no map and could not load
// one.
func (s *Store) nodeBreaker(ctx context.Context, key string) (*breaker, bool) {
	n, err := s.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil, false
	}
	return s.nodes.of(n.Options().Addr), true
}

// doCluster is Do on a Cluster: the breakers of the masters the batch
// needs, each recording what its own ops met.
func (s *Store) doCluster(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		nodes = make([]*breaker, 0, 3)
		of    = make([]int, len(ops)) // op i goes to nodes[of[i]]
	)
	mapped := true // until go-redis finds no map; then the Store's breaker
	for i, op := range ops {
		b := &s.breaker
		if mapped {
			var nb *breaker
			if nb, mapped = s.nodeBreaker(ctx, op.StoreKey()); mapped {
				b = nb
			}
		}
		j := slices.Index(nodes, b)
		if j < 0 {
			j = len(nodes)
			nodes = append(nodes, b)
		}
		of[i] = j
	}
	trials := make([]bool, len(nodes))
	for j, b := range nodes {
		ok, trial := b.admit()
		if !ok {
			for k := range j { // the trials taken are not made after all
				if trials[k] {
					nodes[k].release()
				}
			}
			return nil, fmt.Errorf("%w: %w", authguard.ErrStoreUnavailable, ErrCircuitOpen)
		}
		trials[j] = trial
	}

	res, err := s.do(ctx, ops)
	failed, unsure := blame(err, of, len(nodes))
	for j, b := range nodes {
		switch {
		case failed[j]:
			b.record(false)
		case !unsure[j]:
			b.record(true)
		case trials[j]:
			b.release() // the trial told nothing: the next batch tries
		}
	}
	if err != nil {
		if nodeLost(err) {
			s.reloadSlots()
		}
		return nil, unavailable(err)
	}
	s.hints.learnFailures(ops, res, s.clock())
	return res, nil
}

// blame says which of a batch's masters failed it, given err and which
// master each op went to (of). A pipeline's failure is its ops' own: a
// master whose ops were all answered did not fail, though the batch did.
// One exception: when the batch's deadline runs out while go-redis waits to
// retry one master's ops, it stamps the deadline on every op of the
// pipeline, answered ones too. So when some op failed with an error of its
// own, an op that holds nothing but the deadline does not count against its
// master either way (unsure); when every failure is the deadline, each
// counts.
func blame(err error, of []int, nodes int) (failed, unsure []bool) {
	failed, unsure = make([]bool, nodes), make([]bool, nodes)
	var oe *opErrors
	if !errors.As(err, &oe) {
		for j := range failed {
			failed[j] = !answered(err)
		}
		return failed, unsure
	}
	own := slices.ContainsFunc(oe.errs, func(e error) bool { return e != nil && !onlyDeadline(e) })
	for i, e := range oe.errs {
		switch {
		case answered(e):
		case own && onlyDeadline(e):
			unsure[of[i]] = true
		default:
			failed[of[i]] = true
		}
	}
	return failed, unsure
}

// onlyDeadline reports whether err is the batch's context deadline and
// nothing else (not a connection's own i/o timeout).
func onlyDeadline(err error) bool {
	var op *net.OpError
	return errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &op)
}

// reloadSlots asks go-redis to reload the Cluster's slot map, unless it was
// asked less than reloadEvery ago. ClusterClient.ReloadState only starts
// the reload (go-redis's LazyReload, in its own goroutine, which also folds
// requests made while one runs into one more), so it never blocks the call.
func (s *Store) reloadSlots() {
	now := s.breaker.clock()
	s.reloadMu.Lock()
	due := s.reloads.Load() == 0 || now.Sub(s.reloadedAt) >= reloadEvery || now.Before(s.reloadedAt)
	if due {
		s.reloadedAt = now
		s.reloads.Add(1)
	}
	s.reloadMu.Unlock()
	if due {
		s.cluster.ReloadState(context.Background())
	}
}

// nodeLost reports whether err (or, for a pipeline, any op's error) is one
// a dead, unreachable or moved node gives: the slot map may be out of date.
// A full Redis, a caller's cancellation and a wait for a pooled connection
// (this process's own queueing) are not.
func nodeLost(err error) bool {
	var oe *opErrors
	if errors.As(err, &oe) {
		return slices.ContainsFunc(oe.errs, nodeLost)
	}
	switch {
	case err == nil, errors.Is(err, authguard.ErrStoreFull), errors.Is(err, context.Canceled), errors.Is(err, redis.ErrPoolTimeout):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	for _, prefix := range []string{"CLUSTERDOWN", "MOVED", "ASK", "TRYAGAIN", "READONLY", "MASTERDOWN"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	var ne net.Error // i/o timeouts, and the batch's deadline (context.DeadlineExceeded is one)
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError // a dial that failed another way (no route, unreachable)
	return errors.As(err, &op)
}

// opErrors is a pipeline's failure: each op's error, nil for the ops that
// were answered. It reads as its first error, as a batch's error did before
// it had one per op.
type opErrors struct{ errs []error }

func (e *opErrors) first() error {
	for _, err := range e.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *opErrors) Error() string { return e.first().Error() }
func (e *opErrors) Unwrap() error { return e.first() }
