// Package redirect holds the policies that answer a request with a
// redirect instead of passing it on: to another scheme (redirectScheme)
// or to a URL computed by a regular expression (redirectRegex).
//
// # The model
//
// A redirect is an answer, not a refusal: the request never reaches the
// backend or the breaker and is not a failure. The status keeps to RFC
// 9110 15.4: a temporary redirect is 302 for GET and HEAD and 307 for
// other methods, a permanent one 301 and 308, so that a POST is never
// silently turned into a GET by the client.
//
// The scheme of a request is https when Levee terminated TLS on its
// connection. Behind a load balancer that terminates TLS, the request's
// X-Forwarded-Proto is believed only when TrustForwarded says the peer is
// one of the trusted proxies (--trusted-proxies); a client's own
// X-Forwarded-Proto is never believed, else any client could skip the
// redirect and a redirect loop could not be told from a spoofed header.
package redirect

import (
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// status is the redirect status for a method (RFC 9110 15.4).
func status(method string, permanent bool) int {
	keep := method != http.MethodGet && method != http.MethodHead
	switch {
	case permanent && keep:
		return http.StatusPermanentRedirect
	case permanent:
		return http.StatusMovedPermanently
	case keep:
		return http.StatusTemporaryRedirect
	}
	return http.StatusFound
}

// redirect answers r with a redirect to target.
func redirect(w http.ResponseWriter, r *http.Request, target string, permanent bool) {
	w.Header()["Location"] = []string{target}
	w.Header()["Content-Type"] = []string{"text/plain; charset=utf-8"}
	code := status(r.Method, permanent)
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(http.StatusText(code) + "\n"))
	}
}

// Scheme is the compiled redirectScheme policy.
type Scheme struct {
	scheme    string
	port      string // "" for the scheme's default
	permanent bool
	// TrustForwarded, when set, says whether r's peer is a trusted proxy
	// whose X-Forwarded-Proto tells the scheme. Nil: never.
	TrustForwarded func(r *http.Request) bool
}

// NewScheme compiles c; nil when c is.
func NewScheme(c *config.RedirectScheme) *Scheme {
	if c == nil {
		return nil
	}
	s := &Scheme{scheme: c.Scheme, permanent: c.Permanent}
	if s.scheme == "" {
		s.scheme = "https"
	}
	if c.Port != 0 && !(s.scheme == "https" && c.Port == 443 || s.scheme == "http" && c.Port == 80) {
		s.port = strconv.Itoa(c.Port)
	}
	return s
}

// Name implements policy.Policy.
func (s *Scheme) Name() string { return "redirect-scheme" }

// Stage implements policy.Policy.
func (s *Scheme) Stage() policy.Stage { return policy.StageRedirect }

// Serve redirects a request that did not come on the scheme.
func (s *Scheme) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if requestScheme(r, s.TrustForwarded) == s.scheme {
		next.ServeHTTP(w, r)
		return
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	if s.port != "" {
		host += ":" + s.port
	}
	redirect(w, r, s.scheme+"://"+host+requestURI(r), s.permanent)
}

// requestScheme is the scheme the client used.
func requestScheme(r *http.Request, trust func(*http.Request) bool) string {
	if r.TLS != nil {
		return "https"
	}
	if trust != nil && trust(r) {
		if p := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto"))); p == "https" || p == "http" {
			return p
		}
	}
	return "http"
}

// requestURI is the path and query as the client sent them.
func requestURI(r *http.Request) string {
	if r.RequestURI != "" && r.RequestURI[0] == '/' {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// Regex is the compiled redirectRegex policy.
type Regex struct {
	re          *regexp.Regexp
	replacement string
	permanent   bool
	// TrustForwarded is as Scheme's: it decides the scheme in the URL the
	// regex sees.
	TrustForwarded func(r *http.Request) bool
}

// NewRegex compiles c; nil when c is nil or its regex does not compile
// (the validator has refused it already: W063).
func NewRegex(c *config.RedirectRegex) *Regex {
	if c == nil {
		return nil
	}
	re, err := regexp.Compile(c.Regex)
	if err != nil {
		return nil
	}
	return &Regex{re: re, replacement: c.Replacement, permanent: c.Permanent}
}

// Name implements policy.Policy.
func (x *Regex) Name() string { return "redirect-regex" }

// Stage implements policy.Policy.
func (x *Regex) Stage() policy.Stage { return policy.StageRedirect }

// Serve redirects a request whose URL (scheme://host/path?query) matches.
// A replacement that yields the same URL passes the request on rather than
// redirecting it to itself forever.
func (x *Regex) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	u := requestScheme(r, x.TrustForwarded) + "://" + r.Host + requestURI(r)
	if !x.re.MatchString(u) {
		next.ServeHTTP(w, r)
		return
	}
	target := x.re.ReplaceAllString(u, x.replacement)
	if target == u {
		next.ServeHTTP(w, r)
		return
	}
	redirect(w, r, target, x.permanent)
}
