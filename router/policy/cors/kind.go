package cors

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's CORS policy. It is listed before the headers
// policy: at their shared stage, the preflight answer comes first.
var Kind = policy.Kind{Name: "cors", Stage: policy.StageHeaders, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	if p := New(in.Entrypoint.Transform.CORS); p != nil {
		return p, nil
	}
	return nil, nil
}}
