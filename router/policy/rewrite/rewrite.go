// Package rewrite is the policy that rewrites the request path before it
// is forwarded: replacePath and replacePathRegex.
//
// # The model
//
// Path rewrites run in one order, documented in docs/policies.md:
//
//  1. replacePath, or replacePathRegex, on the path as the client sent it
//     (this policy; the validator keeps only one of them, W067);
//  2. stripPrefix, which removes the route's matched path (the exchange;
//     the validator drops it beside either rewrite, W067, since the
//     rewrite already decides the whole path);
//  3. addPrefix (the exchange).
//
// The route was matched on the client's path before any of them: a
// rewrite never changes which route serves a request. The regex runs on
// the escaped path (what the client wrote), so an encoded character stays
// encoded. The original path goes to the backend in X-Replaced-Path, as
// Traefik does. A rewritten path that is not in the normal form the proxy
// brings client paths to (router/httpx/pathform: no dot segment, slash run,
// ";" parameter, backslash, encoded separator or control character) is
// answered 400: the operator's replacement must not hand the backend a
// path the proxy would have refused or changed from a client.
package rewrite

import (
	"net/http"
	"net/url"
	"regexp"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/pathform"
	"github.com/levee-proxy/levee/router/policy"
)

// Policy is the compiled path rewrite of one route.
type Policy struct {
	path        string // replacePath, escaped form
	re          *regexp.Regexp
	replacement string
}

// New compiles the route's rewrite; nil when it has none (or a regex that
// does not compile, which the validator has refused already: W064).
func New(t config.Transform) *Policy {
	switch {
	case t.ReplacePath != "":
		return &Policy{path: t.ReplacePath}
	case t.ReplacePathRegex != nil:
		re, err := regexp.Compile(t.ReplacePathRegex.Regex)
		if err != nil {
			return nil
		}
		return &Policy{re: re, replacement: t.ReplacePathRegex.Replacement}
	}
	return nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return "rewrite" }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageRewrite }

// Serve passes on a copy of the request with the new path.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	old := r.URL.EscapedPath()
	raw := p.path
	if p.re != nil {
		if !p.re.MatchString(old) {
			next.ServeHTTP(w, r)
			return
		}
		raw = p.re.ReplaceAllString(old, p.replacement)
	}
	u := *r.URL
	if pathform.Check(raw) != pathform.None {
		// Levee's own answer, marked as the proxy marks the same refusal
		// of a client's path (docs/operations.md).
		w.Header()["X-Levee-Diagnostic"] = []string{"bad-path"}
		http.Error(w, "the route's path rewrite produced an invalid path", http.StatusBadRequest)
		return
	}
	path, _ := url.PathUnescape(raw) // Check decoded it already
	u.Path, u.RawPath = path, ""
	if u.EscapedPath() != raw {
		u.RawPath = raw
	}
	out := new(http.Request)
	*out = *r
	out.URL = &u
	out.RequestURI = u.RequestURI()
	out.Header["X-Replaced-Path"] = []string{old}
	next.ServeHTTP(w, out)
}
