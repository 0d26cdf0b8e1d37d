package webhook

import "github.com/prometheus/client_golang/prometheus"

// Reasons of tollgate_webhook_dropped_total.
const (
	dropBufferFull = "buffer_full"      // Emit found its buffer full
	dropQueueFull  = "queue_full"       // the Queue refused a delivery
	dropInvalid    = "invalid"          // the event's data is not a JSON object
	dropRemoved    = "endpoint_removed" // queued for an endpoint no longer configured
)

type metrics struct {
	queued      *prometheus.CounterVec
	coalesced   prometheus.Counter
	dropped     *prometheus.CounterVec
	delivered   *prometheus.CounterVec
	retried     *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	undecrypt   prometheus.Counter
	depth       prometheus.Gauge
	buffer      prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, bufferLen func() float64) (*metrics, error) {
	m := &metrics{
		queued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_queued_total",
			Help: "Deliveries queued, one per event and endpoint.",
		}, []string{"endpoint"}),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_webhook_coalesced_total",
			Help: "Events not queued because one with the same coalescing key was queued in its window.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_dropped_total",
			Help: "Events or deliveries dropped: buffer_full (Emit's buffer), queue_full, invalid (no type, or data not a JSON object), endpoint_removed (queued for an endpoint no longer configured, once its lane was idle for MaxAge).",
		}, []string{"reason"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_delivered_total",
			Help: "Deliveries an endpoint answered with a 2xx.",
		}, []string{"endpoint"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_retried_total",
			Help: "Failed attempts put back for a later retry.",
		}, []string{"endpoint"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_dead_lettered_total",
			Help: "Deliveries that failed until their age limit and were dead-lettered.",
		}, []string{"endpoint"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tollgate_webhook_delivery_seconds",
			Help:    "Time from an event to its successful delivery, retries included.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 600, 3600, 21600, 86400},
		}, []string{"endpoint"}),
		undecrypt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_webhook_undecryptable_total",
			Help: "Redis queue entries this instance could not decrypt (its RedisQueueConfig.Secret differs from the instance that queued them); left for another instance.",
		}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_webhook_queue_depth",
			Help: "Deliveries waiting or in flight in the queue (on Redis: this instance's endpoints, all instances' entries).",
		}),
		buffer: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_webhook_buffer_depth",
			Help: "Events in this instance's Emit buffer, not yet in the queue.",
		}, bufferLen),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.queued, m.coalesced, m.dropped, m.delivered, m.retried, m.deadLetters, m.latency, m.undecrypt, m.depth, m.buffer} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
