package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The waits of one exchange on its client, each with a limit (Options):
//
//   - reading the request body: RequestBodyTimeout between reads, and once
//     that long has passed since the body started, an average of
//     RequestBodyMinRate bytes per second. A client that falls behind is
//     answered 408 (client-timeout) and is never the backend's failure.
//     The look at a GET's body of unknown length before a stale answer
//     waits at most staleBodyWait (carriesBody): an open breaker answers
//     at once.
//   - writing the response: ResponseWriteTimeout between writes; a client
//     that takes nothing for that long loses its connection.
//   - a tunnel (101): TunnelIdleTimeout with no byte either way.
//   - ending the exchange while a backend client is in the middle of a
//     read of the request body (a backend answered before the upload
//     ended): at most bodyReadSettle for that read to return.
//
// The deadlines are set through the ResponseWriter (http.ResponseController's
// SetReadDeadline and SetWriteDeadline), which both servers implement.

// deadliner is the part of a ResponseWriter that moves the connection's
// deadlines (net/http's and router/httpx/server's response writers have it).
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// A write moves the write deadline only once an eighth of
// ResponseWriteTimeout (at most a second) has passed since it was last
// moved: a stream of small writes does not pay a deadline per write, and a
// client that takes nothing is cut off between 7/8 of the timeout and the
// timeout after the last write it took.
const maxWriteRearm = time.Second

// initDeadlines finds the ResponseWriter's deadlines; it runs before any
// goroutine of the exchange (a body writer) can ask for them.
func (x *exchange) initDeadlines() {
	if d, ok := x.w.(deadliner); ok {
		x.dl = d
	} else {
		x.dl = http.NewResponseController(x.w) // finds them through Unwrap
	}
	if x.req.ProtoMajor == 1 && x.req.Body != nil && x.req.Body != http.NoBody {
		// net/http's HTTP/1 server stops the request body once the
		// answer's head is flushed, unless full duplex is on; a backend
		// that streams its answer while it still reads (gRPC,
		// bidirectional streams) needs the rest of the body. Levee's own
		// server is always full duplex.
		if fd, ok := x.w.(interface{ EnableFullDuplex() error }); ok {
			_ = fd.EnableFullDuplex() // both servers' writers: no controller to allocate
		} else {
			_ = http.NewResponseController(x.w).EnableFullDuplex()
		}
	}
}

func (x *exchange) deadlines() deadliner { return x.dl }

// armWrite bounds the next write to the client.
func (x *exchange) armWrite() {
	now := time.Now()
	t := x.p.opts.ResponseWriteTimeout
	if !x.writeArmed.IsZero() && now.Sub(x.writeArmed) < min(t/8, maxWriteRearm) {
		return
	}
	x.writeArmed = now
	_ = x.deadlines().SetWriteDeadline(now.Add(t))
}

// armBodyRead bounds the next read of the request body.
func (x *exchange) armBodyRead() {
	o := &x.p.opts
	now := time.Now()
	if x.bodyStart.IsZero() {
		x.bodyStart = now
	}
	deadline := now.Add(o.RequestBodyTimeout)
	if o.RequestBodyMinRate > 0 {
		// By this time the bytes read so far fall below the minimum
		// average rate counted from the end of the grace period.
		byRate := x.bodyStart.Add(o.RequestBodyTimeout +
			time.Duration(float64(x.bodyRead)/float64(o.RequestBodyMinRate)*float64(time.Second)))
		if byRate.Before(deadline) {
			deadline = byRate
		}
	}
	if peek := now.Add(staleBodyWait); x.peekingBody && peek.Before(deadline) {
		deadline = peek
	}
	_ = x.deadlines().SetReadDeadline(deadline)
}

// bodyEnded lifts the read deadline once the request body is read: the
// server's own watch for a departing client reads on.
func (x *exchange) bodyEnded() {
	_ = x.deadlines().SetReadDeadline(time.Time{})
}

// clientBody is the client's request body as the proxy reads it: under
// the body limits, recording a failed read (the attempt is then the
// client's fault) and the end of the body.
//
// The end matters for Transfer-Encoding requests: net/http drops a
// Content-Length sent beside Transfer-Encoding without telling the handler,
// and RFC 9112 6.3 requires closing the connection after such a request,
// since what follows the chunked body may have been framed differently by
// a proxy in front. When the body was read to its end Levee answers with
// Connection: close (so does every answer of Levee's own to such a
// request); when a backend answered before the body ended, net/http
// already refuses to reuse the connection and closes it gracefully,
// letting the client read the answer first.
//
// A body that goes past limit (the route's maxRequestBodyBytes; 0 for
// none) fails with errBodyTooLarge once limit bytes were read: the attempt
// is the client's fault and is answered 413 unless the backend answered
// already.
//
// A read that fails once the backend client closed the body (it does when
// the backend reset or answered the stream) failed because of that close:
// it is not the client's fault and marks nothing.
type clientBody struct {
	r      io.Reader
	c      io.Closer
	x      *exchange
	limit  int64
	gate   *bodyGate
	closed atomic.Bool // Close was called by the backend client
}

// bodyGate keeps a backend client that reads the request body after the
// handler returned (net/http's HTTP/2 Transport writes a body on a
// goroutine of its own, which a cancelled or answered stream does not
// wait for) from touching the exchange or the client's connection: the
// server's HTTP/2 response writer must not be used once the handler is
// done. The lock is held around the bookkeeping, never across a read.
//
// The handler also does not return while a read is in flight, for up to
// bodyReadSettle: net/http's HTTP/1 server aborts a pending read of the
// connection when the handler returns, which leaves the request body
// failed, and it then closes the connection at once instead of reading a
// little more and closing it gracefully; the client's unread upload turns
// that close into a reset that can destroy the answer it has not read yet.
type bodyGate struct {
	mu      sync.Mutex
	done    bool
	reading int           // reads and closes of the client's body in flight
	settled chan struct{} // closed when the last of them returns; made by closeBody
}

// bodyReadSettle bounds how long the end of an exchange waits for a read
// of the request body in flight to return. A client still uploading has
// its next bytes on the wire, so the read returns at once; only a client
// that has stalled mid-body makes the exchange wait the whole bound.
const bodyReadSettle = 250 * time.Millisecond

// errHandlerDone is a clientBody's error once its exchange is over.
var errHandlerDone = errors.New("request body read after the exchange ended")

// closeBody ends the exchange's request body: later reads fail and
// touch nothing. Called before the handler returns.
func (x *exchange) closeBody() {
	if g := x.gate; g != nil && !g.finish() {
		return // a read still in flight: the body is left to it
	}
	x.discardUnreadBody()
}

// finish ends the gate's body and waits up to bodyReadSettle for the reads
// in flight; it reports whether none is left.
func (g *bodyGate) finish() bool {
	g.mu.Lock()
	g.done = true
	var settled chan struct{}
	if g.reading > 0 {
		settled = make(chan struct{})
		g.settled = settled
	}
	g.mu.Unlock()
	if settled == nil {
		return true
	}
	t := time.NewTimer(bodyReadSettle)
	defer t.Stop()
	select {
	case <-settled:
		return true
	case <-t.C:
		return false
	}
}

// discardUnreadBody closes an HTTP/1 request body the exchange did not
// read to its end (an answer given without it: an open breaker, a
// policy's refusal, a backend that answered early), reading what is left
// of it for at most bodyReadSettle.
//
// net/http's HTTP/1 server in full duplex reads the rest of such a body
// only after the handler returned and it stopped watching the
// connection, then panics on its next read ("invalid concurrent Body.Read
// call", go.dev/issue/68560) and drops a connection the client means to
// reuse; closed here, the rest is read while the handler still runs, as
// net/http does itself without full duplex (at most 256 KiB, else the
// connection is not reused). Levee's own server only marks the body
// closed and reads on after the handler under its own deadlines.
func (x *exchange) discardUnreadBody() {
	b := x.req.Body
	if x.req.ProtoMajor != 1 || b == nil || b == http.NoBody || x.bodyEOF.Load() || x.hijacked {
		return
	}
	_ = x.deadlines().SetReadDeadline(time.Now().Add(bodyReadSettle))
	_ = b.Close()
}

// errBodyTooLarge is a clientBody's error for a body over its limit.
var errBodyTooLarge = errors.New("request body larger than the route's maxRequestBodyBytes")

// newClientBody wraps the inbound body; the limit is taken now, since the
// transport may read on after the exchange moved to another route.
func (x *exchange) newClientBody() *clientBody {
	if x.gate == nil {
		x.gate = &bodyGate{}
	}
	return &clientBody{r: x.req.Body, c: x.req.Body, x: x, limit: x.route.Config().MaxRequestBodyBytes, gate: x.gate}
}

// streamBody is a body read ahead in part: the part, then its clientBody.
type streamBody struct {
	io.Reader
	io.Closer
}

func (b *clientBody) Read(p []byte) (int, error) {
	x := b.x
	if x.bodyEOF.Load() {
		return 0, io.EOF
	}
	b.gate.mu.Lock()
	if b.gate.done {
		b.gate.mu.Unlock()
		return 0, errHandlerDone
	}
	x.armBodyRead()
	b.gate.reading++
	b.gate.mu.Unlock()
	n, err := b.r.Read(p)
	b.gate.mu.Lock()
	defer b.gate.mu.Unlock()
	b.gate.settle()
	if b.gate.done {
		return n, errHandlerDone
	}
	x.bodyRead += int64(n)
	if b.limit > 0 && x.bodyRead > b.limit {
		// Hand on no byte past the limit.
		n -= int(x.bodyRead - b.limit)
		x.bodyRead = b.limit
		x.bodyTooLarge.Store(true)
		x.badBody.Store(true)
		return n, errBodyTooLarge
	}
	switch {
	case err == io.EOF:
		x.bodyEOF.Store(true)
		x.bodyEnded()
	case err != nil && !b.closed.Load():
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			x.bodyTimedOut.Store(true)
		}
		x.badBody.Store(true)
	}
	return n, err
}

// Close closes the client's body unless the exchange is over (the server
// then owns it). net/http's server reads on to the end of the body, or a
// little of it, in Close: like a Read, it is a read in flight.
func (b *clientBody) Close() error {
	g := b.gate
	g.mu.Lock()
	if g.done {
		g.mu.Unlock()
		return nil
	}
	g.reading++
	g.mu.Unlock()
	b.closed.Store(true)
	err := b.c.Close()
	g.mu.Lock()
	g.settle()
	g.mu.Unlock()
	return err
}

// settle records that a read or close in flight returned; g.mu is held.
func (g *bodyGate) settle() {
	g.reading--
	if g.reading == 0 && g.settled != nil {
		close(g.settled)
		g.settled = nil
	}
}

// tunnelIdle closes both ends of a tunnel once no byte has moved either
// way for idle; it returns when stop is closed or it closed the tunnel.
func tunnelIdle(idle time.Duration, last *atomic.Int64, stop <-chan struct{}, closeBoth func()) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			since := time.Since(time.Unix(0, last.Load()))
			if since >= idle {
				closeBoth()
				return
			}
			t.Reset(idle - since)
		}
	}
}

// activeWriter stamps every write that moved bytes.
type activeWriter struct {
	w    io.Writer
	last *atomic.Int64
}

func (a activeWriter) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if n > 0 {
		a.last.Store(time.Now().UnixNano())
	}
	return n, err
}
