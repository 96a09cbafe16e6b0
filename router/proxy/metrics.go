package proxy

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/router"
)

// unmatchedRoute is the route label of requests no route matched. The
// parentheses keep it apart from every route id a source can produce.
const unmatchedRoute = "(unmatched)"

// Reasons of levee_client_errors_total.
const (
	clientErrorBodyTimeout = "body_timeout"
	clientErrorBadBody     = "bad_body"
	clientErrorWrite       = "write_failed"
)

// metrics are the request path's Prometheus series (the router has the
// breakers', backends' and diagnostics'). Label cardinality is bounded by
// routes and status codes; a route's series are deleted when the router
// drops its state (routeSeries is the state's attachment).
type metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	retries      *prometheus.CounterVec
	clientErrors *prometheus.CounterVec
	fallback     *prometheus.CounterVec // levee_fallback_requests_total (fallback.go)

	unmatched *routeSeries
	// newSeries is m.series as a func value made once, so that asking a
	// route state for its attachment does not allocate a closure.
	newSeries func(route string) router.Attachment
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
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_retries_total", Help: "Retry attempts (attempts after the first), by route.",
		}, []string{"route"}),
		clientErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_client_errors_total",
			Help: "Requests the client broke: a request body too slow (body_timeout) or malformed (bad_body), a response the client stopped taking (write_failed). Never counted against a backend.",
		}, []string{"reason"}),
	}
	m.fallback = newFallbackCounter()
	m.newSeries = func(route string) router.Attachment { return m.series(route) }
	m.unmatched = m.series(unmatchedRoute)
	// Without a route nothing is retried: only requests and durations are
	// counted for it.
	m.retries.DeleteLabelValues(unmatchedRoute)
	return m
}

// register adds every series to reg.
func (m *metrics) register(reg prometheus.Registerer) error {
	for _, col := range []prometheus.Collector{m.requests, m.duration, m.retries, m.clientErrors, m.fallback} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("registering request metrics: %w", err)
		}
	}
	return nil
}

type codeCounter struct {
	code int
	c    prometheus.Counter
}

// routeSeries caches a route's metric handles so that a request does not
// hash label values: the hot path is a few atomic loads. It is attached to
// the route's state in the router, and released with it.
type routeSeries struct {
	m        *metrics
	route    string
	duration prometheus.Observer
	retries  prometheus.Counter

	mu    sync.Mutex // serialises additions to codes
	codes atomic.Pointer[[]codeCounter]

	// stale is the route's cache of answers for serveStale (stale.go),
	// kept here because this is the request path's per-route data that
	// lives as long as the route's state.
	stale staleSlot
}

func (m *metrics) series(route string) *routeSeries {
	s := &routeSeries{
		m: m, route: route,
		duration: m.duration.WithLabelValues(route),
		retries:  m.retries.WithLabelValues(route),
	}
	s.codes.Store(&[]codeCounter{})
	return s
}

// Release deletes the route's series: the router dropped its state.
func (s *routeSeries) Release() {
	s.m.requests.DeletePartialMatch(prometheus.Labels{"route": s.route})
	s.m.duration.DeleteLabelValues(s.route)
	s.m.retries.DeleteLabelValues(s.route)
	s.m.fallback.DeletePartialMatch(prometheus.Labels{"route": s.route})
	s.stale.drop()
}

// seriesOf returns the metric handles of a route.
func (p *Handler) seriesOf(rt *router.Route) *routeSeries {
	rs := rt.State()
	if rs == nil { // a snapshot built without a router
		return p.metrics.unmatched
	}
	return rs.Attachment(p.metrics.newSeries).(*routeSeries)
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
