package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
)

// Connection states, for Shutdown: only an idle connection (waiting for a
// request) may be closed under its owner's feet.
const (
	stateIdle int32 = iota
	stateActive
	stateClosed
	stateHijacked
)

const (
	bufferSize = 4 << 10
	// rstAvoidanceDelay is how long a connection that still has unread
	// request bytes is drained after its answer, so that closing it does
	// not reset the answer away before the client read it (net/http
	// waits as long).
	rstAvoidanceDelay = 500 * time.Millisecond
)

var (
	bufReaders sync.Pool
	bufWriters sync.Pool
	// aLongTimeAgo is a deadline in the past: it unblocks a pending read.
	aLongTimeAgo = time.Unix(1, 0)
)

// conn is one client connection and the loop serving it.
type conn struct {
	srv *Server
	rwc net.Conn
	// sock, when not nil, does the loop's reads and writes on rwc (see
	// sockio.Socket).
	sock       *sockio.Socket
	base       context.Context
	remoteAddr string
	// tlsState is the connection's TLS state when it is a *tls.Conn
	// (handshaken before the server got it, see router/httpx/tlsmux),
	// given to every request as net/http gives it (Request.TLS).
	tlsState   *tls.ConnectionState
	cr         connReader
	br         *bufio.Reader
	bw         *bufio.Writer
	out        io.Writer // what bw writes to: ow, onto sock, else rwc
	state      atomic.Int32
	lastMethod string
	// readDeadline is the read deadline last set by setReadDeadline;
	// idleDeadline: it is an idle deadline (see setIdleDeadline).
	readDeadline time.Time
	idleDeadline bool
	// handlerReadDeadline: the handler set a read deadline through
	// http.ResponseController, to be cleared before the next request.
	handlerReadDeadline atomic.Bool
	// The write deadline in effect (see response.SetWriteDeadline), under
	// wdMu since a handler's goroutines may set it. writeStale: it is a
	// handler's whose request ended; it is cleared before the next write
	// unless the next handler sets one close to it first.
	wdMu          sync.Mutex
	writeDeadline time.Time
	writeStale    atomic.Bool
	ow            outWriter
	// lastBody is the body of the last request served, which a
	// goroutine of its handler may still be reading.
	lastBody *body
	// respHeader is reused by every response of the connection (a
	// ResponseWriter may not be used after its handler returned).
	respHeader http.Header
	// pending holds a small body written before its length was known, so
	// that a short answer gets a Content-Length instead of chunks.
	pending []byte

	// The background read that notices a client leaving, started on
	// demand (see requestContext.Done).
	watchMu       sync.Mutex
	watchWanted   bool
	watchStarted  bool
	watchFinished bool
	watchAborting atomic.Bool
	watchDone     chan struct{}
	cur           *transaction

	// Parking (park.go). parkable: the connection came from Serve and
	// has a socket the server's poller can watch. waiting is its wait
	// state, waitSeq counts its waits, sweptSeq is the count the sweeper
	// saw last (the sweeper's alone); evictMu orders the sweeper's
	// deadline before the wait's end. The rest is the poller's, under
	// its lock.
	parkable  bool
	waiting   atomic.Int32
	waitSeq   atomic.Uint64
	sweptSeq  uint64
	evictMu   sync.Mutex
	inParkSet bool
	parkToken uint64
	parkTimer *time.Timer
}

func newConn(s *Server, rwc net.Conn, base context.Context) *conn {
	c := &conn{srv: s, rwc: rwc, base: base, remoteAddr: rwc.RemoteAddr().String()}
	c.ow = outWriter{c: c, w: rwc}
	if !s.PlainSocketIO {
		if c.sock = sockio.New(rwc); c.sock != nil {
			c.ow.w = c.sock
		}
	}
	c.out = &c.ow
	c.cr = connReader{c: c, limit: -1}
	c.acquireBuffers()
	c.state.Store(stateIdle)
	return c
}

// connReader is what the buffered reader reads from: the connection, with
// a size limit while a request head is read, and the byte a background
// read may have taken.
type connReader struct {
	c        *conn
	limit    int64 // bytes left before the head is too large; -1: no limit
	hitLimit bool
	// noWait makes a read with nothing ready return sockio.ErrWouldBlock
	// instead of waiting (see conn.awaitRequest).
	noWait  bool
	hasByte bool
	byteBuf [1]byte
}

func (cr *connReader) Read(p []byte) (int, error) {
	if cr.limit == 0 {
		cr.hitLimit = true
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if cr.limit > 0 && int64(len(p)) > cr.limit {
		p = p[:cr.limit]
	}
	if cr.hasByte {
		p[0] = cr.byteBuf[0]
		cr.hasByte = false
		cr.consume(1)
		return 1, nil
	}
	var n int
	var err error
	if cr.c.sock != nil && cr.noWait {
		n, err = cr.c.sock.TryRead(p)
	} else if cr.c.sock != nil {
		n, err = cr.c.sock.Read(p)
	} else {
		n, err = cr.c.rwc.Read(p)
	}
	cr.consume(n)
	return n, err
}

func (cr *connReader) consume(n int) {
	if cr.limit > 0 {
		cr.limit -= int64(n)
	}
}

// serve is the connection's loop.
// handshake completes the TLS handshake of a *tls.Conn (router/httpx/tlsmux
// hands over connections already handshaken; a crypto/tls listener's are
// not), within the header timeout as net/http bounds it, and keeps the
// connection's TLS state for its requests. It reports whether to go on.
func (c *conn) handshake() bool {
	tc, ok := c.rwc.(*tls.Conn)
	if !ok {
		return true
	}
	if !tc.ConnectionState().HandshakeComplete {
		ctx := context.Background()
		if d := c.srv.ReadHeaderTimeout; d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		if err := tc.HandshakeContext(ctx); err != nil {
			c.srv.logf("http: TLS handshake error from %s: %v", c.remoteAddr, err)
			return false
		}
	}
	st := tc.ConnectionState()
	c.tlsState = &st
	return true
}

func (c *conn) serve() {
	if !c.handshake() {
		c.finish()
		return
	}
	c.loop()
}

// loop serves requests until the connection ends, is hijacked, or is
// parked (its goroutine then ends, and resume starts the loop again).
func (c *conn) loop() {
	handedOver := false // hijacked or parked: not to be closed here
	defer func() {
		if !handedOver {
			c.finish()
		}
	}()
	for {
		ex, err := c.readRequest()
		if errors.Is(err, errPark) {
			handedOver = true
			return
		}
		if err != nil {
			c.answerReadError(err)
			return
		}
		c.lastBody = ex.body
		keep := c.serveRequest(ex)
		if ex.resp.hijacked {
			handedOver = true
			return
		}
		if !keep {
			return
		}
		if !c.state.CompareAndSwap(stateActive, stateIdle) || c.srv.shutdown.Load() {
			return
		}
	}
}

// finish closes the connection and gives its buffers back.
func (c *conn) finish() {
	c.srv.removeConn(c)
	_ = c.rwc.Close()
	if b := c.lastBody; b != nil {
		// A goroutine of the handler's may still be reading the body
		// (closing the connection ends its read): the buffered reader
		// goes back to the pool only once it is out.
		b.closed.Store(true)
		b.waitReaders()
	}
	c.release()
}

// serveRequest runs the handler for one request and completes the
// response. It reports whether the connection may serve another request.
func (c *conn) serveRequest(ex *transaction) (keep bool) {
	c.watchMu.Lock()
	c.cur, c.watchWanted, c.watchStarted, c.watchFinished = ex, false, false, false
	c.watchMu.Unlock()

	if ex.expectFailed {
		ex.resp.closeAfter = true
		ex.resp.header["Connection"] = []string{"close"}
		for k, vv := range c.srv.RefusalHeader {
			ex.resp.header[k] = vv
		}
		ex.resp.WriteHeader(http.StatusExpectationFailed)
		ex.resp.finish()
		c.endRequest(ex)
		c.linger(nil) // the body was never asked for
		return false
	}
	if !c.runHandler(ex) {
		// A panic: the response may be half sent; only closing the
		// connection tells the client it is incomplete.
		c.endRequest(ex)
		return false
	}
	if ex.resp.hijacked {
		ex.ctx.cancel()
		return false
	}
	bodyLeft := ex.body != nil && !ex.body.finished()
	if bodyLeft {
		// The handler did not read the whole request body: the bytes
		// left cannot be told apart from a next request, so this
		// connection ends after the answer.
		ex.resp.closeAfter = true
	}
	if ex.resp.closeAfter && !bodyLeft {
		c.holdLastWrites()
	}
	ex.resp.finish()
	c.endRequest(ex)
	if bodyLeft {
		c.closeGracefully(ex.body)
		return false
	}
	return !ex.resp.closeAfter && ex.resp.werr == nil
}

// writeHolder is a connection under TLS that can hold the writes that end
// it and send them with its close (router/httpx/tlsmux): the last answer
// and the close_notify alert then leave in one system call.
type writeHolder interface{ HoldWrites() }

// holdLastWrites tells the connection under TLS, when it can hold writes,
// that what is written from now on is followed by its close: only when
// the connection ends right after the answer, not when it lingers (a
// held answer would wait for the linger to end).
func (c *conn) holdLastWrites() {
	tc, ok := c.rwc.(*tls.Conn)
	if !ok {
		return
	}
	if h, ok := tc.NetConn().(writeHolder); ok {
		h.HoldWrites()
	}
}

// runHandler calls the handler and reports false if it panicked.
func (c *conn) runHandler(ex *transaction) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v != http.ErrAbortHandler {
				const size = 64 << 10
				buf := make([]byte, size)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.logf("server: panic serving %v: %v\n%s", c.remoteAddr, v, buf)
			}
		}
	}()
	c.srv.Handler.ServeHTTP(&ex.resp, ex.req)
	return true
}

// endRequest cancels the request's context and stops the background read.
func (c *conn) endRequest(ex *transaction) {
	ex.ctx.cancel()
	c.stopWatch()
}

// closeGracefully ends a connection whose request body was not read to its
// end. A read of the body still running elsewhere ends by the linger
// deadline at the latest.
func (c *conn) closeGracefully(b *body) {
	b.closed.Store(true)
	c.linger(b.waitReaders)
}

// linger half-closes the connection and drains what the client still
// sends for a while, so that closing it does not reset the answer away
// before the client read it. wait runs after the deadline is set.
func (c *conn) linger(wait func()) {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	c.setReadDeadline(time.Now().Add(rstAvoidanceDelay))
	if wait != nil {
		wait()
	}
	c.cr.limit = -1
	_, _ = io.Copy(io.Discard, c.br)
}

// answerReadError answers a request that could not be read, when there is
// anything to say; the connection is closed after.
func (c *conn) answerReadError(err error) {
	var status int
	var reason string
	var se *statusError
	switch {
	case errors.As(err, &se):
		status, reason = se.code, se.text
	case c.cr.hitLimit:
		status, reason = http.StatusRequestHeaderFieldsTooLarge, "request head too large"
	case errors.Is(err, errQuiet), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return
	case isTimeout(err):
		return
	case isUnsupportedTE(err):
		status, reason = http.StatusNotImplemented, "unsupported transfer encoding"
	default:
		// A read that failed on the connection itself comes as a
		// *net.OpError (net.Conn and sockio alike): nobody to answer.
		// net.Error alone would not tell it from a parse error: net/url's
		// *url.Error implements it, and a bad target is answered 400 (as
		// net/http's isCommonNetReadError tells them apart).
		var oe *net.OpError
		if errors.As(err, &oe) {
			return
		}
		// The parser's message quotes the client's bytes: not echoed,
		// as net/http does not either.
		status = http.StatusBadRequest
	}
	c.setWriteDeadline(time.Now().Add(time.Second))
	text := http.StatusText(status)
	fmt.Fprintf(c.bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n", status, text)
	for k, vv := range c.srv.RefusalHeader {
		writeField(c.bw, k, vv)
	}
	fmt.Fprintf(c.bw, "Connection: close\r\n\r\n%d %s", status, text)
	if reason != "" {
		fmt.Fprintf(c.bw, ": %s", reason)
	}
	if c.bw.Flush() == nil {
		c.linger(nil)
	}
}

// isUnsupportedTE reports net/http's refusal of a transfer coding it does
// not implement, or of more than one Transfer-Encoding field (answered 501,
// as its server does). net/http exports no error value for either, so the
// texts are matched; TestRefusedRequests ("unknown transfer coding", "two
// Transfer-Encoding fields") notices if they change.
func isUnsupportedTE(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "unsupported transfer encoding") || strings.Contains(msg, "too many transfer encodings")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// wantWatch asks for the background read of the current request; it
// starts as soon as the request body has been read to its end.
func (c *conn) wantWatch(ex *transaction) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.cur != ex || c.watchFinished {
		return
	}
	c.watchWanted = true
	if ex.body == nil || ex.body.finished() {
		c.startWatchLocked()
	}
}

// bodyDone is called when the request body reached its end.
func (c *conn) bodyDone(ex *transaction) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.cur == ex && c.watchWanted && !c.watchFinished {
		c.startWatchLocked()
	}
}

// startWatchLocked starts a read of one byte below the buffered reader: it
// returns when the client sends more (a pipelined request: the byte is
// kept) or closes its side (the request's context is cancelled).
//
// A byte kept by an earlier read is still pending when the next request's
// head and body came whole from the buffer: the client has sent more, so
// there is nothing to watch for, and reading again would overwrite that
// byte (net/http's startBackgroundRead returns early the same way).
func (c *conn) startWatchLocked() {
	if c.watchStarted || c.cr.hasByte {
		return
	}
	c.watchStarted = true
	done := make(chan struct{})
	c.watchDone = done
	ex := c.cur
	// No deadline but the abort's: the handler may legitimately run for
	// long (a stream).
	c.setReadDeadline(time.Time{})
	go func() {
		defer close(done)
		n, err := c.rwc.Read(c.cr.byteBuf[:])
		if n == 1 {
			c.cr.hasByte = true
			return
		}
		if err != nil && !(c.watchAborting.Load() && isTimeout(err)) {
			ex.ctx.cancel()
		}
	}()
}

// stopWatch ends the background read, if any, and waits for it.
func (c *conn) stopWatch() {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	c.watchFinished = true
	if !c.watchStarted {
		return
	}
	c.watchAborting.Store(true)
	_ = c.rwc.SetReadDeadline(aLongTimeAgo)
	<-c.watchDone
	c.setReadDeadline(time.Time{})
	c.watchAborting.Store(false)
	c.watchStarted = false
	c.watchDone = nil
}

// requestContext is a request's context. It is cancelled when the handler
// returns, when a write to the client fails, and, once somebody has asked
// for Done, when the client closes its connection.
type requestContext struct {
	ex   *transaction
	base context.Context
	mu   sync.Mutex
	done chan struct{}
	err  error
}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Deadline is the base context's.
func (x *requestContext) Deadline() (time.Time, bool) { return x.base.Deadline() }

// Value is the base context's.
func (x *requestContext) Value(key any) any { return x.base.Value(key) }

// Done returns a channel closed when the request ends or the client goes
// away. Asking for it starts watching the connection for the latter.
func (x *requestContext) Done() <-chan struct{} {
	x.mu.Lock()
	first := x.done == nil
	if first {
		if x.err != nil {
			x.done = closedChan
		} else {
			x.done = make(chan struct{})
		}
	}
	done, live := x.done, x.err == nil
	x.mu.Unlock()
	if first && live {
		x.ex.c.wantWatch(x.ex)
	}
	return done
}

// Err reports why Done is closed, or nil.
func (x *requestContext) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// cancel ends the context with context.Canceled, as net/http's request
// contexts end (whether the handler returned or the client left).
func (x *requestContext) cancel() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		return
	}
	x.err = context.Canceled
	if x.done == nil {
		x.done = closedChan
	} else {
		close(x.done)
	}
}

func (x *requestContext) String() string { return "edge.requestContext" }
