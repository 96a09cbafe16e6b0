package proxy

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
)

// What a client gets while the route's breaker refuses its request (the
// breaker is open, or half-open with its probe slots taken; with
// scope=backend, every backend's breaker refused): in this order,
//
//  1. the fallback route (circuitBreaker.fallback), through its own
//     admission, backends, health, retries and breaker, as if the request
//     had matched it. The request carries X-Levee-Fallback naming the
//     original route; the answer carries it too, keeps the open breaker's
//     Retry-After and, with fallbackStatus, takes that status. Nothing of
//     it is reported to the original route's breaker or backends, and it
//     is never retried there. Fallbacks never chain: when the fallback's
//     own breaker refuses, the next step applies;
//  2. the last good answer for the URL (circuitBreaker.serveStale,
//     stale.go);
//  3. the breaker's own answer: responseCode, responseBody, Retry-After
//     and X-Levee-Diagnostic: circuit-open.
//
// Half-open probes are admitted, so they never get here: they go to the
// original backends, which is how the route recovers.

// HeaderFallback names, on a request sent to a fallback route and on its
// answer, the route whose open breaker sent it there. Levee removes it
// from every client request, so a backend can trust it.
const HeaderFallback = "X-Levee-Fallback"

// Kinds of levee_fallback_requests_total.
const (
	fallbackKindRoute       = "route"       // the fallback route answered
	fallbackKindUnavailable = "unavailable" // the fallback's own breaker refused
	fallbackKindStale       = "stale"       // a stale answer
	fallbackKindMiss        = "stale_miss"  // serveStale set, no usable answer kept
	// fallbackNone is the fallback label of stale answers: no label is
	// ever empty (Prometheus reads an empty value as a missing label).
	fallbackNone = "none"
)

func newFallbackCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_fallback_requests_total",
		Help: "Requests an open breaker refused that were answered otherwise, by route, fallback route (none for stale answers) and kind: route (the fallback route answered), unavailable (its own breaker was open too), stale (a stale answer), stale_miss (no stale answer to give).",
	}, []string{"route", "fallback", "kind"})
}

// fallbackState is the exchange's fallback part: what it serves for and
// who answered, and the answer being recorded for stale answers.
type fallbackState struct {
	// origin is, while the exchange serves a fallback route, the route
	// whose breaker refused the request; originRetryAfter is that
	// breaker's Retry-After.
	origin           *router.Route
	originRetryAfter time.Duration
	answeredBy       string       // for the access log: who answered instead
	record           *staleRecord // the answer being kept (stale.go)
	// credentials hashes the fields the route's auth policies read, taken
	// before they ran (stale_key.go); nil when the route keeps no stale
	// answers for credentials.
	credentials []byte
}

// fallback returns the exchange's fallback part, allocating it.
func (x *exchange) fallback() *fallbackState {
	if x.fb == nil {
		x.fb = &fallbackState{}
	}
	return x.fb
}

// origin returns the route whose breaker sent the exchange to its
// fallback, nil when it is not serving a fallback.
func (x *exchange) origin() *router.Route {
	if x.fb == nil {
		return nil
	}
	return x.fb.origin
}

// refusedByRoute answers a request the route's breaker (scope=route)
// refused.
func (x *exchange) refusedByRoute(g *router.Guard, retryAfter time.Duration) {
	x.breakerSt = breaker.Open
	g.NoteRejected()
	x.answerOpen(retryAfter)
}

// refusedByBackends answers a request every backend breaker refused
// (scope=backend): the route is open, with the smallest Retry-After.
func (x *exchange) refusedByBackends() {
	x.breakerSt = breaker.Open
	x.span.Breaker(breaker.Open.String(), false)
	x.route.State().NoteRejected()
	x.answerOpen(x.backendsRetryAfter())
}

// answerOpen gives the client the first answer of the list above.
func (x *exchange) answerOpen(retryAfter time.Duration) {
	if x.origin() != nil {
		x.fallbackUnavailable()
		return
	}
	if fb := x.route.Fallback(); fb != nil {
		x.serveFallback(fb, retryAfter)
		return
	}
	if !x.serveStale(retryAfter) {
		x.sendOpen(retryAfter)
	}
}

// serveFallback serves the request on the fallback route. The exchange
// keeps its client side (deadlines, the body read so far, prepared
// headers) and starts afresh on the backend side. The request stays the
// original route's in its metrics and access log line, which names the
// fallback.
func (x *exchange) serveFallback(fb *router.Route, retryAfter time.Duration) {
	origin, st := x.route, x.fallback()
	st.origin, st.originRetryAfter = origin, retryAfter
	x.route = fb
	x.restartPick()
	x.serve()
	if st.origin != nil { // not answered by fallbackUnavailable
		x.countFallback(origin, fb.ID(), fallbackKindRoute)
		st.answeredBy = fb.ID()
		st.origin = nil
	}
	x.route = origin
}

// fallbackUnavailable answers when the fallback route's own breaker
// refused too: as the original route would without a fallback.
func (x *exchange) fallbackUnavailable() {
	st := x.fb
	origin, fb := st.origin, x.route
	x.countFallback(origin, fb.ID(), fallbackKindUnavailable)
	st.origin, x.route = nil, origin
	st.answeredBy = fb.ID() + " (unavailable)"
	if !x.serveStale(st.originRetryAfter) {
		x.sendOpen(st.originRetryAfter)
	}
}

// restartPick forgets the backends of the previous route.
func (x *exchange) restartPick() {
	x.level = 0
	x.tried = [4]*router.Backend{}
	x.moreTried = nil
	x.excluded = nil
	x.moreExcluded = nil
	x.openRetryAfter = 0
	x.sawOpen = false
	x.backend = nil
}

// markFallbackRequest sets X-Levee-Fallback on a request sent to a
// fallback route (prepareHeaders removed any the client sent).
func (x *exchange) markFallbackRequest() {
	if o := x.origin(); o != nil {
		x.req.Header[HeaderFallback] = []string{o.ID()}
	}
}

// fallbackAnswer readies the answer of a fallback route's backend: it
// names the original route, keeps the open breaker's Retry-After (the
// client learns when the real service may be back), and takes
// fallbackStatus when one is set. It returns the status to send.
func (x *exchange) fallbackAnswer(h http.Header, status int) int {
	o := x.origin()
	if o == nil {
		return status
	}
	x.fallbackHeaders(h)
	if cb := o.Config().CircuitBreaker; cb != nil && cb.Fallback.Status != 0 && status != http.StatusSwitchingProtocols {
		return cb.Fallback.Status
	}
	return status
}

// fallbackHeaders marks any answer given on a fallback's behalf,
// Levee's own included (the fallback has no healthy backend, …).
func (x *exchange) fallbackHeaders(h http.Header) {
	h[HeaderFallback] = []string{x.fb.origin.ID()}
	x.setRetryAfter(h, x.fb.originRetryAfter)
}

// setRetryAfter sets Retry-After to whole seconds, rounded up, at least 1.
func (x *exchange) setRetryAfter(h http.Header, d time.Duration) {
	secs := int((d + time.Second - 1) / time.Second)
	h["Retry-After"] = x.p.retryAfterValue(max(secs, 1))
}

// countFallback counts one open-state answer of route.
func (x *exchange) countFallback(route *router.Route, fallback, kind string) {
	x.p.metrics.fallback.WithLabelValues(route.ID(), fallback, kind).Inc()
}
