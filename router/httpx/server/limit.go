package server

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
)

// LimitListener returns a listener that keeps at most max of its
// connections open, for either server (edge's or net/http's). Accept
// closes a connection that arrives when max are open at once, without
// writing to it (an answer would cost what the limit is there to save),
// calls refused (which may be nil, and must not block), and accepts the
// next. A connection frees its slot when it is closed, the first time;
// a hijacked connection keeps its slot until its new owner closes it.
//
// The connections it returns keep what servers look for in a
// *net.TCPConn: syscall.Conn (edge's raw socket I/O, sockio), CloseWrite
// (the half-close before a lingering close) and io.ReaderFrom (sendfile
// and splice), each delegated to the accepted connection.
func LimitListener(ln net.Listener, max int, refused func()) net.Listener {
	if max < 1 {
		panic("server: LimitListener needs a positive max")
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), refused: refused}
}

type limitListener struct {
	net.Listener
	// slots holds one token per open connection.
	slots   chan struct{}
	refused func()
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: l.release}, nil
		default:
		}
		_ = c.Close()
		if l.refused != nil {
			l.refused()
		}
	}
}

func (l *limitListener) release() { <-l.slots }

// limitConn is a connection that holds a slot of its listener.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot (once).
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

var errNotSupported = errors.New("server: not supported by the accepted connection")

// PlainConn is the accepted connection: a limitConn moves its bytes
// unchanged (the TCP proxy's spliced copy goes to it).
func (c *limitConn) PlainConn() net.Conn { return c.Conn }

// SyscallConn is the accepted connection's (syscall.Conn).
func (c *limitConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errNotSupported
	}
	return sc.SyscallConn()
}

// CloseWrite shuts the sending side of the accepted connection.
func (c *limitConn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errNotSupported
	}
	return cw.CloseWrite()
}

// ReadFrom is the accepted connection's (io.ReaderFrom), or a plain copy.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// writerOnly hides a writer's other methods from io.Copy.
type writerOnly struct{ io.Writer }
