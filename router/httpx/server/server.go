// Package server serves HTTP/1.1 to an [http.Handler] with a lean connection
// loop, as a replacement for [http.Server] on a reverse proxy's client-facing
// listener.
//
// The model: one goroutine per connection reads a request head, calls the
// handler, writes the response and loops. What makes it cheaper than
// net/http's server is what it does not do on every request: no background
// read goroutine (a client's departure is watched for only once somebody
// asks for the request context's Done channel), no per-request context tree,
// no header clone, and request heads parsed in place.
//
// Strictness is not traded for speed. A request head takes the fast path
// only when it is plainly unambiguous: HTTP/1.1, origin-form target of
// ordinary characters, token header names, visible-character values, CRLF
// line ends, exactly one Host of ordinary characters, at most one
// Content-Length of digits, and no Transfer-Encoding, Expect, Pragma or
// continuation lines. Everything else is read by [http.ReadRequest] on the
// same buffered reader and then checked the way net/http's server checks
// it, so on any unusual or hostile head (chunked bodies, CL+TE, duplicate
// Content-Length, obs-fold, bad bytes, HTTP/1.0, absolute-form targets) the
// verdict is net/http's. A differential fuzz test (FuzzFastRequest) checks
// that whatever the fast path takes, net/http parses identically. Chunked
// bodies are decoded by edge, with net/http's rules but for a bound on
// chunk sizes (chunked.go; FuzzChunkedBody compares the two).
//
// Server covers what a reverse proxy's handler uses: Header, WriteHeader,
// Write, Flush (http.Flusher and FlushError), Hijack, the handler's read
// and write deadlines and full duplex (http.ResponseController), trailers,
// Expect: 100-continue, keep-alive and pipelining, header and idle
// timeouts, a header size limit, graceful Shutdown. It does not serve TLS
// or HTTP/2.
//
// An idle keep-alive connection costs little: it gives its buffers back
// while it waits (idle.go) and, once it has waited for ParkIdleAfter,
// its goroutine too (park.go): the server's own poller wakes it. LimitListener caps the open connections of a listener, for
// this server or net/http's.
package server

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves HTTP/1.1 on listeners. Its fields mirror [http.Server]'s
// of the same names; set them before Serve.
type Server struct {
	// Handler answers every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds reading a request head once its first byte
	// has arrived. Zero means no limit.
	ReadHeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection. Zero means ReadHeaderTimeout; both zero, no limit.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the size of a request head (plus 4 KiB of
	// slack, as net/http allows); larger heads are answered 431. Zero
	// means [http.DefaultMaxHeaderBytes].
	MaxHeaderBytes int
	// ErrorLog receives handler panics and accept errors; nil means the
	// log package's standard logger.
	ErrorLog *log.Logger
	// BaseContext, if set, gives the parent of every request's context
	// values (request contexts are cancelled independently of it).
	BaseContext func(net.Listener) context.Context
	// RefusalHeader is added to the answers the server gives on its own
	// (400, 417, 431, 501, 505 for requests it refuses): names must be
	// canonical, values valid.
	RefusalHeader http.Header
	// PlainSocketIO makes connections use net.Conn's Read and Write
	// instead of sockio.Socket's raw system calls.
	PlainSocketIO bool
	// ParkIdleAfter is how long a keep-alive connection may wait for its
	// next request with a goroutine of its own; after that (between one
	// and two times it) the connection is parked in the server's own
	// poller without a goroutine until its next request arrives (see
	// park.go). Zero means 1 s; negative, never. Linux only, and not
	// with PlainSocketIO or for connections given to ServeConn.
	ParkIdleAfter time.Duration

	mu        sync.Mutex
	listeners map[*net.Listener]struct{}
	conns     map[*conn]struct{}
	shutdown  atomic.Bool
	date      atomic.Pointer[dateValue]
	// idleBare counts the connections waiting for a request without
	// buffers (conn.awaitRequest).
	idleBare atomic.Int64
	// The poller of parked connections and its sweeper (park.go).
	parks     atomic.Pointer[parkSet]
	parkTried bool
	sweepStop chan struct{}
}

// ErrServerClosed is returned by Serve after Shutdown or Close. It is
// [http.ErrServerClosed], so callers can treat both servers alike.
var ErrServerClosed = http.ErrServerClosed

// Serve accepts connections on ln and serves each on its own goroutine.
// It always returns a non-nil error; after Shutdown or Close, ErrServerClosed.
// Temporary accept errors are retried with a growing pause up to 1 s.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(&ln, true) {
		return ErrServerClosed
	}
	defer s.track(&ln, false)
	base := context.Background()
	if s.BaseContext != nil {
		if base = s.BaseContext(ln); base == nil {
			panic("server: BaseContext returned a nil context")
		}
	}
	var pause time.Duration
	for {
		rw, err := ln.Accept()
		if err != nil {
			if s.shutdown.Load() {
				return ErrServerClosed
			}
			// Running out of file descriptors is temporary: wait and
			// accept again, as net/http does.
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.logf("server: accept error: %v; retrying in %v", err, pause)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		c := newConn(s, rw, base)
		c.parkable = c.sock != nil && s.parks.Load() != nil
		if !s.addConn(c) {
			_ = rw.Close()
			return ErrServerClosed
		}
		go c.serve()
	}
}

// ServeConn serves one connection accepted elsewhere (router/httpx/tlsmux
// hands over TLS connections it has handshaken) in the calling goroutine,
// until the connection ends. base is its requests' base context, as
// BaseContext gives for a listener. A server shut down closes it at once;
// Shutdown and Close treat it as any other connection.
func (s *Server) ServeConn(base context.Context, rwc net.Conn) {
	c := newConn(s, rwc, base)
	if !s.addConn(c) {
		_ = rwc.Close()
		return
	}
	c.serve()
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests in progress to be answered; their connections are closed after
// the answer. If ctx ends first, Shutdown returns its error and the
// remaining connections stay open (call Close). Hijacked connections are
// not tracked.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdown.Store(true)
	s.closeListeners()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() {
			s.stopParking()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close closes the listeners and every tracked connection at once.
func (s *Server) Close() error {
	s.shutdown.Store(true)
	err := s.closeListeners()
	s.mu.Lock()
	for c := range s.conns {
		s.unpark(c)
		_ = c.rwc.Close()
		delete(s.conns, c)
	}
	s.mu.Unlock()
	s.stopParking()
	return err
}

func (s *Server) track(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.shutdown.Load() {
			return false
		}
		if s.listeners == nil {
			s.listeners = make(map[*net.Listener]struct{})
		}
		s.listeners[ln] = struct{}{}
		s.startParkingLocked()
		return true
	}
	delete(s.listeners, ln)
	return true
}

func (s *Server) closeListeners() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for ln := range s.listeners {
		if cerr := (*ln).Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
		delete(s.listeners, ln)
	}
	return err
}

func (s *Server) addConn(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown.Load() {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			s.unpark(c)
			_ = c.rwc.Close()
			delete(s.conns, c)
		}
	}
	return len(s.conns) == 0
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return s.ReadHeaderTimeout
}

// dateValue is the Date header for one second, formatted once.
type dateValue struct {
	unix  int64
	value []string
}

// dateHeader returns the Date header value for now; the slice is shared
// and must not be modified.
func (s *Server) dateHeader(now time.Time) []string {
	sec := now.Unix()
	if d := s.date.Load(); d != nil && d.unix == sec {
		return d.value
	}
	d := &dateValue{unix: sec, value: []string{now.UTC().Format(http.TimeFormat)}}
	s.date.Store(d)
	return d.value
}
