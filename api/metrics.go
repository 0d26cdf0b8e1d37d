package api

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Metrics are tollgate's Prometheus metrics. Its Observe method is the
// engine's authguard.Config.Observe hook; the API records HTTP metrics on
// it. It is safe for concurrent use. Every label value comes from a bounded
// set: configured flow names, actions, reasons, route patterns, problem
// types and a fixed list of methods — never an identifier.
type Metrics struct {
	reg       *prometheus.Registry
	shadow    atomic.Pointer[map[string]bool] // flows in shadow mode; SetPolicy swaps it
	reloads   *prometheus.CounterVec
	verdicts  *prometheus.CounterVec
	reasons   *prometheus.CounterVec
	shadowed  *prometheus.CounterVec
	storeErr  *prometheus.CounterVec
	fallback  *prometheus.CounterVec
	storeTime *prometheus.HistogramVec
	closed    *prometheus.CounterVec
	recalled  *prometheus.CounterVec
	engErr    *prometheus.CounterVec
	problems  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	sends     *prometheus.CounterVec
	spend     *prometheus.CounterVec
	authFail  *prometheus.CounterVec
	admin     *prometheus.CounterVec
	evictions *evictions
	mismatch  prometheus.Gauge
	evicting  prometheus.Gauge
	forgets   prometheus.Gauge
	open      prometheus.Gauge
	// unsettled counts reports without a valid attempt token;
	// unsettledLog samples their log lines.
	unsettled    *prometheus.CounterVec
	unsettledLog unsettledLog
	// The children every call touches, by their label values: a map lookup
	// instead of WithLabelValues's hashing and label checks, which every
	// verdict, store call and request would pay.
	verdictOf   children[[3]string, prometheus.Counter] // call, flow, action
	storeTimeOf children[string, prometheus.Observer]   // call
	latencyOf   children[latencyLabels, prometheus.Observer]
}

// latencyLabels are tollgate_http_request_duration_seconds's labels, the
// status code as a number.
type latencyLabels struct {
	method, route string
	status        int
}

// children caches a metric vector's children by their label values. Each
// is created by the vector, the first time it is asked for, as
// WithLabelValues would; no vector here deletes a child, so a cached child
// stays the vector's own and the exposition is the same, series for series.
// The keys are the vector's label values, bounded as they are.
type children[K comparable, M any] struct {
	mu sync.RWMutex
	m  map[K]M
}

// load returns the child for k, false when none is cached yet.
func (c *children[K, M]) load(k K) (M, bool) {
	c.mu.RLock()
	m, ok := c.m[k]
	c.mu.RUnlock()
	return m, ok
}

// store caches m, the vector's child for k, and returns it.
func (c *children[K, M]) store(k K, m M) M {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[K]M)
	}
	c.m[k] = m
	c.mu.Unlock()
	return m
}

// NewMetrics returns Metrics registered on a registry of their own, with
// the Go runtime and process collectors. The policy tells which flows are in
// shadow mode; nil means none is.
func NewMetrics(policy *authguard.Policy) *Metrics {
	callFlow := []string{"call", "flow"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_config_reloads_total",
			Help: "Configuration reloads (SIGHUP, POST /v1/admin/reload), by result: ok, or invalid (the file does not load or validate, or its policy cannot replace the running one; the running policy stays).",
		}, []string{"result"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_verdicts_total",
			Help: "Verdicts answered, by call (check, report, send), flow and action.",
		}, []string{"call", "flow", "action"}),
		reasons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_verdict_reasons_total",
			Help: "Reasons given in verdicts, by call, flow, action and reason; a verdict with two reasons counts twice.",
		}, []string{"call", "flow", "action", "reason"}),
		shadowed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_shadow_verdicts_total",
			Help: "Verdicts computed for flows in shadow mode (which always answer proceed), by call, flow and the computed action.",
		}, []string{"call", "flow", "action"}),
		storeErr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_store_errors_total",
			Help: "Calls on which the store failed, by call, flow and kind (" + strings.Join(authguard.StoreErrorKinds(), ", ") +
				"; full: the store answers but refuses writes, out of memory).",
		}, []string{"call", "flow", "kind"}),
		storeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tollgate_store_duration_seconds",
			Help:    "Time the store took to answer or fail one call's batch (one round trip on Redis), by call.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}, []string{"call"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_fallback_answers_total",
			Help: "Verdicts of fail-open flows answered from the local fallback store while the store failed.",
		}, callFlow),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_fail_closed_answers_total",
			Help: "Verdicts answered without any store (the fail-closed delay).",
		}, callFlow),
		recalled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_recall_answers_total",
			Help: "Checks and sends answered without the store while this instance was flooded, because what the store last answered for their keys refuses them.",
		}, callFlow),
		engErr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_engine_errors_total",
			Help: "Engine calls that failed other than on invalid input (answered 500; a bug).",
		}, []string{"call"}),
		problems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_http_problems_total",
			Help: "Problem responses, by problem type slug.",
		}, []string{"type"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tollgate_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method, route pattern and status code.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route", "code"}),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_otp_sends_total",
			Help: "One-time-code send requests answered, by flow, channel, country (a phone destination's region such as GB; " +
				"none for e-mail) and action: proceed counts codes that may go out.",
		}, []string{"flow", "channel", "country", "action"}),
		spend: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_otp_spend_total",
			Help: "The price (the flow's prices, in its cost units) of the one-time codes answered proceed, by flow, channel and country.",
		}, []string{"flow", "channel", "country"}),
		authFail: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_auth_failures_total",
			Help: "Calls refused for their bearer token, by reason (missing, malformed, algorithm, unknown_key, signature, expired, lifetime, not_yet_valid, audience, issuer, tenant, type: 401; scope: 403).",
		}, []string{"reason"}),
		admin: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_admin_writes_total",
			Help: "Administrators' writes done, by action (reset); each is also an audit log line.",
		}, []string{"action"}),
		unsettled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_reports_without_attempt_total",
			Help: "Reports that settled no check's attempt, by flow: they carried no attempt token, or one past the flow's attempt_ttl. " +
				"Each is counted on its own, so a failure counts twice (its check already counted it) and a success refunds nothing; " +
				"above zero, the caller probably does not pass the check's attempt token to its report.",
		}, []string{"flow"}),
		evictions: &evictions{desc: prometheus.NewDesc(
			"tollgate_store_evictions_total",
			"Keys a memory store evicted because it was full, by store (main: the embedded store; fallback: "+
				"the local store fail-open flows answer from while the main store fails) and class (probation: "+
				"ordinary state; protected: state that restricted its subject, such as an account counter in "+
				"backoff, evicted only when its shard held nothing else). Any protected eviction means the "+
				"store is too small for the attack in progress.",
			[]string{"store", "class"}, nil),
			bytes: prometheus.NewDesc("tollgate_store_bytes",
				"Bytes a memory store's keys hold as it accounts them (key, state, slot and index share), by store; at most tollgate_store_memory_limit_bytes.",
				[]string{"store"}, nil),
			limit: prometheus.NewDesc("tollgate_store_memory_limit_bytes",
				"A memory store's byte budget (memory_limit; 32 MiB for the fallback), by store.",
				[]string{"store"}, nil),
		},
		mismatch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_secret_mismatch",
			Help: "1 while the store holds another secret's check value: an instance with another TOLLGATE_SECRET (or tenant secret) " +
				"shares this store and counts apart from this one; /readyz answers 503 secret-mismatch. Always 0 on the memory store.",
		}),
		evicting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_store_evicting",
			Help: "1 while a Redis master's maxmemory-policy may evict tollgate's keys (anything but noeviction): an evicted counter is a reset one. " +
				"0 when it is noeviction, could not be read (CONFIG refused), or the store is the memory store.",
		}),
		forgets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_store_unpersisted",
			Help: "1 while a Redis master keeps neither an append-only file nor RDB snapshots: a restart brings it back empty, every counter reset. " +
				"-1 while it is unknown (CONFIG refused and INFO persistence does not tell), 0 when every master persists or the store is the memory store.",
		}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_store_unauthenticated",
			Help: "1 while a Redis master answers a connection without a password on an address that is not loopback: anyone who reaches it can reset the counters. " +
				"0 when every master requires one, is on loopback, or the store is the memory store.",
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.verdicts, m.reasons, m.shadowed, m.storeErr, m.storeTime, m.fallback, m.closed, m.recalled,
		m.engErr, m.problems, m.latency, m.sends, m.spend, m.authFail, m.admin, m.evictions, m.reloads,
		m.mismatch, m.evicting, m.forgets, m.open, m.unsettled,
	)
	m.unsettledLog.now = time.Now
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("invalid")
	m.SetPolicy(policy)
	m.admin.WithLabelValues("reset")
	for _, call := range []string{"check", "report", "send", "explain", "reset"} {
		m.engErr.WithLabelValues(call)
	}
	for _, k := range kinds {
		m.problems.WithLabelValues(k.slug)
	}
	return m
}

// SetPolicy tells the metrics the flows of a policy (nil: none): which are
// in shadow mode, and the series operators alert on, started at zero so
// that rate() works from the first scrape. NewMetrics calls it; a reload
// calls it again with the new policy (series of flows it drops stay).
func (m *Metrics) SetPolicy(policy *authguard.Policy) {
	shadow := map[string]bool{}
	for _, name := range policy.FlowNames() { // a nil Policy has none
		f := policy.Flow(name)
		shadow[name] = f.Mode == authguard.Shadow
		calls, actions := []string{"check", "report"}, []authguard.Action{authguard.Proceed, authguard.Delay, authguard.Captcha}
		if f.Kind == authguard.Sends {
			calls, actions = []string{"send"}, append(actions, authguard.Deny)
		} else if f.StepUp.Flow != "" {
			actions = append(actions, authguard.StepUp)
			m.unsettled.WithLabelValues(name)
		} else {
			m.unsettled.WithLabelValues(name)
		}
		for _, call := range calls {
			for _, a := range actions {
				m.verdicts.WithLabelValues(call, name, a.String())
			}
			for _, kind := range authguard.StoreErrorKinds() {
				m.storeErr.WithLabelValues(call, name, kind)
			}
			m.fallback.WithLabelValues(call, name)
			m.closed.WithLabelValues(call, name)
		}
	}
	m.shadow.Store(&shadow)
}

// ConfigReloaded counts a reload of the configuration: ok, or refused
// (tollgate_config_reloads_total{result="invalid"}).
func (m *Metrics) ConfigReloaded(ok bool) {
	result := "ok"
	if !ok {
		result = "invalid"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// Registry returns the registry the metrics are on, to serve or to add
// collectors to.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// AddMemoryStore reports the evictions of a memory store as
// tollgate_store_evictions_total{store=name}, one series per class, read
// from its Stats at every scrape. name is "main" for the embedded store and
// "fallback" for the fail-open fallback; adding a name twice replaces the
// store.
func (m *Metrics) AddMemoryStore(name string, s MemoryStore) {
	e := m.evictions
	e.mu.Lock()
	defer e.mu.Unlock()
	i := slices.IndexFunc(e.stores, func(n namedStore) bool { return n.name == name })
	if i < 0 {
		e.stores = append(e.stores, namedStore{name: name, store: s})
		return
	}
	e.stores[i].store = s
}

// SetSecretMismatch sets tollgate_secret_mismatch: whether the store holds
// another secret's check value (see authguard.SecretCheck).
func (m *Metrics) SetSecretMismatch(mismatch bool) { m.mismatch.Set(b2f(mismatch)) }

// SetStoreEvicting sets tollgate_store_evicting: whether the store may evict
// tollgate's keys (a Redis maxmemory-policy other than noeviction).
func (m *Metrics) SetStoreEvicting(evicting bool) { m.evicting.Set(b2f(evicting)) }

// SetStoreUnpersisted sets tollgate_store_unpersisted: 1 when the store
// keeps no persistence (a Redis master without an append-only file or
// snapshots), else -1 when that is unknown, else 0.
func (m *Metrics) SetStoreUnpersisted(unpersisted, unknown bool) {
	switch {
	case unpersisted:
		m.forgets.Set(1)
	case unknown:
		m.forgets.Set(-1)
	default:
		m.forgets.Set(0)
	}
}

// SetStoreUnauthenticated sets tollgate_store_unauthenticated: whether the
// store answers without a password on an address that is not loopback.
func (m *Metrics) SetStoreUnauthenticated(open bool) { m.open.Set(b2f(open)) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// AddBuildInfo exports tollgate_build_info{version,revision,goversion}, a
// gauge of 1 that says which build answers, as Prometheus's own build_info
// metrics do: join on it to tell instances of two versions apart.
func (m *Metrics) AddBuildInfo(version, revision, goVersion string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "tollgate_build_info",
		Help:        "1, labelled with the version, the commit (revision, empty when unknown) and the Go version the binary was built from.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	m.reg.MustRegister(g)
}

// AddDecisionLog exports a decision log's dropped lines as
// tollgate_decision_log_dropped_total.
func (m *Metrics) AddDecisionLog(dropped func() int64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tollgate_decision_log_dropped_total",
		Help: "Decision log lines dropped because the writer fell behind (a full queue): a replay of the log misses them.",
	}, func() float64 { return float64(dropped()) }))
}

// AddEngine exports what an engine keeps for store faults and floods: the
// recall (tollgate_recall_keys, tollgate_recall_bytes, tollgate_recall_records) and the write-back
// of what the fallback counted (tollgate_writeback_queued,
// tollgate_writeback_written_total, tollgate_writeback_dropped_total,
// tollgate_writeback_lost_total), read at every scrape.
func (m *Metrics) AddEngine(e EngineStats) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_recall_keys",
			Help: "Store keys whose last answer held their subject back, remembered for store faults and floods.",
		}, func() float64 { return float64(e.Recall().Keys) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_recall_bytes",
			Help: "What the remembered answers are accounted to cost (bounded by the engine's recall budget).",
		}, func() float64 { return float64(e.Recall().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_recall_records",
			Help: "Records (known networks, verified destinations) the store was last seen to hold, remembered so that the owners they exempt stay exempt through store faults and floods.",
		}, func() float64 { return float64(e.Recall().Records) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_writeback_queued",
			Help: "Operations the fail-open fallback counted that wait for the store to answer again.",
		}, func() float64 { return float64(e.WriteBack().Queued) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_writeback_written_total",
			Help: "Operations the fail-open fallback counted and wrote back to the store once it answered.",
		}, func() float64 { return float64(e.WriteBack().Written) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_writeback_dropped_total",
			Help: "Operations the fail-open fallback counted on keys that held nobody back (a counter below its free attempts, a log under its limits), shed at the write-back queue's bound or refused by a full store: the store never learns them.",
		}, func() float64 { return float64(e.WriteBack().Dropped) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_writeback_lost_total",
			Help: "Operations the fail-open fallback counted on keys that held their subject back, shed because the write-back queue held nothing else at its bound, or refused by a full store: the store never learns them. Above zero, the queue's bound is too small for the attack.",
		}, func() float64 { return float64(e.WriteBack().Lost) }),
	)
	if h, ok := e.(HeldCounter); ok { // held.go: empty while the index is off
		m.AddHeld(h)
	}
}

// evictions is the collector of tollgate_store_evictions_total.
type evictions struct {
	desc   *prometheus.Desc
	bytes  *prometheus.Desc // tollgate_store_bytes
	limit  *prometheus.Desc // tollgate_store_memory_limit_bytes
	mu     sync.Mutex
	stores []namedStore
}

type namedStore struct {
	name  string
	store MemoryStore
}

func (e *evictions) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc; ch <- e.bytes; ch <- e.limit }

func (e *evictions) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	stores := slices.Clone(e.stores)
	e.mu.Unlock()
	for _, s := range stores {
		st := s.store.Stats()
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.CounterValue, float64(st.EvictedProbation), s.name, "probation")
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.CounterValue, float64(st.EvictedProtected), s.name, "protected")
		ch <- prometheus.MustNewConstMetric(e.bytes, prometheus.GaugeValue, float64(st.Bytes), s.name)
		ch <- prometheus.MustNewConstMetric(e.limit, prometheus.GaugeValue, float64(st.MemoryLimit), s.name)
	}
}

// Observe records one decided engine call. It never blocks; pass it as
// authguard.Config.Observe.
func (m *Metrics) Observe(ev authguard.Event) {
	action := ev.Answer.Action.String()
	vk := [3]string{ev.Call, ev.Flow, action}
	verdicts, ok := m.verdictOf.load(vk)
	if !ok {
		verdicts = m.verdictOf.store(vk, m.verdicts.WithLabelValues(ev.Call, ev.Flow, action))
	}
	verdicts.Inc()
	for _, r := range ev.Answer.Reasons {
		m.reasons.WithLabelValues(ev.Call, ev.Flow, action, r.String()).Inc()
	}
	if ev.Call == "send" {
		country := ev.Region
		if country == "" {
			country = "none"
		}
		m.sends.WithLabelValues(ev.Flow, ev.Channel.String(), country, action).Inc()
		if ev.Answer.Action == authguard.Proceed && ev.Price > 0 {
			m.spend.WithLabelValues(ev.Flow, ev.Channel.String(), country).Add(float64(ev.Price))
		}
	}
	if ev.Call == "report" && ev.Attempt != authguard.AttemptSettled {
		m.unsettled.WithLabelValues(ev.Flow).Inc()
		m.unsettledLog.note(ev.Flow, ev.Attempt)
	}
	if (*m.shadow.Load())[ev.Flow] {
		m.shadowed.WithLabelValues(ev.Call, ev.Flow, ev.Computed.Action.String()).Inc()
	}
	if ev.Source == authguard.SourceRecall {
		m.recalled.WithLabelValues(ev.Call, ev.Flow).Inc()
	} else if ev.Source != authguard.SourceNone || ev.StoreErr != nil {
		storeTime, ok := m.storeTimeOf.load(ev.Call)
		if !ok {
			storeTime = m.storeTimeOf.store(ev.Call, m.storeTime.WithLabelValues(ev.Call))
		}
		storeTime.Observe(ev.StoreDuration.Seconds())
	}
	if ev.StoreErr != nil {
		m.storeErr.WithLabelValues(ev.Call, ev.Flow, authguard.StoreErrorKind(ev.StoreErr)).Inc()
		switch ev.Source {
		case authguard.SourceFallback:
			m.fallback.WithLabelValues(ev.Call, ev.Flow).Inc()
		case authguard.SourceNone:
			m.closed.WithLabelValues(ev.Call, ev.Flow).Inc()
		}
	}
}

func (m *Metrics) engineError(call string) { m.engErr.WithLabelValues(call).Inc() }

func (m *Metrics) problem(k *kind) { m.problems.WithLabelValues(k.slug).Inc() }

func (m *Metrics) authFailure(reason string) { m.authFail.WithLabelValues(reason).Inc() }

func (m *Metrics) adminWrite(action string) { m.admin.WithLabelValues(action).Inc() }

func (m *Metrics) request(method, route string, status int, d time.Duration) {
	k := latencyLabels{methodLabel(method), route, status}
	o, ok := m.latencyOf.load(k)
	if !ok {
		o = m.latencyOf.store(k, m.latency.WithLabelValues(k.method, route, strconv.Itoa(status)))
	}
	o.Observe(d.Seconds())
}

// useLogger makes the metrics write their sampled log lines to log, unless
// they already have a logger. api.New gives them the API's.
func (m *Metrics) useLogger(log *slog.Logger) { m.unsettledLog.log.CompareAndSwap(nil, log) }

// unsettledLogEvery is how often at most unsettledLog writes a line per flow.
const unsettledLogEvery = time.Minute

// unsettledLog samples the log lines of reports without a valid attempt
// token: at most one warning a minute per flow, with how many there were
// since the last line, by kind, and never an identifier or token. A caller
// that forgets the token does so on every report; a line per report would
// flood the log.
type unsettledLog struct {
	log   atomic.Pointer[slog.Logger]
	now   func() time.Time
	mu    sync.Mutex
	flows map[string]*unsettledFlow // configured flow names only
}

// unsettledFlow is one flow's reports since its last line.
type unsettledFlow struct {
	last             time.Time // zero before the first line
	missing, expired int64
}

func (l *unsettledLog) note(flow string, a authguard.AttemptState) {
	log := l.log.Load()
	if log == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	if l.flows == nil {
		l.flows = map[string]*unsettledFlow{}
	}
	f := l.flows[flow]
	if f == nil {
		f = &unsettledFlow{}
		l.flows[flow] = f
	}
	if a == authguard.AttemptExpired {
		f.expired++
	} else {
		f.missing++
	}
	if !f.last.IsZero() && now.Sub(f.last) < unsettledLogEvery {
		l.mu.Unlock()
		return
	}
	missing, expired := f.missing, f.expired
	f.last, f.missing, f.expired = now, 0, 0
	l.mu.Unlock()
	log.LogAttrs(context.Background(), slog.LevelWarn,
		"reports without a valid attempt token: each is counted on its own, so a failure counts twice (its check already counted it); pass the check's attempt token to the report",
		slog.String("flow", flow), slog.Int64("missing", missing), slog.Int64("expired", expired))
}
