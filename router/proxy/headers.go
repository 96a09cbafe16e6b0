package proxy

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/levee-proxy/levee/router/httpx/tokens"
)

// prepareHeaders turns the client's header into the backend's, in place:
// the server gave this request to us alone, and retries reuse it.
func (x *exchange) prepareHeaders() {
	req := x.req
	h := req.Header
	x.upgrade = x.p.allowedUpgrade(req)
	te := h["Te"]
	removeHopByHop(h)
	delete(h, HeaderFallback) // only Levee says a request comes from a fallback
	if x.upgrade != "" {
		h["Connection"] = valueUpgrade
		h["Upgrade"] = []string{x.upgrade}
	}
	if httpguts.HeaderValuesContainsToken(te, "trailers") {
		h["Te"] = valueTrailers // gRPC needs it end to end
	}
	// X-Forwarded-* from a trusted proxy are kept (For is appended to);
	// from anyone else they are replaced, so that a client can spoof
	// neither its address nor the scheme or host it used.
	ip, _, err := net.SplitHostPort(req.RemoteAddr)
	trusted := err == nil && x.p.trusts(ip)
	if !trusted {
		removeSpoofable(h)
	}
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

// removeSpoofable deletes the forwarding headers that only a trusted proxy
// may set and that Levee does not write itself: Forwarded (RFC 7239),
// X-Real-Ip, and any spelling of the X-Forwarded-* and X-Real-Ip names
// with underscores, which some servers (PHP's, CGI's) read as the same.
func removeSpoofable(h http.Header) {
	delete(h, "Forwarded")
	delete(h, "X-Real-Ip")
	for k := range h {
		if strings.IndexByte(k, '_') < 0 {
			continue
		}
		switch strings.ToLower(strings.ReplaceAll(k, "_", "-")) {
		case "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "forwarded":
			delete(h, k)
		}
	}
}

// hopByHop are the headers that describe one connection, not the message
// (RFC 9110 7.6.1), and so never cross the proxy.
var hopByHop = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopByHop deletes the hop-by-hop fields and those that Connection
// names.
func removeHopByHop(h http.Header) {
	if c := h["Connection"]; len(c) > 0 {
		var buf [8]string // on the stack: names are rarely more
		for _, k := range tokens.AppendConnectionNamed(buf[:0], c...) {
			delete(h, k)
		}
	}
	for _, k := range hopByHop {
		delete(h, k)
	}
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
