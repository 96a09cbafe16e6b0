package proxy

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/levee-proxy/levee/router/httpx/fieldname"
	"github.com/levee-proxy/levee/router/httpx/tokens"
)

// prepareHeaders turns the client's header into the backend's, in place:
// the server gave this request to us alone, and retries reuse it.
func (x *exchange) prepareHeaders() {
	req := x.req
	h := req.Header
	x.upgrade = x.p.allowedUpgrade(req)
	if x.route != nil && speaksH2(x.route) {
		// HTTP/2 has no Upgrade (RFC 9113 8.2.2): the request goes as a
		// plain one, as an upgrade to a protocol not allowed does.
		x.upgrade = ""
	}
	te := h["Te"]
	early, marked := h["Early-Data"]
	removeHopByHop(h)
	if marked {
		// An intermediary MUST NOT remove it, and a sender MUST NOT name
		// it in Connection (RFC 8470 5.1): a Connection naming it does
		// not unmark a request that may be a replay.
		h["Early-Data"] = early
	}
	delete(h, HeaderFallback) // only Levee says a request comes from a fallback
	if x.upgrade != "" {
		h["Connection"] = valueUpgrade
		h["Upgrade"] = []string{x.upgrade}
	}
	if httpguts.HeaderValuesContainsToken(te, "trailers") {
		h["Te"] = valueTrailers // gRPC needs it end to end
	}
	// The client's forwarding headers are gone unless its peer is trusted
	// (screenHeaders); For is appended to a trusted proxy's, and Proto
	// and Host are Levee's own unless a trusted proxy said them.
	ip, _, err := net.SplitHostPort(req.RemoteAddr)
	trusted := err == nil && x.p.trusts(ip)
	switch prior := h["X-Forwarded-For"]; {
	case err != nil:
		delete(h, "X-Forwarded-For")
	case trusted && len(prior) > 0:
		x.xff[0] = strings.Join(prior, ", ") + ", " + ip
		h["X-Forwarded-For"] = x.xff[:]
	default:
		x.xff[0] = ip
		h["X-Forwarded-For"] = x.xff[:]
	}
	if !trusted || len(h["X-Forwarded-Proto"]) == 0 {
		if req.TLS != nil {
			h["X-Forwarded-Proto"] = valueHTTPS
		} else {
			h["X-Forwarded-Proto"] = valueHTTP
		}
	}
	if !trusted || len(h["X-Forwarded-Host"]) == 0 {
		x.xfh[0] = req.Host
		h["X-Forwarded-Host"] = x.xfh[:]
	}
	if _, ok := h["User-Agent"]; !ok {
		// Otherwise the transport would announce Go's default agent.
		h["User-Agent"] = valueEmpty
	}
}

// hopByHop are the headers that describe one connection, not the message
// (RFC 9110 7.6.1), and so never cross the proxy.
var hopByHop = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopByHop deletes the hop-by-hop fields and those that Connection
// names. A header of at most smallHeader fields is scanned once instead:
// a delete hashes its name, and nine of them cost more than looking at a
// few names.
func removeHopByHop(h http.Header) {
	removeConnectionNamed(h)
	if len(h) <= smallHeader {
		for k := range h {
			if isHopByHop(k) {
				delete(h, k)
			}
		}
		return
	}
	for _, k := range hopByHop {
		delete(h, k)
	}
}

// removeConnectionNamed deletes the fields that Connection names.
func removeConnectionNamed(h http.Header) {
	if c := h["Connection"]; len(c) > 0 {
		var buf [8]string // on the stack: names are rarely more
		for _, k := range tokens.AppendConnectionNamed(buf[:0], c...) {
			delete(h, k)
		}
	}
}

// moveEndToEnd is removeHopByHop(src), then src's fields set in dst: in
// one pass over a small header.
func moveEndToEnd(dst, src http.Header) {
	if len(src) > smallHeader {
		removeHopByHop(src)
		for k, vv := range src {
			dst[k] = vv
		}
		return
	}
	removeConnectionNamed(src)
	for k, vv := range src {
		if isHopByHop(k) {
			delete(src, k)
			continue
		}
		dst[k] = vv
	}
}

// smallHeader is the most fields for which removeHopByHop scans the
// header rather than deleting each hop-by-hop name.
const smallHeader = 8

// isHopByHop reports whether a canonical name is one of hopByHop.
func isHopByHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// trusts reports whether the peer ip is one of Options.TrustedProxies.
func (p *Handler) trusts(ip string) bool {
	if len(p.opts.TrustedProxies) == 0 {
		return false
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, pfx := range p.opts.TrustedProxies {
		if pfx.Contains(addr) {
			return true
		}
	}
	return false
}

// UnderscoreHeaders is what Levee does with a request field whose name
// has an underscore, or any other byte than a letter, a digit or a dash
// ('.', '~', '+', ...): CGI-style gateways read X_Auth_User, and some
// X.Auth.User, as the same field as X-Auth-User (package fieldname).
type UnderscoreHeaders int

const (
	// UnderscoreDelete removes every such field (the default, as nginx's
	// defaults, underscores_in_headers off and ignore_invalid_headers on,
	// drop them).
	UnderscoreDelete UnderscoreHeaders = iota
	// UnderscoreKeep passes them on, but for the spellings of the fields
	// Levee owns (ownedField) and of a route's forward-auth headers,
	// which are always removed.
	UnderscoreKeep
	// UnderscoreReject answers 400 bad-header to a request with one.
	UnderscoreReject
)

// ParseUnderscoreHeaders reads delete, keep or reject.
func ParseUnderscoreHeaders(s string) (UnderscoreHeaders, error) {
	switch s {
	case "delete":
		return UnderscoreDelete, nil
	case "keep":
		return UnderscoreKeep, nil
	case "reject":
		return UnderscoreReject, nil
	}
	return 0, fmt.Errorf("underscore headers %q: want delete, keep or reject", s)
}

// screenHeaders applies, before any policy reads the request, the rules
// on its fields that hold on every route, and answers 400 bad-header to a
// request that breaks one. It reports whether the request may go on.
//
//   - Authorization at most once: a policy checks one and a backend may
//     read the other (PHP over FastCGI takes the last).
//   - A name with an underscore (or another byte that is not a letter,
//     a digit or a dash) goes as UnderscoreHeaders says; one that is a
//     spelling of a field Levee owns never passes.
//   - From a peer that is not a trusted proxy, the forwarding fields are
//     removed (spoofableField), so that no policy and no backend reads an
//     address, scheme, host, port or prefix the client made up.
//   - Early-Data, from any peer, is kept, as RFC 8470 5.1 says an
//     intermediary MUST: it says the request was sent in early data on
//     a hop before, and Levee cannot tell a user agent (which has no
//     reason to send it) from a proxy that is not among the trusted
//     ones. Removing it could let a replayed request reach the backend
//     as a safe one; keeping a false one only makes the backend more
//     careful with that client's own request (a 425, which Levee then
//     forwards: RFC 8470 5.2). Several or other values are one "1",
//     as RFC 8470 5.1 says a server takes them, so that a backend
//     comparing the value with "1" reads them right.
//
// The names are scanned once; a request whose names are all plain
// (fieldname.Plain) and without forwarding fields is not changed.
func (x *exchange) screenHeaders() bool {
	h := x.req.Header
	if len(h["Authorization"]) > 1 {
		x.reply(http.StatusBadRequest, DiagnosticBadHeader, "more than one Authorization field\n")
		return false
	}
	trusted := false
	if len(x.p.opts.TrustedProxies) > 0 {
		ip, _, err := net.SplitHostPort(x.req.RemoteAddr)
		trusted = err == nil && x.p.trusts(ip)
	}
	strategy := x.p.opts.UnderscoreHeaders
	for k := range h {
		if !fieldname.Plain(k) {
			switch {
			case strategy == UnderscoreReject:
				x.reply(http.StatusBadRequest, DiagnosticBadHeader, "a header field name with an underscore or another character that is not a letter, digit or dash\n")
				return false
			case strategy == UnderscoreDelete, ownedField(k):
				delete(h, k)
				continue
			}
		}
		if !trusted && spoofableField(k) {
			delete(h, k)
		}
	}
	if v, ok := h["Early-Data"]; ok && (len(v) != 1 || v[0] != "1") {
		h["Early-Data"] = valueEarlyData
	}
	return true
}

// spoofableField reports whether name, in any spelling, is a forwarding
// field that only a trusted proxy may send: Forwarded (RFC 7239),
// X-Real-Ip, Front-End-Https and the whole X-Forwarded-* family, which
// frameworks read for the client's address and for the scheme, host,
// port and prefix of the URLs they build (Rack, Spring, Symfony).
func spoofableField(name string) bool {
	if name == "" || name[0]|0x20 != 'x' && name[0]|0x20 != 'f' {
		return false // most names: one comparison
	}
	return fieldname.HasPrefix(name, "X-Forwarded-") || fieldname.Equal(name, "Forwarded") ||
		fieldname.Equal(name, "X-Real-Ip") || fieldname.Equal(name, "Front-End-Https")
}

// ownedField reports whether name is, in the sense of fieldname.Equal, a
// field that Levee sets, removes or trusts: its own X-Levee-*, the
// forwarding fields, the hop-by-hop fields and Content-Length. Its
// other spellings (X_Forwarded_For) never reach a backend, whatever
// UnderscoreHeaders says.
func ownedField(name string) bool {
	if spoofableField(name) || fieldname.HasPrefix(name, "X-Levee-") || fieldname.Equal(name, "Content-Length") {
		return true
	}
	for _, k := range hopByHop {
		if fieldname.Equal(name, k) {
			return true
		}
	}
	return false
}
