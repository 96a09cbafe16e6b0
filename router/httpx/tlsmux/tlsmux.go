// Package tlsmux serves a TLS listener with two HTTP servers, one per
// protocol that ALPN (RFC 7301) may choose.
//
// A Server accepts TCP connections from listeners and completes each TLS
// handshake in the connection's own goroutine, within a limit, so that a
// client that stalls its handshake holds neither the accept loop nor a
// server's connection slot. The connection is then served in that same
// goroutine, by the server of the protocol the handshake chose:
//
//   - "h2": to Options.H2 (an HTTP/2 server's ServeConn);
//   - "http/1.1", or no ALPN at all (RFC 9113 3.2: HTTP/1.1 is the
//     default): to Options.H1 (an HTTP/1.1 server's ServeConn);
//   - anything else (the ACME TLS-ALPN-01 challenge's "acme-tls/1", which
//     the handshake itself answered): closed.
//
// The connection under crypto/tls reads and writes with raw system calls
// (router/httpx/internal/sockio) when it is a socket, as Levee's server
// does on plain connections.
//
// This lets Levee's own HTTP/1.1 server (router/httpx/server) serve TLS
// connections while net/http's HTTP/2 server serves the h2 ones; net/http's
// Server cannot be split that way (it never hands HTTP/1.1 connections to
// anyone else).
package tlsmux

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
)

// ProtoH2 is HTTP/2's ALPN protocol id (RFC 9113 3.2).
const ProtoH2 = "h2"

// Options configure a Server.
type Options struct {
	// Config is the server's TLS configuration (certificates, NextProtos).
	Config *tls.Config
	// HandshakeTimeout bounds a TLS handshake; 0 means 10 s.
	HandshakeTimeout time.Duration
	// H1 serves a connection that chose HTTP/1.1 (or no protocol) and
	// returns when it is done. Required.
	H1 func(*tls.Conn)
	// H2 serves a connection that negotiated HTTP/2 and returns when it is
	// done; nil closes such connections (then do not offer "h2").
	H2 func(*tls.Conn)
	// HandshakeError receives each failed handshake with the client's
	// address; nil ignores them.
	HandshakeError func(remote string, err error)
}

// Server accepts TLS connections on listeners and hands each, handshaken,
// to H1 or H2 in the connection's own goroutine (see the package doc).
type Server struct {
	opts Options

	mu     sync.Mutex
	lns    map[net.Listener]struct{}
	closed bool
	active sync.WaitGroup // handshakes and connections being served
}

// New returns a Server; call Serve for each listener.
func New(opts Options) *Server {
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	return &Server{opts: opts, lns: map[net.Listener]struct{}{}}
}

// Serve accepts connections on ln until it fails or Close is called (then
// it returns net.ErrClosed).
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return net.ErrClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return net.ErrClosed
			}
			// Running out of file descriptors is temporary: wait and
			// accept again, as net/http does.
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		s.active.Add(1)
		go s.serveConn(c)
	}
}

// serveConn completes c's TLS handshake and serves the connection with
// the server of its protocol.
func (s *Server) serveConn(c net.Conn) {
	defer s.active.Done()
	tc := tls.Server(rawIO(c), s.opts.Config)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		if s.opts.HandshakeError != nil {
			s.opts.HandshakeError(c.RemoteAddr().String(), err)
		}
		_ = c.Close()
		return
	}
	switch tc.ConnectionState().NegotiatedProtocol {
	case ProtoH2:
		if s.opts.H2 == nil {
			_ = tc.Close()
			return
		}
		s.opts.H2(tc)
	case "", "http/1.1":
		s.opts.H1(tc)
	default:
		_ = tc.Close()
	}
}

// Close closes the listeners: Serve returns. Connections in their
// handshake or being served are left to finish (see Wait).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var err error
	for ln := range s.lns {
		if e := ln.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Wait waits until every connection in its handshake or being served by
// H1 or H2 is done: after Close, for a graceful shutdown.
func (s *Server) Wait() { s.active.Wait() }

// rawConn is a TCP connection whose reads and writes are raw system calls
// (sockio.Socket), as Levee's HTTP/1.1 server makes them on plain
// connections: crypto/tls reads and writes its records through it. Its
// deadlines are the connection's.
type rawConn struct {
	net.Conn
	s *sockio.Socket
}

func (c *rawConn) Read(p []byte) (int, error)  { return c.s.Read(p) }
func (c *rawConn) Write(p []byte) (int, error) { return c.s.Write(p) }

// rawIO returns c with raw socket I/O, or c when it is not a socket.
func rawIO(c net.Conn) net.Conn {
	if s := sockio.New(c); s != nil {
		return &rawConn{Conn: c, s: s}
	}
	return c
}
