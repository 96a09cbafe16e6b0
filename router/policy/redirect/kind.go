package redirect

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
)

// SchemeKind compiles a route's redirectScheme. Behind a trusted proxy
// that terminates TLS, X-Forwarded-Proto says the scheme; from anyone
// else it is not believed (a client could otherwise stop a redirect to
// https by claiming it).
var SchemeKind = policy.Kind{Name: "redirect-scheme", Stage: policy.StageRedirect, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	s := NewScheme(in.Entrypoint.Transform.RedirectScheme)
	if s == nil {
		return nil, nil
	}
	s.TrustForwarded = in.Env.PeerTrusted
	return s, nil
}}

// RegexKind compiles a route's redirectRegex, with the same trust in
// X-Forwarded-Proto.
var RegexKind = policy.Kind{Name: "redirect-regex", Stage: policy.StageRedirect, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
	x := NewRegex(in.Entrypoint.Transform.RedirectRegex)
	if x == nil {
		return nil, nil
	}
	x.TrustForwarded = in.Env.PeerTrusted
	return x, nil
}}
