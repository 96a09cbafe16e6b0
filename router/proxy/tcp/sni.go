package tcp

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// SNIListener wraps ln, the socket of the TLS listener named listener,
// so that TCP routes with SNI and the HTTP server share it: a connection
// whose ClientHello names a TCP route of the listener (Snapshot.MatchTCP)
// is relayed by the proxy, its ClientHello included, untouched (TLS
// passthrough), or, for a route with tls=terminate, handshaken with
// Options.TLS and relayed in plain; any other is returned by Accept to the HTTP server, the
// bytes read replayed, as if nothing had been read. While the listener
// has no SNI route, connections are returned as accepted, unread.
//
// The ClientHello is read within helloTimeout (a client that sends
// nothing is closed then), in the connection's own goroutine, never in
// the accept loop.
func (p *Proxy) SNIListener(ln net.Listener, listener string, helloTimeout time.Duration) net.Listener {
	s := &sniListener{Listener: ln, p: p, name: listener, timeout: helloTimeout,
		conns: make(chan net.Conn), done: make(chan struct{}), errc: make(chan error, 1)}
	go s.acceptLoop()
	return s
}

type sniListener struct {
	net.Listener
	p       *Proxy
	name    string
	timeout time.Duration

	conns     chan net.Conn
	errc      chan error
	done      chan struct{}
	closeOnce sync.Once
}

func (s *sniListener) acceptLoop() {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				select {
				case s.errc <- err: // the server pauses and accepts again
				case <-s.done:
					return
				}
				continue
			}
			select {
			case s.errc <- err:
			case <-s.done:
			}
			return
		}
		if !s.p.opts.Snapshot().HasSNIRoutes(s.name) {
			s.deliver(c)
			continue
		}
		go s.sort(c)
	}
}

// sort reads c's ClientHello and sends c to its TCP route or to Accept.
func (s *sniListener) sort(c net.Conn) {
	name, replay, err := peekServerName(c, s.timeout)
	if err != nil && len(replay) == 0 {
		_ = c.Close() // nothing was said within the limit
		return
	}
	pc := &peekedConn{Conn: c, r: io.MultiReader(bytes.NewReader(replay), c)}
	if rt := s.p.opts.Snapshot().MatchTCP(s.name, name); err == nil && rt != nil {
		if rt.Config().TCP.TLS == config.TCPTerminate {
			s.terminate(pc, name, rt.ID())
			return
		}
		s.p.Handle(pc, s.name, name)
		return
	}
	// Not a TCP route's (or no ClientHello Levee can read): the HTTP
	// server's handshake sees the same bytes and answers as it would.
	s.deliver(pc)
}

// terminate completes the TLS handshake of a tls=terminate route's
// connection with Levee's certificates, within the hello timeout, and
// relays the plain bytes.
func (s *sniListener) terminate(c net.Conn, name, route string) {
	if s.p.termTLS == nil {
		s.p.refuse(s.name, route, OutcomeHandshake, c, errors.New("no TLS configuration for tls=terminate"))
		_ = c.Close()
		return
	}
	tc := tls.Server(c, s.p.termTLS)
	_ = c.SetDeadline(time.Now().Add(s.timeout))
	err := tc.Handshake()
	_ = c.SetDeadline(time.Time{})
	if err != nil {
		s.p.refuse(s.name, route, OutcomeHandshake, c, err)
		_ = c.Close()
		return
	}
	s.p.Handle(tc, s.name, name)
}

func (s *sniListener) deliver(c net.Conn) {
	select {
	case s.conns <- c:
	case <-s.done:
		_ = c.Close()
	}
}

func (s *sniListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case err := <-s.errc:
		return nil, err
	case <-s.done:
		return nil, net.ErrClosed
	}
}

func (s *sniListener) Close() error {
	err := net.ErrClosed
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.Listener.Close()
	})
	return err
}

// errPeeked stops the handshake once the ClientHello is read.
var errPeeked = errors.New("tcp: ClientHello read")

// peekServerName reads c's TLS ClientHello (RFC 8446 4.1.2, in as many
// records and packets as the client sends it) within timeout and returns
// its server_name (RFC 6066 3; "" when it has none) and every byte read,
// to be replayed. crypto/tls parses it: the handshake is stopped as soon
// as the hello is read, before Levee writes anything.
func peekServerName(c net.Conn, timeout time.Duration) (string, []byte, error) {
	rec := &recordingConn{Conn: c}
	var name string
	got := false
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, got = h.ServerName, true
		return nil, errPeeked
	}}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	err := tls.Server(rec, cfg).Handshake()
	_ = c.SetReadDeadline(time.Time{})
	if got {
		return name, rec.buf.Bytes(), nil
	}
	if err == nil {
		err = errors.New("tcp: no ClientHello")
	}
	return "", rec.buf.Bytes(), err
}

// recordingConn keeps what is read through it and writes nothing: the
// peeking handshake must not answer the client.
type recordingConn struct {
	net.Conn
	buf bytes.Buffer
}

func (r *recordingConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.buf.Write(p[:n])
	return n, err
}

func (r *recordingConn) Write(p []byte) (int, error) { return 0, errPeeked }

// peekedConn is a connection whose first bytes were read already: reads
// replay them first.
type peekedConn struct {
	net.Conn
	r io.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite closes the write half of the connection underneath.
func (c *peekedConn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return nil
}
