package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
)

// countingConn counts the bytes read, to tell "the backend answered
// nothing" from "it answered something" whatever the reader buffered. It
// is also where a read may block, so it arms the watch on the request's
// context (see pooledConn.watch) only when one is about to.
type countingConn struct {
	net.Conn
	// sock, when not nil, does the reads (see sockio.Socket).
	sock *sockio.Socket
	c    *pooledConn
	n    int64
	// limit, when non-zero, is the count past which reads fail: it bounds
	// the response headers a backend can make the proxy buffer.
	limit int64
}

// errHeadersTooLarge is returned when a backend's response head exceeds
// MaxResponseHeaderBytes.
var errHeadersTooLarge = errors.New("backend response headers too large")

// MaxResponseHeaderBytes bounds a response's status line and headers
// (net/http's Transport allows 10 MB; a proxy has no use for that much).
const MaxResponseHeaderBytes = 1 << 20

func (cc *countingConn) Read(p []byte) (int, error) {
	if cc.limit != 0 && cc.n >= cc.limit {
		return 0, errHeadersTooLarge
	}
	c := cc.c
	if c.watch == watchOnRead {
		c.arm()
	}
	n, err := cc.read(p)
	if err != nil && c.watch == watchPolling && errors.Is(err, os.ErrDeadlineExceeded) {
		// The backend takes longer than a poll: from now on watch the
		// context properly, and wait until the header deadline proper.
		if c.headerExpired() || c.ctx.Err() != nil {
			return n, err
		}
		c.waitHeaderDeadline()
		c.arm()
		n, err = cc.read(p)
	}
	cc.n += int64(n)
	return n, err
}

func (cc *countingConn) read(p []byte) (int, error) {
	if cc.sock != nil {
		return cc.sock.Read(p)
	}
	return cc.Conn.Read(p)
}

// How an exchange watches its request's context, whose cancellation (the
// client went away) must break a read or write blocked on the backend.
// context.AfterFunc does that but allocates, and most exchanges never
// block long enough to need it: the response of a fast backend arrives
// within a poll, whole. So the watch is armed only for an exchange that
// waits (docs/performance-history.md, "Context watch on demand").
const (
	// watchNone: nothing can block for the request (none in progress,
	// protocol switched, or a context that cannot be cancelled).
	watchNone uint8 = iota
	// watchPolling: waiting for the response head under a read deadline
	// at most watchPoll away; when it passes, the context is checked and
	// the watch armed.
	watchPolling
	// watchOnRead: response head read; the watch is armed by the first
	// read that goes to the socket (a body not yet buffered).
	watchOnRead
	// watchArmed: context.AfterFunc is in place (stopCtx).
	watchArmed
)

// defaultWatchPoll bounds how late a client going away is noticed while a
// backend has not answered yet; exchanges slower than that pay for a
// context.AfterFunc.
const defaultWatchPoll = 20 * time.Millisecond

// arm watches the request's context: its cancellation breaks the
// connection by moving its deadline to the past, which wakes any blocked
// read or write.
func (c *pooledConn) arm() {
	c.watch = watchArmed
	c.stopCtx = context.AfterFunc(c.ctx, c.cancelFunc)
}

// disarm stops watching the context. It reports false when the watch had
// already fired, leaving the connection unusable.
func (c *pooledConn) disarm() bool {
	c.watch = watchNone
	c.ctx = nil
	if c.stopCtx == nil {
		return true
	}
	stopped := c.stopCtx()
	c.stopCtx = nil
	return stopped
}

func (c *pooledConn) cancelled() {
	c.broken.Store(true)
	_ = c.conn.SetDeadline(time.Unix(1, 0))
}

// pooledConn is one backend connection with its buffers.
type pooledConn struct {
	t        *Transport
	key      string
	raw      net.Conn // the TCP connection under conn (conn itself without TLS)
	conn     net.Conn
	counted  *countingConn
	readMark int64 // counted.n when the current exchange started
	br       *bufio.Reader
	bw       *bufio.Writer
	idleAt   time.Time
	reused   bool
	// suspect: the last answer had no body by rule (HEAD, 204, 304) or
	// came after interim answers, so bytes a backend wrongly sent after
	// it may still arrive; the connection is peeked at before reuse.
	suspect  bool
	broken   atomic.Bool
	closeReq bool // the request asked to close after the exchange

	// The watch on the current request's context (see watchPolling).
	ctx            context.Context
	watch          uint8
	stopCtx        func() bool // set while armed
	cancelFunc     func()      // c.cancelled, bound once per connection
	headerDeadline time.Time   // zero: no header timeout
	// pollDeadline is the read deadline awaitHead set last, while no other
	// read deadline was set since (zero otherwise); only the goroutine
	// that runs the exchange uses it.
	pollDeadline time.Time

	fixed fixedBody // the body parseCommon found, reused per exchange

	// inf receives the interim (1xx) answers of the current exchange.
	inf Informer

	// While a request body streams from its own goroutine, the header
	// deadline is set by that goroutine once the last byte is sent (the
	// backend timeout runs from then, as net/http's ResponseHeaderTimeout
	// does): streaming, headerDeadline and awaitingHead are under dlMu.
	dlMu         sync.Mutex
	streaming    bool
	awaitingHead bool
}

// headerExpired reports whether the header deadline has passed.
func (c *pooledConn) headerExpired() bool {
	if !c.streaming {
		return !c.headerDeadline.IsZero() && !time.Now().Before(c.headerDeadline)
	}
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	return !c.headerDeadline.IsZero() && !time.Now().Before(c.headerDeadline)
}

// waitHeaderDeadline sets the read deadline to the header deadline (none
// while a streamed request body is still being sent).
func (c *pooledConn) waitHeaderDeadline() {
	c.pollDeadline = time.Time{}
	if !c.streaming {
		_ = c.conn.SetReadDeadline(c.headerDeadline)
		return
	}
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	_ = c.conn.SetReadDeadline(c.headerDeadline)
}

// bodySent starts the backend timeout once a streamed request body has
// been sent whole, unless the response head has arrived already.
func (c *pooledConn) bodySent() {
	if c.t.headerTimeout <= 0 {
		return
	}
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	if c.awaitingHead {
		c.headerDeadline = time.Now().Add(c.t.headerTimeout)
		_ = c.conn.SetReadDeadline(c.headerDeadline)
	}
}

// headArrived ends the wait for the response head.
func (c *pooledConn) headArrived() {
	if !c.streaming {
		return
	}
	c.dlMu.Lock()
	c.awaitingHead = false
	c.dlMu.Unlock()
}

// maxInlineBody is the largest request body written before the response
// is read, on the calling goroutine.
const maxInlineBody = 16 << 10

// do writes the request and reads the response headers.
func (c *pooledConn) do(req *http.Request, inf Informer) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		c.t.put(c)
		return nil, err
	}
	c.ctx = ctx
	c.inf = inf
	c.headerDeadline = time.Time{}
	c.streaming = false
	c.suspect = false
	// Writing the request does not block (a body that could is written
	// by its own goroutine); waiting for the answer is polled (see
	// watchPolling). ctx.Done is not asked for here: for Levee's own
	// server (router/httpx/server) asking starts watching the client connection,
	// which only an exchange that blocks needs.
	c.watch = watchPolling
	c.closeReq = req.Close
	c.readMark = c.counted.n
	chunked, err := c.writeHead(req)
	if err != nil {
		return nil, c.fail(err, true, req)
	}
	bodyDone, err := c.sendBody(req, chunked)
	if err != nil {
		return nil, c.fail(err, true, req)
	}
	c.awaitHead()

	c.counted.limit = c.counted.n + MaxResponseHeaderBytes
	// The backend has not answered yet: let other requests' work run
	// first, so that the read below usually finds the answer instead of
	// coming back empty (EAGAIN) and waiting in the poller (a wasted
	// system call per request otherwise; docs/performance-history.md).
	runtime.Gosched()
	resp, err := c.readResponse(req)
	c.counted.limit = 0
	c.headArrived()
	if err != nil {
		return nil, c.fail(err, false, req) // closing the connection stops a body writer
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The tunnel's reads are the proxy's to bound.
		c.pollDeadline = time.Time{}
		_ = c.conn.SetReadDeadline(time.Time{})
		c.disarm()
		resp.Body = &upgraded{Reader: c.br, conn: c.conn}
		return resp, nil
	}
	if c.watch == watchPolling {
		// Reading the body blocks only if it is not buffered yet.
		c.watch = watchOnRead
	}
	resp.Body = &body{c: c, body: resp.Body, bodyDone: bodyDone, closeAfter: resp.Close}
	return resp, nil
}

// sendBody sends the request body, or flushes the head when there is none.
// A large or streamed body is written by its own goroutine, as the backend
// may answer (and stop reading) before it has all of it; the channel
// returned then reports the writer's end. A small one fits the socket buffers, so
// writing it first cannot block on such a backend, and the connection
// stays reusable.
func (c *pooledConn) sendBody(req *http.Request, chunked bool) (chan error, error) {
	switch {
	case hasBody(req) && req.ContentLength > 0 && req.ContentLength <= maxInlineBody:
		return nil, c.writeBody(req, false)
	case hasBody(req):
		// The backend timeout starts when the last byte is sent
		// (bodySent): a slow client is not a slow backend.
		c.streaming, c.awaitingHead = true, true
		c.pollDeadline = time.Time{} // bodySent sets the deadline
		// A variable of its own: the goroutine would move a named result
		// to the heap for every exchange, bodiless ones too.
		bodyDone := make(chan error, 1)
		go func() {
			err := c.writeBody(req, chunked)
			if err == nil {
				c.bodySent()
			}
			bodyDone <- err
		}()
		return bodyDone, nil
	default:
		return nil, c.bw.Flush()
	}
}

// awaitHead sets the read deadline for the response head: the first poll
// of the context (see watchPolling), or the header deadline if sooner.
// While a body streams, the header deadline is the writer's (bodySent).
//
// The poll deadline the last exchange set is kept when it is still at
// least half a poll away and no later than this one's: the first poll
// then comes a little early, and finds the header deadline not passed
// (which then applies exactly, see countingConn.Read). A connection
// reused at once moves its deadline every few exchanges, not each one.
func (c *pooledConn) awaitHead() {
	now := time.Now()
	deadline := now.Add(c.t.watchPoll)
	if c.t.headerTimeout > 0 && !c.streaming {
		c.headerDeadline = now.Add(c.t.headerTimeout)
		if c.headerDeadline.Before(deadline) {
			deadline = c.headerDeadline
		}
	}
	if d := c.pollDeadline; !c.streaming && !d.IsZero() && !d.After(deadline) &&
		d.Sub(now) >= c.t.watchPoll/2 {
		return
	}
	if !c.streaming {
		c.pollDeadline = deadline
	}
	_ = c.conn.SetReadDeadline(deadline)
}

// fail cleans up a failed exchange and marks the error replayable the way
// net/http does: a pooled connection the backend had closed, and either
// the request could not be written or it is idempotent and not a byte came
// back. A new connection closed or reset without a byte of answer is
// errNoAnswer whether the request was being written or awaited its answer:
// a backend that closes its listener resets the connections still in its
// accept queue, and whether the reset comes before or after the request's
// write is a matter of scheduling (seen as a rare 502 during rolling
// restarts on a loaded host).
func (c *pooledConn) fail(err error, writing bool, req *http.Request) error {
	c.disarm()
	c.broken.Store(true)
	_ = c.conn.Close()
	if req.Context().Err() != nil {
		return err
	}
	silent := isClosedByPeer(err) && c.counted.n == c.readMark
	if c.reused && (writing || Idempotent(req) && silent) {
		return fmt.Errorf("%w: %w", errNothingReceived, err)
	}
	if silent {
		return fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	return err
}

func isClosedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		isConnReset(err)
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "read" || op.Op == "write") && !op.Timeout()
}

func hasBody(req *http.Request) bool {
	return req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0
}

// writeHead writes the request line and headers. Framing comes from
// req.ContentLength only: a Content-Length or Transfer-Encoding header in
// req.Header is never written, so both can never go out together.
func (c *pooledConn) writeHead(req *http.Request) (chunked bool, err error) {
	w := c.bw
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	w.WriteString(host)
	w.WriteString("\r\n")
	for k, vv := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer", "Expect":
			continue
		}
		for _, v := range vv {
			if v == "" && k == "User-Agent" {
				continue
			}
			if !validHeaderValue(v) || !validHeaderValue(k) {
				return false, fmt.Errorf("writing request header %q: invalid characters", k)
			}
			writeFieldLine(w, k, v)
		}
	}
	switch {
	case !hasBody(req):
		if req.ContentLength != 0 || methodExpectsBody(req.Method) {
			w.WriteString("Content-Length: 0\r\n")
		}
	case req.ContentLength > 0:
		w.WriteString("Content-Length: ")
		var buf [20]byte
		w.Write(strconv.AppendInt(buf[:0], req.ContentLength, 10))
		w.WriteString("\r\n")
	default:
		w.WriteString("Transfer-Encoding: chunked\r\n")
		chunked = true
	}
	if req.Close {
		w.WriteString("Connection: close\r\n")
	}
	_, err = w.WriteString("\r\n")
	return chunked, err
}

// writeFieldLine writes "k: v" and its CRLF, in one copy when the buffer
// has room.
func writeFieldLine(w *bufio.Writer, k, v string) {
	if w.Available() < len(k)+len(v)+4 {
		w.WriteString(k)
		w.WriteString(": ")
		w.WriteString(v)
		w.WriteString("\r\n")
		return
	}
	b := append(w.AvailableBuffer(), k...)
	b = append(b, ": "...)
	b = append(b, v...)
	_, _ = w.Write(append(b, "\r\n"...))
}

func methodExpectsBody(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch
}

// validHeaderValue rejects CR, LF and NUL: the server has parsed the
// client's headers already, but a header set by code must not be able to
// split the request either.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		// One comparison for nearly every byte: the three are below '\r'+1.
		if c := s[i]; c <= '\r' && (c == '\r' || c == '\n' || c == 0) {
			return false
		}
	}
	return true
}

func (c *pooledConn) writeBody(req *http.Request, chunked bool) error {
	var w io.Writer = c.bw
	var cw io.WriteCloser
	if chunked {
		cw = httputil.NewChunkedWriter(c.bw)
		w = cw
	}
	var err error
	body := &bodyReader{r: req.Body}
	if req.ContentLength > 0 {
		var n int64
		n, err = io.Copy(w, io.LimitReader(body, req.ContentLength))
		if err == nil && n < req.ContentLength {
			body.failed = true
			err = fmt.Errorf("request body: %w after %d of %d bytes", io.ErrUnexpectedEOF, n, req.ContentLength)
		}
	} else {
		_, err = io.Copy(flushWriter{w, c.bw}, body)
	}
	_ = req.Body.Close()
	if body.failed {
		// The client's body is broken: the backend can never answer this
		// request, so end the wait for its response now rather than at
		// the header timeout.
		c.broken.Store(true)
		_ = c.conn.Close()
		return err
	}
	if err == nil && cw != nil {
		if err = cw.Close(); err == nil {
			_, err = c.bw.WriteString("\r\n")
		}
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		c.broken.Store(true)
	}
	return err
}

// bodyReader tells a failure to read the client's body from a failure to
// write to the backend.
type bodyReader struct {
	r      io.Reader
	failed bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.failed = true
	}
	return n, err
}

// flushWriter flushes after every write, so that a streamed body of
// unknown length reaches the backend as it arrives.
type flushWriter struct {
	w  io.Writer
	bw *bufio.Writer
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.bw.Flush()
	}
	return n, err
}
