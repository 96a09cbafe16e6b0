package headers

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's header changes.
var Kind = policy.Kind{Name: "headers", Stage: policy.StageHeaders, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	if p := New(in.Entrypoint.Transform.Headers); p != nil {
		return p, nil
	}
	return nil, nil
}}
