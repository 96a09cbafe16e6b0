// Package headers is the policy that sets and removes request and
// response headers, Traefik's customRequestHeaders and
// customResponseHeaders, and adds the security headers a route asks for.
//
// # The model
//
// A request header is set (or, for an empty value, removed) on the
// request before it goes on; a response header is set (or removed) over
// whatever the backend answered, just before the response's header goes
// out. The add maps then append a value beside the header's others. The security headers are response headers: X-Frame-Options: DENY
// (RFC 7034), X-Content-Type-Options: nosniff, Referrer-Policy and
// Permissions-Policy. The validator has already refused the headers Levee
// owns (hop-by-hop, Host, Content-Length: W066), so every name here is
// fair game. The policy keeps no state: it is compiled once per snapshot.
package headers

import (
	"net/http"
	"slices"
	"sort"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// field is one header change: set value, or remove when value is nil;
// with add, append value to the header's values.
type field struct {
	name  string // canonical
	value []string
	add   bool
}

// Policy is the compiled headers policy of one route.
type Policy struct {
	request  []field
	response []field
}

// New compiles h; it returns nil when h changes nothing.
func New(h *config.Headers) *Policy {
	if h == nil {
		return nil
	}
	p := &Policy{request: fields(h.Request, false), response: fields(h.Response, false)}
	security := map[string]string{}
	if h.FrameDeny {
		security["X-Frame-Options"] = "DENY"
	}
	if h.ContentTypeNosniff {
		security["X-Content-Type-Options"] = "nosniff"
	}
	if h.ReferrerPolicy != "" {
		security["Referrer-Policy"] = h.ReferrerPolicy
	}
	if h.PermissionsPolicy != "" {
		security["Permissions-Policy"] = h.PermissionsPolicy
	}
	p.response = append(p.response, fields(security, false)...)
	// Adds come after the sets, so that a set header can also be added to.
	p.request = append(p.request, fields(h.RequestAdd, true)...)
	p.response = append(p.response, fields(h.ResponseAdd, true)...)
	if len(p.request) == 0 && len(p.response) == 0 {
		return nil
	}
	return p
}

// fields turns a map into changes in name order (deterministic).
func fields(m map[string]string, add bool) []field {
	out := make([]field, 0, len(m))
	for name, v := range m {
		f := field{name: http.CanonicalHeaderKey(name), add: add}
		if v != "" || add {
			f.value = []string{v}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return "headers" }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageHeaders }

// Serve changes the request's headers, and the response's once it is
// known.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	apply(r.Header, p.request)
	if len(p.response) > 0 {
		w = policy.OnHeader(w, p.onResponse)
	}
	next.ServeHTTP(w, r)
}

func (p *Policy) onResponse(h http.Header, _ int) { apply(h, p.response) }

// apply sets or removes each field. The value slices are shared by every
// request: nothing downstream appends to a header it did not create.
func apply(h http.Header, fs []field) {
	for _, f := range fs {
		switch {
		case f.add:
			// Clip: a value slice shared with another map is never
			// appended to in place.
			h[f.name] = append(slices.Clip(h[f.name]), f.value...)
		case f.value == nil:
			delete(h, f.name)
		default:
			h[f.name] = f.value
		}
	}
}
