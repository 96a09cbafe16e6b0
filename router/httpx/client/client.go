package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
)

// Transport is a lean HTTP/1.1 client for backend traffic. Compared with
// net/http.Transport it runs each exchange on the calling goroutine (no
// read and write loop goroutines, no channels, no per-request timer: the
// header timeout is a read deadline), which is most of the Transport's
// per-request cost on a small request.
//
// It supports what the proxy needs and nothing more: HTTP/1.1, plain or
// over TLS (Options.TLS), to a host:port, keep-alive with an idle pool per
// backend, request bodies of known or unknown length (chunked), any response framing net/http can read,
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
	tls           *tls.Config   // nil: plain HTTP; else HTTPS (see Options.TLS)

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
	// TLS, when not nil, speaks HTTPS to every backend: each new
	// connection's handshake uses it (its ServerName, when empty, is the
	// backend's host) and is bounded by DialTimeout (else
	// DefaultHandshakeTimeout). A failed handshake is a *TLSError.
	TLS *tls.Config
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
		tls:           o.TLS,
		idle:          make(map[string][]*pooledConn),
		close:         make(chan struct{}),
	}
	go t.reap()
	return t
}

// Informer receives a backend's interim responses (1xx other than 101),
// so that a proxy can pass them on (RFC 9110 15.2).
type Informer interface {
	Informational(code int, h http.Header)
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

// dropIdle closes every pooled connection to key.
func (t *Transport) dropIdle(key string) {
	t.mu.Lock()
	cs := t.idle[key]
	delete(t.idle, key)
	t.mu.Unlock()
	for _, c := range cs {
		_ = c.conn.Close()
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
		if (c.suspect || now.Sub(c.idleAt) > PeekAfterIdle) && peerClosed(c.raw) {
			_ = c.conn.Close()
			t.mu.Lock()
			continue
		}
		c.reused = true
		return c, nil
	}
	t.mu.Unlock()
	return t.dial(ctx, key)
}

// dial opens a new connection to key.
func (t *Transport) dial(ctx context.Context, key string) (*pooledConn, error) {
	conn, err := t.dialer.DialContext(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	raw := conn
	if t.tls != nil {
		if conn, err = handshake(ctx, raw, t.tls, key, t.dialer.Timeout); err != nil {
			return nil, err
		}
	}
	c := &pooledConn{t: t, key: key, conn: conn, raw: raw}
	c.counted = &countingConn{Conn: conn, c: c}
	var w io.Writer = conn
	if !t.plainSocketIO && t.tls == nil {
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

// errNothingReceived marks a failure after which the request can safely be
// sent again on a new connection: the backend closed a pooled connection
// before answering anything.
var errNothingReceived = errors.New("backend closed the connection before answering")

// errNoAnswer marks a request sent on a new connection that the backend
// closed or reset without a byte of answer (a backend shutting down
// closes the connections it accepted but did not serve).
var errNoAnswer = errors.New("backend closed a new connection before answering")

// ClosedBeforeAnswer reports whether err says that the backend closed or
// reset the connection after the request was sent and before the answer's
// head came back (Levee's own client also says so when not a byte came),
// on either client (Levee's, or net/http's under
// Standard). The backend may or may not have acted on the request: only
// an idempotent one may be sent elsewhere (RFC 9110 9.2.2).
func ClosedBeforeAnswer(err error) bool {
	if errors.Is(err, errNothingReceived) || errors.Is(err, errNoAnswer) {
		return true
	}
	// net/http's Transport reports the end of a connection before the
	// response head as the read error itself (io.EOF, wrapped as
	// "transport connection broken"), or a reset as the read's or the
	// write's *net.OpError (a reset that beat the request's write); a
	// dial failure is not this.
	var op *net.OpError
	if errors.As(err, &op) {
		return (op.Op == "read" || op.Op == "write") && !op.Timeout()
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

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
		var c *pooledConn
		var err error
		if try == 0 {
			c, err = t.get(req.Context(), req.URL.Host)
		} else {
			// The backend closed a pooled connection: it may be shutting
			// down, having closed every idle connection at once (Go's
			// http.Server.Shutdown does). The others are not tried one
			// after another: they are dropped and the retry dials, which
			// a backend that stopped listening refuses at once, an error
			// that says the request never left (the proxy sends it to
			// another backend).
			t.dropIdle(req.URL.Host)
			c, err = t.dial(req.Context(), req.URL.Host)
		}
		if err != nil {
			closeBody(req)
			return nil, err
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: c.conn, Reused: c.reused})
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
		return nil, alertAsTLSError(t.tls, req.URL.Host, err)
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
