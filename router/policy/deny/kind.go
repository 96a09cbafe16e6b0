package deny

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind denies every request of a route whose access settings could not
// all be read (the validator reported each key, E005 and E006): an
// access setting Levee does not understand never serves open.
var Kind = policy.Kind{Name: Name, Stage: policy.StageIPAllowList, Compile: compile}

func compile(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	if len(in.Entrypoint.Access.Unread) == 0 {
		return nil, nil
	}
	return New(in.Env), nil
}
