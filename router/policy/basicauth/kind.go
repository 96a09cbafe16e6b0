package basicauth

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's basicAuth, its password checks bounded by
// slots (shared by every route) and its credentials cache retained
// across snapshots. Users that cannot be read compile to a policy that
// denies every request.
func Kind(slots *Slots) policy.Kind {
	return policy.Kind{Name: Name, Stage: policy.StageAuth, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		return compile(in, slots)
	}}
}

func compile(in policy.Input, slots *Slots) (policy.Policy, []diagnostics.Diagnostic) {
	c := in.Entrypoint.Access.BasicAuth
	if c == nil {
		return nil, nil
	}
	p, notes, err := New(c, policy.Retained(in.State, Name, NewCache), slots, in.Env)
	var diags []diagnostics.Diagnostic
	if err != nil && (c.UsersFile != "" || len(c.Users) == 0) {
		// Bad users lines were reported by the validator; a file's
		// contents and a missing list only show here.
		diags = append(diags, in.Diag(diagnostics.BadBasicAuth, "basicAuth.usersFile", "route denies every request", err.Error(), ""))
	}
	for _, m := range notes.Weak {
		diags = append(diags, in.Diag(diagnostics.WeakBasicHash, "basicAuth.usersFile", config.WeakHashFallback, m, config.WeakHashHint))
	}
	if notes.Mixed != "" {
		diags = append(diags, in.Diag(diagnostics.MixedHashCosts, "basicAuth.usersFile", config.MixedCostsFallback, notes.Mixed, config.MixedCostsHint))
	}
	return p, diags
}
