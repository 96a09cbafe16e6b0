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
	// HeldWriteTimeout bounds the write of what a connection held until
	// its close (rawConn.HoldWrites): the answer's last bytes and the
	// close_notify alert. Give it the limit the answer's writes have (a
	// slow client must not lose the end of an answer that a direct write
	// would have delivered); 0 means 5 s, the bound crypto/tls gives its
	// close_notify alert.
	HeldWriteTimeout time.Duration
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
	if opts.HeldWriteTimeout <= 0 {
		opts.HeldWriteTimeout = defaultHeldWriteTimeout
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
	growStack(0)
	tc := tls.Server(rawIO(c, s.opts.HeldWriteTimeout), s.opts.Config)
	// The limit is the connection's deadline rather than a context's:
	// crypto/tls watches a cancellable context with a goroutine of its own
	// for every handshake. The deadline is cleared for the server that
	// takes the connection over, which sets its own.
	err := c.SetDeadline(time.Now().Add(s.opts.HandshakeTimeout))
	if err == nil {
		err = tc.Handshake()
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
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
//
// It can also hold the writes that end the connection (HoldWrites): the
// last answer and TLS's close_notify alert then leave in one system call
// and one packet when the connection is closed, instead of two.
type rawConn struct {
	net.Conn
	s *sockio.Socket

	heldLimit time.Duration // Options.HeldWriteTimeout

	mu      sync.Mutex // guards the hold: Close may come from another goroutine
	holding bool
	held    []byte
	wdl     time.Time // the write deadline asked for while holding
	wdlSet  bool
}

// Hold limits: at most holdMax bytes are held (one TLS record of the
// largest size and the alert; more is sent as it comes); the held bytes
// get Options.HeldWriteTimeout to leave at Close.
const (
	holdMax                 = 16<<10 + 256
	defaultHeldWriteTimeout = 5 * time.Second
)

func (c *rawConn) Read(p []byte) (int, error) { return c.s.Read(p) }

func (c *rawConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.holding {
		c.mu.Unlock()
		return c.s.Write(p)
	}
	if len(c.held)+len(p) <= holdMax {
		c.held = append(c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	// Too much to hold: the held bytes and p go now, within the write
	// deadline asked for meanwhile.
	held := c.held
	c.holding, c.held = false, nil
	if c.wdlSet {
		_ = c.Conn.SetWriteDeadline(c.wdl)
		c.wdlSet = false
	}
	c.mu.Unlock()
	if len(held) > 0 {
		if _, err := c.s.Write(held); err != nil {
			return 0, err
		}
	}
	return c.s.Write(p)
}

// HoldWrites holds the writes to come until Close (within holdMax). The
// caller promises to close the connection after them: Levee's HTTP/1.1
// server calls it before the last answer of a connection it then closes
// (router/httpx/server).
func (c *rawConn) HoldWrites() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// SetWriteDeadline is recorded while writes are held (nothing is written
// until Close, which has its own limit), and set otherwise.
func (c *rawConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	if c.holding {
		c.wdl, c.wdlSet = t, true
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// Close sends the held writes, within the connection's heldLimit, and
// closes the connection.
func (c *rawConn) Close() error {
	c.mu.Lock()
	held := c.held
	c.holding, c.held = false, nil
	c.mu.Unlock()
	if len(held) > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.heldLimit))
		_, _ = c.s.Write(held)
	}
	return c.Conn.Close()
}

// rawIO returns c with raw socket I/O, or c when it is not a socket;
// heldLimit bounds the write of held bytes at Close.
func rawIO(c net.Conn, heldLimit time.Duration) net.Conn {
	if s := sockio.New(c); s != nil {
		return &rawConn{Conn: c, s: s, heldLimit: heldLimit}
	}
	return c
}
