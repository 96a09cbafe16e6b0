package errorpages

import (
	"errors"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// Kind compiles a route's error pages, with page files only from inside
// pagesDir (none: page files are off). The route they name is checked
// when the snapshot is built (policy.Referrer, W078); a page file is
// read then, and one that cannot be used (W088, W089) leaves the route
// without error pages: they are not access control, the original
// answers pass.
func Kind(pagesDir string) policy.Kind {
	return policy.Kind{Name: Name, Stage: policy.StageErrors, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		return compileKind(in, pagesDir)
	}}
}

func compileKind(in policy.Input, pagesDir string) (policy.Policy, []diagnostics.Diagnostic) {
	p, err := New(in.Entrypoint.Transform.Errors, pagesDir, in.Env.Clock())
	if err != nil {
		code := diagnostics.ErrorFileUnusable
		if errors.Is(err, ErrPageTooLarge) {
			code = diagnostics.ErrorFileTooLarge
		}
		return nil, []diagnostics.Diagnostic{in.Diag(code, "errors.file", "error pages off", err.Error(), "")}
	}
	if p != nil {
		return p, nil
	}
	return nil, nil
}
