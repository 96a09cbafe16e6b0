package tcp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// The spliced copy. Between two plain TCP connections (*net.TCPConn on
// both sides: no TLS, no bytes held by a wrapper), Go's TCPConn.ReadFrom
// moves the bytes with splice(2) through a pipe, without copying them
// through user space. It is used only once the backend has sent its first
// byte: splice does not say which side failed, and before that byte the
// breaker must know (see the package doc); after it, the verdict is a
// success whoever ends the relay.
//
// The idle limit holds as on the buffered copy. Each splice call moves at
// most spliceChunk bytes and waits for the source at most half the idle
// limit (or until the limit counted from the last byte either way), so
// the last-byte time that the other direction reads is never more than
// half the limit old while bytes move. The destination must take the
// bytes within the limit; a write that times out has lost what the pipe
// held, so it ends the relay, while a read that times out happened with
// the pipe empty (the kernel's pipe is drained before the next read) and
// the copy goes on. The two are told apart by when the timeout came: a
// read's deadline falls at most half the limit after the call began, a
// write's the whole limit.
const spliceChunk = 1 << 20

// spliceSwitch turns the spliced copy on for a proxy's relays (nil: off)
// and counts the directions that went over to it.
type spliceSwitch struct {
	started atomic.Int64
}

// spliceAfter is one direction's switch to the spliced copy: once ready
// (the backend's first byte).
type spliceAfter struct {
	ready   *atomic.Bool
	started *atomic.Int64
}

func (s *spliceSwitch) after(answered *atomic.Bool) *spliceAfter {
	if s == nil {
		return nil
	}
	return &spliceAfter{ready: answered, started: &s.started}
}

// PlainConn is a connection wrapper that moves exactly the bytes of the
// connection it wraps, in both directions, and holds none (the serve
// listener's connection limit): the spliced copy may go to the wrapped
// connection. TLS connections, which transform the bytes, must not have it.
type PlainConn interface {
	PlainConn() net.Conn
}

// tcpPair returns dst and src as TCP connections when both are, seen
// through PlainConn wrappers.
func tcpPair(dst, src net.Conn) (*net.TCPConn, *net.TCPConn, bool) {
	d, ok := plainTCP(dst)
	if !ok {
		return nil, nil, false
	}
	s, ok := plainTCP(src)
	return d, s, ok
}

func plainTCP(c net.Conn) (*net.TCPConn, bool) {
	for {
		switch v := c.(type) {
		case *net.TCPConn:
			return v, true
		case PlainConn:
			c = v.PlainConn()
		default:
			return nil, false
		}
	}
}

// spliceRest copies src to dst with splice(2) until src's EOF (nil), a
// failure of either side (errRead: splice cannot say which), or the idle
// limit (errIdle), as pump does.
func spliceRest(dst, src *net.TCPConn, idle time.Duration, last *atomic.Int64) error {
	lr := io.LimitedReader{R: src}
	for {
		start := time.Now()
		readBy := time.Unix(0, last.Load()).Add(idle)
		if half := start.Add(idle / 2); half.Before(readBy) {
			readBy = half
		}
		_ = src.SetReadDeadline(readBy)
		_ = dst.SetWriteDeadline(start.Add(idle))
		lr.N = spliceChunk
		n, err := dst.ReadFrom(&lr)
		if n > 0 {
			last.Store(time.Now().UnixNano())
		}
		switch {
		case err == nil && lr.N > 0:
			return nil // src's EOF before the chunk's end
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if time.Since(start) >= idle {
				return errIdle // the write: dst took nothing for idle
			}
			if time.Since(time.Unix(0, last.Load())) >= idle {
				return errIdle
			}
		default:
			return errors.Join(errRead, err)
		}
	}
}
