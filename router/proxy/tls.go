package proxy

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/router"
)

// redirectHTTPS answers a request for a TLS route that came in on a plain
// listener: 308 Permanent Redirect (RFC 9110 15.4.9: unlike 301, the
// client repeats the method and body) to the same host, path and query
// over https, on the public port of the TLS listener the route serves on
// (router.Route.RedirectTarget).
func (x *exchange) redirectHTTPS(l *router.Listener) {
	port := 0
	if t := x.route.RedirectTarget(l); t != nil {
		port = t.PublicPort
	}
	h := x.w.Header()
	h["Location"] = []string{httpsLocation(x.req, port)}
	h["Content-Type"] = valueTextPlain
	h["X-Content-Type-Options"] = valueNoSniff
	if len(x.req.TransferEncoding) > 0 {
		// The body is not read: the connection cannot be reused.
		h["Connection"] = valueClose
	}
	x.status = http.StatusPermanentRedirect
	x.armWrite()
	x.w.WriteHeader(http.StatusPermanentRedirect)
	x.headersAt = time.Since(x.start)
	_, _ = io.WriteString(x.w, "this site is served over https\n")
}

// httpsLocation is the https URL of req: its host without the port, then
// port unless it is 0 or 443, then the request target as received.
func httpsLocation(req *http.Request, port int) string {
	host := req.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	switch {
	case port != 0 && port != 443:
		host = net.JoinHostPort(host, strconv.Itoa(port))
	case strings.Contains(host, ":"):
		host = "[" + host + "]" // an IPv6 literal
	}
	return "https://" + host + req.URL.RequestURI()
}

// setHSTS announces the route's Strict-Transport-Security policy on an
// answer over TLS. RFC 6797 7.2: a host must not send it over plain HTTP,
// where an attacker could forge or strip it. A backend's own header, copied
// later, replaces this one.
func (x *exchange) setHSTS() {
	if x.req.TLS == nil {
		return
	}
	if v := x.route.Config().TLS.HSTSHeader(); v != "" {
		x.w.Header()["Strict-Transport-Security"] = []string{v}
	}
}
