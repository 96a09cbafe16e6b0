package proxy

import (
	"time"
)

// finish records a request's metrics and, when enabled, its access-log
// line. Short-circuited requests (no route, circuit open) are included.
func (p *Handler) finish(x *exchange) {
	series := p.metrics.unmatched
	if x.route != nil {
		series = x.series()
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
	if !p.opts.AccessLog {
		return
	}
	ev := p.log.Info().Str("event", "access")
	if x.route != nil {
		ev = ev.Str("route", x.route.Config().ID)
	}
	ev = ev.Str("proto", x.req.Proto).Str("method", x.req.Method).Str("host", x.req.Host).Str("path", x.req.URL.Path).
		Int("status", status).Dur("duration_ms", time.Since(x.start)).Int("attempts", x.attempts)
	if x.backend != nil {
		ev = ev.Str("backend", x.backend.HostPort())
	}
	if x.diagnostic != "" {
		ev = ev.Str("diagnostic", x.diagnostic)
	}
	if x.fb != nil && x.fb.answeredBy != "" {
		ev = ev.Str("fallback", x.fb.answeredBy)
	}
	if x.backendErr != nil {
		ev = ev.AnErr("error", x.backendErr)
	}
	if x.guarded {
		st := x.breakerSt
		if g := x.route.State().Guard(); g != nil && st == 0 {
			st = g.Breaker().State()
		}
		ev = ev.Str("breaker", st.String())
	}
	ev.Send()
}
