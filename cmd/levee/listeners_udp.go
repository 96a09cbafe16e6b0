package main

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/levee-proxy/levee/router/proxy/udp"
)

// packetListener carries a UDP listener's socket through the listeners'
// plumbing (bound, logged, closed on error like the others); it accepts
// nothing: udpServer reads the socket itself.
type packetListener struct{ pc net.PacketConn }

func (l packetListener) Accept() (net.Conn, error) {
	return nil, errors.New("a UDP listener accepts no connection")
}

func (l packetListener) Close() error { return l.pc.Close() }

func (l packetListener) Addr() net.Addr { return l.pc.LocalAddr() }

// udpServer serves a UDP listener with the UDP routes' proxy: the
// httpServer serve runs and stops. UDP has no connection to drain:
// Shutdown ends the sessions and closes the socket at once.
type udpServer struct {
	l  *udp.Listener
	pc net.PacketConn
}

func (s *udpServer) Serve(net.Listener) error {
	err := s.l.Serve()
	if errors.Is(err, net.ErrClosed) {
		return http.ErrServerClosed
	}
	return err
}

func (s *udpServer) Shutdown(context.Context) error { return s.Close() }

func (s *udpServer) Close() error {
	err := s.pc.Close()
	_ = s.l.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
