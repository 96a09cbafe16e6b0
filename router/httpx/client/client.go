package client

import (
	"bufio"
	"bytes"
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
	"github.com/levee-proxy/levee/router/httpx/tokens"
)

// Transport is a lean HTTP/1.1 client for backend traffic. Compared with
// net/http.Transport it runs each exchange on the calling goroutine (no
// read and write loop goroutines, no channels, no per-request timer: the
// header timeout is a read deadline), which is most of the Transport's
// per-request cost on a small request.
//
// It supports what the proxy needs and nothing more: plain HTTP/1.1 to a
// host:port, keep-alive with an idle pool per backend, request bodies of
// known or unknown length (chunked), any response framing net/http can read,
// 1xx skipping, protocol switches (101) and request cancellation through the
// request's context. A request on a pooled connection that the backend had
// already closed is sent again on a new connection when nothing came back
// and the request can be replayed.
type Transport struct {
	dialer        net.Dialer
	headerTimeout time.Duration
	bodyTimeout   time.Duration // idle limit between reads of a response body
	idleTimeout   time.Duration
	maxIdle       int
	watchPoll     time.Duration // see watchPolling
	plainSocketIO bool          // net.Conn's Read/Write instead of sockio.Socket

	mu    sync.Mutex
	idle  map[string][]*pooledConn // LIFO: the most recently used is warmest
	close chan struct{}
	once  sync.Once
}

// Options configure a Transport. Zero values mean no limit, except where
// noted.
type Options struct {
	// DialTimeout bounds connecting to a backend.
	DialTimeout time.Duration
	// HeaderTimeout bounds the wait for a response head, from the last
	// byte of the request sent (net/http's ResponseHeaderTimeout).
	HeaderTimeout time.Duration
	// BodyTimeout bounds the wait for the next bytes of a response body.
	BodyTimeout time.Duration
	// IdleConnTimeout closes pooled connections idle this long (required).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost bounds the idle pool of each backend.
	MaxIdleConnsPerHost int
	// PlainSocketIO reads and writes through net.Conn instead of raw
	// system calls (sockio.Socket).
	PlainSocketIO bool
}

// New returns a Transport; Shutdown stops its reaper.
func New(o Options) *Transport {
	t := &Transport{
		dialer:        net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second},
		headerTimeout: o.HeaderTimeout,
		bodyTimeout:   o.BodyTimeout,
		idleTimeout:   o.IdleConnTimeout,
		maxIdle:       o.MaxIdleConnsPerHost,
		watchPoll:     defaultWatchPoll,
		plainSocketIO: o.PlainSocketIO,
		idle:          make(map[string][]*pooledConn),
		close:         make(chan struct{}),
	}
	go t.reap()
	return t
}

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
// waits (docs/performance.md, "Context watch on demand").
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

// Informer receives a backend's interim responses (1xx other than 101),
// so that a proxy can pass them on (RFC 9110 15.2).
type Informer interface {
	Informational(code int, h http.Header)
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

// reap closes connections idle for longer than idleTimeout.
func (t *Transport) reap() {
	tick := time.NewTicker(max(t.idleTimeout/2, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-t.close:
			return
		case now := <-tick.C:
			var stale []*pooledConn
			t.mu.Lock()
			for k, cs := range t.idle {
				keep := cs[:0]
				for _, c := range cs {
					if now.Sub(c.idleAt) > t.idleTimeout {
						stale = append(stale, c)
					} else {
						keep = append(keep, c)
					}
				}
				if len(keep) == 0 {
					delete(t.idle, k)
				} else {
					t.idle[k] = keep
				}
			}
			t.mu.Unlock()
			for _, c := range stale {
				_ = c.conn.Close()
			}
		}
	}
}

// IdleConns reports how many connections to hostport are pooled.
func (t *Transport) IdleConns(hostport string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle[hostport])
}

// CloseIdleConnections closes every pooled connection.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	all := t.idle
	t.idle = make(map[string][]*pooledConn)
	t.mu.Unlock()
	for _, cs := range all {
		for _, c := range cs {
			_ = c.conn.Close()
		}
	}
}

// Shutdown stops the reaper and closes idle connections.
func (t *Transport) Shutdown() {
	t.once.Do(func() { close(t.close) })
	t.CloseIdleConnections()
}

func (t *Transport) get(ctx context.Context, key string) (*pooledConn, error) {
	now := time.Now()
	t.mu.Lock()
	for cs := t.idle[key]; len(cs) > 0; cs = t.idle[key] {
		c := cs[len(cs)-1]
		t.idle[key] = cs[:len(cs)-1]
		if now.Sub(c.idleAt) > t.idleTimeout {
			t.mu.Unlock()
			_ = c.conn.Close()
			t.mu.Lock()
			continue
		}
		t.mu.Unlock()
		// A connection is reused only when the backend sent nothing
		// since its last complete answer: such a byte is an answer to no
		// request of ours and would reach the next client as its
		// response. Bytes that came with the answer are found when it
		// ends (put); later ones by a non-blocking peek here, made when
		// the last answer was one whose framing backends often get wrong
		// (a HEAD, 204 or 304 answer, which has no body, or one after
		// interim answers), and when the connection idled long enough
		// for the backend to have closed it (Node.js closes keep-alive
		// connections after 5 s, for one), which found after sending
		// would fail a non-idempotent request. A peek on every reuse
		// would cost a system call per request (docs/performance.md).
		if (c.suspect || now.Sub(c.idleAt) > PeekAfterIdle) && peerClosed(c.conn) {
			_ = c.conn.Close()
			t.mu.Lock()
			continue
		}
		c.reused = true
		return c, nil
	}
	t.mu.Unlock()
	conn, err := t.dialer.DialContext(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	c := &pooledConn{t: t, key: key, conn: conn}
	c.counted = &countingConn{Conn: conn, c: c}
	var w io.Writer = conn
	if !t.plainSocketIO {
		// Raw system calls: a write that the backend's wake-up keeps in
		// the kernel does not make the runtime hand the P to another
		// thread (see sockio.Socket).
		if c.counted.sock = sockio.New(conn); c.counted.sock != nil {
			w = c.counted.sock
		}
	}
	c.br = bufio.NewReaderSize(c.counted, 16<<10)
	c.bw = bufio.NewWriterSize(w, 16<<10)
	c.cancelFunc = c.cancelled
	return c, nil
}

func (t *Transport) put(c *pooledConn) {
	// Bytes buffered past the end of the response belong to no request:
	// such a connection is never reused (see get).
	if c.broken.Load() || c.closeReq || c.br.Buffered() > 0 {
		_ = c.conn.Close()
		return
	}
	c.idleAt = time.Now()
	t.mu.Lock()
	if len(t.idle[c.key]) >= t.maxIdle {
		t.mu.Unlock()
		_ = c.conn.Close()
		return
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	t.mu.Unlock()
}

// PeekAfterIdle is how long a pooled connection may idle before it is
// checked for a close by the backend: backends' keep-alive timeouts are
// seconds.
const PeekAfterIdle = 500 * time.Millisecond

// maxInlineBody is the largest request body written before the response
// is read, on the calling goroutine.
const maxInlineBody = 16 << 10

// errNothingReceived marks a failure after which the request can safely be
// sent again on a new connection: the backend closed a pooled connection
// before answering anything.
var errNothingReceived = errors.New("backend closed the connection before answering")

// RoundTrip sends req (whose URL.Host is the backend's host:port) and
// returns the response with headers read. The body streams from the
// connection; closing it returns the connection to the pool when the body
// was read to its end.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.RoundTripInformational(req, nil)
}

// RoundTripInformational is RoundTrip with a receiver for the interim
// (1xx) responses that come before the final one.
func (t *Transport) RoundTripInformational(req *http.Request, inf Informer) (*http.Response, error) {
	for try := 0; ; try++ {
		c, err := t.get(req.Context(), req.URL.Host)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.do(req, inf)
		if err == nil {
			return resp, nil
		}
		if errors.Is(err, errNothingReceived) && try == 0 && replayable(req) {
			if req.Body != nil && req.GetBody != nil {
				if req.Body, err = req.GetBody(); err != nil {
					return nil, err
				}
			}
			continue
		}
		closeBody(req)
		return nil, err
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

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
	// A large or streamed body is written by its own goroutine, as the
	// backend may answer (and stop reading) before it has all of it. A
	// small one fits the socket buffers, so writing it first cannot block
	// on such a backend, and the connection stays reusable.
	var bodyDone chan error
	switch {
	case hasBody(req) && req.ContentLength > 0 && req.ContentLength <= maxInlineBody:
		if err := c.writeBody(req, false); err != nil {
			return nil, c.fail(err, true, req)
		}
	case hasBody(req):
		// The backend timeout starts when the last byte is sent
		// (bodySent): a slow client is not a slow backend.
		c.streaming, c.awaitingHead = true, true
		bodyDone = make(chan error, 1)
		go func() {
			err := c.writeBody(req, chunked)
			if err == nil {
				c.bodySent()
			}
			bodyDone <- err
		}()
	default:
		if err := c.bw.Flush(); err != nil {
			return nil, c.fail(err, true, req)
		}
	}
	now := time.Now()
	deadline := now.Add(c.t.watchPoll)
	// While a body streams, headerDeadline is the writer's (bodySent).
	if c.t.headerTimeout > 0 && !c.streaming {
		c.headerDeadline = now.Add(c.t.headerTimeout)
		if c.headerDeadline.Before(deadline) {
			deadline = c.headerDeadline
		}
	}
	_ = c.conn.SetReadDeadline(deadline)

	c.counted.limit = c.counted.n + MaxResponseHeaderBytes
	// The backend has not answered yet: let other requests' work run
	// first, so that the read below usually finds the answer instead of
	// coming back empty (EAGAIN) and waiting in the poller (a wasted
	// system call per request otherwise; docs/performance.md).
	runtime.Gosched()
	resp, err := c.readResponse(req)
	c.counted.limit = 0
	c.headArrived()
	if err != nil {
		return nil, c.fail(err, false, req) // closing the connection stops a body writer
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The tunnel's reads are the proxy's to bound.
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

// fail cleans up a failed exchange and marks the error replayable the way
// net/http does: a pooled connection the backend had closed, and either
// the request could not be written or it is idempotent and not a byte came
// back.
func (c *pooledConn) fail(err error, writing bool, req *http.Request) error {
	c.disarm()
	c.broken.Store(true)
	_ = c.conn.Close()
	if req.Context().Err() != nil || !c.reused {
		return err
	}
	if writing || (Idempotent(req) && isClosedByPeer(err) && c.counted.n == c.readMark) {
		return fmt.Errorf("%w: %w", errNothingReceived, err)
	}
	return err
}

// Idempotent reports whether a request may be sent twice with the effect
// of once (RFC 9110 9.2.2), or says so with an Idempotency-Key header.
func Idempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, ok := req.Header["Idempotency-Key"]
	return ok
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
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
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

func methodExpectsBody(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch
}

// validHeaderValue rejects CR, LF and NUL: the server has parsed the
// client's headers already, but a header set by code must not be able to
// split the request either.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
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

// readResponse reads the status line and headers, skipping 1xx answers
// other than 101.
func (c *pooledConn) readResponse(req *http.Request) (*http.Response, error) {
	if _, err := c.br.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // what http.ReadResponse says
		}
		return nil, err
	}
	if resp := c.parseCommon(req); resp != nil {
		return resp, nil
	}
	for interim := 0; ; interim++ {
		named := connectionNamed(c.br)
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			// Interim answers are passed on (RFC 9110 15.2), a bounded
			// number of them, as net/http's Transport bounds them.
			if interim >= maxInterimResponses {
				return nil, errTooManyInterim
			}
			if c.inf != nil {
				removeNamed(resp.Header, named)
				c.inf.Informational(resp.StatusCode, resp.Header)
			}
			continue
		}
		if interim > 0 || req.Method == http.MethodHead ||
			resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
			c.suspect = true
		}
		if len(resp.Header["Connection"]) == 0 {
			// net/http deletes a Connection header that says "close" but
			// leaves the headers it names; a proxy must not pass those on
			// (RFC 9110 7.6.1).
			removeNamed(resp.Header, named)
		}
		return resp, nil
	}
}

// maxInterimResponses bounds the 1xx answers read before the final one.
const maxInterimResponses = 5

var errTooManyInterim = errors.New("backend sent too many interim (1xx) responses")

func removeNamed(h http.Header, named []string) {
	for _, k := range named {
		delete(h, k)
	}
}

// connectionNamed returns the header names listed in the Connection header
// of the response head buffered in br (tokens.AppendConnectionNamed),
// reading nothing.
func connectionNamed(br *bufio.Reader) []string {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil
	}
	var names []string
	for _, line := range bytes.Split(buf[:end], []byte("\r\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(k), []byte("Connection")) {
			continue
		}
		names = tokens.AppendConnectionNamed(names, string(v))
	}
	return names
}

// parseCommon parses the most common response head in place, with fewer
// allocations than http.ReadResponse (one string for the whole head, keys
// and values sliced from it; docs/performance.md, "Common response heads
// parsed in place"): an HTTP/1.1 final status other than 204 and 304, to a
// request other than HEAD, with one Content-Length and no
// Transfer-Encoding, Trailer, Connection or Pragma header, entirely
// buffered already. It accepts only heads that http.ReadResponse accepts
// and reads the same way (FuzzResponseParse checks it); anything else,
// including anything malformed, is left unread for http.ReadResponse,
// whose verdict then stands. It returns nil when it leaves the head.
func (c *pooledConn) parseCommon(req *http.Request) *http.Response {
	if req.Method == http.MethodHead {
		return nil
	}
	buf, _ := c.br.Peek(c.br.Buffered())
	end := bytes.Index(buf, crlf2)
	if end < 0 || end < len("HTTP/1.1 200") {
		return nil
	}
	raw := buf[:end+2] // every line with its CRLF
	eol := bytes.Index(raw, crlf)
	line := raw[:eol]
	if len(line) < len("HTTP/1.1 200") || !bytes.HasPrefix(line, http11) || !isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) {
		return nil
	}
	code := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil
	}
	if len(line) > 12 && line[12] != ' ' {
		return nil
	}
	for _, b := range line[12:] {
		if !validValueByte(b) {
			return nil
		}
	}
	// Validate and count the header lines before allocating anything.
	lines := 0
	cl := int64(-1)
	for rest := raw[eol+2:]; len(rest) > 0; lines++ {
		i := bytes.Index(rest, crlf)
		hl := rest[:i]
		rest = rest[i+2:]
		colon := bytes.IndexByte(hl, ':')
		if colon <= 0 {
			return nil
		}
		for _, b := range hl[:colon] {
			if !validKeyByte(b) {
				return nil
			}
		}
		v := trimOWS(hl[colon+1:])
		for _, b := range v {
			if !validValueByte(b) {
				return nil
			}
		}
		switch k := hl[:colon]; {
		case asciiEqualFold(k, "Content-Length"):
			if cl >= 0 || len(v) == 0 || len(v) > 18 {
				return nil
			}
			cl = 0
			for _, b := range v {
				if !isDigit(b) {
					return nil
				}
				cl = cl*10 + int64(b-'0')
			}
		case asciiEqualFold(k, "Transfer-Encoding"), asciiEqualFold(k, "Trailer"),
			asciiEqualFold(k, "Connection"), asciiEqualFold(k, "Pragma"):
			return nil // framing, connection and cache rules: net/http's
		}
	}
	if cl < 0 {
		return nil
	}

	// One string holds the whole head; the header values are slices of
	// it, and so are the keys already in canonical form (most are).
	head := string(raw)
	h := make(http.Header, lines)
	slab := make([]string, lines)
	rest := head[eol+2:]
	for len(rest) > 0 {
		i := strings.Index(rest, "\r\n")
		hl := rest[:i]
		rest = rest[i+2:]
		colon := strings.IndexByte(hl, ':')
		k := hl[:colon]
		if !isCanonicalKey(k) {
			k = http.CanonicalHeaderKey(k)
		}
		slab[0] = strings.Trim(hl[colon+1:], " \t")
		vv := h[k]
		if vv == nil {
			h[k] = slab[:1:1]
		} else {
			h[k] = append(vv, slab[0])
		}
		slab = slab[1:]
	}
	_, _ = c.br.Discard(end + 4)
	resp := &http.Response{
		Status: head[9:eol], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: cl, Request: req, Body: http.NoBody,
	}
	if cl > 0 {
		c.fixed = fixedBody{r: c.br, n: cl}
		resp.Body = &c.fixed
	}
	return resp
}

var (
	crlf   = []byte("\r\n")
	crlf2  = []byte("\r\n\r\n")
	http11 = []byte("HTTP/1.1 ")
)

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// validValueByte is RFC 9110's field-vchar, SP, HTAB or obs-text: what
// net/textproto accepts in a header value.
func validValueByte(b byte) bool {
	return b == '\t' || b >= 0x20 && b != 0x7f
}

// validKeyByte is an RFC 9110 token character.
func validKeyByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', isDigit(b):
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// asciiEqualFold compares a token with a canonical header name.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != s[i]|0x20 {
			return false
		}
	}
	return true
}

// isCanonicalKey reports whether a token is in http.CanonicalHeaderKey's
// form already.
func isCanonicalKey(k string) bool {
	upper := true
	for i := 0; i < len(k); i++ {
		b := k[i]
		switch {
		case upper && 'a' <= b && b <= 'z', !upper && 'A' <= b && b <= 'Z':
			return false
		}
		upper = b == '-'
	}
	return true
}

// fixedBody is a body of known length read from the connection's reader;
// it reads like net/http's: io.EOF with the last byte, and
// io.ErrUnexpectedEOF when the connection ends short.
type fixedBody struct {
	r *bufio.Reader
	n int64
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if b.n == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *fixedBody) Close() error { return nil }

// body is a response body that returns its connection to the pool once
// read to the end.
type body struct {
	c          *pooledConn
	body       io.ReadCloser
	bodyDone   chan error
	closeAfter bool
	done       bool
	eof        bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, net.ErrClosed
	}
	// Every read that may wait for the backend has the idle limit; a body
	// already buffered whole costs no deadline.
	if !b.buffered() {
		var deadline time.Time
		if t := b.c.t.bodyTimeout; t > 0 {
			deadline = time.Now().Add(t)
		}
		_ = b.c.conn.SetReadDeadline(deadline)
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		b.c.broken.Store(true)
	}
	return n, err
}

// buffered reports whether the rest of the body is in the reader's buffer.
func (b *body) buffered() bool {
	c := b.c
	return b.body == &c.fixed && c.fixed.n <= int64(c.br.Buffered())
}

func (b *body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	c := b.c
	stopped := c.disarm()
	if b.bodyDone != nil {
		select {
		case err := <-b.bodyDone:
			if err != nil {
				c.broken.Store(true)
			}
		default:
			// The backend answered before taking the whole request body.
			// The writer may be blocked on the client: do not wait for it;
			// the broken connection makes it stop.
			c.broken.Store(true)
			_ = c.conn.Close()
		}
	}
	if !b.eof || b.closeAfter || !stopped {
		c.broken.Store(true)
	}
	c.t.put(c)
	return nil
}

// upgraded is the connection after a 101: reads first drain what the
// response reader had buffered.
type upgraded struct {
	*bufio.Reader
	conn net.Conn
}

func (u *upgraded) Write(p []byte) (int, error) { return u.conn.Write(p) }
func (u *upgraded) Close() error                { return u.conn.Close() }
