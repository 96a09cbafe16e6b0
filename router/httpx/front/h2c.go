//lint:file-ignore SA1019 HTTP/2 is served by x/net/http2.Server (ServeConn, ConfigureServer), as on the TLS listeners (tls.go)

package front

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/router/httpx/h2guard"
)

// h2cListener is a plain listener's net.Listener with cleartext HTTP/2
// beside HTTP/1.1 (`--listen name=addr,h2c`): a connection that opens
// with the HTTP/2 client preface (prior knowledge, RFC 9113 3.4) is
// served by net/http's HTTP/2 server behind h2guard, with the limits of
// a TLS listener's HTTP/2; any other is handed, its first bytes
// replayed, to the listener's HTTP/1.1 server through Accept. The
// HTTP/1.1 Upgrade to h2c (RFC 7540 3.2, removed in RFC 9113) is never
// honoured. The preface must arrive within the listener's header
// timeout, as a request head must.
type h2cListener struct {
	net.Listener
	h2      *http2.Server
	base    *http.Server // h2's base config: limits, error log, GOAWAY on shutdown
	ctx     context.Context
	timeout time.Duration
	o       Options

	start    sync.Once
	accepted chan net.Conn
	failed   chan error
	closed   chan struct{}
	stop     sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{} // the HTTP/2 connections being served
}

// H2C wraps ln, a plain listener served by Plain(o), so that its
// connections opening with the HTTP/2 preface are served as cleartext
// HTTP/2 with o (the handler, limits and guard of a TLS listener's
// HTTP/2), and the others reach the HTTP/1.1 server through Accept.
func H2C(ln net.Listener, o Options) net.Listener { return newH2CListener(ln, o) }

func newH2CListener(ln net.Listener, o Options) *h2cListener {
	c := &h2cListener{
		Listener: ln,
		h2:       &http2.Server{},
		base:     o.h2Base(),
		ctx:      o.base(),
		timeout:  o.Limits.HeaderTimeout,
		o:        o,
		accepted: make(chan net.Conn),
		failed:   make(chan error),
		closed:   make(chan struct{}),
		conns:    map[net.Conn]struct{}{},
	}
	// The base's idle timeout, and the graceful shutdown (GOAWAY) that
	// base.Shutdown starts.
	_ = http2.ConfigureServer(c.base, c.h2)
	return c
}

// Accept returns the next HTTP/1.1 connection.
func (c *h2cListener) Accept() (net.Conn, error) {
	c.start.Do(func() { go c.acceptLoop() })
	select {
	case conn := <-c.accepted:
		return conn, nil
	case err := <-c.failed:
		return nil, err
	case <-c.closed:
		return nil, net.ErrClosed
	}
}

func (c *h2cListener) acceptLoop() {
	for {
		conn, err := c.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Passed on (the server backs off on a temporary error).
			select {
			case c.failed <- err:
				continue
			case <-c.closed:
				return
			}
		}
		go c.sniff(conn)
	}
}

// sniff reads as much of the connection's first bytes as tells the
// HTTP/2 preface from anything else.
func (c *h2cListener) sniff(conn net.Conn) {
	preface := []byte(http2.ClientPreface)
	_ = conn.SetReadDeadline(time.Now().Add(c.timeout))
	buf := make([]byte, 0, len(preface))
	for len(buf) < len(preface) && bytes.HasPrefix(preface, buf) {
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if len(buf) == 0 {
				_ = conn.Close() // nothing sent: nothing to answer
				return
			}
			break // the HTTP/1.1 server answers what there is
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
	replayed := &replayConn{Conn: conn, head: buf}
	if !bytes.Equal(buf, preface) {
		select {
		case c.accepted <- replayed:
		case <-c.closed:
			_ = conn.Close()
		}
		return
	}
	c.serveH2(replayed)
}

func (c *h2cListener) serveH2(conn net.Conn) {
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		_ = conn.Close()
		return
	default:
	}
	c.conns[conn] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
	}()
	g := h2guard.NewPlain(conn, c.o.floodGuard(conn.RemoteAddr().String()))
	c.h2.ServeConn(g, &http2.ServeConnOpts{Context: c.ctx, BaseConfig: c.base, Handler: c.base.Handler})
}

// Close stops accepting and asks the HTTP/2 clients to go away (GOAWAY):
// their streams in progress finish, as the HTTP/1.1 server's Shutdown
// lets its requests finish.
func (c *h2cListener) Close() error {
	err := c.Listener.Close()
	c.stop.Do(func() {
		c.mu.Lock()
		close(c.closed)
		c.mu.Unlock()
		go func() { _ = c.base.Shutdown(context.Background()) }() // base serves nothing: runs the GOAWAY hook
	})
	return err
}

// replayConn reads head before the rest of the connection.
type replayConn struct {
	net.Conn
	head []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}

// CloseWrite half-closes the TCP connection under it, when it can.
func (r *replayConn) CloseWrite() error {
	if cw, ok := r.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
