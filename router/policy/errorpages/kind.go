package errorpages

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's error pages. The route they name is checked
// when the snapshot is built (policy.Referrer, W078).
var Kind = policy.Kind{Name: Name, Stage: policy.StageErrors, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	if p := New(in.Entrypoint.Transform.Errors); p != nil {
		return p, nil
	}
	return nil, nil
}}
