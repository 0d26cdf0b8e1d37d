// Package redistest starts real Redis servers and Redis Clusters for tests:
// redis-server processes on free loopback ports, in a temporary directory,
// stopped when the test ends (and killed with the test process if it dies).
//
// Tests that need Redis call Server or Cluster. When redis-server is not
// installed they are skipped on a developer's machine and fail in CI
// (CI=true), so a missing install never passes silently. Under go test
// -short they are skipped too: real Redis runs in the full make test.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// ErrNotInstalled means redis-server (or redis-cli, for a Cluster) is not on PATH.
var ErrNotInstalled = errors.New("redistest: redis-server is not installed (apt-get install redis-server)")

// SkipShort is why a test that needs real Redis skips under -short.
const SkipShort = "starts real redis-server processes: runs in the full make test, not under -short"

// Instance is one running redis-server.
type Instance struct {
	Addr string
	dir  string
	args []string
	cmd  *exec.Cmd
}

// Require skips the test under -short or when Redis is not installed, or
// fails it in CI when Redis is not installed.
func Require(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip(SkipShort)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(ErrNotInstalled)
		}
		tb.Skip(ErrNotInstalled)
	}
}

// Server starts a single redis-server for the test and stops it at cleanup.
func Server(tb testing.TB, extra ...string) *Instance {
	tb.Helper()
	Require(tb)
	in, err := Start(tb.TempDir(), extra...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(in.Stop)
	return in
}

// Start starts a redis-server with its files in dir.
func Start(dir string, extra ...string) (*Instance, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNotInstalled
	}
	var lastErr error
	for range 5 { // a free port can be taken between finding and binding it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		in := &Instance{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
		in.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no",
			"--enable-debug-command", "local", "--loglevel", "warning",
			"--logfile", filepath.Join(dir, fmt.Sprintf("redis-%d.log", port)),
		}, extra...)
		if lastErr = in.start(); lastErr == nil {
			return in, nil
		}
	}
	return nil, lastErr
}

func (in *Instance) start() error {
	in.cmd = exec.Command("redis-server", in.args...)
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := in.cmd.Start(); err != nil {
		return fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1})
	defer c.Close()
	if testkit.Eventually(5*time.Second, func() bool { return c.Ping(context.Background()).Err() == nil }) {
		return nil
	}
	in.Stop()
	return fmt.Errorf("redistest: redis-server on %s did not answer within 5s", in.Addr)
}

// Stop kills the server and waits for it to exit.
func (in *Instance) Stop() {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	in.cmd.Process.Kill()
	in.cmd.Wait()
	in.cmd = nil
}

// Restart stops the server and starts it again on the same port: its data
// and its script cache are gone, as after a crash without persistence.
func (in *Instance) Restart() error {
	in.Stop()
	return in.start()
}

// PID is the server's process id.
func (in *Instance) PID() int { return in.cmd.Process.Pid }

// Sleeping reports whether the server is stalled in a DEBUG SLEEP: its
// main thread sleeps in the kernel (its /proc wchan is a nanosleep), where
// otherwise it waits in epoll for clients. A test that must act while
// Redis stalls waits for this (testkit.WaitFor) instead of guessing when
// the command has arrived. Without /proc (not Linux) it cannot tell, and
// reports true.
func (in *Instance) Sleeping() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", in.PID()))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat("/proc/self"); err != nil {
			return true
		}
	}
	return err == nil && strings.Contains(string(b), "nanosleep")
}

// ClusterInstances is a running Redis Cluster of masters without replicas.
type ClusterInstances struct {
	Nodes []*Instance
}

// Addrs lists the masters' addresses.
func (c *ClusterInstances) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Stop stops every node.
func (c *ClusterInstances) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// Cluster starts a 3-master Redis Cluster for the test.
func Cluster(tb testing.TB) *ClusterInstances {
	tb.Helper()
	Require(tb)
	c, err := StartCluster(tb.TempDir(), 3)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// StartCluster starts n masters and joins them with redis-cli --cluster create.
func StartCluster(dir string, n int) (*ClusterInstances, error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, ErrNotInstalled
	}
	c := &ClusterInstances{}
	for i := range n {
		d := filepath.Join(dir, fmt.Sprint("node", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		in, err := Start(d, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(d, "nodes.conf"), "--cluster-node-timeout", "2000")
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, in)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %v: %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, node := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: node.Addr})
		var info string
		var err error
		ok := testkit.Eventually(time.Until(deadline), func() bool {
			info, err = cl.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		cl.Close()
		if !ok {
			c.Stop()
			return nil, fmt.Errorf("redistest: cluster not ok after 10s: %v %s", err, info)
		}
	}
	return c, nil
}

// Sentinel starts a redis-server in Sentinel mode monitoring master under
// the name "tollgate" for the test, and waits until it reports the master.
// Alone it is its own quorum.
func Sentinel(tb testing.TB, master *Instance) *Instance {
	tb.Helper()
	return sentinel(tb, master, 1)
}

// Sentinels starts n Sentinels monitoring master, of which quorum must
// agree that it is down, as a production group does (3 and 2).
func Sentinels(tb testing.TB, master *Instance, n, quorum int) []*Instance {
	tb.Helper()
	out := make([]*Instance, n)
	for i := range out {
		out[i] = sentinel(tb, master, quorum)
	}
	return out
}

func sentinel(tb testing.TB, master *Instance, quorum int) *Instance {
	tb.Helper()
	Require(tb)
	dir := tb.TempDir()
	var in *Instance
	var err error
	for range 5 {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		conf := filepath.Join(dir, "sentinel.conf") // Sentinel rewrites it: it must be writable
		err = os.WriteFile(conf, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"+
			"sentinel monitor tollgate %s %d\nsentinel down-after-milliseconds tollgate 2000\n",
			port, dir, filepath.Join(dir, "sentinel.log"), strings.Replace(master.Addr, ":", " ", 1), quorum)), 0o600)
		if err != nil {
			break
		}
		in = &Instance{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, args: []string{conf, "--sentinel"}}
		if err = in.start(); err == nil {
			break
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(in.Stop)
	c := redis.NewSentinelClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	if !testkit.Eventually(10*time.Second, func() bool {
		var addr []string
		addr, err = c.GetMasterAddrByName(context.Background(), "tollgate").Result()
		return err == nil && len(addr) == 2
	}) {
		tb.Fatalf("redistest: sentinel does not report the master after 10s: %v", err)
	}
	return in
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Kill sends the server SIGKILL by its PID, as a crash would, and waits for
// it to exit. Unlike Stop it reports a failure to kill.
func (in *Instance) Kill() error {
	if in.cmd == nil || in.cmd.Process == nil {
		return errors.New("redistest: the server is not running")
	}
	if err := syscall.Kill(in.PID(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("redistest: killing redis-server %d: %w", in.PID(), err)
	}
	in.cmd.Wait()
	in.cmd = nil
	return nil
}

// ReplicatedClusterInstances is a running Redis Cluster whose masters have
// one replica each, so that it fails over when a master dies.
type ReplicatedClusterInstances struct {
	// Nodes are every node, masters first as they were created; a
	// failover changes which is which.
	Nodes []*Instance
	// NodeTimeout is the nodes' cluster-node-timeout: a master that does
	// not answer for that long is failed over.
	NodeTimeout time.Duration
}

// Addrs lists every node's address (any of them is a seed).
func (c *ReplicatedClusterInstances) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Node returns the node at addr, or nil.
func (c *ReplicatedClusterInstances) Node(addr string) *Instance {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// Stop stops every node.
func (c *ReplicatedClusterInstances) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// ReplicatedCluster starts a Redis Cluster of 3 masters with 1 replica each
// for the test, with a node timeout of 1s (a dead master's replica takes
// over within a few seconds), and stops it at cleanup. extra are more
// redis-server arguments for every node.
func ReplicatedCluster(tb testing.TB, extra ...string) *ReplicatedClusterInstances {
	tb.Helper()
	Require(tb)
	c, err := StartReplicatedCluster(tb.TempDir(), 3, time.Second, extra...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// StartReplicatedCluster starts masters masters and as many replicas,
// joins them with redis-cli --cluster create --cluster-replicas 1, and
// waits until every node sees the whole cluster as ok and every replica is
// in sync with its master (a replica that never synced would not take
// over).
func StartReplicatedCluster(dir string, masters int, nodeTimeout time.Duration, extra ...string) (*ReplicatedClusterInstances, error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, ErrNotInstalled
	}
	c := &ReplicatedClusterInstances{NodeTimeout: nodeTimeout}
	for i := range 2 * masters {
		d := filepath.Join(dir, fmt.Sprint("node", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.Stop()
			return nil, err
		}
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(d, "nodes.conf"),
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10)}, extra...)
		in, err := Start(d, args...)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, in)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %v: %s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, node := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: node.Addr})
		var detail string
		ready := testkit.Eventually(time.Until(deadline), func() bool {
			var ok bool
			ok, detail = replicatedNodeReady(cl, len(c.Nodes))
			return ok
		})
		cl.Close()
		if !ready {
			c.Stop()
			return nil, fmt.Errorf("redistest: node %s not ready after 20s: %s", node.Addr, detail)
		}
	}
	return c, nil
}

// replicatedNodeReady reports whether a node sees the cluster ok with all
// nodes known and, on a replica, its link to its master up.
func replicatedNodeReady(cl *redis.Client, nodes int) (bool, string) {
	ctx := context.Background()
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return false, err.Error()
	}
	if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d\r", nodes)) {
		return false, info
	}
	repl, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return false, err.Error()
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return false, repl
	}
	return true, ""
}
