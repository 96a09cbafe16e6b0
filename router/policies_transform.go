package router

import (
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/compress"
	"github.com/levee-proxy/levee/router/policy/cors"
	"github.com/levee-proxy/levee/router/policy/headers"
	"github.com/levee-proxy/levee/router/policy/redirect"
	"github.com/levee-proxy/levee/router/policy/rewrite"
)

// transformPolicies compiles the route's policies that change a request or
// its response (headers and CORS, redirects, path rewrites, compression).
// They hold no state across snapshots; compression draws its encoders
// from the process's shared, budgeted pools (Options.Encoders). A policy the route does not have, or one the
// validator refused (its config is then nil), is left out. Sticky
// sessions are not a chain policy: the balancer's pick reads them from
// the route's config (router/proxy).
//
// The list is in Stage order; the chain sorts it again with the access
// policies, stably, so that CORS (whose preflight is an answer) runs
// before the headers policy at their shared stage.
func transformPolicies(ep *config.Entrypoint, env policy.Env, encoders *compress.Encoders) []policy.Policy {
	t := ep.Transform
	var out []policy.Policy
	add := func(p policy.Policy, ok bool) {
		if ok {
			out = append(out, p)
		}
	}
	// Behind a trusted proxy that terminates TLS, X-Forwarded-Proto says
	// the scheme; from anyone else it is not believed (a client could
	// otherwise stop a redirect to https by claiming it).
	rs := redirect.NewScheme(t.RedirectScheme)
	if rs != nil {
		rs.TrustForwarded = env.PeerTrusted
	}
	add(rs, rs != nil)
	rr := redirect.NewRegex(t.RedirectRegex)
	if rr != nil {
		rr.TrustForwarded = env.PeerTrusted
	}
	add(rr, rr != nil)
	c := cors.New(t.CORS)
	add(c, c != nil)
	h := headers.New(t.Headers)
	add(h, h != nil)
	rw := rewrite.New(t)
	add(rw, rw != nil)
	z := compress.New(t.Compress, encoders)
	add(z, z != nil)
	return out
}
