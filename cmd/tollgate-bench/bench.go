package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bounds on a bench, so that it always stops by itself.
const (
	maxBenchDuration    = 10 * time.Minute
	maxBenchRounds      = 20
	maxBenchConcurrency = 4096
)

const benchUsage = `usage: tollgate-bench [flags] URL [URL...]
       tollgate-bench ceiling [-listen ADDR]
       tollgate-bench table [flags]

Drives each running service at URL (its base, such as http://127.0.0.1:8080)
over HTTP with a closed-loop load: -c workers each send a request, wait for
the answer and send the next, for -duration. The URLs take turns within each
round (round 1: URL 1, URL 2, ...; round 2: ...), so that a noisy machine
disturbs them alike. Prints a table per run, then each figure's median over
the rounds and each URL's median req/s as a ratio of the first URL's.

A URL written envoy+http://HOST:PORT is envoyproxy/ratelimit's HTTP port, a
reference: each request is POST /json with one descriptor, the request's
address, in domain "tollgate_bench" (its config needs a limit on key "ip"
there); -load cycle sends it checks only.

tollgate-bench ceiling serves the Go ceiling to compare with: a bare Go
JSON-over-HTTP server (tollgate-bench ceiling -h).

flags:
  -load check|cycle     check: POST /v1/check {"flow":"login","account","ip",
                        "password_fingerprint"};
                        cycle: a login: a check, then, when it proceeds, a
                        report of a failure (a success 1 time in 10) with the
                        attempt token; a cycle counts as one request
                        (default check)
  -subjects random|hot  random: a new account, IPv4 address and password for
                        every check;
                        hot: one account and one address for all, the attack
                        path (default random)
  -c N                  concurrent workers, 1 to 4096 (default 50)
  -duration D           length of each run, at most 10m (default 10s)
  -n N                  requests per run: a run ends when N have been sent
                        and answered, or at -duration, whichever comes first
                        (default 0: -duration alone)
  -rounds N             rounds, 1 to 20 (default 3)
  -pid PID              the process serving a URL, for its CPU per request:
                        once per URL, in the URLs' order; 0 skips one
  -redis ADDR           host:port or redis:// URL of the Redis the services
                        use, for its CPU per request (INFO cpu); or once
                        per URL, in the URLs' order, each service on a
                        Redis of its own ("" skips one): how two builds
                        compare side by side
  -json                 print the runs and the summary as JSON
`

// benchLoad is what one request of a bench is.
type benchLoad int

const (
	loadCheck benchLoad = iota // one check
	loadCycle                  // a check, then a report when it proceeds
)

func (l benchLoad) String() string {
	if l == loadCycle {
		return "cycle"
	}
	return "check"
}

func (l *benchLoad) Set(s string) error {
	switch s {
	case "check":
		*l = loadCheck
	case "cycle":
		*l = loadCycle
	default:
		return errors.New("not check or cycle")
	}
	return nil
}

// benchSubjects says whose logins a bench sends.
type benchSubjects int

const (
	subjectsRandom benchSubjects = iota // a new account and address for every request
	subjectsHot                         // one account and address for all
)

func (s benchSubjects) String() string {
	if s == subjectsHot {
		return "hot"
	}
	return "random"
}

func (s *benchSubjects) Set(v string) error {
	switch v {
	case "random":
		*s = subjectsRandom
	case "hot":
		*s = subjectsHot
	default:
		return errors.New("not random or hot")
	}
	return nil
}

// The hot subject: one account attacked from one address with one password.
const (
	hotAccount  = "hot@bench.example"
	hotIP       = "198.51.100.7"
	hotPassword = "0123456789abcdef0123456789abcdef"
)

// pidList is the repeatable -pid flag.
type pidList []int

// stringList is a flag given any number of times.
type stringList []string

func (l *stringList) String() string { return fmt.Sprint(*l) }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func (p *pidList) String() string { return fmt.Sprint(*p) }

func (p *pidList) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return errors.New("not a process id (0 to skip)")
	}
	*p = append(*p, n)
	return nil
}

// benchConfig is what a bench was asked to do.
type benchConfig struct {
	URLs        []string // the services' base URLs, without a trailing slash
	Envoy       []bool   // whether each URL is envoy's ratelimit, not tollgate
	Load        benchLoad
	Subjects    benchSubjects
	Concurrency int
	Duration    time.Duration
	Requests    int64 // requests per run; 0 for -duration alone
	Rounds      int
	PIDs        []int    // the process serving each URL; 0 when not measured
	Redis       []string // the Redis to measure: none, one for all URLs, or one per URL ("" skips one)
	JSON        bool
}

// parseBenchArgs reads bench's flags and arguments. An error means a
// usage error.
func parseBenchArgs(args []string) (*benchConfig, error) {
	cfg := &benchConfig{}
	fs := flag.NewFlagSet("tollgate-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // benchCmd prints the error once, with the usage
	fs.Usage = func() {}
	fs.Var(&cfg.Load, "load", "")
	fs.Var(&cfg.Subjects, "subjects", "")
	fs.IntVar(&cfg.Concurrency, "c", 50, "")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "")
	fs.Int64Var(&cfg.Requests, "n", 0, "")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "")
	var pids pidList
	fs.Var(&pids, "pid", "")
	var redises stringList
	fs.Var(&redises, "redis", "")
	fs.BoolVar(&cfg.JSON, "json", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() == 0:
		return nil, errors.New("no URL")
	case cfg.Duration <= 0 || cfg.Duration > maxBenchDuration:
		return nil, fmt.Errorf("-duration %v: want more than 0 and at most %v", cfg.Duration, maxBenchDuration)
	case cfg.Requests < 0:
		return nil, fmt.Errorf("-n %d: want 0 or more", cfg.Requests)
	case cfg.Rounds < 1 || cfg.Rounds > maxBenchRounds:
		return nil, fmt.Errorf("-rounds %d: want 1 to %d", cfg.Rounds, maxBenchRounds)
	case cfg.Concurrency < 1 || cfg.Concurrency > maxBenchConcurrency:
		return nil, fmt.Errorf("-c %d: want 1 to %d", cfg.Concurrency, maxBenchConcurrency)
	case len(pids) > 0 && len(pids) != fs.NArg():
		return nil, fmt.Errorf("%d -pid for %d URLs: give one per URL, 0 to skip one", len(pids), fs.NArg())
	case len(redises) > 1 && len(redises) != fs.NArg():
		return nil, fmt.Errorf("%d -redis for %d URLs: give one for all, or one per URL", len(redises), fs.NArg())
	}
	cfg.Redis = redises
	for _, raw := range fs.Args() {
		base, envoy := strings.CutPrefix(raw, "envoy+")
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an http://, https:// or envoy+http:// base URL", raw)
		}
		cfg.URLs = append(cfg.URLs, strings.TrimRight(base, "/"))
		cfg.Envoy = append(cfg.Envoy, envoy)
	}
	cfg.PIDs = make([]int, len(cfg.URLs))
	copy(cfg.PIDs, pids)
	return cfg, nil
}

// benchCmd runs `tollgate-bench`: see benchUsage. It returns 2 on a usage
// error, 1 when a service, process or Redis to measure cannot be reached or
// when ctx is cancelled (SIGINT) before the last run, else 0.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseBenchArgs(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, benchUsage)
			return 0
		}
		fmt.Fprintf(stderr, "tollgate-bench: %v\n%s", err, benchUsage)
		return 2
	}
	b, err := newBencher(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate-bench: %v\n", err)
		return 1
	}
	defer b.close()
	if err := b.probe(ctx); err != nil {
		fmt.Fprintf(stderr, "tollgate-bench: %v\n", err)
		return 1
	}

	rep := &benchReport{
		Load: cfg.Load.String(), Subjects: cfg.Subjects.String(), Concurrency: cfg.Concurrency,
		Duration: cfg.Duration.String(), Rounds: cfg.Rounds, URLs: cfg.URLs, PIDs: cfg.PIDs,
		Runs: []benchRun{}, Summary: []benchSummary{},
	}
	if !cfg.JSON {
		writeBenchHeader(stdout, cfg)
	}
	total := cfg.Rounds * len(cfg.URLs)
runs:
	for round := 1; round <= cfg.Rounds; round++ {
		for i := range cfg.URLs {
			r, err := b.run(ctx, round, i)
			if ctx.Err() != nil {
				rep.Interrupted = true
				break runs
			}
			if err != nil {
				fmt.Fprintf(stderr, "tollgate-bench: round %d, %s: %v\n", round, cfg.URLs[i], err)
				return 1
			}
			rep.Runs = append(rep.Runs, r)
			if !cfg.JSON {
				writeRunTable(stdout, cfg, r)
			}
		}
	}
	rep.Summary = append(rep.Summary, summarize(cfg, rep.Runs)...)
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "tollgate-bench: %v\n", err)
			return 1
		}
	} else {
		writeSummary(stdout, cfg, rep.Summary)
	}
	if rep.Interrupted {
		fmt.Fprintf(stderr, "tollgate-bench: interrupted after %d of %d runs; the run in progress is left out\n", len(rep.Runs), total)
		return 1
	}
	return 0
}

// benchReport is a bench's output; -json prints it as is.
type benchReport struct {
	Load        string         `json:"load"`
	Subjects    string         `json:"subjects"`
	Concurrency int            `json:"concurrency"`
	Duration    string         `json:"duration"`
	Rounds      int            `json:"rounds"`
	URLs        []string       `json:"urls"`
	PIDs        []int          `json:"pids"`
	Interrupted bool           `json:"interrupted"`
	Runs        []benchRun     `json:"runs"`
	Summary     []benchSummary `json:"summary"`
}

// benchRun is what one run, one URL in one round, measured. A request is
// a check, or with -load cycle a whole cycle; requests still in flight when
// the run ends are not counted.
type benchRun struct {
	Round int    `json:"round"`
	URL   string `json:"url"`
	// Seconds is the run's length.
	Seconds float64 `json:"seconds"`
	// Requests counts the requests answered: checks, or cycles whose calls
	// were all answered, whatever the HTTP status.
	Requests int64 `json:"requests"`
	// Calls counts HTTP calls answered: checks and reports.
	Calls int64 `json:"calls"`
	// Errors counts calls that got no HTTP answer (transport errors).
	Errors      int64   `json:"errors"`
	ReqPerSec   float64 `json:"req_per_s"`
	CallsPerSec float64 `json:"calls_per_s"`
	// P50us and P99us are request latencies in microseconds, from a
	// histogram whose buckets are at most 1.6% wide.
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	// ServerCPU is the CPU time (user and system) the -pid process used
	// during the run, in µs per request; null without -pid or requests.
	ServerCPU *float64 `json:"server_cpu_us_per_req"`
	// RedisCPU is the same for Redis, from INFO cpu; null without -redis.
	RedisCPU *float64 `json:"redis_cpu_us_per_req"`
	// BenchCPU is the same for this bench process, which shares the machine.
	BenchCPU *float64 `json:"bench_cpu_us_per_req"`
	// Statuses counts the answered calls by HTTP status; they add up to Calls.
	Statuses map[string]int64 `json:"statuses"`
	// Actions counts the verdicts of the checks answered 200 by action
	// (proceed, delay, captcha; other for a body without one of them).
	Actions map[string]int64 `json:"actions"`
}

// benchSummary is one URL's medians over the rounds.
type benchSummary struct {
	URL            string   `json:"url"`
	Rounds         int      `json:"rounds"`
	ReqPerSec      float64  `json:"req_per_s"`
	ReqPerSecMin   float64  `json:"req_per_s_min"`
	ReqPerSecMax   float64  `json:"req_per_s_max"`
	CallsPerSec    float64  `json:"calls_per_s"`
	P50us          float64  `json:"p50_us"`
	P99us          float64  `json:"p99_us"`
	ServerCPU      *float64 `json:"server_cpu_us_per_req"`
	RedisCPU       *float64 `json:"redis_cpu_us_per_req"`
	BenchCPU       *float64 `json:"bench_cpu_us_per_req"`
	Errors         int64    `json:"errors"` // over all rounds
	ReqPerSecRatio float64  `json:"req_per_s_ratio"`
	// ServerCPURatio is the median server CPU per request over the first
	// URL's; null unless both were measured.
	ServerCPURatio *float64 `json:"server_cpu_ratio"`
}

// bencher runs the runs of one bench with one HTTP client.
type bencher struct {
	cfg       *benchConfig
	transport *http.Transport
	client    *http.Client
	redis     []*redis.Client // -redis's, in order (nil for ""): one for every URL, or one per URL
}

func newBencher(cfg *benchConfig) (*bencher, error) {
	tr := &http.Transport{
		Proxy:               nil, // straight to the service, whatever the environment says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: cfg.Concurrency, // every worker keeps its connection
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	b := &bencher{cfg: cfg, transport: tr, client: &http.Client{Transport: tr}}
	b.redis = make([]*redis.Client, len(cfg.Redis))
	for i, addr := range cfg.Redis {
		if addr == "" {
			continue
		}
		opt := &redis.Options{Addr: addr}
		if strings.Contains(addr, "://") {
			var err error
			if opt, err = redis.ParseURL(addr); err != nil {
				b.close()
				return nil, fmt.Errorf("-redis %s: %w", addr, err)
			}
		}
		b.redis[i] = newCPUClient(opt)
	}
	return b, nil
}

// newCPUClient is a client that reads a Redis's CPU counter: one
// connection, no retries, short timeouts.
func newCPUClient(opt *redis.Options) *redis.Client {
	opt.PoolSize, opt.MaxRetries, opt.DialerRetries = 1, -1, 1
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	return redis.NewClient(opt)
}

func (b *bencher) close() {
	b.transport.CloseIdleConnections()
	for _, c := range b.redis {
		if c != nil {
			c.Close()
		}
	}
}

// probe fails fast on a URL that does not answer HTTP, a process that is
// not there and a Redis that does not answer INFO: one check to each URL
// (any HTTP status will do) and one reading of each CPU counter.
func (b *bencher) probe(ctx context.Context) error {
	for i := range b.cfg.URLs {
		if err := b.probeTarget(ctx, b.target(i)); err != nil {
			return err
		}
	}
	return b.probeRedis(ctx)
}

// probeTarget sends t one check (any HTTP status will do) and reads its
// process's CPU counter.
func (b *bencher) probeTarget(ctx context.Context, t benchTarget) error {
	w := newBenchWorker(b, t.Subjects)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.newSubject()
	check, body := t.URL+"/v1/check", w.checkBody()
	if t.Envoy {
		check, body = t.URL+"/json", w.envoyBody()
	}
	if _, _, err := w.post(cctx, check, body); err != nil {
		return err
	}
	if t.PID != 0 {
		if _, err := procCPU(t.PID); err != nil {
			return fmt.Errorf("-pid %d: %w", t.PID, err)
		}
	}
	return nil
}

// probeRedis reads Redis's CPU counter once, when there is a Redis to
// measure.
func (b *bencher) probeRedis(ctx context.Context) error {
	for i, c := range b.redis {
		if c == nil {
			continue
		}
		if _, err := redisCPU(ctx, c); err != nil {
			return fmt.Errorf("-redis %s: %w", b.cfg.Redis[i], err)
		}
	}
	return nil
}

// cpuReading is the CPU time used so far by the processes a run measures.
type cpuReading struct {
	server, redis, bench time.Duration
}

func (b *bencher) readCPU(ctx context.Context, t benchTarget) (cpuReading, error) {
	var c cpuReading
	var err error
	if t.PID != 0 {
		if c.server, err = procCPU(t.PID); err != nil {
			return c, fmt.Errorf("server CPU (-pid %d): %w", t.PID, err)
		}
	}
	for _, rdb := range b.redisOf(t) {
		cpu, err := redisCPU(ctx, rdb)
		if err != nil {
			return c, fmt.Errorf("redis CPU: %w", err)
		}
		c.redis += cpu
	}
	if c.bench, err = procCPU(os.Getpid()); err != nil {
		return c, fmt.Errorf("own CPU: %w", err)
	}
	return c, nil
}

// benchTarget is what one run drives: a service, the process serving it
// and whose logins it sends.
type benchTarget struct {
	URL      string
	Envoy    bool // envoy's ratelimit, not tollgate
	PID      int  // 0 when not measured
	Subjects benchSubjects
	// Redis are the Redis servers the service uses (a Cluster's masters),
	// whose CPU a run measures as their sum. Nil: the bencher's -redis.
	Redis []*redis.Client
	index int // the URL's place in the bench's configuration
}

// redisOf is the Redis servers whose CPU a run of t measures: t.Redis,
// or -redis's for t's URL; none without either.
func (b *bencher) redisOf(t benchTarget) []*redis.Client {
	switch {
	case t.Redis != nil:
		return t.Redis
	case len(b.redis) == 1 && b.redis[0] != nil: // one -redis for every URL
		return b.redis
	case t.index < len(b.redis) && b.redis[t.index] != nil:
		return []*redis.Client{b.redis[t.index]}
	}
	return nil
}

// target is URL i of the bench's configuration.
func (b *bencher) target(i int) benchTarget {
	return benchTarget{URL: b.cfg.URLs[i], Envoy: b.cfg.Envoy[i], PID: b.cfg.PIDs[i], Subjects: b.cfg.Subjects, index: i}
}

// run drives URL i for one run and returns what it measured.
func (b *bencher) run(ctx context.Context, round, i int) (benchRun, error) {
	r, err := b.runTarget(ctx, b.target(i))
	r.Round = round
	return r, err
}

// runTarget drives t for one run, -duration long or until -n requests
// have been answered, and returns what it measured (without a round).
func (b *bencher) runTarget(ctx context.Context, t benchTarget) (benchRun, error) {
	b.transport.CloseIdleConnections() // each run opens its own connections
	before, err := b.readCPU(ctx, t)
	if err != nil {
		return benchRun{}, err
	}
	st := &runStats{limit: b.cfg.Requests}
	rctx, cancel := context.WithTimeout(ctx, b.cfg.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range b.cfg.Concurrency {
		w := newBenchWorker(b, t.Subjects)
		wg.Go(func() { w.loop(rctx, t.URL, t.Envoy, st) })
	}
	// With -n, the run ends when every worker has stopped taking requests
	// and its last one is answered.
	go func() { wg.Wait(); cancel() }()
	<-rctx.Done()
	elapsed := time.Since(start)
	wg.Wait()
	if ctx.Err() != nil {
		return benchRun{}, ctx.Err()
	}
	after, err := b.readCPU(ctx, t)
	if err != nil {
		return benchRun{}, err
	}

	r := benchRun{
		URL:      t.URL,
		Seconds:  elapsed.Seconds(),
		Requests: st.requests.Load(),
		Calls:    st.calls.Load(),
		Errors:   st.errors.Load(),
		Statuses: map[string]int64{},
		Actions:  map[string]int64{},
	}
	r.ReqPerSec = float64(r.Requests) / r.Seconds
	r.CallsPerSec = float64(r.Calls) / r.Seconds
	r.P50us, r.P99us = st.latency.quantile(0.50), st.latency.quantile(0.99)
	perReq := func(d time.Duration) *float64 {
		if r.Requests == 0 {
			return nil
		}
		v := float64(d.Microseconds()) / float64(r.Requests)
		return &v
	}
	if t.PID != 0 {
		r.ServerCPU = perReq(after.server - before.server)
	}
	if b.redisOf(t) != nil {
		r.RedisCPU = perReq(after.redis - before.redis)
	}
	r.BenchCPU = perReq(after.bench - before.bench)
	for code := range st.statuses {
		if n := st.statuses[code].Load(); n > 0 {
			key := strconv.Itoa(code)
			if code == 0 {
				key = "other"
			}
			r.Statuses[key] = n
		}
	}
	for a, name := range benchActions {
		if n := st.actions[a].Load(); n > 0 {
			r.Actions[name] = n
		}
	}
	return r, nil
}

// redisCPU reads used_cpu_sys + used_cpu_user from rdb's INFO cpu.
func redisCPU(ctx context.Context, rdb *redis.Client) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := rdb.Info(cctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	return parseRedisCPU(info)
}

// parseRedisCPU returns used_cpu_sys + used_cpu_user (in seconds, with
// microsecond digits) from the text of INFO cpu.
func parseRedisCPU(info string) (time.Duration, error) {
	var total float64
	found := 0
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || s < 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			return 0, fmt.Errorf("INFO cpu: %s is %q", k, v)
		}
		total += s
		found++
	}
	if found != 2 {
		return 0, errors.New("INFO cpu lacks used_cpu_sys or used_cpu_user")
	}
	return time.Duration(math.Round(total*1e6)) * time.Microsecond, nil
}

// clockTicks is the unit of the times in /proc/PID/stat: USER_HZ, which
// sysconf(_SC_CLK_TCK) reports and which Linux fixes at 100 for user space
// on every architecture.
const clockTicks = 100

// procCPU returns the CPU time, user and system, that process pid has used
// so far: all its threads, not its children, in steps of 10ms.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(b)
}

// parseProcStat returns utime + stime (fields 14 and 15) from the text of
// /proc/PID/stat.
func parseProcStat(b []byte) (time.Duration, error) {
	// Field 2 is the command name in parentheses, which may itself hold
	// spaces and parentheses: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, errors.New("/proc stat: too few fields")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || utime+stime > math.MaxInt64/uint64(time.Second) {
		return 0, fmt.Errorf("/proc stat: utime %q, stime %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// benchActions are the verdict actions a bench counts, in runStats.actions'
// order; "other" is a 200 answer without a known action.
var benchActions = [...]string{"proceed", "delay", "captcha", "other"}

// runStats is what the workers of one run count. Its size is fixed,
// whatever the number of requests.
type runStats struct {
	limit                   int64        // requests to send; 0 for no limit
	sent                    atomic.Int64 // requests started
	requests, calls, errors atomic.Int64
	statuses                [600]atomic.Int64 // by HTTP status; 0 for one outside 100-599
	actions                 [len(benchActions)]atomic.Int64
	latency                 latencyHist
}

func (s *runStats) answered(status int) {
	s.calls.Add(1)
	if status < 100 || status >= len(s.statuses) {
		status = 0
	}
	s.statuses[status].Add(1)
}

func (s *runStats) verdict(action string) {
	i := slices.Index(benchActions[:3], action)
	if i < 0 {
		i = 3
	}
	s.actions[i].Add(1)
}

// benchVerdict is the part of a verdict a bench reads.
type benchVerdict struct {
	Action  string `json:"action"`
	Attempt string `json:"attempt"`
}

// maxAnswer bounds the answer body a bench reads.
const maxAnswer = 64 << 10

// benchWorker sends one request at a time.
type benchWorker struct {
	b        *bencher
	subjects benchSubjects
	account  string
	ip       string
	password string
	buf      bytes.Buffer
}

func newBenchWorker(b *bencher, subjects benchSubjects) *benchWorker {
	return &benchWorker{b: b, subjects: subjects, account: hotAccount, ip: hotIP, password: hotPassword}
}

// loop sends requests to base until ctx is done: to tollgate, or to envoy's
// ratelimit.
func (w *benchWorker) loop(ctx context.Context, base string, envoy bool, st *runStats) {
	check, report := base+"/v1/check", base+"/v1/report"
	request := w.request
	if envoy {
		check, request = base+"/json", w.envoyRequest
	}
	for ctx.Err() == nil {
		if st.limit > 0 && st.sent.Add(1) > st.limit {
			return
		}
		start := time.Now()
		err := request(ctx, check, report, st)
		switch {
		case err == nil:
			st.requests.Add(1)
			st.latency.add(time.Since(start))
		case ctx.Err() != nil: // the run is over: a call cut short is not counted
			return
		default:
			st.errors.Add(1)
			// Don't spin on a service that refuses connections.
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}
}

// request sends one request: a check, and with -load cycle its report.
func (w *benchWorker) request(ctx context.Context, check, report string, st *runStats) error {
	w.newSubject()
	status, v, err := w.post(ctx, check, w.checkBody())
	if err != nil {
		return err
	}
	st.answered(status)
	if status == http.StatusOK {
		st.verdict(v.Action)
	}
	if w.b.cfg.Load != loadCycle || status != http.StatusOK || v.Action != "proceed" {
		return nil
	}
	outcome := "failure"
	if rand.IntN(10) == 0 {
		outcome = "success"
	}
	status, _, err = w.post(ctx, report, w.reportBody(outcome, v.Attempt))
	if err != nil {
		return err
	}
	st.answered(status)
	return nil
}

// envoyRequest sends one check to envoy's ratelimit: one descriptor, the
// address. An OK answers 200 and OVER_LIMIT 429; both are answers.
func (w *benchWorker) envoyRequest(ctx context.Context, check, _ string, st *runStats) error {
	w.newSubject()
	status, _, err := w.post(ctx, check, w.envoyBody())
	if err != nil {
		return err
	}
	st.answered(status)
	return nil
}

// newSubject picks the account, address and password of the next request.
func (w *benchWorker) newSubject() {
	if w.subjects == subjectsHot {
		return
	}
	w.account = fmt.Sprintf("u%016x@bench.example", rand.Uint64())
	ip := rand.Uint32()
	w.ip = fmt.Sprintf("%d.%d.%d.%d", byte(ip>>24), byte(ip>>16), byte(ip>>8), byte(ip))
	w.password = fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

// envoyBody is a ratelimit request with one descriptor, the address.
func (w *benchWorker) envoyBody() []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"domain":"tollgate_bench","descriptors":[{"entries":[{"key":"ip","value":"`...)
	b = append(b, w.ip...)
	return append(b, `"}]}]}`...)
}

// checkBody is a fresh body for each request: the transport may still read
// a body after the answer has come.
func (w *benchWorker) checkBody() []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"flow":"login","account":"`...)
	b = append(b, w.account...)
	b = append(b, `","ip":"`...)
	b = append(b, w.ip...)
	b = append(b, `","password_fingerprint":"`...)
	b = append(b, w.password...)
	return append(b, `"}`...)
}

func (w *benchWorker) reportBody(outcome, attempt string) []byte {
	quoted, _ := json.Marshal(attempt) // the service's token, whatever it holds
	b := make([]byte, 0, 160+len(quoted))
	b = append(b, `{"flow":"login","account":"`...)
	b = append(b, w.account...)
	b = append(b, `","ip":"`...)
	b = append(b, w.ip...)
	b = append(b, `","password_fingerprint":"`...)
	b = append(b, w.password...)
	b = append(b, `","outcome":"`...)
	b = append(b, outcome...)
	b = append(b, `","attempt":`...)
	b = append(b, quoted...)
	return append(b, '}')
}

// post sends body and returns the answer's status and, for a 200, the
// verdict in it (zero when the body holds none). err is a transport error.
func (w *benchWorker) post(ctx context.Context, url string, body []byte) (int, benchVerdict, error) {
	var v benchVerdict
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, v, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.b.client.Do(req)
	if err != nil {
		return 0, v, err
	}
	w.buf.Reset()
	_, err = w.buf.ReadFrom(io.LimitReader(res.Body, maxAnswer))
	res.Body.Close()
	if err != nil {
		return 0, v, err
	}
	if res.StatusCode == http.StatusOK {
		_ = json.Unmarshal(w.buf.Bytes(), &v) // a body without a verdict counts as action "other"
	}
	return res.StatusCode, v, nil
}

// latencyHist counts latencies in log-linear buckets of microseconds: one
// per µs below 64µs, then 64 per power of two, so a bucket is at most 1/64
// (1.6%) of its values wide, up to 2^32 µs (71 minutes), beyond which all
// fall in the last bucket. Its size is fixed (14 KiB). Safe for concurrent
// use.
type latencyHist struct {
	counts [histBuckets]atomic.Int64
}

const (
	histSub     = 64                 // buckets per power of two
	histBuckets = (32 - 5) * histSub // up to 2^32 µs
)

// histIndex returns the bucket of a latency of us microseconds.
func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	e := bits.Len64(us) - 7 // us>>e is in [64, 128)
	return min((e+1)*histSub+int(us>>e)-histSub, histBuckets-1)
}

// histBucket returns the lowest value of bucket i and its width.
func histBucket(i int) (lo, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	e := i/histSub - 1
	return uint64(histSub+i%histSub) << e, 1 << e
}

func (h *latencyHist) add(d time.Duration) {
	h.counts[histIndex(uint64(max(d.Microseconds(), 0)))].Add(1)
}

// quantile returns the middle of the bucket that holds the q-quantile, in
// microseconds; 0 when the histogram is empty.
func (h *latencyHist) quantile(q float64) float64 {
	var n int64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(n))), 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, width := histBucket(i)
			return float64(lo) + float64(width)/2
		}
	}
	return 0 // not reached
}

// summarize computes each URL's medians over its runs, and its ratios to
// the first URL.
func summarize(cfg *benchConfig, runs []benchRun) []benchSummary {
	var out []benchSummary
	for _, u := range cfg.URLs {
		var mine []benchRun
		for _, r := range runs {
			if r.URL == u {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			continue
		}
		s := benchSummary{URL: u, Rounds: len(mine)}
		field := func(get func(benchRun) float64) float64 {
			vs := make([]float64, len(mine))
			for i, r := range mine {
				vs[i] = get(r)
			}
			return median(vs)
		}
		optional := func(get func(benchRun) *float64) *float64 {
			var vs []float64
			for _, r := range mine {
				if v := get(r); v != nil {
					vs = append(vs, *v)
				}
			}
			if len(vs) == 0 {
				return nil
			}
			m := median(vs)
			return &m
		}
		s.ReqPerSec = field(func(r benchRun) float64 { return r.ReqPerSec })
		s.CallsPerSec = field(func(r benchRun) float64 { return r.CallsPerSec })
		s.P50us = field(func(r benchRun) float64 { return r.P50us })
		s.P99us = field(func(r benchRun) float64 { return r.P99us })
		s.ServerCPU = optional(func(r benchRun) *float64 { return r.ServerCPU })
		s.RedisCPU = optional(func(r benchRun) *float64 { return r.RedisCPU })
		s.BenchCPU = optional(func(r benchRun) *float64 { return r.BenchCPU })
		s.ReqPerSecMin, s.ReqPerSecMax = math.Inf(1), 0
		for _, r := range mine {
			s.ReqPerSecMin = min(s.ReqPerSecMin, r.ReqPerSec)
			s.ReqPerSecMax = max(s.ReqPerSecMax, r.ReqPerSec)
			s.Errors += r.Errors
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil
	}
	first := out[0]
	for i := range out {
		if first.ReqPerSec > 0 {
			out[i].ReqPerSecRatio = out[i].ReqPerSec / first.ReqPerSec
		}
		if first.ServerCPU != nil && out[i].ServerCPU != nil && *first.ServerCPU > 0 {
			r := *out[i].ServerCPU / *first.ServerCPU
			out[i].ServerCPURatio = &r
		}
	}
	return out
}

// median returns the median of vs (the mean of the middle two for an even
// count); it sorts vs.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func writeBenchHeader(w io.Writer, cfg *benchConfig) {
	fmt.Fprintf(w, "tollgate-bench: -load %s -subjects %s -c %d -duration %v -n %d -rounds %d, URLs in turn within each round\n",
		cfg.Load, cfg.Subjects, cfg.Concurrency, cfg.Duration, cfg.Requests, cfg.Rounds)
	for i, u := range cfg.URLs {
		pid := "no -pid"
		if cfg.PIDs[i] != 0 {
			pid = "pid " + strconv.Itoa(cfg.PIDs[i])
		}
		fmt.Fprintf(w, "  URL %d: %s (%s)\n", i+1, u, pid)
	}
	for i, addr := range cfg.Redis {
		switch {
		case addr == "":
		case len(cfg.Redis) == 1:
			fmt.Fprintf(w, "  Redis: %s\n", redactRedis(addr))
		default:
			fmt.Fprintf(w, "  Redis of URL %d: %s\n", i+1, redactRedis(addr))
		}
	}
	unit := "a check"
	if cfg.Load == loadCycle {
		unit = "a cycle (check, then report when it proceeds); CALLS/S counts both calls"
	}
	fmt.Fprintf(w, "  a request is %s; CPU columns are µs of CPU per request\n\n", unit)
}

// redactRedis hides a password in a redis:// URL.
func redactRedis(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}

func writeRunTable(w io.Writer, cfg *benchConfig, r benchRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	calls, callsHead := "", ""
	if cfg.Load == loadCycle {
		callsHead, calls = "CALLS/S\t", fmt.Sprintf("%.0f\t", r.CallsPerSec)
	}
	fmt.Fprintf(tw, "ROUND\tURL\tREQ/S\t%sP50\tP99\tSERVER CPU\tREDIS CPU\tBENCH CPU\tERRORS\tSTATUSES\tACTIONS\n", callsHead)
	fmt.Fprintf(tw, "%d/%d\t%s\t%.0f\t%s%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
		r.Round, cfg.Rounds, r.URL, r.ReqPerSec, calls, fmtMicros(r.P50us), fmtMicros(r.P99us),
		fmtCPU(r.ServerCPU), fmtCPU(r.RedisCPU), fmtCPU(r.BenchCPU), r.Errors,
		fmtCounts(r.Statuses, nil), fmtCounts(r.Actions, benchActions[:]))
	tw.Flush()
	fmt.Fprintln(w)
}

func writeSummary(w io.Writer, cfg *benchConfig, sums []benchSummary) {
	if len(sums) == 0 {
		return
	}
	fmt.Fprintf(w, "median over rounds (-load %s -subjects %s -c %d -duration %v)\n", cfg.Load, cfg.Subjects, cfg.Concurrency, cfg.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	callsHead := ""
	if cfg.Load == loadCycle {
		callsHead = "CALLS/S\t"
	}
	fmt.Fprintf(tw, "URL\tROUNDS\tREQ/S\tMIN-MAX\t%sP50\tP99\tSERVER CPU\tREDIS CPU\tBENCH CPU\tERRORS\tREQ/S RATIO\n", callsHead)
	for _, s := range sums {
		calls := ""
		if cfg.Load == loadCycle {
			calls = fmt.Sprintf("%.0f\t", s.CallsPerSec)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f-%.0f\t%s%s\t%s\t%s\t%s\t%s\t%d\t%.2f\n",
			s.URL, s.Rounds, s.ReqPerSec, s.ReqPerSecMin, s.ReqPerSecMax, calls, fmtMicros(s.P50us), fmtMicros(s.P99us),
			fmtCPU(s.ServerCPU), fmtCPU(s.RedisCPU), fmtCPU(s.BenchCPU), s.Errors, s.ReqPerSecRatio)
	}
	tw.Flush()
	for _, s := range sums[1:] {
		line := fmt.Sprintf("ratio %s / %s: median req/s %.2f", s.URL, sums[0].URL, s.ReqPerSecRatio)
		if s.ServerCPURatio != nil {
			line += fmt.Sprintf(", median server CPU per request %.2f", *s.ServerCPURatio)
		}
		fmt.Fprintln(w, line)
	}
}

// fmtMicros writes a latency given in microseconds.
func fmtMicros(us float64) string {
	switch {
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 1e6:
		return fmt.Sprintf("%.2fms", us/1e3)
	}
	return fmt.Sprintf("%.2fs", us/1e6)
}

// fmtCPU writes a CPU time per request in microseconds, or "-" when it was
// not measured.
func fmtCPU(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1fµs", *v)
}

// fmtCounts writes counts as "key:n key:n", in the order of keys when
// given, else sorted; "-" when there are none.
func fmtCounts(m map[string]int64, keys []string) string {
	if keys == nil {
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	var sb strings.Builder
	for _, k := range keys {
		if n, ok := m[k]; ok {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%s:%d", k, n)
		}
	}
	if sb.Len() == 0 {
		return "-"
	}
	return sb.String()
}
