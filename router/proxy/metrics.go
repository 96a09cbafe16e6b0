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
	clientErrorTooLarge    = "body_too_large"
	clientErrorWrite       = "write_failed"
)

// metrics are the request path's Prometheus series (the router has the
// breakers', backends' and diagnostics'). They are bounded by default: a
// route has counters only (levee_requests_total by status code once it has
// answered that code, levee_retries_total once it has retried), made on
// first use, so an idle route has none; request latency is one histogram
// for all routes. Per-route latency histograms
// (Options.RouteLatency, --metrics-route-latency) are opt-in: 17
// series per route, 12.8 MB of /metrics at 10,000 routes. A route's series
// are deleted when the router drops its state (routeSeries is the state's
// attachment).
type metrics struct {
	requests *prometheus.CounterVec
	// duration is the per-route histogram (opt-in) or nil; total the one
	// histogram of every request otherwise.
	duration     *prometheus.HistogramVec
	total        prometheus.Histogram
	retries      *prometheus.CounterVec
	clientErrors *prometheus.CounterVec
	fallback     *prometheus.CounterVec // levee_fallback_requests_total (fallback.go)
	grpc         *prometheus.CounterVec // levee_grpc_responses_total

	unmatched *routeSeries
	// newSeries is m.series as a func value made once, so that asking a
	// route state for its attachment does not allocate a closure.
	newSeries func(route string) router.Attachment
}

// durationBuckets are the classic buckets of the latency histograms. The
// histograms are also native (exponential) ones, which a Prometheus that
// scrapes them in protobuf reads at a finer resolution for no more series.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newMetrics(perRouteLatency bool) *metrics {
	const name, help = "levee_request_duration_seconds", "Time from request to response headers sent"
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_requests_total", Help: "Requests answered, by route and HTTP status.",
		}, []string{"route", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_retries_total",
			Help: "Retry attempts (attempts after the first), by route and reason: failure (the attempt before failed), too_early (the backend answered 425 Too Early to a request forwarded in 0-RTT early data, sent again once the client's handshake completed).",
		}, []string{"route", "reason"}),
		grpc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_grpc_responses_total",
			Help: "gRPC calls answered, by route and the grpc-status their client read (OK, UNAVAILABLE...; none for a stream that ended without one), Levee's own answers included. Each is also in levee_requests_total, mostly as code 200.",
		}, []string{"route", "grpc_status"}),
		clientErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_client_errors_total",
			Help: "Requests the client broke: a request body too slow (body_timeout), malformed (bad_body) or over the route's maxRequestBodyBytes (body_too_large), a response the client stopped taking (write_failed). Never counted against a backend.",
		}, []string{"reason"}),
	}
	opts := prometheus.HistogramOpts{Name: name, Buckets: durationBuckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160}
	if perRouteLatency {
		opts.Help = help + ", by route (--metrics-route-latency)."
		m.duration = prometheus.NewHistogramVec(opts, []string{"route"})
	} else {
		opts.Help = help + ", all routes (per route with --metrics-route-latency)."
		m.total = prometheus.NewHistogram(opts)
	}
	m.fallback = newFallbackCounter()
	m.newSeries = func(route string) router.Attachment { return m.series(route) }
	m.unmatched = m.series(unmatchedRoute)
	return m
}

// register adds every series to reg.
func (m *metrics) register(reg prometheus.Registerer) error {
	var dur prometheus.Collector = m.total
	if m.duration != nil {
		dur = m.duration
	}
	for _, col := range []prometheus.Collector{m.requests, dur, m.retries, m.clientErrors, m.fallback, m.grpc} {
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

	mu      sync.Mutex // serialises additions to codes and the retry counters
	codes   atomic.Pointer[[]codeCounter]
	retries [len(retryReasons)]atomic.Pointer[prometheus.Counter]
	// grpc are the route's levee_grpc_responses_total counters, by
	// status label, made on first use.
	grpc atomic.Pointer[[]grpcCounter]

	// stale is the route's cache of answers for serveStale (stale.go),
	// kept here because this is the request path's per-route data that
	// lives as long as the route's state.
	stale staleSlot
}

// series makes a route's handles; only the per-route histogram (opt-in) is
// made at once, the counters on first use.
func (m *metrics) series(route string) *routeSeries {
	s := &routeSeries{m: m, route: route, duration: m.total}
	if m.duration != nil {
		s.duration = m.duration.WithLabelValues(route)
	}
	s.codes.Store(&[]codeCounter{})
	s.grpc.Store(&[]grpcCounter{})
	return s
}

// Reasons of levee_retries_total, indexes into retryReasons.
const (
	retryFailure  = iota // the attempt before failed (retry.go, grpc_retry.go)
	retryTooEarly        // the backend answered 425 to an early request (early.go)
)

var retryReasons = [...]string{retryFailure: "failure", retryTooEarly: "too_early"}

// retry counts one retry of the route for a reason, making its counter
// the first time.
func (s *routeSeries) retry(reason int) {
	slot := &s.retries[reason]
	if c := slot.Load(); c != nil {
		(*c).Inc()
		return
	}
	s.mu.Lock()
	c := slot.Load()
	if c == nil {
		n := s.m.retries.WithLabelValues(s.route, retryReasons[reason])
		c = &n
		slot.Store(c)
	}
	s.mu.Unlock()
	(*c).Inc()
}

// Release deletes the route's series: the router dropped its state.
func (s *routeSeries) Release() {
	s.m.requests.DeletePartialMatch(prometheus.Labels{"route": s.route})
	if s.m.duration != nil {
		s.m.duration.DeleteLabelValues(s.route)
	}
	s.m.retries.DeletePartialMatch(prometheus.Labels{"route": s.route})
	s.m.grpc.DeletePartialMatch(prometheus.Labels{"route": s.route})
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

type grpcCounter struct {
	status string
	c      prometheus.Counter
}

// grpcResponses returns the counter for a gRPC status label, as requests
// does for an HTTP status.
func (s *routeSeries) grpcResponses(status string) prometheus.Counter {
	for _, gc := range *s.grpc.Load() {
		if gc.status == status {
			return gc.c
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.grpc.Load()
	for _, gc := range cur {
		if gc.status == status {
			return gc.c
		}
	}
	c := s.m.grpc.WithLabelValues(s.route, status)
	next := append(append(make([]grpcCounter, 0, len(cur)+1), cur...), grpcCounter{status, c})
	s.grpc.Store(&next)
	return c
}
