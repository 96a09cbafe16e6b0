// Package cors is the policy that answers cross-origin requests for a
// route: the CORS protocol of the Fetch standard.
//
// # The model
//
// A request without an Origin header is not cross-origin and passes as
// it is. A preflight (OPTIONS with Origin and
// Access-Control-Request-Method) is answered by Levee with 204 and never
// reaches the backend: when the origin, the method and every requested
// header are allowed, the answer carries the Access-Control-Allow-*
// headers (and Max-Age); otherwise it carries none, and the browser does
// not send the request. Any other request with an allowed Origin goes on
// and its response gets Access-Control-Allow-Origin (the origin itself, or
// "*" for the wildcard), -Allow-Credentials and -Expose-Headers. Levee is
// the route's authority on CORS: the backend's own Access-Control-*
// headers are removed, so a backend that echoes any origin cannot widen
// what the route allows. Responses carry Vary: Origin whenever the answer
// depends on the origin (everything but the credential-less wildcard), so
// that caches keep one answer per origin.
package cors

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Policy is the compiled CORS policy of one route.
type Policy struct {
	origins     map[string]bool
	any         bool // "*" is among the origins
	methods     map[string]bool
	methodsText []string
	headers     map[string]bool // lower-case
	anyHeader   bool
	credentials bool
	expose      []string
	maxAge      []string
	vary        bool
}

// New compiles c; nil without origins.
func New(c *config.CORS) *Policy {
	if c == nil || len(c.AllowOrigins) == 0 {
		return nil
	}
	p := &Policy{origins: map[string]bool{}, methods: map[string]bool{}, headers: map[string]bool{}, credentials: c.AllowCredentials}
	for _, o := range c.AllowOrigins {
		if o == "*" {
			p.any = true
		}
		p.origins[o] = true
	}
	for _, m := range c.AllowMethods {
		p.methods[m] = true
	}
	p.methodsText = []string{strings.Join(c.AllowMethods, ", ")}
	for _, h := range c.AllowHeaders {
		if h == "*" && !c.AllowCredentials {
			p.anyHeader = true
		}
		p.headers[strings.ToLower(h)] = true
	}
	if len(c.ExposeHeaders) > 0 {
		p.expose = []string{strings.Join(c.ExposeHeaders, ", ")}
	}
	if c.MaxAge > 0 {
		p.maxAge = []string{strconv.Itoa(int(c.MaxAge.Seconds()))}
	}
	p.vary = !p.any || p.credentials || len(p.origins) > 1
	return p
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return "cors" }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageHeaders }

// allowed returns the Access-Control-Allow-Origin value for origin, or ""
// when the origin is not allowed.
func (p *Policy) allowed(origin string) string {
	switch {
	case p.origins[origin]:
		return origin
	case p.any && !p.credentials:
		return "*"
	}
	return ""
}

var (
	valueTrue      = []string{"true"}
	valueAnyOrigin = []string{"*"}
)

// Serve answers a preflight, or lets the request on and marks its
// response.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	origin := r.Header.Get("Origin")
	if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		p.preflight(w, r, origin)
		return
	}
	allow := ""
	if origin != "" {
		allow = p.allowed(origin)
	}
	next.ServeHTTP(policy.OnHeader(w, func(h http.Header, _ int) { p.mark(h, allow) }), r)
}

// mark sets the response's CORS headers for an allowed origin (allow) and
// removes the backend's.
func (p *Policy) mark(h http.Header, allow string) {
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			delete(h, k)
		}
	}
	if p.vary {
		h["Vary"] = append(h["Vary"], "Origin")
	}
	if allow == "" {
		return
	}
	h["Access-Control-Allow-Origin"] = originValue(allow)
	if p.credentials {
		h["Access-Control-Allow-Credentials"] = valueTrue
	}
	if p.expose != nil {
		h["Access-Control-Expose-Headers"] = p.expose
	}
}

func originValue(allow string) []string {
	if allow == "*" {
		return valueAnyOrigin
	}
	return []string{allow}
}

// preflight answers an OPTIONS preflight (Fetch standard, CORS-preflight
// fetch): 204 with the grant, or 204 without it.
func (p *Policy) preflight(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	if p.vary {
		h["Vary"] = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
	}
	allow := p.allowed(origin)
	method := r.Header.Get("Access-Control-Request-Method")
	requested := requestedHeaders(r.Header.Values("Access-Control-Request-Headers"))
	if allow != "" && p.methodAllowed(method) && p.headersAllowed(requested) {
		h["Access-Control-Allow-Origin"] = originValue(allow)
		h["Access-Control-Allow-Methods"] = p.methodsText
		if len(requested) > 0 {
			// Echo what was asked and granted: "*" is not a wildcard for
			// credentialed requests (Fetch standard).
			h["Access-Control-Allow-Headers"] = []string{strings.Join(requested, ", ")}
		}
		if p.credentials {
			h["Access-Control-Allow-Credentials"] = valueTrue
		}
		if p.maxAge != nil {
			h["Access-Control-Max-Age"] = p.maxAge
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// methodAllowed: the CORS-safelisted methods (GET, HEAD, POST) need no
// grant; the rest must be listed.
func (p *Policy) methodAllowed(m string) bool {
	return p.methods[m] || m == http.MethodGet || m == http.MethodHead || m == http.MethodPost
}

func (p *Policy) headersAllowed(requested []string) bool {
	if p.anyHeader {
		return true
	}
	for _, h := range requested {
		if !p.headers[h] {
			return false
		}
	}
	return true
}

// requestedHeaders splits Access-Control-Request-Headers into lower-case
// names (the browser sends them lower-case and sorted).
func requestedHeaders(values []string) []string {
	var out []string
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.ToLower(strings.TrimSpace(name)); name != "" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
