package inflight

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's inFlight limit; its counters are retained
// across snapshots. Without a valid amount the route has no limit.
var Kind = policy.Kind{Name: Name, Stage: policy.StageInFlight, Compile: compile}

func compile(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	c := in.Entrypoint.Access.InFlight
	if c == nil {
		return nil, nil
	}
	if c.Amount <= 0 {
		return nil, []diagnostics.Diagnostic{in.Diag(diagnostics.BadInFlight, "inFlight.amount", "no in-flight limit",
			"inFlight has no valid amount: the route has no in-flight limit", "")}
	}
	return New(c, policy.Retained(in.State, Name, newCounters), in.Env), nil
}

func newCounters() *Counters { return NewCounters(0) }
