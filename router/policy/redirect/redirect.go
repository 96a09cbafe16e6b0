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
//
// A redirectRegex never becomes an open redirect: a target whose scheme
// and host (as a browser reads the Location) are neither in the
// replacement's literal text nor the request's own host is refused with
// 400 bad-path, so a group captured from the path cannot choose the site.
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
	// written is the replacement's literal prefix in browserForm: a
	// target's scheme and host must be in it, or be the request's host.
	written string
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
	return &Regex{re: re, replacement: c.Replacement, permanent: c.Permanent, written: browserForm(literalPrefix(c.Replacement))}
}

// literalPrefix is the part of a replacement before its first group
// reference ("$$" is a literal "$"): what the route itself wrote.
func literalPrefix(repl string) string {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		if repl[i] != '$' {
			b.WriteByte(repl[i])
			continue
		}
		if i+1 < len(repl) && repl[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		break
	}
	return b.String()
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
	if x.offSite(target, r.Host) {
		// Levee's own answer, marked as the proxy marks a client's path
		// it cannot route on (docs/operations.md).
		w.Header()["X-Levee-Diagnostic"] = []string{"bad-path"}
		http.Error(w, "the route's redirect would leave the site for this path", http.StatusBadRequest)
		return
	}
	redirect(w, r, target, x.permanent)
}

// offSite reports whether target sends the client to another site than
// the route wrote: an absolute or scheme-relative URL (as a browser reads
// it) whose scheme and host are neither in the replacement's literal text
// nor the request's own host. A group captured from the path, as in
// "/legacy//evil.example/x" through "${1}", must never choose the host.
func (x *Regex) offSite(target, host string) bool {
	origin, authority, ok := originOf(browserForm(target))
	if !ok || strings.HasPrefix(x.written, origin) {
		return false
	}
	if authority == "" {
		return true // another scheme (javascript:, data:) the route did not write
	}
	return !strings.EqualFold(authority, host) && !strings.EqualFold(authority, stripPort(host))
}

// browserForm is a Location value as a browser reads it (WHATWG URL):
// leading spaces and control characters dropped, tabs and newlines
// removed, backslashes read as slashes.
func browserForm(s string) string {
	s = strings.TrimLeft(s, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	if strings.ContainsAny(s, "\t\n\r\\") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(s)
	}
	return s
}

// originOf splits off the scheme and authority of a URL in browserForm:
// "https://h:1" of "https://h:1/x", "//h" of "//h/x", "javascript:" of
// "javascript:x" (authority ""). ok is false for a relative reference,
// which stays on the request's own site. http and https take their
// authority after any number of slashes, as browsers do ("https:h/x").
func originOf(t string) (origin, authority string, ok bool) {
	rest := t
	switch i := strings.IndexAny(t, ":/?#"); {
	case i > 0 && t[i] == ':' && isScheme(t[:i]):
		rest = t[i+1:]
		scheme := strings.ToLower(t[:i])
		if scheme != "http" && scheme != "https" && !strings.HasPrefix(rest, "//") {
			return t[:i+1], "", true
		}
		rest = strings.TrimLeft(rest, "/")
	case strings.HasPrefix(t, "//"):
		rest = strings.TrimLeft(t, "/")
	default:
		return "", "", false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	return t[:len(t)-len(rest)+end], rest[:end], true
}

// isScheme reports whether s is an RFC 3986 3.1 scheme.
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		switch {
		case 'a' <= c && c <= 'z':
		case i > 0 && ('0' <= s[i] && s[i] <= '9' || s[i] == '+' || s[i] == '-' || s[i] == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// stripPort is host without a ":port".
func stripPort(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}
