package main

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/h3"
)

// openH3 opens the HTTP/3 side of a TLS listener declared with h3: a UDP
// socket on the host of spec.Addr and the port its TCP socket is bound to
// (bound, which the system chose for :0), QUIC with the TCP listener's
// TLS configuration, and the same handler. The limits are the listener's:
// its header timeout bounds the handshake, its idle timeout an idle
// connection, --max-client-conns the connections (refusals counted with
// the TCP ones); with 0rtt it accepts early data.
func openH3(spec listenerSpec, bound string, l *router.Listener, h http.Handler, app *app, maxConns int, refused func()) (*h3.Server, error) {
	host, _, _ := net.SplitHostPort(spec.Addr)
	_, port, _ := net.SplitHostPort(bound)
	addr := net.JoinHostPort(host, port)
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("HTTP/3 listener %s on udp %s: %w", spec.Name, addr, err)
	}
	srv, err := h3.Listen(pc, h3.Options{
		Handler:          h,
		TLS:              app.tlsConfig,
		ConnContext:      func(ctx context.Context) context.Context { return router.WithListener(ctx, l) },
		PublicPort:       l.PublicPort,
		HandshakeTimeout: spec.headerTimeout(),
		IdleTimeout:      spec.idleTimeout(),
		MaxHeaderBytes:   proxyMaxHeaderBytes,
		MaxConns:         maxConns,
		OnRefused:        refused,
		Allow0RTT:        spec.ZeroRTT,
	})
	if err != nil {
		return nil, fmt.Errorf("HTTP/3 listener %s: %w", spec.Name, err)
	}
	return srv, nil
}

// h3Serving serves an HTTP/3 server beside the TCP listeners: serve
// stops it with them (Shutdown sends GOAWAY, Close cuts).
type h3Serving struct{ *h3.Server }

// Serve ignores ln: the server has its own UDP socket.
func (s h3Serving) Serve(net.Listener) error { return s.Server.Serve() }
