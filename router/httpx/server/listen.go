package server

import (
	"context"
	"net"
	"time"
)

// TCP keep-alive of client connections: the first probe after
// KeepAliveIdle of silence, then one every KeepAliveInterval, and the
// connection is given up after KeepAliveCount unanswered probes. These are
// Go's defaults for accepted connections (net.ListenConfig), so a client
// that vanished without a word is found within about two and a half
// minutes even on a connection no timeout covers (a WebSocket tunnel).
const (
	KeepAliveIdle     = 15 * time.Second
	KeepAliveInterval = 15 * time.Second
	KeepAliveCount    = 9
)

// Listen listens on the TCP address addr for an HTTP server.
//
// Where the system lets accepted connections inherit the listening
// socket's options (Linux), the keep-alive settings above are set once on
// the listening socket instead of by four system calls on every accepted
// connection, which is what net.Listen does: a measurable share of the
// cost of a short connection (docs/performance-history.md). Elsewhere net.Listen's
// per-connection settings apply, with the same values.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	lc := listenConfig()
	// net's error names the address ("listen tcp :80: bind: ..."); the
	// caller says which listener it is.
	return lc.Listen(ctx, "tcp", addr)
}
