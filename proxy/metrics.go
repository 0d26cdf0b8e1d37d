package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/authguard"
)

// The answers of tollgate_proxy_answers_total.
const (
	answerForwarded    = "forwarded"           // sent on to the upstream after a check or send (shadow routes: every one)
	answerDelayed      = "delayed"             // 429 with Retry-After
	answerChallenged   = "challenged"          // a challenge page or problem
	answerSolved       = "solved"              // a challenge solved; the request then goes on
	answerDenied       = "denied"              // a send flow's deny, answered like a sent code
	answerRefused      = "refused"             // 400, 413 or 415: the request cannot be read as the route reads it
	answerUninspected  = "uninspected"         // no account in it: forwarded without a check
	answerUnavailable  = "unavailable"         // 503: the engine or the challenge store failed
	answerSteppedUp    = "stepped_up"          // a forwarded success the engine answered step_up: the upstream's answer held back, the step-up page instead
	answerStepUpPassed = "step_up_let_through" // a step_up for reasons the route's step_up_pass lists: the upstream's answer delivered
)

// The kinds of tollgate_proxy_upstream_errors_total.
const (
	upstreamUnavailable = "unavailable" // 502: the upstream refused, reset or could not be reached
	upstreamTimeout     = "timeout"     // 504: no response headers within the upstream timeout
	upstreamCanceled    = "canceled"    // the client left before the upstream answered
)

// passRoute is the route label of requests that match no route. A route's
// name cannot start with "_".
const passRoute = "_pass"

// metrics are the proxy's Prometheus metrics. Every label value comes from
// a bounded set: configured route names and the constants above.
type metrics struct {
	answers  *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	shadowed *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errs     *prometheus.CounterVec
	breached prometheus.Counter
	pass     routeMetrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_proxy_answers_total",
			Help: "Requests of the proxy's routes, by route and what the proxy did: forwarded (after a check or send), delayed (429), " +
				"challenged, solved (a challenge, then the request went on), denied (a send flow's deny), refused (400, 413, 415), " +
				"uninspected (no account: forwarded without a check), unavailable (503), stepped_up (a forwarded success the engine answered step_up: " +
				"the upstream's answer held back and the step-up page answered instead; also counted as forwarded), step_up_let_through " +
				"(a step_up for reasons the route's step_up_pass lists: the upstream's answer delivered, without a device cookie). Route _challenge counts the challenge page's posts that solved nothing.",
		}, []string{"route", "answer"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_proxy_outcomes_total",
			Help: "Upstream answers to the requests of the proxy's routes of checks, by route and how they were classified: success, failure, " +
				"or unknown (matched neither the route's success nor its failure, or both: nothing reported, the check's charge stays).",
		}, []string{"route", "outcome"}),
		shadowed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_proxy_shadow_refusals_total",
			Help: "Requests a route in shadow mode forwarded that enforcing would have refused, by route, the action it would have answered, " +
				"and how the upstream's answer was classified (unknown for a send flow, or an upstream that did not answer): " +
				"a success here is an owner enforcing would have kept waiting.",
		}, []string{"route", "action", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tollgate_proxy_upstream_duration_seconds",
			Help:    "Time from forwarding an inspected request to the upstream's response headers, by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_proxy_upstream_errors_total",
			Help: "Requests the upstream did not answer, by route (_pass for requests of no route) and kind: unavailable (502), timeout (504), " +
				"canceled (the client left first).",
		}, []string{"route", "kind"}),
	}
	m.breached = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tollgate_proxy_breached_errors_total",
		Help: "Passwords the proxy could not look up in the breached-password ranges (the range API did not answer): each reported as not breached.",
	})
	for _, c := range []prometheus.Collector{m.answers, m.outcomes, m.shadowed, m.latency, m.errs, m.breached} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.pass = routeMetrics{m: m, name: passRoute} // no latency: pass-through is not timed
	return m, nil
}

// routeMetrics are one route's children.
type routeMetrics struct {
	m        *metrics
	name     string
	upstream prometheus.Observer
}

func (m *metrics) route(name string) routeMetrics {
	return routeMetrics{m: m, name: name, upstream: m.latency.WithLabelValues(name)}
}

func (r routeMetrics) answer(a string) { r.m.answers.WithLabelValues(r.name, a).Inc() }

func (r routeMetrics) outcome(o authguard.Outcome) {
	r.m.outcomes.WithLabelValues(r.name, o.String()).Inc()
}

func (r routeMetrics) shadow(a authguard.Action, o authguard.Outcome) {
	r.m.shadowed.WithLabelValues(r.name, a.String(), o.String()).Inc()
}

func (r routeMetrics) upstreamErr(kind string) { r.m.errs.WithLabelValues(r.name, kind).Inc() }

func (m *metrics) breachedErr() { m.breached.Inc() }
