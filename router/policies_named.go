package router

import (
	"maps"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Named policies (config.Policy) may be declared by any source and used
// by routes of any source, so the router resolves them where every source
// is merged: each rebuild resolves every route that references one
// (config.PolicySet.Resolve), and a change of any source's policies
// rebuilds every route at once, in one new snapshot.

// setPolicies replaces a source's named policies. Callers hold r.mu.
func (r *Router) setPolicies(source string, ps []config.Policy) {
	if len(ps) == 0 {
		delete(r.policies, source)
		return
	}
	ps = slices.Clone(ps)
	for i := range ps {
		if ps[i].Source == "" {
			ps[i].Source = source
		}
	}
	r.policies[source] = ps
}

// usesPolicies reports whether any source declares a policy or any route
// references one. Callers hold r.mu.
func (r *Router) usesPolicies() bool {
	if len(r.policies) > 0 {
		return true
	}
	for _, set := range r.sources {
		for i := range set.eps {
			if len(set.eps[i].Policies) > 0 {
				return true
			}
		}
	}
	return false
}

// resolvePolicies returns eps with their named policies applied (a route
// that references none is kept as it is), noting each route's reference
// diagnostics by id, and the diagnostics of the declarations. Callers
// hold r.mu.
func (r *Router) resolvePolicies(eps []*config.Entrypoint) ([]*config.Entrypoint, []diagnostics.Diagnostic) {
	var all []config.Policy
	for _, name := range slices.Sorted(maps.Keys(r.policies)) {
		all = append(all, r.policies[name]...)
	}
	set, diags := config.NewPolicySet(all)
	for i, ep := range eps {
		if len(ep.Policies) == 0 {
			continue
		}
		resolved, ds := set.Resolve(*ep)
		eps[i] = &resolved
		r.noteRouteDiags(ep.ID, ds)
	}
	r.policySet = set
	return eps, diags
}

// Policies returns the named policies in force, one per name (the
// declaration NewPolicySet keeps when a name is declared twice), sorted
// by name.
func (r *Router) Policies() []config.Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]config.Policy, 0, r.policySet.Len())
	for _, name := range r.policySet.Names() {
		p, _ := r.policySet.Get(name)
		out = append(out, p)
	}
	return out
}
