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
	// DefaultUDPMaxSessions is udp.maxSessions when none is given: the
	// sessions one UDP listener holds at once.
	DefaultUDPMaxSessions = 10_000
	// MaxUDPMaxSessions bounds udp.maxSessions.
	MaxUDPMaxSessions = 1_000_000
)

// UDP is the part of an entrypoint that only UDP routes have.
type UDP struct {
	// Listener is the name of the UDP listener the route serves on.
	Listener string `json:"listener"`
	// IdleTimeout ends a client's session (and forgets its backend) after
	// no datagram moved either way for that long.
	IdleTimeout time.Duration `json:"idle_timeout"`
	// MaxSessions bounds the sessions of the route's listener: a new
	// client beyond it takes the place of the least recently active
	// session. Zero is DefaultUDPMaxSessions.
	MaxSessions int `json:"max_sessions"`
	// AnswerTimeout, when positive, makes a session whose backend sent no
	// datagram back within it after a client's datagram a failure of the
	// route's breaker (request/response protocols such as DNS). Zero: a
	// silent backend is no failure.
	AnswerTimeout time.Duration `json:"answer_timeout,omitempty"`
}
