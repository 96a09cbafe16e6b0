package tcp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/breaker"
)

// relayBuffer is the size of each direction's copy buffer.
const relayBuffer = 32 << 10

// buffers holds the copy buffers of a proxy's relays between connections:
// a new connection takes one per direction that finished relays gave
// back, instead of allocating and zeroing 64 KiB a connection for the
// garbage collector. A buffer carries no byte from one connection to
// another: pump writes only what its own read put in it (buf[:n]).
type buffers struct{ pool sync.Pool }

func newBuffers() *buffers {
	return &buffers{pool: sync.Pool{New: func() any { b := make([]byte, relayBuffer); return &b }}}
}

func (b *buffers) get() *[]byte  { return b.pool.Get().(*[]byte) }
func (b *buffers) put(p *[]byte) { b.pool.Put(p) }

// Who ended a relay first: the side whose read or write failed first, or
// the idle limit. Only the first end is blamed; the errors that closing
// both sides then causes are not.
const (
	endNone int32 = iota
	endClient
	endBackend
	endIdle
)

// result is how a relay ended, for the breaker.
type result struct {
	// answered: the backend sent at least one byte.
	answered bool
	// backendBroke: the backend failed (a reset, a refused write) or
	// closed its side before its first byte while the client was still
	// there.
	backendBroke bool
}

// verdict is the breaker outcome of a relay (see the package doc).
func (r result) verdict() breaker.Result {
	switch {
	case r.answered:
		return breaker.Success
	case r.backendBroke:
		return breaker.Failure
	default:
		return breaker.Neutral
	}
}

// closeWriter is a connection whose write half closes alone
// (*net.TCPConn, *tls.Conn, and the connections of this package that wrap
// one).
type closeWriter interface{ CloseWrite() error }

func closeWrite(c net.Conn) {
	if cw, ok := c.(closeWriter); ok {
		_ = cw.CloseWrite()
	}
}

// relay copies client to backend and back until both directions have
// ended, one side fails, or nothing moved for idle. With splice, once the
// backend has answered, a direction between two plain TCP connections
// moves its bytes with splice(2), in the kernel (spliceRest). Each
// direction's copy buffer comes from bufs. It closes neither connection;
// the caller does.
func relay(client, backend net.Conn, idle time.Duration, splice *spliceSwitch, bufs *buffers) result {
	var (
		last       atomic.Int64 // unix nanos of the last byte either way
		answered   atomic.Bool
		clientDone atomic.Bool // the client ended its stream or failed
		end        atomic.Int32
		once       sync.Once
	)
	last.Store(time.Now().UnixNano())
	fail := func(who int32) {
		end.CompareAndSwap(endNone, who)
		once.Do(func() {
			_ = client.Close()
			_ = backend.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		switch err := pump(backend, client, idle, &last, nil, splice.after(&answered), bufs); {
		case err == nil:
			// The client ended its stream: so does Levee toward the
			// backend (RFC 9293 3.6), and the answer keeps coming.
			clientDone.Store(true)
			closeWrite(backend)
		case errors.Is(err, errRead):
			clientDone.Store(true)
			fail(endClient)
		case errors.Is(err, errWrite):
			fail(endBackend)
		default:
			fail(endIdle)
		}
	}()
	switch err := pump(client, backend, idle, &last, &answered, splice.after(&answered), bufs); {
	case err == nil:
		if !answered.Load() && !clientDone.Load() {
			end.CompareAndSwap(endNone, endBackend) // closed before saying anything
		}
		closeWrite(client)
	case errors.Is(err, errRead):
		fail(endBackend)
	case errors.Is(err, errWrite):
		fail(endClient)
	default:
		fail(endIdle)
	}
	wg.Wait()
	fail(endNone)
	return result{answered: answered.Load(), backendBroke: end.Load() == endBackend}
}

var (
	errIdle  = errors.New("tcp relay: idle timeout")
	errRead  = errors.New("tcp relay: read failed")
	errWrite = errors.New("tcp relay: write failed")
)

// pump copies src to dst until src's EOF (nil), a read error (errRead), a
// write error (errWrite), or idle without a byte either way or a write
// to dst that does not complete in idle (errIdle). first, if set, is set
// at the first byte. Once sw (if set) says so after a write, the rest of
// the copy is spliceRest's. Its buffer, from bufs, goes back when it
// returns or hands over to spliceRest.
func pump(dst, src net.Conn, idle time.Duration, last *atomic.Int64, first *atomic.Bool, sw *spliceAfter, bufs *buffers) error {
	bp := bufs.get()
	held := true
	defer func() {
		if held {
			bufs.put(bp)
		}
	}()
	buf := *bp
	for {
		if sw != nil && sw.ready.Load() {
			if d, s, ok := tcpPair(dst, src); ok {
				sw.started.Add(1)
				held = false
				bufs.put(bp)
				return spliceRest(d, s, idle, last)
			}
			sw = nil
		}
		_ = src.SetReadDeadline(time.Unix(0, last.Load()).Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if first != nil {
				first.Store(true)
			}
			// A peer that stops reading holds the write: it gets the idle
			// limit too.
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				if errors.Is(werr, os.ErrDeadlineExceeded) {
					return errIdle
				}
				return errors.Join(errWrite, werr)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if time.Since(time.Unix(0, last.Load())) < idle {
				continue // the other direction moved meanwhile
			}
			return errIdle
		default:
			return errors.Join(errRead, err)
		}
	}
}
