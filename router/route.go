package router

import (
	"net/url"
	"strings"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Rewrite returns the path to send to a backend for the request URL u:
// StripPrefix removes the route's matched prefix and AddPrefix prepends
// its own, to the decoded path and, when the client's encoding differs,
// to the raw one.
func (rt *Route) Rewrite(u *url.URL) (path, raw string) {
	path, raw = u.Path, u.RawPath
	if rt.ep.StripPrefix && rt.prefix != "/" && rt.folded {
		// The prefix matched in some spelling: remove its segments.
		n := segments(rt.prefix)
		path = dropSegments(path, n)
		if raw != "" {
			raw = dropSegments(raw, n)
		}
	} else if rt.ep.StripPrefix && rt.prefix != "/" {
		path = strings.TrimPrefix(path, rt.prefix)
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		if raw != "" {
			if strings.HasPrefix(raw, rt.prefix) {
				raw = raw[len(rt.prefix):]
				if raw == "" || raw[0] != '/' {
					raw = "/" + raw
				}
			} else {
				raw = ""
			}
		}
	}
	if p := rt.ep.AddPrefix; p != "" && p != "/" {
		p = strings.TrimSuffix(p, "/")
		path = p + path
		if raw != "" {
			raw = p + raw
		}
	}
	return path, raw
}

// Config returns the entrypoint the route was built from, without copying
// it: read only, it is shared by every request on the snapshot.
func (r *Route) Config() *config.Entrypoint { return &r.ep }

// Policies returns the route's policy chain in the order it runs; nil
// (Empty) for a route without policies.
func (r *Route) Policies() *policy.Chain { return r.chain }

// Removed reports whether the route belongs to an entrypoint that left its
// source: it answers 503 no-healthy-backend until its grace expires.
func (r *Route) Removed() bool { return r.ghost }

// Backends returns the route's backends in configuration order. The slice
// is the snapshot's: read only.
func (r *Route) Backends() []*Backend { return r.backends }

// State returns the route's runtime state (breakers, balancer, budget),
// shared with every snapshot that has the route id.
func (r *Route) State() *RouteState { return r.state }

// BreakerParams returns the route's validated breaker parameters (zero
// without a circuit breaker), for classifying responses without asking
// the breaker. Read only.
func (r *Route) BreakerParams() *breaker.Params { return &r.cbParams }
