package router

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/breaker"
)

// unmatchedRoute is the route label of requests no route matched. The
// parentheses keep it apart from every route id a source can produce.
const unmatchedRoute = "(unmatched)"

// noRule is the rule label of breaker transitions no trip rule caused (to
// half-open after the cooldown, to closed after successful probes). A
// label is never empty: Prometheus reads rule="" as "no rule label", so
// such series could not be selected by value next to the others.
const noRule = "none"

// ruleLabel is the rule label of levee_breaker_transitions_total.
func ruleLabel(r breaker.Rule) string {
	if s := r.String(); s != "" {
		return s
	}
	return noRule
}

// Reasons of levee_client_errors_total.
const (
	clientErrorBodyTimeout = "body_timeout"
	clientErrorBadBody     = "bad_body"
	clientErrorWrite       = "write_failed"
)

// metrics are the data plane's Prometheus series. Label cardinality is
// bounded by routes, backends, status codes and breaker transitions; series
// of a route are deleted when its state is dropped.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	transitions   *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	retries       *prometheus.CounterVec
	eventsDropped prometheus.Counter
	clientErrors  *prometheus.CounterVec

	breakerState *prometheus.Desc
	backendUp    *prometheus.Desc
	diagnostics  *prometheus.Desc

	unmatched *routeSeries
}

func newMetrics() *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_requests_total", Help: "Requests answered, by route and HTTP status.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "levee_request_duration_seconds", Help: "Time from request to response headers sent, by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_breaker_transitions_total", Help: "Circuit breaker transitions, by breaker, target state and trip rule.",
		}, []string{"route", "to", "rule"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_breaker_rejected_total", Help: "Requests rejected by an open (or saturated half-open) circuit breaker.",
		}, []string{"route"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_retries_total", Help: "Retry attempts (attempts after the first), by route.",
		}, []string{"route"}),
		clientErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_client_errors_total",
			Help: "Requests the client broke: a request body too slow (body_timeout) or malformed (bad_body), a response the client stopped taking (write_failed). Never counted against a backend.",
		}, []string{"reason"}),
		eventsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "levee_events_dropped_total", Help: "Events a slow subscriber lost because its buffer was full.",
		}),
		breakerState: prometheus.NewDesc("levee_breaker_state",
			"Circuit breaker state: 0 closed, 1 open, 2 half-open. Breakers of scope=backend are named route@address:port.",
			[]string{"route"}, nil),
		backendUp: prometheus.NewDesc("levee_backend_up",
			"1 when the backend is in rotation (active health up and not ejected), else 0.",
			[]string{"route", "backend"}, nil),
		diagnostics: prometheus.NewDesc("levee_diagnostics",
			"Current configuration diagnostics, by code and severity.",
			[]string{"code", "severity"}, nil),
	}
	m.unmatched = m.series(unmatchedRoute)
	// Without a route nothing is retried or rejected by a breaker: only
	// requests and durations are counted for it.
	m.retries.DeleteLabelValues(unmatchedRoute)
	m.rejected.DeleteLabelValues(unmatchedRoute)
	return m
}

// register adds every series to reg; the gauges read the router's live
// state at scrape time through collector.
func (m *metrics) register(reg prometheus.Registerer, c prometheus.Collector) error {
	for _, col := range []prometheus.Collector{m.requests, m.duration, m.transitions, m.rejected, m.retries, m.eventsDropped, m.clientErrors, c} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("registering router metrics: %w", err)
		}
	}
	return nil
}

// forget deletes a dropped route's series.
func (m *metrics) forget(route string) {
	m.requests.DeletePartialMatch(prometheus.Labels{"route": route})
	m.duration.DeleteLabelValues(route)
	m.retries.DeleteLabelValues(route)
	m.rejected.DeleteLabelValues(route)
	m.transitions.DeletePartialMatch(prometheus.Labels{"route": route})
}

type codeCounter struct {
	code int
	c    prometheus.Counter
}

// routeSeries caches a route's metric handles so that a request does not
// hash label values: the hot path is a few atomic loads.
type routeSeries struct {
	m        *metrics
	route    string
	duration prometheus.Observer
	retries  prometheus.Counter
	rejected prometheus.Counter

	mu    sync.Mutex // serialises additions to codes
	codes atomic.Pointer[[]codeCounter]
}

func (m *metrics) series(route string) *routeSeries {
	s := &routeSeries{
		m: m, route: route,
		duration: m.duration.WithLabelValues(route),
		retries:  m.retries.WithLabelValues(route),
		rejected: m.rejected.WithLabelValues(route),
	}
	s.codes.Store(&[]codeCounter{})
	return s
}

// requests returns the counter for a status code. A route sees a handful
// of codes, so a copy-on-write slice scanned linearly beats a map.
func (s *routeSeries) requests(code int) prometheus.Counter {
	for _, cc := range *s.codes.Load() {
		if cc.code == code {
			return cc.c
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.codes.Load()
	for _, cc := range cur {
		if cc.code == code {
			return cc.c
		}
	}
	c := s.m.requests.WithLabelValues(s.route, strconv.Itoa(code))
	next := append(append(make([]codeCounter, 0, len(cur)+1), cur...), codeCounter{code, c})
	s.codes.Store(&next)
	return c
}

// stateCollector reports gauges computed from live state at scrape time:
// breaker states, backend rotation, diagnostics counts.
type stateCollector struct{ r *Router }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.r.metrics.breakerState
	ch <- c.r.metrics.backendUp
	ch <- c.r.metrics.diagnostics
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.r.metrics
	now := c.r.clock.Now().UnixNano()
	for _, rt := range c.r.snap.Load().routes {
		if rt.ghost {
			continue
		}
		for _, g := range rt.state.guards() {
			ch <- prometheus.MustNewConstMetric(m.breakerState, prometheus.GaugeValue, stateValue(g.b.State()), g.name())
		}
		for _, b := range rt.backends {
			up := 0.0
			if !b.st.down.Load() && !b.st.ejected(now) {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(m.backendUp, prometheus.GaugeValue, up, rt.ep.ID, b.hostport)
		}
	}
	type key struct{ code, sev string }
	counts := map[key]int{}
	for _, d := range c.r.Diagnostics() {
		counts[key{string(d.Code), d.Severity.String()}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.diagnostics, prometheus.GaugeValue, float64(n), k.code, k.sev)
	}
}

func stateValue(s breaker.State) float64 {
	switch s {
	case breaker.Open:
		return 1
	case breaker.HalfOpen:
		return 2
	}
	return 0
}
