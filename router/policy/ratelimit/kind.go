package ratelimit

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's rateLimit; its buckets are retained across
// snapshots. Without a valid average the route has no rate limit. fleet
// reconciles the routes with scope=fleet; nil (no breaker store) makes
// them local with W068.
func Kind(fleet *Fleet) policy.Kind {
	return policy.Kind{Name: Name, Stage: policy.StageRateLimit, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		return compile(in, fleet)
	}}
}

func compile(in policy.Input, fleet *Fleet) (policy.Policy, []diagnostics.Diagnostic) {
	c := in.Entrypoint.Access.RateLimit
	if c == nil {
		return nil, nil
	}
	if c.Average <= 0 {
		return nil, []diagnostics.Diagnostic{in.Diag(diagnostics.BadRateLimit, "rateLimit.average", "no rate limit",
			"rateLimit has no valid average: the route has no rate limit", "")}
	}
	if c.Scope != config.ScopeFleet {
		return New(c, policy.Retained(in.State, Name, newBuckets), in.Env), nil
	}
	if fleet == nil {
		return New(c, policy.Retained(in.State, Name, newBuckets), in.Env), []diagnostics.Diagnostic{in.Diag(diagnostics.RateFleetWithoutStore,
			"rateLimit.scope", "local rate limit", "rateLimit.scope=fleet needs --breaker-store: each replica enforces the limit alone", "")}
	}
	fr := policy.Retained(in.State, Name, func() *fleetRoute { return newFleetRoute(in.Env.Route) })
	return NewFleetPolicy(c, fr, fleet, in.Env), nil
}

func newBuckets() *Buckets { return NewBuckets(0) }
