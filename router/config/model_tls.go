package config

import (
	"strconv"
	"time"
)

// Listener kinds a route serves on by default: a route without tls serves
// on every plain listener, a route with tls on every TLS listener. Named
// listeners (Traefik's entry points; Levee calls an API route an
// "entrypoint", so its listening sockets are "listeners") are declared by
// `levee serve --listen name=addr[,tls]`.
const (
	// MinHSTSPreload is the least max-age the preload list accepts (one
	// year, hstspreload.org).
	MinHSTSPreload = 365 * 24 * time.Hour
	// MaxHSTS is the largest Strict-Transport-Security max-age accepted:
	// two years, the preload list's own recommendation (hstspreload.org).
	MaxHSTS = 2 * 365 * 24 * time.Hour
)

// TLS is how a route is served over HTTPS.
type TLS struct {
	// Enabled serves the route on the TLS listeners (with a certificate
	// from a static file, ACME or the default) instead of the plain ones.
	Enabled bool `json:"enabled"`
	// Redirect answers the route's requests on plain listeners with 308 to
	// https:// (same host, path and query). Defaults to Enabled.
	Redirect bool `json:"redirect"`
	// HSTS is the Strict-Transport-Security max-age sent on the route's
	// HTTPS responses; 0 sends none (RFC 6797).
	HSTS time.Duration `json:"hsts"`
	// HSTSIncludeSubdomains and HSTSPreload add the includeSubDomains
	// and preload directives to the header (RFC 6797 6.1.2; preload is
	// the browsers' preload list's, hstspreload.org).
	HSTSIncludeSubdomains bool `json:"hsts_include_subdomains,omitempty"`
	HSTSPreload           bool `json:"hsts_preload,omitempty"`
}

// HSTSHeader is the Strict-Transport-Security value of the route's HTTPS
// answers, "" when it sends none.
func (t TLS) HSTSHeader() string {
	if t.HSTS <= 0 {
		return ""
	}
	v := "max-age=" + strconv.FormatInt(int64(t.HSTS/time.Second), 10)
	if t.HSTSIncludeSubdomains {
		v += "; includeSubDomains"
	}
	if t.HSTSPreload {
		v += "; preload"
	}
	return v
}

// IsZero reports whether no TLS field is set.
func (t TLS) IsZero() bool { return t == TLS{} }

// BackendTLS is how a route's backends are spoken to over TLS
// (scheme=https). Zero verifies the backend's certificate against the
// system roots for the backend's address. A field holding
// InvalidBackendTLS could not be read: the route refuses to talk to its
// backends.
type BackendTLS struct {
	// ServerName is sent in SNI and verified in the backend's
	// certificate; empty means the backend's address.
	ServerName string `json:"server_name,omitempty"`
	// CA is a PEM file of the CAs to verify against instead of the
	// system roots.
	CA string `json:"ca,omitempty"`
	// ClientCert is CERT[,KEY]: the certificate presented to backends
	// that ask for one.
	ClientCert string `json:"client_cert,omitempty"`
	// InsecureSkipVerify accepts any certificate.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// IsZero reports whether no backend TLS field is set.
func (t BackendTLS) IsZero() bool { return t == BackendTLS{} }
