package proxy

import (
	"errors"
	"net/http"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// backendScheme is the scheme of the route's backend URLs: https when the
// route speaks TLS to its backends (net/http's Transport reads it; Levee's
// own client has the TLS configuration from its transport).
func (x *exchange) backendScheme() string {
	if cfg, _ := x.route.BackendTLS(); cfg != nil {
		return "https"
	}
	return "http"
}

// speaksH2 reports whether the route's backends are spoken to in HTTP/2
// (scheme h2c or h2).
func speaksH2(rt *router.Route) bool {
	s := rt.Config().Scheme
	return s == config.SchemeH2C || s == config.SchemeH2
}

// isNoH2 reports whether a failed handshake is a backend of a scheme=h2
// route that did not select h2 in ALPN.
func isNoH2(err error) bool {
	var te *client.TLSError
	return errors.As(err, &te) && te.Reason == client.ReasonNoH2
}

// isTLSError reports whether an attempt failed in the TLS handshake.
func isTLSError(err error) bool {
	var te *client.TLSError
	return errors.As(err, &te)
}

// logTLSFailure logs a failed handshake with its reason (unknown
// authority, name mismatch, expired, handshake timeout…): the client
// only sees 502 backend-tls, the operator must see why. One line per
// failed attempt; passive health ejects a backend that keeps failing.
func (x *exchange) logTLSFailure(b *router.Backend, err error) {
	var te *client.TLSError
	errors.As(err, &te)
	x.p.log.Warn().Str("event", "backend_tls_failed").Str("route", x.route.Config().ID).Str("backend", b.HostPort()).
		Str("server_name", te.ServerName).Str("reason", te.Reason).AnErr("error", te.Err).Msg("TLS handshake with backend failed: " + te.Reason)
}

// replyBackendTLSMisconfigured answers for a route whose backend TLS
// settings could not be read: it never talks to its backends with less
// verification than asked for. Not the backends' fault: no breaker or
// passive-health outcome.
func (x *exchange) replyBackendTLSMisconfigured(err error) {
	x.backendErr = err
	x.reply(http.StatusBadGateway, DiagnosticBackendTLSMisconfigured, "backend TLS settings of this route cannot be used\n")
}
