package config

import "time"

// ProtocolUDP names the entrypoints that carry UDP datagrams: they are
// matched by listener alone (--listen name=addr,udp), one route per
// listener.
const ProtocolUDP = "udp"

// Defaults and bounds of the UDP fields.
const (
	// DefaultUDPIdleTimeout ends a client's session after this long
	// without a datagram either way.
	DefaultUDPIdleTimeout = 30 * time.Second
	// MaxUDPSessions bounds the sessions one UDP listener holds at once:
	// a datagram from a new client beyond it is dropped (and counted)
	// until a session expires.
	MaxUDPSessions = 10_000
)

// UDP is the part of an entrypoint that only UDP routes have.
type UDP struct {
	// Listener is the name of the UDP listener the route serves on.
	Listener string `json:"listener"`
	// IdleTimeout ends a client's session (and forgets its backend) after
	// no datagram moved either way for that long.
	IdleTimeout time.Duration `json:"idle_timeout"`
}
