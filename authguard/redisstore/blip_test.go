package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// blipPolicy holds an account in one long delay after 3 failures, so that
// in a test of a few seconds of real time no proceed is due: every proceed
// during a fault is one the fault gave away.
const blipPolicy = `
flows:
  login:
    rules:
      - name: account_backoff
        free: 3
        base: 1m
        factor: 1
        max: 1m
        forget_after: 1h
`

// blipDeployment is two tollgate instances (engines, each with a Redis
// store and a fallback of its own) on one Redis deployment, in real time.
type blipDeployment struct {
	e     [2]*authguard.Engine
	fromR atomic.Int64 // answers from Redis
}

func newBlipDeployment(t *testing.T, client func() redis.UniversalClient, recallBytes int64) *blipDeployment {
	t.Helper()
	p, err := policyfile.LoadPolicy([]byte(blipPolicy))
	if err != nil {
		t.Fatal(err)
	}
	d := &blipDeployment{}
	for i := range d.e {
		s, err := redisstore.New(redisstore.Config{Client: client()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e, err := authguard.New(authguard.Config{
			Policy: p, Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
			MaxInFlight: s.PoolSize(), RecallBytes: recallBytes,
			Observe: func(ev authguard.Event) {
				if ev.Source == authguard.SourceStore {
					d.fromR.Add(1)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		d.e[i] = e
	}
	return d
}

// guess is one check on the victim's account through instance i from a
// fresh address, reported as a failure to the other instance when it
// proceeds.
func (d *blipDeployment) guess(t *testing.T, i int) authguard.Verdict {
	ctx := context.Background()
	ip := fmt.Sprintf("198.18.%d.%d", i/250%250, i%250+1)
	v, err := d.e[i%2].Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: ip})
	if err != nil {
		t.Error(err)
		return v
	}
	if v.Action == authguard.Proceed {
		d.e[(i+1)%2].Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
	}
	return v
}

// attack puts the victim in backoff (3 failures), then guesses every 5 ms
// while fault runs, and for a second after; it returns the proceeds after
// the account was in backoff.
func (d *blipDeployment) attack(t *testing.T, fault func()) int {
	t.Helper()
	for i := range 3 {
		if v := d.guess(t, i); v.Action != authguard.Proceed {
			t.Fatalf("free guess %d: %v", i, v.Action)
		}
	}
	if v := d.guess(t, 3); v.Action != authguard.Delay {
		t.Fatalf("after 3 failures: %v, want delay", v.Action)
	}
	d.guess(t, 4) // the other instance sees the delay too
	done := make(chan struct{})
	go func() { defer close(done); fault() }()
	proceeds, n := 0, 5
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var end time.Time
	for ; end.IsZero() || time.Now().Before(end); n++ {
		select {
		case <-done:
			if end.IsZero() {
				end = time.Now().Add(time.Second)
			}
		default:
		}
		<-tick.C
		if d.guess(t, n).Action == authguard.Proceed {
			proceeds++
		}
		if n > 5+20_000 {
			t.Fatal("the fault did not end")
		}
	}
	return proceeds
}

// replicated waits until m's replica has applied every write m had made
// (its slave_repl_offset reached m's master_repl_offset), at most 5 s.
func replicated(m *redis.Client) error {
	ctx := context.Background()
	info, err := m.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	var host, port string
	for _, kv := range strings.Split(infoField(info, "slave0"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ip":
			host = v
		case "port":
			port = v
		}
	}
	if host == "" || port == "" {
		return fmt.Errorf("the master %s names no replica", m.Options().Addr)
	}
	r := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(host, port)})
	defer r.Close()
	want, _ := strconv.ParseInt(infoField(info, "master_repl_offset"), 10, 64)
	if testkit.Eventually(5*time.Second, func() bool {
		info, err = r.Info(ctx, "replication").Result()
		got, _ := strconv.ParseInt(infoField(info, "slave_repl_offset"), 10, 64)
		return err != nil || got >= want
	}) {
		return err
	}
	return fmt.Errorf("the replica of %s did not reach offset %d in 5 s", m.Options().Addr, want)
}

// infoField is the value of name in an INFO answer.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// untilBack waits, at most 30 s from now (a master's kill), until back says
// the instances answer from Redis again, and returns how long that took.
func (d *blipDeployment) untilBack(t *testing.T, back func() bool) time.Duration {
	killed := time.Now()
	if !testkit.Eventually(30*time.Second, back) {
		t.Error("Redis did not answer again within 30 s of the master's kill")
	}
	return time.Since(killed)
}

// answered waits, at most 10 s, until Redis has answered n more of the
// instances' calls: between two faults, Redis is back for a while (the
// attack guesses every 5 ms, so 100 answers are about half a second when
// the machine keeps up).
func (d *blipDeployment) answered(t *testing.T, n int64) {
	before := d.fromR.Load()
	if !testkit.Eventually(10*time.Second, func() bool { return d.fromR.Load() >= before+n }) {
		t.Errorf("Redis answered %d calls in the 10 s after a fault, want %d", d.fromR.Load()-before, n)
	}
}

// debugSleep stalls a Redis server for d (DEBUG SLEEP; redistest enables
// the command for local connections).
func debugSleep(t *testing.T, addr string, d time.Duration) {
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: d + 5*time.Second})
	defer c.Close()
	if err := c.Do(context.Background(), "DEBUG", "SLEEP", fmt.Sprintf("%.3f", d.Seconds())).Err(); err != nil {
		t.Errorf("DEBUG SLEEP: %v", err)
	}
}

// clientPause pauses a Redis server's writes for d (CLIENT PAUSE ... WRITE,
// which Redis's own FAILOVER command also causes), and returns when the
// pause has ended: a write command (a DEL of no key) waits until then.
func clientPause(t *testing.T, addr string, d time.Duration) {
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: d + 5*time.Second})
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		t.Errorf("CLIENT PAUSE: %v", err)
	}
	if err := c.Del(context.Background(), "blip:pause-ended").Err(); err != nil {
		t.Errorf("a write after CLIENT PAUSE: %v", err)
	}
}

// Against a real redis-server: stalls and write pauses mid-attack. Before
// the recall each one sent every instance to a fallback that started
// empty, which gave the account in backoff its free guesses again on each
// instance (the issue measured +18 over ten 0.3 s stalls, +16 over five 1 s
// pauses). Now the fallback starts from what Redis last answered: no
// proceed. The same faults without the recall are run alongside, so the
// test shows it still measures the blip.
func TestBlip_RealRedisStallsAndWritePausesForgetNoDelay(t *testing.T) {
	faults := []struct {
		name  string
		fault func(t *testing.T, addr string, d *blipDeployment)
	}{
		{"DEBUG SLEEP 0.3 three times", func(t *testing.T, addr string, d *blipDeployment) {
			for range 3 {
				debugSleep(t, addr, 300*time.Millisecond)
				d.answered(t, 100)
			}
		}},
		{"CLIENT PAUSE 1000 WRITE twice", func(t *testing.T, addr string, d *blipDeployment) {
			for range 2 {
				clientPause(t, addr, time.Second)
				d.answered(t, 100)
			}
		}},
	}
	for _, tt := range faults {
		t.Run(tt.name, func(t *testing.T) {
			for _, recall := range []int64{0, -1} {
				in := redistest.Server(t)
				client := func() redis.UniversalClient {
					c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + in.Addr})
					if err != nil {
						t.Fatal(err)
					}
					return c
				}
				d := newBlipDeployment(t, client, recall)
				got := d.attack(t, func() { tt.fault(t, in.Addr, d) })
				t.Logf("%s: %d proceeds for the account in backoff through the faults", map[int64]string{0: "with the recall", -1: "without it"}[recall], got)
				switch {
				case recall == 0 && got != 0:
					t.Errorf("the faults gave the account in backoff %d proceeds, want 0", got)
				case recall < 0 && got == 0:
					t.Errorf("without the recall the faults gave no proceed: the test no longer measures a blip")
				}
			}
		})
	}
}

// Against a Sentinel group (master, replica, three sentinels with a quorum
// of two): the master is killed mid-attack, once the replica holds what it
// wrote (as in the Cluster's kill below); writes move to the promoted
// replica a few seconds later. Before the recall the issue measured +12 proceeds for the account
// in backoff; now none, and both instances answer from Redis again.
func TestBlip_SentinelMasterKilledForgetsNoDelay(t *testing.T) {
	master := redistest.Server(t)
	host, port, _ := strings.Cut(master.Addr, ":")
	replica := redistest.Server(t, "--replicaof", host, port)
	waitReplicating(t, replica.Addr)
	sentinels := redistest.Sentinels(t, master, 3, 2)
	addrs := []string{sentinels[0].Addr, sentinels[1].Addr, sentinels[2].Addr}
	client := func() redis.UniversalClient {
		c, err := redisstore.NewClient(redisstore.ClientConfig{SentinelAddrs: addrs, SentinelMaster: "tollgate"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	d := newBlipDeployment(t, client, 0)
	var back time.Duration
	got := d.attack(t, func() {
		m := redis.NewClient(&redis.Options{Addr: master.Addr})
		err := replicated(m)
		m.Close()
		if err != nil {
			t.Error(err)
			return
		}
		before := d.fromR.Load()
		master.Stop()
		back = d.untilBack(t, func() bool { return isMaster(replica.Addr) && d.fromR.Load() > before+50 })
	})
	t.Logf("%d proceeds for the account in backoff through the failover; answers from Redis again %v after the kill", got, back)
	if got != 0 {
		t.Errorf("the failover gave the account in backoff %d proceeds, want 0", got)
	}
}

func waitReplicating(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	testkit.WaitFor(t, 10*time.Second, "the replica in sync", func() bool {
		return strings.Contains(c.Info(context.Background(), "replication").Val(), "master_link_status:up")
	})
}

func isMaster(addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	return strings.Contains(c.Info(context.Background(), "replication").Val(), "role:master")
}

// What a fallback counted while Redis stalled is written back once Redis
// answers: two guesses on a fresh account during a 1 s DEBUG SLEEP, each
// reported as a failure, are two failures in Redis afterwards, however the
// write-back and the reports interleave.
func TestBlip_ChargesCountedOnTheFallbackReachRedis(t *testing.T) {
	in := redistest.Server(t)
	client := func() redis.UniversalClient {
		c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://" + in.Addr})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	d := newBlipDeployment(t, client, 0)
	var wg sync.WaitGroup
	wg.Go(func() { debugSleep(t, in.Addr, time.Second) })
	testkit.WaitFor(t, 5*time.Second, "Redis in DEBUG SLEEP", in.Sleeping)
	for i := range 2 {
		if v := d.guess(t, i); v.Action != authguard.Proceed {
			t.Fatalf("guess %d during the stall: %v, want proceed from the fallback", i, v.Action)
		}
	}
	wg.Wait()
	for i := range 4 { // the next calls find Redis answering and write back
		d.e[i%2].Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: fmt.Sprint("other", i), IP: "192.0.2.1"})
	}
	for i, e := range d.e {
		if wb := e.WriteBack(); wb.Queued != 0 || wb.Written == 0 {
			t.Errorf("instance %d: %+v, want its fallback's ops written", i, wb)
		}
	}
	x, err := d.e[0].Explain(context.Background(), authguard.ExplainRequest{Flow: "login", Account: "victim@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if c := x.Rules[0].Count; c != 2 {
		t.Errorf("Redis holds %d failures for the account, want the 2 counted during the stall", c)
	}
}

// The flood, on a real Redis: 20,000 checks, 800 at a time, on one
// account already in backoff, with the pool of 2 connections the issue's
// machine effectively had per core. Before, 9,863 were shed with 503, which
// a FailOpen caller let through unchecked, and 6 proceeded. Now none is an
// error and none proceeds, and the owner's known device, checking during
// the flood, proceeds.
func TestFlood_EightHundredConcurrentChecksOnAnAccountInBackoff(t *testing.T) {
	in := redistest.Server(t)
	s := storeOn(t, redisstore.ClientConfig{URL: "redis://" + in.Addr, PoolSize: 8})
	p, err := policyfile.LoadPolicy([]byte(blipPolicy))
	if err != nil {
		t.Fatal(err)
	}
	var recalled, fromRedis atomic.Int64
	e, err := authguard.New(authguard.Config{
		Policy: p, Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret, MaxInFlight: s.PoolSize(),
		Observe: func(ev authguard.Event) {
			switch ev.Source {
			case authguard.SourceRecall:
				recalled.Add(1)
			case authguard.SourceStore:
				fromRedis.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: "203.0.113.7"})
	owner, _ := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "203.0.113.7", Outcome: authguard.Success, Attempt: v.Attempt})
	for i := range 3 {
		ip := fmt.Sprint("198.18.0.", i+1)
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: ip})
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: ip, Outcome: authguard.Failure, Attempt: v.Attempt})
	}
	const n, concurrent = 20_000, 800
	var proceeds, errs, delays, answered atomic.Int64
	var ownerOK atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	for range concurrent {
		wg.Go(func() {
			for i := range work {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: fmt.Sprintf("198.19.%d.%d", i/250%250, i%250+1)})
				answered.Add(1)
				switch {
				case err != nil:
					errs.Add(1)
				case v.Action == authguard.Proceed:
					proceeds.Add(1)
				case v.Action == authguard.Delay:
					delays.Add(1)
				}
			}
		})
	}
	wg.Go(func() { // the owner, on her known device, during the flood
		for k := range 20 {
			v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "victim@example.com", IP: "203.0.113.7", DeviceToken: owner.DeviceToken})
			if err == nil && v.Action == authguard.Proceed {
				ownerOK.Add(1)
				e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "victim@example.com", IP: "203.0.113.7", Outcome: authguard.Success, Attempt: v.Attempt, DeviceToken: owner.DeviceToken})
			}
			// Her next check once the flood is a twentieth further on:
			// her checks are spread over the whole flood.
			testkit.Eventually(10*time.Second, func() bool { return answered.Load() >= int64(k+1)*n/20 })
		}
	})
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("%d checks, %d at a time: %d proceeded, %d delayed (%d answered from the recall, %d by Redis), %d errors; the owner's device proceeded %d of 20 times",
		n, concurrent, proceeds.Load(), delays.Load(), recalled.Load(), fromRedis.Load(), errs.Load(), ownerOK.Load())
	if proceeds.Load() != 0 || errs.Load() != 0 || delays.Load() != n {
		t.Errorf("the flood on the account in backoff: %d proceeded, %d errors, want every one of %d delayed", proceeds.Load(), errs.Load(), n)
	}
	if ownerOK.Load() < 15 {
		t.Errorf("the owner's known device proceeded %d of 20 times during the flood, want nearly all", ownerOK.Load())
	}
}

// Against a Redis Cluster of 3 masters with a replica each: the master that
// holds the victim's account counter is killed mid-attack. The issue
// measured +20 and +18 proceeds for the account in backoff, and every
// instance on its fallback for 37–51 s although the Cluster failed over in
// about 4 s. Now none proceeds, and both instances answer from the Cluster
// again within 10 s of the kill.
//
// The kill comes once the replica holds the counter (replicated): Redis
// replicates asynchronously, and a master killed within milliseconds of a
// write takes the write with it. Killed a few milliseconds after the
// victim's third failure, the replica promoted without it in 2 of 6 runs
// on a loaded machine and the attacker had the 3 free guesses again; what
// the failover loses that way is Redis's, README says so, and this test
// measures what tollgate adds to a failover, not Redis's replication lag.
func TestBlip_ClusterMasterKilledForgetsNoDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Cluster master and waits for its failover")
	}
	rc := redistest.ReplicatedCluster(t)
	var first redis.UniversalClient
	client := func() redis.UniversalClient {
		c, err := redisstore.NewClient(redisstore.ClientConfig{ClusterAddrs: rc.Addrs()})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = c
		}
		return c
	}
	d := newBlipDeployment(t, client, 0)
	pattern, err := d.e[0].AccountKeys("", "victim@example.com")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(pattern, ":")
	key := "tg:default:login:acct:" + strings.TrimSuffix(pattern[i+1:], "*")
	var back time.Duration
	got := d.attack(t, func() {
		m, err := first.(*redis.ClusterClient).MasterForKey(context.Background(), key)
		if err != nil {
			t.Error(err)
			return
		}
		dead := m.Options().Addr
		if err := replicated(m); err != nil {
			t.Error(err)
			return
		}
		before := d.fromR.Load()
		if err := rc.Node(dead).Kill(); err != nil {
			t.Error(err)
			return
		}
		back = d.untilBack(t, func() bool {
			m, err := first.(*redis.ClusterClient).MasterForKey(context.Background(), key)
			return err == nil && m.Options().Addr != dead && d.fromR.Load() > before+200
		})
	})
	t.Logf("%d proceeds for the account in backoff through the Cluster failover; answered from the Cluster again %v after the kill", got, back)
	if got != 0 {
		t.Errorf("the failover gave the account in backoff %d proceeds, want 0", got)
	}
	if back > 10*time.Second {
		t.Errorf("the instances answered from the Cluster again %v after the kill, want within 10 s", back)
	}
}

// Against a real redis-server stalled by DEBUG SLEEP: an attacker has put
// the account in a delay, and its owner, without her device token, checks
// from the network she signed in from. Redis exempts her; the fallback
// that answers during the stall held no record of her network and held her
// to the attacker's delay. The engine now writes the records Redis showed
// it into the fallback: she goes ahead during the stall too, and the
// attacker still waits.
func TestBlip_RealRedisStallKeepsTheOwnersKnownNetwork(t *testing.T) {
	in := redistest.Server(t)
	s := storeOn(t, redisstore.ClientConfig{URL: "redis://" + in.Addr})
	var src atomic.Value
	e, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(), Store: s, Fallback: memstore.New(memstore.Config{}), Secret: secret,
		MaxInFlight: s.PoolSize(), Observe: func(ev authguard.Event) { src.Store(ev.Source) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const victim, home = "victim@example.com", "198.51.100.23"
	v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: home})
	if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: home, Outcome: authguard.Success, Attempt: v.Attempt}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: fmt.Sprint("203.0.113.", i+1)})
		if v.Action != authguard.Proceed {
			break
		}
		e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: victim, IP: fmt.Sprint("203.0.113.", i+1), Outcome: authguard.Failure, Attempt: v.Attempt})
		if i > 20 {
			t.Fatal("no delay after 20 failures")
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); debugSleep(t, in.Addr, 2*time.Second) }()
	testkit.WaitFor(t, 5*time.Second, "Redis in DEBUG SLEEP", in.Sleeping)
	if v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: "203.0.113.200"}); v.Action == authguard.Proceed {
		t.Errorf("Redis stalled, the attacker: proceed, want the account's delay")
	}
	v, err = e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: victim, IP: home})
	if err != nil || v.Action != authguard.Proceed {
		t.Errorf("Redis stalled, the owner from her network: %+v %v, want proceed", v, err)
	}
	if got := src.Load(); got != authguard.SourceFallback {
		t.Errorf("her check was answered from %v, want the fallback (the stall did not reach it)", got)
	}
	<-done
}
