package proxy

import (
	"net"

	"github.com/levee-proxy/levee/router"
)

// startSpan starts the request's server span (tracing on).
func (x *exchange) startSpan() {
	name := ""
	if l := router.ListenerOf(x.req.Context()); l != nil {
		name = l.Name
	}
	ip, _, err := net.SplitHostPort(x.req.RemoteAddr)
	x.span = x.p.opts.Tracer.StartServer(x.req, name, err == nil && x.p.trusts(ip))
}

// endSpans ends the last attempt's span (after its body was copied) and
// the server span, with the answer as the access log records it.
func (x *exchange) endSpans(status int) {
	x.span.EndAttempt(x.backendErr)
	x.span.End(status, x.diagnostic, x.pw != nil && !x.pw.reached)
}
