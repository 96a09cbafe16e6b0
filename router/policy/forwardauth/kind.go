package forwardauth

import (
	"net/http"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's forwardAuth, asking the auth services over rt
// (a pool apart from the backends'). A policy without an address
// compiles to one that denies every request.
func Kind(rt http.RoundTripper) policy.Kind {
	return policy.Kind{Name: Name, Stage: policy.StageAuth, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		c := in.Entrypoint.Access.ForwardAuth
		if c == nil {
			return nil, nil
		}
		p, err := New(c, rt, in.Env)
		var diags []diagnostics.Diagnostic
		if err != nil && c.Address == "" {
			diags = append(diags, in.Diag(diagnostics.BadForwardAuth, "forwardAuth.address", "route denies every request", err.Error(), ""))
		}
		return p, diags
	}}
}
