package config

import (
	"slices"
	"time"
)

// ProtocolTCP names the entrypoints that carry TCP connections rather
// than HTTP requests (fields_tcp.go): they are matched by listener, or on
// a TLS listener by the ClientHello's server name, never by host and path.
const ProtocolTCP = "tcp"

// TCP modes of a route's TLS on a TLS listener.
const (
	// TCPPassthrough relays the TLS bytes untouched: the backend
	// terminates TLS with its own certificate.
	TCPPassthrough = "passthrough"
	// TCPTerminate has Levee complete the TLS handshake with its own
	// certificates (as for HTTPS routes) and relay the plain bytes.
	TCPTerminate = "terminate"
)

// Defaults of the TCP fields.
const (
	DefaultTCPConnectTimeout = 5 * time.Second
	DefaultTCPIdleTimeout    = 10 * time.Minute
	// MaxTCPConnections bounds tcp.maxConnections.
	MaxTCPConnections = 1_000_000
)

// TCP is the part of an entrypoint that only TCP routes have.
type TCP struct {
	// Listener is the name of the listener the route serves on: a plain
	// TCP listener (--listen name=addr,tcp), or a TLS listener with SNI.
	Listener string `json:"listener"`
	// SNI, if set, are the server names (lower case, "*.example.com"
	// matches one label) the route takes on a TLS listener, read from the
	// ClientHello before any HTTP.
	SNI []string `json:"sni,omitempty"`
	// TLS is how a route with SNI handles TLS: TCPPassthrough (also when
	// empty, the default) or TCPTerminate.
	TLS string `json:"tls,omitempty"`
	// ConnectTimeout bounds a backend connect; IdleTimeout closes a
	// connection that moved no byte either way for that long.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	IdleTimeout    time.Duration `json:"idle_timeout"`
	// MaxConnections bounds the route's open client connections; a
	// connection beyond it is closed at once. Zero: no limit.
	MaxConnections int `json:"max_connections,omitempty"`
}

// Equal reports whether t and o are the same settings.
func (t TCP) Equal(o TCP) bool {
	return t.Listener == o.Listener && slices.Equal(t.SNI, o.SNI) && t.TLS == o.TLS &&
		t.ConnectTimeout == o.ConnectTimeout && t.IdleTimeout == o.IdleTimeout && t.MaxConnections == o.MaxConnections
}
