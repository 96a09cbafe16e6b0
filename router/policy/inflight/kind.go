package inflight

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's inFlight limit; its counters are retained
// across snapshots. Without a valid amount the route has no limit.
// fleet reconciles the routes with scope=fleet; nil (no breaker store)
// makes them local with W068.
func Kind(fleet *Fleet) policy.Kind {
	return policy.Kind{Name: Name, Stage: policy.StageInFlight, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		return compile(in, fleet)
	}}
}

func compile(in policy.Input, fleet *Fleet) (policy.Policy, []diagnostics.Diagnostic) {
	c := in.Entrypoint.Access.InFlight
	if c == nil {
		return nil, nil
	}
	if c.Amount <= 0 {
		return nil, []diagnostics.Diagnostic{in.Diag(diagnostics.BadInFlight, "inFlight.amount", "no in-flight limit",
			"inFlight has no valid amount: the route has no in-flight limit", "")}
	}
	if c.Scope != config.ScopeFleet {
		return New(c, policy.Retained(in.State, Name, newCounters), in.Env), nil
	}
	if fleet == nil {
		return New(c, policy.Retained(in.State, Name, newCounters), in.Env), []diagnostics.Diagnostic{in.Diag(diagnostics.RateFleetWithoutStore,
			"inFlight.scope", "local in-flight limit", "inFlight.scope=fleet needs --breaker-store: each replica enforces the limit alone", "")}
	}
	fr := policy.Retained(in.State, Name, func() *fleetRoute { return newFleetRoute(in.Env.Route) })
	return NewFleetPolicy(c, fr, fleet, in.Env), nil
}

func newCounters() *Counters { return NewCounters(0) }
