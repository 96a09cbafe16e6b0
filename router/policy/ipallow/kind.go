package ipallow

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's ipAllowList. A list with no usable range
// compiles to a policy that denies every request.
var Kind = policy.Kind{Name: Name, Stage: policy.StageIPAllowList, Compile: compile}

func compile(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	c := in.Entrypoint.Access.IPAllowList
	if c == nil {
		return nil, nil
	}
	p, err := New(c, in.Env)
	var diags []diagnostics.Diagnostic
	if err != nil && len(c.SourceRange) == 0 {
		diags = append(diags, in.Diag(diagnostics.BadIPAllowList, "ipAllowList.sourceRange", "route denies every request", err.Error(), ""))
	}
	return p, diags
}
