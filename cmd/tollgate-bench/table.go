package main

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

const tableUsage = `usage: tollgate-bench table [flags]

Measures BENCHMARKS.md's table in one run. It starts, on free loopback ports and
in a temporary directory: a redis-server, tollgate serve on it, a 3-master
and a 6-master Redis Cluster (no replicas) and tollgate serve on each (unless
-cluster=false),
tollgate serve on the memory store, the Go ceiling (tollgate-bench ceiling)
and, when a ratelimit binary is found, envoyproxy/ratelimit on the one-node
Redis. Then, in each round, it drives the rows in turn, -n login checks each
with -c workers, measuring each server's CPU per request from
/proc/PID/stat and Redis's from INFO cpu (the Cluster's: the sum over its
three masters; both include their network system calls), and times floor3,
commands and script with redis-benchmark. It prints each row's medians over
the rounds as a markdown table, then the four ratios that have targets and,
for information, the check's script and its commands alone against floor3
and each other, the Cluster's cost against one node's, and the script calls
each Cluster row's checks made. Every process
it starts is stopped by its PID when it ends, fails or is interrupted.

Rows, in each round's order:
  fresh    tollgate on Redis, a login check with every signal (account,
           address, password fingerprint) on random subjects: each proceeds
  hot      the same on one hot account and address: each refused (the
           first round is preceded by unmeasured checks that exhaust the
           address's bucket)
  cluster  tollgate on the 3-master Cluster, the same fresh checks: the
           keys of one check lie in different slots, mostly on different
           masters
  cl-hot   the same hot checks on the Cluster, each refused (warmed the same
           way)
  cluster6 the fresh checks on a 6-master Cluster: how a check's cost
           grows with the Cluster
  envoy    envoy's ratelimit on the one-node Redis, one "ip" descriptor, /json
  floor3   one EVALSHA of floor.lua (TIME, then a GET and a SET ... PX on
           each of 3 keys), redis-benchmark -c 50, Redis's CPU per call
           from INFO cpu (in a database of its own, flushed each round)
  commands the same for commands.lua: the Redis commands one fresh check
           sends (16 on 6 keys), with no logic around them, the floor of
           tollgate's own key layout: what any script of this layout costs
  script   the same for the fresh check's own EVALSHA, as the server sends
           it (captured with MONITOR at the start, each key made fresh per
           call): the check's script measured as floor3 and commands are
  memory   tollgate on the memory store, the same checks as fresh
  ceiling  the bare net/http server (tollgate-bench ceiling)

flags:
  -rounds N        rounds, 1 to 20 (default 5)
  -n N             checks per row per round (default 20000)
  -c N             concurrent workers, 1 to 4096 (default 50)
  -floor-n N       EVALSHA calls of floor3, of commands and of script, per round
                   (default 50000)
  -tollgate PATH   the tollgate binary (default: tollgate next to this
                   executable, else on the PATH)
  -ratelimit PATH  envoy's ratelimit (default: ratelimit on the PATH; the
                   row says "absent" without one)
  -cluster=false   no Redis Cluster and no Cluster rows (for a machine where
                   the Cluster cannot start; default: on)
  -cluster-key-layout subject
                   tollgate on the Clusters with subject hash tags
                   (store.redis.cluster_key_layout; default: today's names)
  -timeout D       bound on the whole table, at most 30m (default 10m)
`

// The bounds on a table, so that it always stops by itself.
const (
	maxTableTimeout  = 30 * time.Minute
	maxTableRequests = 10_000_000
	maxRunDuration   = 2 * time.Minute // one row in one round
)

//go:embed floor.lua
var floorScript string

//go:embed commands.lua
var commandsScript string

//go:embed ratelimit.yaml
var ratelimitConfig []byte

// floor3Args are redis-benchmark's keys and argument for floor3, as
// scripts/bench-scripts.sh sends them: an account, an address and a
// password fingerprint never seen before.
var floor3Args = []string{
	"3", "tg:default:login:acct:__rand_int__zON2s3pl453nKFQP9g", "tg:default:login:ip:__rand_int__J9yUIJz",
	"tg:default:login:pwspray:__rand_int__Q340A_zFfhBI", "1|1796134374052|0||K8ROY8UuqqQBUAjrp2ubxQ",
}

// commandsArgs are redis-benchmark's keys and arguments for commands: each
// key never seen, as a fresh check's are.
var commandsArgs = []string{
	"7", "tg:default:login:knownnet:__rand_int__zON2s3pl.__rand_int__J9yUIJz", "tg:default:login:acct:__rand_int__zON2s3pl453nKFQP9g",
	"tg:default:login:iprate:__rand_int__J9yUIJz", "tg:default:login:ipspray:__rand_int__J9yUIJz",
	"tg:default:login:ipfail:__rand_int__J9yUIJz", "tg:default:login:pwspray:__rand_int__Q340A_zFfhBI",
	"tg:default:login:ipstuff:__rand_int__J9yUIJz",
	"1|1796134374052|0||K8ROY8UuqqQBUAjrp2ubxQ", "zON2s3pl453n__rand_int__",
}

// floorDB is the Redis database floor3, commands and script write in, away
// from tollgate's.
const floorDB = 1

// floorClients is redis-benchmark's connections for floor3, commands and
// script, as many as
// the load's workers by default.
const floorClients = 50

// tableConfig is what a table was asked to do.
type tableConfig struct {
	Rounds      int
	Requests    int64
	Concurrency int
	FloorCalls  int
	Tollgate    string
	Ratelimit   string // "" when absent
	Cluster     bool   // the Cluster rows; the default is true
	// ClusterKeyLayout is store.redis.cluster_key_layout for tollgate on
	// the Clusters; "" for today's names.
	ClusterKeyLayout string
	Timeout          time.Duration
}

func parseTableArgs(args []string) (*tableConfig, error) {
	cfg := &tableConfig{}
	fs := flag.NewFlagSet("tollgate-bench table", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.IntVar(&cfg.Rounds, "rounds", 5, "")
	fs.Int64Var(&cfg.Requests, "n", 20000, "")
	fs.IntVar(&cfg.Concurrency, "c", 50, "")
	fs.IntVar(&cfg.FloorCalls, "floor-n", 50000, "")
	fs.StringVar(&cfg.Tollgate, "tollgate", "", "")
	ratelimit := fs.String("ratelimit", "", "")
	fs.BoolVar(&cfg.Cluster, "cluster", true, "")
	fs.StringVar(&cfg.ClusterKeyLayout, "cluster-key-layout", "", "")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.Rounds < 1 || cfg.Rounds > maxBenchRounds:
		return nil, fmt.Errorf("-rounds %d: want 1 to %d", cfg.Rounds, maxBenchRounds)
	case cfg.Requests < 1 || cfg.Requests > maxTableRequests:
		return nil, fmt.Errorf("-n %d: want 1 to %d", cfg.Requests, maxTableRequests)
	case cfg.Concurrency < 1 || cfg.Concurrency > maxBenchConcurrency:
		return nil, fmt.Errorf("-c %d: want 1 to %d", cfg.Concurrency, maxBenchConcurrency)
	case cfg.FloorCalls < 1 || cfg.FloorCalls > maxTableRequests:
		return nil, fmt.Errorf("-floor-n %d: want 1 to %d", cfg.FloorCalls, maxTableRequests)
	case cfg.Timeout <= 0 || cfg.Timeout > maxTableTimeout:
		return nil, fmt.Errorf("-timeout %v: want more than 0 and at most %v", cfg.Timeout, maxTableTimeout)
	}
	var err error
	if cfg.Tollgate, err = findTollgate(cfg.Tollgate); err != nil {
		return nil, err
	}
	if *ratelimit != "" {
		if cfg.Ratelimit, err = exec.LookPath(*ratelimit); err != nil {
			return nil, fmt.Errorf("-ratelimit: %w", err)
		}
	} else if p, err := exec.LookPath("ratelimit"); err == nil {
		cfg.Ratelimit = p
	}
	// The children run in a temporary directory.
	if cfg.Tollgate, err = filepath.Abs(cfg.Tollgate); err != nil {
		return nil, err
	}
	if cfg.Ratelimit != "" {
		if cfg.Ratelimit, err = filepath.Abs(cfg.Ratelimit); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// findTollgate returns the tollgate binary to run: path when given, else
// tollgate next to this executable (bin/ after make build and go build -o
// bin/tollgate-bench), else tollgate on the PATH.
func findTollgate(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("-tollgate: %w", err)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "tollgate")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("tollgate")
	if err != nil {
		return "", errors.New("no tollgate binary next to this one or on the PATH: give -tollgate (go build -o bin/tollgate ./cmd/tollgate)")
	}
	return p, nil
}

// tableCmd runs `tollgate-bench table`: see tableUsage. It returns 2 on a
// usage error and 1 when a process cannot be started or measured, when a
// run fails or when ctx is cancelled (SIGINT) before the end.
func tableCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseTableArgs(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, tableUsage)
			return 0
		}
		fmt.Fprintf(stderr, "tollgate-bench table: %v\n%s", err, tableUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	t := &table{cfg: cfg, stdout: stdout, stderr: stderr}
	defer t.stopAll()
	if err := t.start(ctx); err != nil {
		fmt.Fprintf(stderr, "tollgate-bench table: %v\n", err)
		return 1
	}
	if err := t.measure(ctx); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted or out of time (-timeout %v): %w", cfg.Timeout, err)
		}
		fmt.Fprintf(stderr, "tollgate-bench table: %v\n", err)
		return 1
	}
	writeTable(stdout, cfg, t.rows)
	return 0
}

// Rows of the table, in each round's order.
const (
	rowFresh = iota
	rowHot
	rowClusterFresh
	rowClusterHot
	rowCluster6
	rowEnvoy
	rowFloor3
	rowCommands
	rowScript
	rowMemory
	rowCeiling
	numRows
)

var rowNames = [numRows]string{
	rowFresh:        "tollgate on Redis, login check with every signal (account, address, password fingerprint), random subjects: each proceeds",
	rowHot:          "the same on one hot account and address: each refused (the attack path)",
	rowClusterFresh: "tollgate on a 3-master Redis Cluster, the same fresh checks (keys of one check span slots)",
	rowClusterHot:   "the same hot checks on the Cluster: each refused",
	rowCluster6:     "tollgate on a 6-master Redis Cluster, the same fresh checks",
	rowEnvoy:        "envoyproxy/ratelimit on the same Redis, one `ip` descriptor, its `/json` endpoint",
	rowFloor3:       "**floor3**: one `EVALSHA` doing `TIME` and a `GET` + `SET … PX` on each of 3 keys, `redis-benchmark` 50 clients",
	rowCommands:     "**commands**: one `EVALSHA` of the 16 Redis commands a fresh check sends, on its 6 keys, with no logic: the floor of tollgate's key layout",
	rowScript:       "**script**: the fresh check's own `EVALSHA` as tollgate sends it, each key made fresh, sent the same way",
	rowMemory:       "tollgate on the memory store, the same checks",
	rowCeiling:      "a bare net/http server decoding the same body and answering a fixed verdict",
}

// rowLabels name the rows in the verdicts' lines and in tableUsage.
var rowLabels = [numRows]string{
	rowFresh: "fresh", rowHot: "hot", rowClusterFresh: "cluster", rowClusterHot: "cl-hot", rowCluster6: "cluster6",
	rowEnvoy: "envoy", rowFloor3: "floor3", rowCommands: "commands", rowScript: "script", rowMemory: "memory", rowCeiling: "ceiling",
}

// clusterMasters is the Cluster's size: masters without replicas.
const clusterMasters = 3

// cluster6Masters is the larger Cluster's, for the cost of a check as the
// Cluster grows.
const cluster6Masters = 6

// clusterRow reports whether row runs on a Cluster.
func clusterRow(row int) bool {
	return row == rowClusterFresh || row == rowClusterHot || row == rowCluster6
}

// notRunCluster is the Cluster rows' cells under -cluster=false.
const notRunCluster = "not run (-cluster=false)"

// tableRow is what the rounds measured for one row.
type tableRow struct {
	server, redis []float64 // µs per request, one per round; nil when not measured
	usecPerCall   []float64 // floor3, commands and script: INFO commandstats' usec_per_call of EVALSHA
	absent        string    // why the row was not measured
	runs          []benchRun
	calls         []float64 // Cluster rows: script calls (EVALSHA and EVAL, every master) per request, one per round
}

// table is one run of tollgate-bench table: its processes and figures.
type table struct {
	cfg            *tableConfig
	stdout, stderr io.Writer
	dir            string
	redis          *redistest.Instance
	cluster        *redistest.ClusterInstances // nil under -cluster=false
	clusterCPU     []*redis.Client             // INFO cpu of each master
	cluster6       *redistest.ClusterInstances // the 6-master Cluster; nil under -cluster=false
	cluster6CPU    []*redis.Client
	procs          []*childProc
	targets        [numRows]*benchTarget
	b              *bencher
	floor          *redis.Client
	floorArgs      [numRows][]string // floor3's, commands' and script's EVALSHA: the script's hash, numkeys, keys, arguments
	rows           [numRows]tableRow
}

// start starts Redis and the servers and waits until each answers.
func (t *table) start(ctx context.Context) error {
	var err error
	if t.dir, err = os.MkdirTemp("", "tollgate-bench-table-"); err != nil {
		return err
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		return errors.New("redis-benchmark is not installed (scripts/ensure-redis.sh installs it)")
	}
	if t.redis, err = redistest.Start(t.dir); err != nil {
		return err
	}
	fmt.Fprintf(t.stderr, "redis-server: pid %d on %s\n", t.redis.PID(), t.redis.Addr)
	secret := make([]byte, 48)
	rand.Read(secret)
	env := childEnv("TOLLGATE_SECRET=" + base64.RawURLEncoding.EncodeToString(secret))

	onRedis, err := t.startServer(ctx, "tollgate-redis", t.cfg.Tollgate, []string{"serve"},
		append(env, "TOLLGATE_REDIS_URL=redis://"+t.redis.Addr+"/0"), "TOLLGATE_LISTEN=")
	if err != nil {
		return err
	}
	if t.cfg.Cluster {
		if err := t.startCluster(ctx, env); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("redis cluster: %w", err)
			}
			return fmt.Errorf("redis cluster: %w (-cluster=false leaves its rows out)", err)
		}
	} else {
		t.rows[rowClusterFresh].absent, t.rows[rowClusterHot].absent, t.rows[rowCluster6].absent = notRunCluster, notRunCluster, notRunCluster
	}
	onMemory, err := t.startServer(ctx, "tollgate-memory", t.cfg.Tollgate, []string{"serve"}, env, "TOLLGATE_LISTEN=")
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ceiling, err := t.startServer(ctx, "ceiling", self, []string{"ceiling"}, childEnv(), "-listen ")
	if err != nil {
		return err
	}
	t.targets[rowFresh] = &benchTarget{URL: onRedis.url, PID: onRedis.pid(), Subjects: subjectsRandom}
	t.targets[rowHot] = &benchTarget{URL: onRedis.url, PID: onRedis.pid(), Subjects: subjectsHot}
	t.targets[rowMemory] = &benchTarget{URL: onMemory.url, PID: onMemory.pid(), Subjects: subjectsRandom}
	t.targets[rowCeiling] = &benchTarget{URL: ceiling.url, PID: ceiling.pid(), Subjects: subjectsRandom}
	if t.cfg.Ratelimit == "" {
		t.rows[rowEnvoy].absent = "absent (no ratelimit on the PATH)"
	} else {
		envoy, err := t.startRatelimit(ctx)
		if err != nil {
			return err
		}
		t.targets[rowEnvoy] = &benchTarget{URL: envoy.url, Envoy: true, PID: envoy.pid(), Subjects: subjectsRandom}
	}

	bcfg := &benchConfig{
		Load: loadCheck, Concurrency: t.cfg.Concurrency, Duration: maxRunDuration,
		Requests: t.cfg.Requests, Rounds: t.cfg.Rounds, Redis: []string{t.redis.Addr},
	}
	if t.b, err = newBencher(bcfg); err != nil {
		return err
	}
	for _, target := range t.targets {
		if target != nil {
			if err := t.b.probeTarget(ctx, *target); err != nil {
				return fmt.Errorf("%s: %w", target.URL, err)
			}
		}
	}
	if err := t.b.probeRedis(ctx); err != nil {
		return err
	}
	for i, c := range t.clusterCPU {
		if _, err := redisCPU(ctx, c); err != nil {
			return fmt.Errorf("redis cluster node %s: INFO cpu: %w", t.cluster.Nodes[i].Addr, err)
		}
	}
	for i, c := range t.cluster6CPU {
		if _, err := redisCPU(ctx, c); err != nil {
			return fmt.Errorf("redis 6-master cluster node %s: INFO cpu: %w", t.cluster6.Nodes[i].Addr, err)
		}
	}
	t.floor = redis.NewClient(&redis.Options{Addr: t.redis.Addr, DB: floorDB, MaxRetries: -1})
	for _, f := range []struct {
		row  int
		src  string
		args []string
	}{{rowFloor3, floorScript, floor3Args}, {rowCommands, commandsScript, commandsArgs}} {
		sha, err := t.floor.ScriptLoad(ctx, f.src).Result()
		if err != nil {
			return fmt.Errorf("%s: SCRIPT LOAD: %w", rowLabels[f.row], err)
		}
		t.floorArgs[f.row] = append([]string{sha}, f.args...)
	}
	if t.floorArgs[rowScript], err = t.captureScript(ctx, onRedis.url); err != nil {
		return fmt.Errorf("script: capturing a fresh check's EVALSHA: %w", err)
	}
	sa := t.floorArgs[rowScript]
	keys, _ := strconv.Atoi(sa[1]) // freshKeys checked it
	fmt.Fprintf(t.stderr, "script: EVALSHA %.12s… with %d keys and %d arguments, captured from %s\n", sa[0], keys, len(sa)-2-keys, onRedis.name)
	return nil
}

// startCluster starts a Redis Cluster of clusterMasters masters and one of
// cluster6Masters in the temporary directory and tollgate serve on each
// (env and the Cluster's seeds), and sets the Cluster rows' targets, whose
// Redis CPU is the sum of their masters'.
func (t *table) startCluster(ctx context.Context, env []string) error {
	var err error
	if t.cfg.ClusterKeyLayout != "" {
		env = append(env[:len(env):len(env)], "TOLLGATE_REDIS_CLUSTER_KEY_LAYOUT="+t.cfg.ClusterKeyLayout)
	}
	if t.cluster, err = redistest.StartCluster(filepath.Join(t.dir, "cluster"), clusterMasters); err != nil {
		return err
	}
	for i, n := range t.cluster.Nodes {
		fmt.Fprintf(t.stderr, "redis-cluster-node%d: pid %d on %s\n", i+1, n.PID(), n.Addr)
		t.clusterCPU = append(t.clusterCPU, newCPUClient(&redis.Options{Addr: n.Addr}))
	}
	onCluster, err := t.startServer(ctx, "tollgate-cluster", t.cfg.Tollgate, []string{"serve"},
		append(env[:len(env):len(env)], "TOLLGATE_REDIS_CLUSTER_ADDRS="+strings.Join(t.cluster.Addrs(), ",")), "TOLLGATE_LISTEN=")
	if err != nil {
		return err
	}
	t.targets[rowClusterFresh] = &benchTarget{URL: onCluster.url, PID: onCluster.pid(), Subjects: subjectsRandom, Redis: t.clusterCPU}
	t.targets[rowClusterHot] = &benchTarget{URL: onCluster.url, PID: onCluster.pid(), Subjects: subjectsHot, Redis: t.clusterCPU}

	if t.cluster6, err = redistest.StartCluster(filepath.Join(t.dir, "cluster6"), cluster6Masters); err != nil {
		return fmt.Errorf("%d masters: %w", cluster6Masters, err)
	}
	for i, n := range t.cluster6.Nodes {
		fmt.Fprintf(t.stderr, "redis-cluster6-node%d: pid %d on %s\n", i+1, n.PID(), n.Addr)
		t.cluster6CPU = append(t.cluster6CPU, newCPUClient(&redis.Options{Addr: n.Addr}))
	}
	onCluster6, err := t.startServer(ctx, "tollgate-cluster6", t.cfg.Tollgate, []string{"serve"},
		append(env[:len(env):len(env)], "TOLLGATE_REDIS_CLUSTER_ADDRS="+strings.Join(t.cluster6.Addrs(), ",")), "TOLLGATE_LISTEN=")
	if err != nil {
		return err
	}
	t.targets[rowCluster6] = &benchTarget{URL: onCluster6.url, PID: onCluster6.pid(), Subjects: subjectsRandom, Redis: t.cluster6CPU}
	return nil
}

// scriptCalls is the number of EVALSHA and EVAL calls the masters have
// answered, from INFO commandstats: a Cluster row's calls per check.
func scriptCalls(ctx context.Context, masters []*redis.Client) (int64, error) {
	var n int64
	for _, c := range masters {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := c.Info(cctx, "commandstats").Result()
		cancel()
		if err != nil {
			return 0, err
		}
		calls, _, _ := evalshaStats(info)
		n += calls
		calls, _ = evalStats(info)
		n += calls
	}
	return n, nil
}

// evalStats reads EVAL's calls from INFO commandstats (the calls sent again
// after NOSCRIPT), and its failed calls.
func evalStats(info string) (calls, failed int64) {
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_eval:")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "failed_calls":
				failed, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return calls, failed
}

// startServer starts one server on a free loopback port, given to it
// after listenFlag (an environment variable when it ends in "=", else a
// flag; PORT= gets the port alone), and waits until it accepts connections.
func (t *table) startServer(ctx context.Context, name, path string, args, env []string, listenFlag string) (*childProc, error) {
	var lastErr error
	for range 3 { // a free port can be taken between finding and binding it
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		a, e := args, env
		switch {
		case listenFlag == "PORT=": // ratelimit: HOST is in env
			e = append(e[:len(e):len(e)], listenFlag+strconv.Itoa(port))
		case strings.HasSuffix(listenFlag, "="):
			e = append(e[:len(e):len(e)], listenFlag+addr)
		default:
			a = append(a[:len(a):len(a)], strings.TrimSpace(listenFlag), addr)
		}
		p, err := t.startProc(name, path, a, e)
		if err != nil {
			return nil, err
		}
		if lastErr = p.waitListening(ctx, addr); lastErr == nil {
			p.url = "http://" + addr
			fmt.Fprintf(t.stderr, "%s: pid %d on %s\n", name, p.pid(), addr)
			return p, nil
		}
		p.stop()
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// startRatelimit starts envoy's ratelimit on the table's Redis, with the
// configuration scripts/bench-http.sh gives it.
func (t *table) startRatelimit(ctx context.Context) (*childProc, error) {
	root := filepath.Join(t.dir, "ratelimit-runtime")
	conf := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(conf, "bench.yaml"), ratelimitConfig, 0o644); err != nil {
		return nil, err
	}
	var ports [2]int
	for i := range ports {
		p, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	env := childEnv("USE_STATSD=false", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+t.redis.Addr, "LOG_LEVEL=warn",
		"HOST=127.0.0.1", "GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(ports[0]),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(ports[1]),
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false")
	return t.startServer(ctx, "ratelimit", t.cfg.Ratelimit, nil, env, "PORT=")
}

// childEnv is this process's environment without tollgate's and
// ratelimit's settings (so that nothing set in the shell changes what is
// measured), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "TOLLGATE_"), strings.HasPrefix(k, "OTEL_"), strings.HasPrefix(k, "REDIS_"),
			k == "PORT", k == "HOST", k == "LOG_LEVEL", k == "USE_STATSD", strings.HasPrefix(k, "RUNTIME_"),
			strings.HasPrefix(k, "GRPC_"), strings.HasPrefix(k, "DEBUG_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// measure runs the rounds.
func (t *table) measure(ctx context.Context) error {
	fmt.Fprintf(t.stderr, "machine: %d CPUs, load average %s; %s\n", runtime.NumCPU(), loadAverage(), runtime.Version())
	// The hot account's address has a bucket of 200: exhaust it before the
	// first round, on one node and on the Cluster, so that every measured
	// check is refused.
	warm := *t.b.cfg
	warm.Requests = 1000
	hot := &bencher{cfg: &warm, transport: t.b.transport, client: t.b.client, redis: t.b.redis}
	for _, row := range []int{rowHot, rowClusterHot} {
		if t.targets[row] == nil {
			continue
		}
		if _, err := hot.runTarget(ctx, *t.targets[row]); err != nil {
			return fmt.Errorf("warming the hot account (%s): %w", rowLabels[row], err)
		}
	}
	for round := 1; round <= t.cfg.Rounds; round++ {
		for row := range numRows {
			if redisOnly(row) {
				if err := t.measureFloor(ctx, row); err != nil {
					return fmt.Errorf("round %d, %s: %w", round, rowLabels[row], err)
				}
				continue
			}
			target := t.targets[row]
			if target == nil {
				continue
			}
			var callsBefore int64
			if clusterRow(row) {
				var err error
				if callsBefore, err = scriptCalls(ctx, target.Redis); err != nil {
					return fmt.Errorf("round %d, %s: INFO commandstats: %w", round, rowLabels[row], err)
				}
			}
			r, err := t.b.runTarget(ctx, *target)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, target.URL, err)
			}
			if clusterRow(row) && r.Requests > 0 {
				after, err := scriptCalls(ctx, target.Redis)
				if err != nil {
					return fmt.Errorf("round %d, %s: INFO commandstats: %w", round, rowLabels[row], err)
				}
				t.rows[row].calls = append(t.rows[row].calls, float64(after-callsBefore)/float64(r.Requests))
			}
			r.Round = round
			if r.ServerCPU == nil || r.RedisCPU == nil {
				return fmt.Errorf("round %d, %s: no requests answered", round, target.URL)
			}
			tr := &t.rows[row]
			tr.runs = append(tr.runs, r)
			tr.server = append(tr.server, *r.ServerCPU)
			if row == rowFresh || row == rowHot || clusterRow(row) || row == rowEnvoy {
				tr.redis = append(tr.redis, *r.RedisCPU)
			}
		}
		fmt.Fprintf(t.stderr, "round %d of %d done; load average %s\n", round, t.cfg.Rounds, loadAverage())
	}
	return nil
}

// redisOnly reports whether row is a script timed on Redis alone (floor3,
// commands): no server, so no total.
func redisOnly(row int) bool { return row == rowFloor3 || row == rowCommands || row == rowScript }

// measureFloor runs floor3, commands or script once: redis-benchmark sends
// -floor-n EVALSHA of its script on keys never seen, as
// scripts/bench-scripts.sh does, and Redis's CPU per call is read from
// INFO cpu before and after.
func (t *table) measureFloor(ctx context.Context, row int) error {
	if err := t.floor.FlushDB(ctx).Err(); err != nil {
		return err
	}
	if err := t.floor.ConfigResetStat(ctx).Err(); err != nil {
		return err
	}
	before, err := redisCPU(ctx, t.b.redis[0])
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(t.redis.Addr)
	args := []string{"-h", host, "-p", port, "--dbnum", strconv.Itoa(floorDB), "-c", strconv.Itoa(floorClients),
		"-n", strconv.Itoa(t.cfg.FloorCalls), "-r", "100000000", "-q", "EVALSHA"}
	cmd := exec.CommandContext(ctx, "redis-benchmark", append(args, t.floorArgs[row]...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("redis-benchmark: %v: %s", err, lastLine(out.String()))
	}
	after, err := redisCPU(ctx, t.b.redis[0])
	if err != nil {
		return err
	}
	stats, err := t.floor.Info(ctx, "commandstats").Result()
	if err != nil {
		return err
	}
	calls, failed, usec := evalshaStats(stats)
	if failed > 0 {
		return fmt.Errorf("%d of %d EVALSHA calls failed (redis-benchmark: %s)", failed, calls, lastLine(out.String()))
	}
	// redis-benchmark 7 can send a few calls past -n (its clients check the
	// count before they send, not together), at most one per client; the
	// CPU is divided by the calls Redis counted, so they do not bias it.
	if n := int64(t.cfg.FloorCalls); calls < n || calls > n+floorClients {
		return fmt.Errorf("%d EVALSHA calls counted by Redis, not %d (redis-benchmark: %s)", calls, t.cfg.FloorCalls, lastLine(out.String()))
	}
	r := &t.rows[row]
	r.redis = append(r.redis, float64((after-before).Microseconds())/float64(calls))
	r.usecPerCall = append(r.usecPerCall, usec)
	return nil
}

// evalshaStats reads EVALSHA's calls, failed calls (an error in the script
// or a command it ran) and usec_per_call from INFO commandstats; zeros when
// they are not there.
func evalshaStats(info string) (calls, failed int64, usecPerCall float64) {
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "failed_calls":
				failed, _ = strconv.ParseInt(v, 10, 64)
			case "usec_per_call":
				usecPerCall, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return calls, failed, usecPerCall
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// stopAll stops every process the table started, the servers first, then
// Redis and the Cluster's nodes, each by its PID, and removes the temporary directory; it reports
// the warnings and errors in the tollgate servers' logs.
func (t *table) stopAll() {
	if t.b != nil {
		t.b.close()
	}
	if t.floor != nil {
		t.floor.Close()
	}
	for _, c := range append(t.clusterCPU, t.cluster6CPU...) {
		c.Close()
	}
	for i := len(t.procs) - 1; i >= 0; i-- {
		t.procs[i].stop()
	}
	for _, p := range t.procs {
		if strings.HasPrefix(p.name, "tollgate") {
			p.reportLog(t.stderr)
		}
	}
	if t.redis != nil {
		t.redis.Stop()
	}
	if t.cluster != nil {
		t.cluster.Stop()
	}
	if t.cluster6 != nil {
		t.cluster6.Stop()
	}
	if t.dir != "" {
		os.RemoveAll(t.dir)
	}
}

// childProc is a process the table started.
type childProc struct {
	name   string
	cmd    *exec.Cmd
	log    string // its stdout and stderr
	url    string // its base URL, once it listens
	exited chan struct{}
}

// startProc starts a process in a process group of its own (so that a
// terminal's Ctrl-C reaches this process, which stops it), killed if this
// process dies first.
func (t *table) startProc(name, path string, args, env []string) (*childProc, error) {
	log := filepath.Join(t.dir, fmt.Sprintf("%s-%d.log", name, len(t.procs)))
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, f, f, t.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &childProc{name: name, cmd: cmd, log: log, exited: make(chan struct{})}
	t.procs = append(t.procs, p)
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

func (p *childProc) pid() int { return p.cmd.Process.Pid }

// waitListening waits up to 15s for the process to accept connections on
// addr.
func (p *childProc) waitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited at start: %s", p.name, p.logTail())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: nothing listens on %s after 15s: %s", p.name, addr, p.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends the process SIGTERM, and SIGKILL if it has not exited 10s
// later, and waits for it.
func (p *childProc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *childProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// reportLog prints how many lines the process logged and the first
// warnings and errors, as scripts/bench-http.sh does.
func (p *childProc) reportLog(w io.Writer) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	var lines, problems int
	var first []string
	for line := range strings.Lines(string(b)) {
		lines++
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			problems++
			if len(first) < 3 {
				first = append(first, "  "+strings.TrimSpace(line))
			}
		}
	}
	fmt.Fprintf(w, "%s log: %d lines, %d warnings or errors\n", p.name, lines, problems)
	for _, l := range first {
		fmt.Fprintln(w, l)
	}
}

// tableRatio is one of the ratios that have a target, or one printed for
// information.
type tableRatio struct {
	name     string
	target   string // "" for information: no target
	num, den int    // rows
	numTotal bool
	numRedis bool // else the server's CPU
}

var tableRatios = []tableRatio{
	{name: "Redis CPU per fresh check ÷ floor3", target: "≤ 2×", num: rowFresh, den: rowFloor3, numRedis: true},
	{name: "Redis CPU per refused check ÷ floor3", target: "≤ 1.5×", num: rowHot, den: rowFloor3, numRedis: true},
	{name: "a fresh check's script alone ÷ floor3", num: rowScript, den: rowFloor3, numRedis: true},
	{name: "a fresh check's script alone ÷ its commands alone", num: rowScript, den: rowCommands, numRedis: true},
	{name: "a fresh check's commands alone ÷ floor3", num: rowCommands, den: rowFloor3, numRedis: true},
	{name: "tollgate total per fresh check ÷ envoy total per request", target: "≤ 1.0×", num: rowFresh, den: rowEnvoy, numTotal: true},
	{name: "memory-store server CPU ÷ bare server CPU", target: "≤ 1.5×", num: rowMemory, den: rowCeiling},
	{name: "Cluster total per fresh check ÷ one-node total per fresh check", target: "≤ 1.5×", num: rowClusterFresh, den: rowFresh, numTotal: true},
	{name: "Cluster total per refused check ÷ one-node total per refused check", target: "≤ 1.2×", num: rowClusterHot, den: rowHot, numTotal: true},
	{name: "6-master Cluster Redis CPU per fresh check ÷ 3-master Cluster's", target: "≤ 1.1×", num: rowCluster6, den: rowClusterFresh, numRedis: true},
}

// targetNote is the end of a ratio's line: its target, or that it has none.
func (q tableRatio) targetNote() string {
	if q.target == "" {
		return "for information, no target"
	}
	return "target " + q.target
}

// figure is a row's figure in one round: Redis's, the server's or their
// total; ok is false when the row does not have it.
func (r *tableRow) figure(round int, total, redis bool) (float64, bool) {
	var v float64
	if redis || total {
		if round >= len(r.redis) {
			return 0, false
		}
		v += r.redis[round]
	}
	if !redis || total {
		if round >= len(r.server) {
			return 0, false
		}
		v += r.server[round]
	}
	return v, true
}

// medianOf is the median of the row's figure over the rounds; ok is false
// when it has none.
func (r *tableRow) medianOf(total, redis bool) (float64, bool) {
	var vs []float64
	for i := range max(len(r.server), len(r.redis)) {
		if v, ok := r.figure(i, total, redis); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// writeTable prints the rows' medians as BENCHMARKS.md's markdown table, then
// the ratios: each the ratio of the two rows' medians, with the range of
// the rounds' own ratios.
func writeTable(w io.Writer, cfg *tableConfig, rows [numRows]tableRow) {
	fmt.Fprintf(w, "\nMedians over %d interleaved rounds of %d checks per row, %d connections; floor3, commands and script %d calls per round.\n",
		cfg.Rounds, cfg.Requests, cfg.Concurrency, cfg.FloorCalls)
	fmt.Fprintf(w, "CPU per request: servers from /proc/PID/stat, Redis from INFO cpu (both include their network system calls).\n\n")
	fmt.Fprintln(w, "| | server µs | Redis µs | total |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for i := range numRows {
		r := &rows[i]
		if r.absent != "" {
			fmt.Fprintf(w, "| %s | %s | – | – |\n", rowNames[i], r.absent)
			continue
		}
		server, hasServer := r.medianOf(false, false)
		red, hasRedis := r.medianOf(false, true)
		cell := func(v float64, ok bool) string {
			if !ok {
				return "–"
			}
			return fmt.Sprintf("%.1f", v)
		}
		total := "" // floor3, commands and script have no server: no total
		switch {
		case hasServer && hasRedis:
			total = cell(server+red, true)
		case hasServer:
			total = cell(server, true)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", rowNames[i], cell(server, hasServer), cell(red, hasRedis), total)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Ratios (of the medians; the rounds' own ratios in brackets):\n")
	for _, q := range tableRatios {
		n, d := &rows[q.num], &rows[q.den]
		if n.absent != "" || d.absent != "" {
			fmt.Fprintf(w, "* %s: absent (%s)\n", q.name, q.targetNote())
			continue
		}
		denRedis := q.numRedis || redisOnly(q.den)
		nv, ok1 := n.medianOf(q.numTotal, q.numRedis)
		dv, ok2 := d.medianOf(q.numTotal, denRedis)
		if !ok1 || !ok2 || dv <= 0 {
			fmt.Fprintf(w, "* %s: not measured (%s)\n", q.name, q.targetNote())
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range cfg.Rounds {
			a, ok1 := n.figure(i, q.numTotal, q.numRedis)
			b, ok2 := d.figure(i, q.numTotal, denRedis)
			if ok1 && ok2 && b > 0 {
				lo, hi = min(lo, a/b), max(hi, a/b)
			}
		}
		fmt.Fprintf(w, "* %s: **%.2f×** (%.2f–%.2f; %s)\n", q.name, nv/dv, lo, hi, q.targetNote())
	}
	fmt.Fprintln(w)
	for _, row := range []int{rowFloor3, rowCommands, rowScript} {
		if f := rows[row].usecPerCall; len(f) > 0 {
			fmt.Fprintf(w, "%s usec_per_call (INFO commandstats, without network, as scripts/bench-scripts.sh reports): %.1f µs median.\n",
				rowLabels[row], median(append([]float64(nil), f...)))
		}
	}
	for _, row := range []int{rowClusterFresh, rowClusterHot, rowCluster6} {
		if c := rows[row].calls; len(c) > 0 {
			fmt.Fprintf(w, "%s: %.2f script calls per check (EVALSHA and EVAL on every master, INFO commandstats), median.\n",
				rowLabels[row], median(append([]float64(nil), c...)))
		}
	}
	fmt.Fprintln(w, "Verdicts and statuses over all rounds:")
	for i := range numRows {
		r := &rows[i]
		if len(r.runs) == 0 {
			continue
		}
		statuses, actions := map[string]int64{}, map[string]int64{}
		var reqs, errs int64
		rps := make([]float64, len(r.runs))
		for j, run := range r.runs {
			reqs += run.Requests
			errs += run.Errors
			rps[j] = run.ReqPerSec
			for k, v := range run.Statuses {
				statuses[k] += v
			}
			for k, v := range run.Actions {
				actions[k] += v
			}
		}
		fmt.Fprintf(w, "  %-8s %d requests, %d errors, median %.0f req/s; statuses %s; actions %s\n",
			rowLabels[i], reqs, errs, median(rps), fmtCounts(statuses, nil), fmtCounts(actions, benchActions[:]))
	}
}
