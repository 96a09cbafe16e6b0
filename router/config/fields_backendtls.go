package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// Backend schemes: how a route's backends are spoken to.
const (
	SchemeHTTP  = "http"
	SchemeHTTPS = "https"
	// SchemeH2C is cleartext HTTP/2 with prior knowledge (RFC 9113 3.3).
	SchemeH2C = "h2c"
	// SchemeH2 is HTTP/2 over TLS, the backend having to select h2 in
	// ALPN (RFC 9113 3.2, RFC 7301).
	SchemeH2 = "h2"
)

// SpeaksTLS reports whether a scheme is spoken over TLS, so that the
// backend side of tls.* applies to it.
func SpeaksTLS(scheme string) bool { return scheme == SchemeHTTPS || scheme == SchemeH2 }

// InvalidBackendTLS stands for a backend TLS value that could not be
// read. It is kept in the field (and in the canonical form) so that the
// route refuses to talk to its backends rather than with weaker
// verification than asked for.
const InvalidBackendTLS = "(invalid)"

// misconfiguredFallback is what a route with an unusable backend TLS
// setting does, as its diagnostics say.
const misconfiguredFallback = "route answers 502 backend-tls-misconfigured"

// backendTLSFields are the scheme and the backend side of tls.*: how
// Levee speaks to the route's backends. The tls, tls.redirect and tls.hsts
// rows are the client side (fields_tls.go); tls.* holds both.
func backendTLSFields() []Field {
	return []Field{
		{Label: "scheme", JSON: "config.scheme", Kind: KindEnum, Default: SchemeHTTP, Code: diagnostics.BadScheme,
			Values:  []string{SchemeHTTP, SchemeHTTPS, SchemeH2C, SchemeH2},
			Doc:     "How Levee speaks to the route's backends: `http` is plain HTTP/1.1, `https` is HTTP/1.1 over TLS (1.2 or later), verified against the system roots or `tls.ca`, with SNI and the verified name `tls.serverName` (default: the backend's address). A handshake or certificate failure is a backend failure (breaker, passive health) answered 502 with `X-Levee-Diagnostic: backend-tls`. `h2c` is cleartext HTTP/2 with prior knowledge and `h2` is HTTP/2 over TLS (the same `tls.*` settings as `https`; a backend that does not select h2 in ALPN is a backend failure answered 502 `backend-no-h2`; one that refuses the request's streams (two at most), or grants none, has not processed it: another backend is tried whatever the method, else 503 `backend-refused-stream`): what gRPC backends need. See [tls.md](tls.md#backends-over-https) and [tls.md](tls.md#http2-backends-h2c-and-h2).",
			Example: "https", set: setScheme, get: getScheme},
		{Label: "tls.serverName", JSON: "config.tls.server_name", Kind: KindString, Default: "the backend's address", Code: diagnostics.BadBackendTLS,
			Doc:     "With scheme=https or h2, the server name sent in SNI and verified in the backend's certificate (a DNS name or an IP address). A bad value makes the route answer 502 (W005), never verify another name.",
			Example: "portainer.internal", set: setBackendServerName, get: omitEmpty(inTLS(func(ep *Entrypoint) any { return ep.BackendTLS.ServerName }))},
		{Label: "tls.ca", JSON: "config.tls.ca", Kind: KindString, Default: "the system roots", Code: diagnostics.BadBackendTLS,
			Doc:     "With scheme=https or h2, a PEM file of the CA certificates the backends' certificates are verified against, instead of the system roots. Read when the route is built; a file that cannot be read or holds no certificate makes the route answer 502 with `X-Levee-Diagnostic: backend-tls-misconfigured` (W005), never fall back to weaker verification.",
			Example: "/certs/internal-ca.pem", rw: backendFile(func(t *BackendTLS) *string { return &t.CA })},
		{Label: "tls.clientCert", JSON: "config.tls.client_cert", Kind: KindString, Default: "(none)", Code: diagnostics.BadBackendTLS,
			Doc:     "With scheme=https or h2, the client certificate Levee presents to backends that ask for one (mutual TLS): CERT[,KEY] as `--tls-cert` takes it, PEM files of a chain and its key, KEY left out when CERT holds both. Unreadable: as tls.ca (W005).",
			Example: "/certs/levee.pem", rw: backendFile(func(t *BackendTLS) *string { return &t.ClientCert })},
		{Label: "tls.insecureSkipVerify", JSON: "config.tls.insecure_skip_verify", Kind: KindBool, Default: "false", Code: diagnostics.BadBackendTLS,
			Doc:     "With scheme=https or h2, accepts any certificate from the backends: the connection is encrypted but not authenticated. Always reported (W006); prefer tls.ca.",
			Example: "true", set: setBackendInsecure, get: omitEmpty(inTLS(func(ep *Entrypoint) any { return ep.BackendTLS.InsecureSkipVerify }))},
	}
}

func setScheme(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	if err == nil {
		switch s = strings.ToLower(strings.TrimSpace(s)); s {
		case SchemeHTTP, SchemeHTTPS, SchemeH2C, SchemeH2:
			d.ep.Scheme = s
			return
		default:
			err = fmt.Errorf("want http, https, h2c or h2")
		}
	}
	d.bad(f, key, v, err.Error())
}

// getScheme writes the scheme when it is not plain HTTP, the default.
func getScheme(ep *Entrypoint, _ *Backend) (any, bool) {
	return ep.Scheme, ep.Scheme != SchemeHTTP && ep.Scheme != ""
}

// badBackendTLS reports a backend TLS value that cannot be read and keeps
// it as InvalidBackendTLS, so that the route fails closed.
func badBackendTLS(d *draft, f *Field, key string, v any, reason string, field *string) {
	d.add(f.Code, key, displayValue(v), misconfiguredFallback, fmt.Sprintf("invalid %s: %s", f.Label, reason), "")
	*field = InvalidBackendTLS
}

func setBackendServerName(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	if err == nil && !validRouteHost(s) && net.ParseIP(s) == nil || err == nil && strings.HasPrefix(s, "*.") {
		err = fmt.Errorf("want a DNS name or an IP address")
	}
	if err != nil {
		badBackendTLS(d, f, key, v, err.Error(), &d.ep.BackendTLS.ServerName)
		return
	}
	d.ep.BackendTLS.ServerName = s
}

func setBackendFile(field func(*BackendTLS) *string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		s, err := toString(v)
		if err == nil && strings.TrimSpace(s) == "" {
			err = fmt.Errorf("want a file name")
		}
		if err != nil {
			badBackendTLS(d, f, key, v, err.Error(), field(&d.ep.BackendTLS))
			return
		}
		*field(&d.ep.BackendTLS) = strings.TrimSpace(s)
	}
}

// backendFile reads and writes one file of the backend side, written only
// when set.
func backendFile(ptr func(*BackendTLS) *string) readWrite {
	return readWrite{setBackendFile(ptr), omitEmpty(inTLS(func(ep *Entrypoint) any { return *ptr(&ep.BackendTLS) }))}
}

func setBackendInsecure(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.BackendTLS.InsecureSkipVerify = b
	}
}

// backendTLSRules applies the cross-field rules of the backend side:
// its fields mean nothing without scheme=https or h2 (W007), and skipping
// verification is always reported (W006).
func (d *draft) backendTLSRules() {
	t := &d.ep.BackendTLS
	if SpeaksTLS(d.ep.Scheme) {
		if t.InsecureSkipVerify {
			g := d.given["tls.insecureSkipVerify"]
			d.add(diagnostics.InsecureBackendTLS, g.key, g.value, "",
				"backend certificates are not verified: the traffic to the backends is encrypted but anyone on the path can read and change it", "give the backends' CA with tls.ca instead")
		}
		return
	}
	for _, f := range backendTLSFields()[1:] {
		g, given := d.given[f.Label]
		if !given {
			continue
		}
		d.add(diagnostics.BackendTLSIgnored, g.key, g.value, "ignored",
			f.Label+" applies only to a route with scheme=https or h2: ignored", "add scheme=https (or h2) or remove "+g.key)
	}
	*t = BackendTLS{}
}
