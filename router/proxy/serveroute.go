package proxy

import (
	"net/http"
	"time"
)

// ServeRoute implements policy.RouteServer: r is served on the route the
// current snapshot knows by that name, as a request of its own (its
// metrics and access log line are the named route's), through the
// route's breaker, balancer and backends but not its policies, so that a
// route serving pages for others never recurses into them.
func (w *policyWriter) ServeRoute(into http.ResponseWriter, r *http.Request, route string) bool {
	rt, ok := w.p.src.Snapshot().Named(route)
	if !ok {
		return false
	}
	x := &exchange{p: w.p, w: into, req: r, uri: r.RequestURI, start: time.Now()}
	x.initDeadlines()
	x.route = rt
	x.serve()
	w.p.finish(x)
	return !x.abort
}
