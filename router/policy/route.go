package policy

import (
	"net/http"

	"github.com/levee-proxy/levee/diagnostics"
)

// RouteServer is what the proxy's response writer offers to serve a
// request on another route of the current snapshot, named as a route
// names another (an entrypoint id, else the one route with that name):
// through that route's breaker, balancer and backends, not its policies.
// It reports false when no route has the name or the answer broke off.
type RouteServer interface {
	ServeRoute(into http.ResponseWriter, r *http.Request, route string) bool
}

// ServeRoute serves r on route into into, through the first RouteServer
// in w's chain of wrappers (followed by Unwrap). Without one it reports
// false.
func ServeRoute(w http.ResponseWriter, into http.ResponseWriter, r *http.Request, route string) bool {
	for w != nil {
		if s, ok := w.(RouteServer); ok {
			return s.ServeRoute(into, r, route)
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// A Reference is a route a compiled policy names. The router checks it
// where every route is known, when it builds a snapshot, and reports
// Code on field Key when no route has the name.
type Reference struct {
	Key      string // the field, e.g. "errors.route"
	Route    string
	Code     diagnostics.Code
	Fallback string // what the policy does instead
}

// Referrer is a policy that names other routes.
type Referrer interface {
	References() []Reference
}
