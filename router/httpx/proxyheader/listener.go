// Package proxyheader accepts the PROXY protocol (haproxy's
// proxy-protocol.txt, v1 text and v2 binary) on a listener behind a load
// balancer, from trusted peers only.
//
// The model: a listener declared with proxy-protocol sits behind load
// balancers whose addresses are trusted (--trusted-proxies). A connection
// from a trusted peer must open with a PROXY header (the spec: a receiver
// must not guess whether it is there); the client address it names
// becomes the connection's remote address, which is all the rest of Levee
// reads (X-Forwarded-For, ipAllowList, rate limits, the access log, a TCP
// route's client and its own PROXY header to a backend). A v2 LOCAL
// header (a health check of the load balancer itself) keeps the peer's
// own address. A connection from any other peer is closed at once, before
// a byte is read: nobody else can claim an address, and a client cannot
// reach the listener around its load balancer.
//
// The header is read within a deadline, in the connection's own
// goroutine, never in the accept loop: a peer that sends no header, a
// truncated one or one that does not parse is closed when the deadline
// passes or the header fails.
package proxyheader

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pires/go-proxyproto"
)

// DefaultTimeout bounds the reading of a PROXY header.
const DefaultTimeout = 5 * time.Second

// Reasons a connection is closed without being accepted, given to
// Options.Refused.
const (
	// RefusedUntrusted: the peer is not a trusted proxy.
	RefusedUntrusted = "untrusted"
	// RefusedHeader: no valid PROXY header within the deadline.
	RefusedHeader = "bad_header"
)

// Options configure a Listener.
type Options struct {
	// Trusted are the peers allowed to send a PROXY header; a connection
	// from any other peer is closed. Empty: every connection is closed.
	Trusted []netip.Prefix
	// Timeout bounds reading the header; zero is DefaultTimeout.
	Timeout time.Duration
	// Refused, if set, is told of each connection closed, with the
	// reason (RefusedUntrusted, RefusedHeader) and the peer's address.
	Refused func(reason string, peer net.Addr, err error)
}

// Listen wraps ln: Accept returns the connections of trusted peers whose
// PROXY header was read, their RemoteAddr the header's client.
func Listen(ln net.Listener, opts Options) net.Listener {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	l := &listener{Listener: ln, opts: opts, conns: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

type listener struct {
	net.Listener
	opts Options

	conns     chan net.Conn
	errc      chan error
	done      chan struct{}
	closeOnce sync.Once
}

func (l *listener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errc <- err:
			case <-l.done:
				return
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				continue // the server pauses and accepts again
			}
			return
		}
		if !l.trusted(c.RemoteAddr()) {
			l.refuse(RefusedUntrusted, c, nil)
			continue
		}
		go l.read(c)
	}
}

// read reads c's PROXY header within the deadline and hands c to Accept.
func (l *listener) read(c net.Conn) {
	pc := proxyproto.NewConn(c, proxyproto.WithPolicy(proxyproto.REQUIRE), proxyproto.SetReadHeaderTimeout(l.opts.Timeout))
	if pc.ProxyHeader() == nil {
		// RemoteAddr and Read now fail or fall back; the error is the
		// first Read's.
		_, err := pc.Read(nil)
		l.refuse(RefusedHeader, c, err)
		return
	}
	select {
	case l.conns <- &conn{Conn: pc, raw: c}:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *listener) trusted(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range l.opts.Trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (l *listener) refuse(reason string, c net.Conn, err error) {
	peer := c.RemoteAddr()
	_ = c.Close()
	if l.opts.Refused != nil {
		l.opts.Refused(reason, peer, err)
	}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// conn is a connection whose PROXY header was read: it reads through the
// header's buffer, and half-closes (a TCP route's relay) on the socket.
type conn struct {
	*proxyproto.Conn
	raw net.Conn
}

// CloseWrite half-closes the socket, when it can (RFC 9293 3.6).
func (c *conn) CloseWrite() error {
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
