package breached

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The sources of tollgate_breached_answers_total.
const (
	sourceCorpus   = "corpus"
	sourceUpstream = "upstream"
	sourceCache    = "cache"
)

// The kinds of tollgate_breached_upstream_errors_total.
const (
	errNetwork  = "network"   // no answer, a timeout, or a body cut short
	errStatus   = "status"    // an answer other than 200
	errTooLarge = "too_large" // more hashes or bytes than an answer's lines hold
)

// Metrics are the range endpoint's Prometheus metrics. They outlive a
// Service: the server makes them once and gives them to every Service and
// every corpus it loads. A nil *Metrics records nothing.
type Metrics struct {
	hashes   prometheus.Gauge
	bytes    prometheus.Gauge
	load     prometheus.Gauge
	answers  *prometheus.CounterVec
	upstream *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		hashes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_breached_corpus_hashes",
			Help: "Distinct hashes of the breached-password corpus in use (0 without one).",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_breached_corpus_bytes",
			Help: "Bytes of memory the breached-password corpus in use takes: 22 a hash and a 4 MiB offset table.",
		}),
		load: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_breached_corpus_load_seconds",
			Help: "How long the last breached-password corpus that loaded took to read and index.",
		}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_breached_answers_total",
			Help: "Range answers of GET /v1/breached/{prefix}, by where the range came from: corpus, upstream or cache (an upstream range kept).",
		}, []string{"source"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_breached_upstream_errors_total",
			Help: "Upstream range requests that failed (answered 503), by kind: network (no answer in time, or cut short), " +
				"status (not 200), too_large (more than an answer's lines).",
		}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.hashes, m.bytes, m.load, m.answers, m.upstream} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, s := range []string{sourceCorpus, sourceUpstream, sourceCache} {
		m.answers.WithLabelValues(s)
	}
	for _, k := range []string{errNetwork, errStatus, errTooLarge} {
		m.upstream.WithLabelValues(k)
	}
	return m, nil
}

// SetCorpus records the corpus now in use (nil: none) and, for a corpus
// just loaded, how long it took.
func (m *Metrics) SetCorpus(c *Corpus, took time.Duration) {
	if m == nil {
		return
	}
	if c == nil {
		m.hashes.Set(0)
		m.bytes.Set(0)
		return
	}
	m.hashes.Set(float64(c.Hashes()))
	m.bytes.Set(float64(c.Bytes()))
	m.load.Set(took.Seconds())
}

func (m *Metrics) answered(source string) {
	if m != nil {
		m.answers.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) upstreamError(kind string) {
	if m != nil {
		m.upstream.WithLabelValues(kind).Inc()
	}
}
