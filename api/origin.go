package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// What a browser can make the API do. Tokens stop a page that has none,
// but the API runs without tokens on loopback, and a browser on that
// machine reaches loopback for any page it shows. So every request, in
// every mode, passes three checks before anything else, the dashboard's
// files included:
//
//   - Host (DNS rebinding): a page on a name its attacker controls can
//     point that name at 127.0.0.1 and then read the API as same-origin.
//     The Host must be a name of this API: an IP address it listens on
//     (any address when it listens on all of them: a page cannot be
//     served from an address literal it does not control), a loopback
//     name (localhost and *.localhost, which browsers never ask DNS for,
//     RFC 6761 6.3), or a name in Options.Hosts (--api-hosts). Else 421.
//   - Origin (CSRF): a page cannot read a cross-origin answer, but its
//     form POST is still obeyed. A state-changing request (any method but
//     GET, HEAD, OPTIONS) from another origin, by Sec-Fetch-Site or by an
//     Origin that is not the Host, is refused with 403
//     (http.CrossOriginProtection).
//   - Body type: a state-changing request's body must be JSON or YAML,
//     declared by Content-Type; a bodiless one may declare nothing. HTML
//     forms can only send form, multipart and text/plain bodies, which
//     are refused with 415, so a browser too old for Sec-Fetch-Site still
//     cannot write without a CORS preflight, which the API never grants.

// hostPolicy says which Host names reach the API.
type hostPolicy struct {
	names map[string]bool // lower case, no port, no trailing dot
	ips   map[netip.Addr]bool
	anyIP bool // the API listens on every address
}

// newHostPolicy builds the policy from the listen address (host:port;
// "" when unknown) and the extra names.
func newHostPolicy(listen string, extra []string) (hostPolicy, error) {
	p := hostPolicy{names: map[string]bool{}, ips: map[netip.Addr]bool{}}
	if listen != "" {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			return p, fmt.Errorf("api: listen address %q: %w", listen, err)
		}
		p.add(host, true)
	}
	for _, h := range extra {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/ @?#") {
			return p, fmt.Errorf("API host %q: want a host name or address, without scheme or path", h)
		}
		if name, _, err := net.SplitHostPort(h); err == nil {
			h = name // a port is allowed and not compared
		}
		p.add(h, false)
	}
	return p, nil
}

// CheckHosts checks names for Options.Hosts (--api-hosts).
func CheckHosts(hosts []string) error {
	_, err := newHostPolicy("", hosts)
	return err
}

// add allows one name or address; an unspecified listen address allows
// every address.
func (p *hostPolicy) add(host string, listen bool) {
	host = normalHost(host)
	if a, err := netip.ParseAddr(host); err == nil {
		if a.IsUnspecified() && listen {
			p.anyIP = true
			return
		}
		p.ips[a.Unmap()] = true
		return
	}
	if host == "" {
		if listen {
			p.anyIP = true // ":3035": every address
		}
		return
	}
	p.names[host] = true
}

// allows reports whether a request's Host (with or without port) names
// this API.
func (p hostPolicy) allows(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = normalHost(host)
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return a.IsLoopback() || p.anyIP || p.ips[a]
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return host != "" && p.names[host]
}

// normalHost lower-cases a host, drops a trailing dot, the brackets of an
// IPv6 literal and its zone.
func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	return h
}

// admit runs the three checks; on a refusal it has answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	if !s.hosts.allows(r.Host) {
		writeError(w, http.StatusMisdirectedRequest,
			fmt.Sprintf("Host %q is not a name of this API: use its address, localhost, or add the name to --api-hosts", r.Host), nil)
		return false
	}
	if safeMethod(r.Method) {
		return true
	}
	if err := s.origins.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "cross-origin request refused: the API takes writes from its own origin only ("+err.Error()+")", nil)
		return false
	}
	ct := r.Header.Get("Content-Type")
	if _, ok := formatOf(ct); !ok && (ct != "" || r.ContentLength != 0 || len(r.TransferEncoding) > 0) {
		writeError(w, http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q is not accepted for %s: send a JSON or YAML body (application/json, application/yaml), or no body and no Content-Type", ct, r.Method), nil)
		return false
	}
	return true
}

// safeMethod reports whether a method changes nothing (RFC 9110 9.2.1).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
