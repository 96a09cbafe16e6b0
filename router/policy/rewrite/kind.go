package rewrite

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's replacePath and replacePathRegex.
var Kind = policy.Kind{Name: "rewrite", Stage: policy.StageRewrite, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	if p := New(in.Entrypoint.Transform); p != nil {
		return p, nil
	}
	return nil, nil
}}
