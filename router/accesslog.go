package router

import (
	"strconv"
	"time"
)

// finish records a request's metrics and, when enabled, its access-log
// line. Short-circuited requests (no route, circuit open) are included.
func (r *Router) finish(x *exchange) {
	series := r.metrics.unmatched
	if x.route != nil && x.route.state != nil && x.route.state.series != nil {
		series = x.route.state.series
	}
	status := x.status
	if status == 0 {
		status = statusClientGone
	}
	series.requests(status).Inc()
	at := x.headersAt
	if at == 0 { // nothing was sent: the client left first
		at = time.Since(x.start)
	}
	series.duration.Observe(at.Seconds())
	if !r.opts.AccessLog {
		return
	}
	ev := r.log.Info().Str("event", "access")
	if x.route != nil {
		ev = ev.Str("route", x.route.ep.ID)
	}
	ev = ev.Str("method", x.req.Method).Str("host", x.req.Host).Str("path", x.req.URL.Path).
		Int("status", status).Dur("duration", time.Since(x.start)).Int("attempts", x.attempts)
	if x.backend != nil {
		ev = ev.Str("backend", x.backend.hostport)
	}
	if x.diagnostic != "" {
		ev = ev.Str("diagnostic", x.diagnostic)
	}
	if x.guarded {
		st := x.breakerSt
		if g := x.route.state.guard.Load(); g != nil && st == 0 {
			st = g.b.State()
		}
		ev = ev.Str("breaker", st.String())
	}
	ev.Send()
}

// retryAfterValue returns a shared header value for n seconds, so that a
// rejection does not allocate for the common values.
func (r *Router) retryAfterValue(n int) []string {
	if n < len(r.retryAfter) {
		return r.retryAfter[n]
	}
	return []string{strconv.Itoa(n)}
}
