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

// result is how a relay ended, for the breaker.
type result struct {
	// answered: the backend sent at least one byte.
	answered bool
	// backendBroke: reading the backend failed (reset) or it closed
	// before its first byte while the client was still there.
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
// (*net.TCPConn, and the connections of this package that wrap one).
type closeWriter interface{ CloseWrite() error }

// relay copies client to backend and back until both directions have
// ended, one fails, or nothing moved for idle. It closes neither
// connection; the caller does.
func relay(client, backend net.Conn, idle time.Duration) result {
	var (
		last       atomic.Int64 // unix nanos of the last byte either way
		answered   atomic.Bool
		clientGone atomic.Bool
		broke      atomic.Bool
		once       sync.Once
	)
	last.Store(time.Now().UnixNano())
	abort := func() {
		once.Do(func() {
			_ = client.Close()
			_ = backend.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := pump(backend, client, idle, &last, nil)
		if err != nil {
			if !errors.Is(err, errIdle) {
				clientGone.Store(true)
			}
			abort()
			return
		}
		// The client ended its stream: so does Levee toward the backend.
		clientGone.Store(true)
		if cw, ok := backend.(closeWriter); ok {
			_ = cw.CloseWrite()
		}
	}()
	err := pump(client, backend, idle, &last, &answered)
	switch {
	case err != nil && !errors.Is(err, errIdle) && !errors.Is(err, net.ErrClosed):
		// A read error on the backend is a reset (a write error toward
		// the client is the client's, and closes it anyway).
		if !answered.Load() && !clientGone.Load() && errors.Is(err, errBackendRead) {
			broke.Store(true)
		}
		abort()
	case err != nil:
		abort()
	default:
		if !answered.Load() && !clientGone.Load() {
			broke.Store(true) // closed before saying anything
		}
		if cw, ok := client.(closeWriter); ok {
			_ = cw.CloseWrite()
		}
	}
	wg.Wait()
	abort()
	return result{answered: answered.Load(), backendBroke: broke.Load()}
}

var (
	errIdle        = errors.New("tcp relay: idle timeout")
	errBackendRead = errors.New("tcp relay: backend read failed")
)

// pump copies src to dst until src's EOF (nil), an error, or idle without
// a byte either way, or a write to dst that does not complete in idle
// (errIdle). first, if set, is set at the first byte.
// A read error of src is wrapped with errBackendRead when first is set
// (src is then the backend).
func pump(dst, src net.Conn, idle time.Duration, last *atomic.Int64, first *atomic.Bool) error {
	buf := make([]byte, relayBuffer)
	for {
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
				return werr
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
		case first != nil:
			return errors.Join(errBackendRead, err)
		default:
			return err
		}
	}
}
