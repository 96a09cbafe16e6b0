package compress

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's compression, drawing encoders from the
// process's shared, budgeted pools.
func Kind(encoders *Encoders) policy.Kind {
	return policy.Kind{Name: "compress", Stage: policy.StageCompress, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		if p := New(in.Entrypoint.Transform.Compress, encoders); p != nil {
			return p, nil
		}
		return nil, nil
	}}
}
