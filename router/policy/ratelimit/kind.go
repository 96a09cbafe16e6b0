package ratelimit

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's rateLimit; its buckets are retained across
// snapshots. Without a valid average the route has no rate limit.
var Kind = policy.Kind{Name: Name, Stage: policy.StageRateLimit, Compile: compile}

func compile(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	c := in.Entrypoint.Access.RateLimit
	if c == nil {
		return nil, nil
	}
	if c.Average <= 0 {
		return nil, []diagnostics.Diagnostic{in.Diag(diagnostics.BadRateLimit, "rateLimit.average", "no rate limit",
			"rateLimit has no valid average: the route has no rate limit", "")}
	}
	return New(c, policy.Retained(in.State, Name, newBuckets), in.Env), nil
}

func newBuckets() *Buckets { return NewBuckets(0) }
