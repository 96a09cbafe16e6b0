package proxy

import (
	"time"
)

// finish records a request's metrics and, when enabled and the filter
// keeps it, its access-log line. Short-circuited requests (no route,
// circuit open) are included.
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
	if x.isGRPCCall() {
		series.grpcResponses(x.grpcStatusLabel()).Inc()
	}
	at := x.headersAt
	if at == 0 { // nothing was sent: the client left first
		at = time.Since(x.start)
	}
	series.duration.Observe(at.Seconds())
	p.recordTraffic(x, status, at)
	if x.span != nil {
		x.endSpans(x.status)
	}
	if !p.opts.AccessLog {
		return
	}
	took := time.Since(x.start)
	if !p.opts.AccessLogFilter.keep(status, took, x.attempts > 1 || x.backendErr != nil) {
		return
	}
	if p.opts.AccessLogFormat != AccessLogJSON {
		p.writeCLF(x, status)
		return
	}
	p.logJSON(x, status, took)
}

// maxPooledLine is the largest line buffer kept for reuse: a rare huge
// request line does not pin its memory in the pool.
const maxPooledLine = 16 << 10

// writeCLF writes x's line in Common or Combined Log Format to
// AccessLogOut, formatted in a pooled buffer: one Write, no allocation.
func (p *Handler) writeCLF(x *exchange, status int) {
	bp := p.lines.Get().(*[]byte)
	*bp = appendCLF((*bp)[:0], x, status, p.opts.AccessLogFormat == AccessLogCombined)
	_, _ = p.opts.AccessLogOut.Write(*bp)
	if cap(*bp) <= maxPooledLine {
		p.lines.Put(bp)
	}
}

// logJSON logs x as a zerolog event (event=access).
func (p *Handler) logJSON(x *exchange, status int, took time.Duration) {
	ev := p.accessLog.Info().Str("event", "access")
	if x.route != nil {
		ev = ev.Str("route", x.route.Config().ID)
	}
	ev = ev.Str("proto", x.req.Proto).Str("method", x.req.Method).Str("host", x.req.Host).Str("path", x.req.URL.Path).
		Int("status", status).Dur("duration_ms", took).Int("attempts", x.attempts)
	if x.backend != nil {
		ev = ev.Str("backend", x.backend.HostPort())
	}
	if x.isGRPCCall() {
		ev = ev.Str("grpc_method", x.grpcMethod())
		if code, ok := x.grpcStatusCode(); ok {
			ev = ev.Int("grpc_status", code)
		}
	}
	if x.diagnostic != "" {
		ev = ev.Str("diagnostic", x.diagnostic)
	}
	if x.early == earlyRetried {
		// The backend answered 425 to the request sent in early data.
		ev = ev.Str("retry_reason", retryReasons[retryTooEarly])
	}
	if x.fb != nil && x.fb.answeredBy != "" {
		ev = ev.Str("fallback", x.fb.answeredBy)
	}
	if x.backendErr != nil {
		ev = ev.AnErr("error", x.backendErr)
	}
	if id := x.span.TraceID(); id != "" {
		ev = ev.Str("trace_id", id)
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

// authenticated reports whether a policy authenticated the request.
func (x *exchange) authenticated() bool { return x.pw != nil && x.pw.authed }

// user is the name a policy authenticated the request as.
func (x *exchange) user() string {
	if x.pw == nil {
		return ""
	}
	return x.pw.user
}

// bytesSent is the response body's length as the client got it: through
// the policy chain when something was written through it (a policy's own
// answer, a compressed body), else what the exchange wrote.
func (x *exchange) bytesSent() int64 {
	if x.pw != nil && x.pw.sent > 0 {
		return x.pw.sent
	}
	return x.sent
}
